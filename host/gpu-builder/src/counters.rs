//! Counts counted loops in 32 bits and gives them nvcc's back edge, so that ptxas unrolls them.
//!
//! Rust counts `for k in 0..N` in `usize`, so LLVM's NVPTX backend keeps the counter of a loop
//! with a constant trip count in a 64-bit register, adds it to the address of every tile load and
//! truncates the sum, and ends the loop with its usual branch pair (see [`crate::branches`]):
//!
//! ```text
//!     mov.b64         %rd29, 0;
//! $L__BB0_7:
//!     add.s64         %rd26, %rd6, %rd29;          // shared base (zero-extended) + counter
//!     cvt.u32.u64     %r19, %rd26;
//!     ld.shared.v4.u32 {%r15, %r16, %r17, %r18}, [%r19];
//!     ...
//!     add.s64         %rd29, %rd29, 32;
//!     setp.eq.b64     %p5, %rd29, 4096;
//!     @%p5 bra        $L__BB0_8;
//!     bra.uni         $L__BB0_7;
//! $L__BB0_8:
//! ```
//!
//! nvcc's loops count in a 32-bit `int` and end with one branch back on a positive predicate
//! (`setp.ne.s32 %p, %r, N; @%p bra $head`), and ptxas unrolls such a loop by itself (not with
//! the same test negated, `setp.eq` and `@!%p`: that stays rolled). It does not unroll LLVM's shape, and when only the back
//! edge is reshaped it unrolls the 64-bit arithmetic too, which measured slower than not
//! unrolling (the N-body twin; README, "Writing fast kernels"). So this rewrite does both or
//! nothing: where a loop's counter provably stays in `[0, 2^31)` it becomes a 32-bit register,
//! the truncated sums 32-bit adds, and the back edge one branch:
//!
//! ```text
//!     mov.b32         %ctr0, 0;
//! $L__BB0_7:
//!     cvt.u32.u64     %r19, %rd6;
//!     add.s32         %r19, %r19, %ctr0;
//!     ...
//!     add.s32         %ctr0, %ctr0, 32;
//!     setp.ne.s32     %p5, %ctr0, 4096;
//!     @%p5 bra        $L__BB0_7;
//! $L__BB0_8:
//! ```
//!
//! The rewrite is exact. A loop qualifies only when all of this holds, and is left as LLVM wrote
//! it otherwise:
//! - it ends in `add.s64 C, C, K; setp.eq C, N; @%p bra EXIT; bra.uni HEAD; EXIT:` (or `setp.ne`
//!   with `@!%p`), HEAD a label above, the five lines consecutive, `K` and `N` literals, the
//!   predicate mentioned nowhere else;
//! - `C` is written by that `add` and by one `mov C, S` (a literal) directly above HEAD, with no
//!   label between them, and no branch from outside the loop goes to HEAD or into the loop;
//! - `S` steps by `K` onto `N` after at least one iteration (`(N - S) / K` a whole positive
//!   number) and every value between them lies in `[0, 2^31)`: the counter takes only those
//!   values, as the add-and-compare are the only way round the loop that changes it, and each of
//!   them means the same in 32 and 64 bits, signed or not;
//! - every other mention of `C` is inside the loop, in an unpredicated `cvt.u32.u64 R, C`, or in
//!   an unpredicated `add.s64 T, X, C` (either order) followed directly by `cvt.u32.u64 R, T`,
//!   `T` mentioned nowhere else (the low 32 bits of a sum are the 32-bit sum of the low words).
//!
//! It runs as part of [`crate::branches::reshape`], under its switch; its revision is part of
//! [`crate::branches::REVISION`].

use crate::ptx::{
    branch_target, code, declare, instruction, is_filler, label, parse_literal, registers,
};
use std::collections::HashMap;

/// The prefix of the 32-bit registers the rewrite declares; a body that already uses it is left
/// alone.
const PREFIX: &str = "%ctr";

/// The module with the rewrite applied to every function body.
pub fn narrow(ptx: &str) -> String {
    crate::branches::map_bodies(ptx, narrow_body)
}

/// The body (the lines between its braces) with every qualifying loop rewritten.
fn narrow_body(mut body: Vec<String>) -> Vec<String> {
    if body
        .iter()
        .any(|l| crate::ptx::strip_comment(l).contains(PREFIX))
    {
        return body;
    }
    let mut counters = 0usize;
    while let Some(rewrite) = find_loop(&body) {
        let name = format!("{PREFIX}{counters}");
        counters += 1;
        rewrite.apply(&mut body, &name);
    }
    if counters > 0 {
        declare(&mut body, format!("\t.reg .b32 \t{PREFIX}<{counters}>;"));
    }
    body
}

/// One qualifying loop: line indices into the body and the values that replace its counter's.
#[derive(Debug)]
struct Rewrite {
    /// The `mov C, S` above the head.
    init: usize,
    start: i64,
    /// The latch's `add`, `setp`, conditional branch and `bra.uni`.
    latch: [usize; 4],
    step: i64,
    end: i64,
    predicate: String,
    head: String,
    /// `cvt.u32.u64 R, C`: `R`.
    truncations: Vec<(usize, String)>,
    /// `add.s64 T, X, C` at the index, then `cvt.u32.u64 R, T`: `(index, X, R)`.
    truncated_sums: Vec<(usize, String, String)>,
}

impl Rewrite {
    fn apply(self, body: &mut Vec<String>, c: &str) {
        body[self.init] = format!("\tmov.b32 \t{c}, {};", self.start);
        for (at, r) in &self.truncations {
            body[*at] = format!("\tmov.b32 \t{r}, {c};");
        }
        for (at, x, r) in &self.truncated_sums {
            body[*at] = if x.starts_with('%') {
                format!("\tcvt.u32.u64 \t{r}, {x};")
            } else {
                format!("\tmov.b32 \t{r}, {};", low_word(x))
            };
            let cvt = next_code_line(body, *at + 1).expect("the sum's truncation follows it");
            body[cvt] = format!("\tadd.s32 \t{r}, {r}, {c};");
        }
        let [add, setp, branch, jump] = self.latch;
        let p = &self.predicate;
        body[add] = format!("\tadd.s32 \t{c}, {c}, {};", self.step);
        body[setp] = format!("\tsetp.ne.s32 \t{p}, {c}, {};", self.end);
        body[branch] = format!("\t@{p} bra \t{};", self.head);
        body.remove(jump);
    }
}

/// The low 32 bits of a PTX integer literal, written as a signed decimal.
fn low_word(literal: &str) -> String {
    parse_literal(literal).map_or_else(|| literal.to_string(), |v| (v as i32).to_string())
}

/// The index of the first line at or after `from` that holds code.
fn next_code_line(body: &[String], from: usize) -> Option<usize> {
    (from..body.len()).find(|&i| !is_filler(&body[i]))
}

/// The lines that mention `reg`.
fn mentions(body: &[String], reg: &str) -> Vec<usize> {
    (0..body.len())
        .filter(|&i| registers(&body[i]).any(|r| r == reg))
        .collect()
}

/// The first loop of the body that qualifies (module docs), as the rewrite to make.
fn find_loop(body: &[String]) -> Option<Rewrite> {
    let code_lines: Vec<usize> = (0..body.len()).filter(|&i| !is_filler(&body[i])).collect();
    let labels: HashMap<&str, usize> = code_lines
        .iter()
        .filter_map(|&i| label(&body[i]).map(|l| (l, i)))
        .collect();
    code_lines
        .windows(5)
        .find_map(|w| qualifies(body, &labels, [w[0], w[1], w[2], w[3], w[4]]))
}

/// The rewrite for the loop whose latch starts at `w[0]`, if it qualifies (`labels`: where each
/// label of the body is defined).
fn qualifies(body: &[String], labels: &HashMap<&str, usize>, w: [usize; 5]) -> Option<Rewrite> {
    let [add, setp, branch, jump, exit_line] = w;
    // The latch: add.s64 C, C, K; setp C, N; @p bra EXIT; bra.uni HEAD; EXIT:
    let (op, ops) = instruction(&body[add])?;
    let [c, c2, step] = ops[..] else { return None };
    if op != "add.s64" || c != c2 || !c.starts_with('%') {
        return None;
    }
    let step = parse_literal(step)?;
    let (op, ops) = instruction(&body[setp])?;
    let [p, c3, end] = ops[..] else { return None };
    let exits_on_equal = match op {
        "setp.eq.b64" | "setp.eq.s64" | "setp.eq.u64" => false,
        "setp.ne.b64" | "setp.ne.s64" | "setp.ne.u64" => true,
        _ => return None,
    };
    if c3 != c {
        return None;
    }
    let end = parse_literal(end)?;
    let expected = format!("@{}{p}", if exits_on_equal { "!" } else { "" });
    let guard = code(&body[branch]).split_whitespace().next()?;
    let exit = branch_target(&body[branch])?;
    if guard != expected
        || !code(&body[jump]).starts_with("bra")
        || label(&body[exit_line])? != exit
    {
        return None;
    }
    let head = branch_target(&body[jump])?;
    let head_at = *labels.get(head).filter(|&&at| at < jump)?;
    if mentions(body, p) != [setp, branch] {
        return None;
    }
    // Entered only by falling through HEAD, left past EXIT.
    let inside = |i: usize| i > head_at && i < exit_line;
    for (i, line) in body.iter().enumerate() {
        if let Some(t) = branch_target(line) {
            let into = labels
                .get(t)
                .is_some_and(|&t| t >= head_at && t < exit_line);
            if into && !inside(i) {
                return None;
            }
        }
        if code(line).starts_with("brx") {
            return None;
        }
    }
    // The start: one mov directly above HEAD.
    let init = (0..head_at).rev().find(|&i| !is_filler(&body[i]))?;
    let (op, ops) = instruction(&body[init])?;
    let ["mov.b64" | "mov.u64" | "mov.s64", c4, start] = [op, *ops.first()?, *ops.get(1)?] else {
        return None;
    };
    if c4 != c || ops.len() != 2 {
        return None;
    }
    let start = parse_literal(start)?;
    // The values: S, S + K, ..., N, all in [0, 2^31).
    let span = end.checked_sub(start)?;
    if step == 0 || span % step != 0 || span / step <= 0 {
        return None;
    }
    let in_range = |v: i64| (0..1i64 << 31).contains(&v);
    if !in_range(start) || !in_range(end) {
        return None;
    }
    // Every other mention of C: a truncation, or a sum that is only truncated.
    let mut truncations = Vec::new();
    let mut truncated_sums = Vec::new();
    for at in mentions(body, c) {
        if [init, add, setp].contains(&at) {
            continue;
        }
        if !inside(at) {
            return None;
        }
        let (op, ops) = instruction(&body[at])?;
        match (op, &ops[..]) {
            ("cvt.u32.u64", [r, src]) if *src == c && !r.contains(c) => {
                truncations.push((at, r.to_string()));
            }
            ("add.s64", [t, a, b]) if (*a == c) != (*b == c) && *t != c => {
                let x = if *a == c { b } else { a };
                let cvt = next_code_line(body, at + 1)?;
                let (op, cvt_ops) = instruction(&body[cvt])?;
                let [r, src] = cvt_ops[..] else { return None };
                if op != "cvt.u32.u64" || src != *t || mentions(body, t) != [at, cvt] {
                    return None;
                }
                if !x.starts_with('%') && parse_literal(x).is_none() {
                    return None;
                }
                truncated_sums.push((at, x.to_string(), r.to_string()));
            }
            _ => return None,
        }
    }
    Some(Rewrite {
        init,
        start,
        latch: [add, setp, branch, jump],
        step,
        end,
        predicate: p.to_string(),
        head: head.to_string(),
        truncations,
        truncated_sums,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::test_support::{body, instructions};

    /// The N-body twin's inner loop as LLVM wrote it.
    const NBODY: &[&str] = &[
        "\t.reg .pred \t%p<8>;",
        "\t.reg .b32 \t%r<57>;",
        "\t.reg .b64 \t%rd<30>;",
        "\tcvt.u64.u32 \t%rd6, %r4;",
        "\tmov.b64 \t%rd29, 0;",
        "$L__BB0_7:",
        "\tadd.s64 \t%rd26, %rd6, %rd29;",
        "\tcvt.u32.u64 \t%r19, %rd26;",
        "\tld.shared.v4.u32 {%r15, %r16, %r17, %r18}, [%r19];",
        "\tadd.s64 \t%rd29, %rd29, 32;",
        "\tsetp.eq.b64 \t%p5, %rd29, 4096;",
        "\t@%p5 bra \t$L__BB0_8;",
        "\tbra.uni \t$L__BB0_7;",
        "$L__BB0_8:",
        "\tret;",
    ];

    #[test]
    fn a_counted_loop_counts_in_32_bits_with_one_back_edge() {
        let got = instructions(&narrow(&body(NBODY)));
        assert_eq!(
            got[2..16],
            [
                ".reg .pred %p<8>;",
                ".reg .b32 %r<57>;",
                ".reg .b64 %rd<30>;",
                ".reg .b32 %ctr<1>;",
                "cvt.u64.u32 %rd6, %r4;",
                "mov.b32 %ctr0, 0;",
                "$L__BB0_7:",
                "cvt.u32.u64 %r19, %rd6;",
                "add.s32 %r19, %r19, %ctr0;",
                "ld.shared.v4.u32 {%r15, %r16, %r17, %r18}, [%r19];",
                "add.s32 %ctr0, %ctr0, 32;",
                "setp.ne.s32 %p5, %ctr0, 4096;",
                "@%p5 bra $L__BB0_7;",
                "$L__BB0_8:",
            ]
        );
    }

    /// `NBODY` with line `at` replaced.
    fn nbody_with(at: usize, line: &str) -> String {
        let mut lines = NBODY.to_vec();
        lines[at] = line;
        body(&lines)
    }

    #[test]
    fn loops_that_may_leave_the_32_bit_range_are_unchanged() {
        for (at, line) in [
            (10, "\tsetp.eq.b64 \t%p5, %rd29, 4294967296;"), // ends past 2^31
            (10, "\tsetp.eq.b64 \t%p5, %rd29, 4100;"),       // 32 never steps onto it
            (4, "\tmov.b64 \t%rd29, 4096;"),                 // no iteration reaches it again
            (4, "\tmov.b64 \t%rd29, %rd5;"),                 // unknown start
            (9, "\tadd.s64 \t%rd29, %rd29, %rd7;"),          // unknown step
            (10, "\tsetp.lt.u64 \t%p5, %rd29, 4096;"),       // another compare
        ] {
            let ptx = nbody_with(at, line);
            assert_eq!(narrow(&ptx), ptx, "{line}");
        }
    }

    #[test]
    fn a_counter_used_in_64_bits_is_unchanged() {
        for (at, line) in [
            (7, "\tshl.b64 \t%rd27, %rd26, 4;"),     // the sum is used whole
            (7, "\tcvt.u32.u64 \t%r19, %rd25;"),     // the sum is not truncated
            (8, "\tst.global.u64 \t[%rd8], %rd29;"), // the counter itself
        ] {
            let ptx = nbody_with(at, line);
            assert_eq!(narrow(&ptx), ptx, "{line}");
        }
        // Read after the loop.
        let mut lines = NBODY.to_vec();
        lines.insert(14, "\tst.global.u64 \t[%rd8], %rd29;");
        let ptx = body(&lines);
        assert_eq!(narrow(&ptx), ptx);
    }

    #[test]
    fn a_loop_entered_other_than_through_its_start_is_unchanged() {
        let mut lines = NBODY.to_vec();
        lines.insert(3, "\t@%p1 bra \t$L__BB0_7;");
        let ptx = body(&lines);
        assert_eq!(narrow(&ptx), ptx);
        // A label between the start and the head: another way in.
        let mut lines = NBODY.to_vec();
        lines.insert(5, "$L__BB0_6:");
        let ptx = body(&lines);
        assert_eq!(narrow(&ptx), ptx);
    }

    #[test]
    fn a_predicate_used_elsewhere_keeps_its_loop() {
        let mut lines = NBODY.to_vec();
        lines.insert(14, "\tselp.b32 \t%r3, 1, 0, %p5;");
        let ptx = body(&lines);
        assert_eq!(narrow(&ptx), ptx);
    }

    #[test]
    fn a_counter_truncated_itself_and_a_sum_with_a_literal() {
        let got = instructions(&narrow(&body(&[
            "\tmov.b64 \t%rd2, 8;",
            "$L__BB1_2:",
            "\tcvt.u32.u64 \t%r7, %rd2;",
            "\tadd.s64 \t%rd3, %rd2, 4096;",
            "\tcvt.u32.u64 \t%r8, %rd3;",
            "\tadd.s64 \t%rd2, %rd2, -4;",
            "\tsetp.ne.u64 \t%p1, %rd2, 0;",
            "\t@!%p1 bra \t$L__BB1_3;",
            "\tbra.uni \t$L__BB1_2;",
            "$L__BB1_3:",
        ])));
        assert_eq!(
            got[2..12],
            [
                ".reg .b32 %ctr<1>;",
                "mov.b32 %ctr0, 8;",
                "$L__BB1_2:",
                "mov.b32 %r7, %ctr0;",
                "mov.b32 %r8, 4096;",
                "add.s32 %r8, %r8, %ctr0;",
                "add.s32 %ctr0, %ctr0, -4;",
                "setp.ne.s32 %p1, %ctr0, 0;",
                "@%p1 bra $L__BB1_2;",
                "$L__BB1_3:",
            ]
        );
    }
}
