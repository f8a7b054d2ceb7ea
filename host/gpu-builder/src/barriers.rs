//! Gives threads that only wait at a barrier and return the same barrier as everyone else.
//!
//! The textbook stencil loads a tile under `if i < n`, waits at the barrier, and computes under
//! `if i < n` again. Threads past the end know the second test fails, so LLVM's jump threading
//! gives them their own copy of the barrier, followed by `ret`:
//!
//! ```text
//!     @%p1 bra        $L__BB0_9;          // i >= n
//!     ...                                 // loads into the tile
//! $L__BB0_4:
//!     barrier.sync    0;
//!     ...                                 // the stencil, the store
//! $L__BB0_9:
//!     barrier.sync    0;                  // the copy
//! $L__BB0_10:
//!     ret;
//! ```
//!
//! Different threads of one warp may then wait at different barrier instructions, which ptxas
//! must allow for: it adds a divergent-warp path to the barrier (`BRA.DIV`, `WARPSYNC`), and in
//! the heat-equation twin it no longer kept the global-memory descriptor in a uniform register,
//! reading it back before every load instead (README, "Writing fast kernels", has the figures).
//! nvcc's code keeps one barrier, which every thread reaches.
//!
//! The rewrite restores that shape. The copy becomes a jump to the other barrier with a
//! predicate set, and after that barrier the predicated threads return:
//!
//! ```text
//! $L__BB0_4:
//!     setp.ne.u32     %brx0, 0, 0;        // false: the threads that stay
//! $L__brx0:
//!     barrier.sync    0;
//!     @%brx0 ret;
//!     ...
//! $L__BB0_9:
//!     setp.eq.u32     %brx0, 0, 0;        // true: the threads that only wait
//!     bra.uni         $L__brx0;
//! ```
//!
//! It is exact: every thread still arrives at the barrier once, with the same operands
//! (`barrier.sync` counts arrivals at a barrier number, not at an instruction; `bar.sync`,
//! which also requires a warp's threads to execute the same instruction, is satisfied better
//! after the rewrite than before), and then returns as the copy did. A copy is one unpredicated
//! `barrier.sync`/`bar.sync` line after which only labels and unconditional branches lead to
//! `ret` or `exit`; it is merged into the barrier with the same text when there is exactly one
//! other (or, when every copy returns, into the first). Anything else is left as LLVM wrote it.
//!
//! It runs as part of [`crate::branches::reshape`], under its switch; its revision is part of
//! [`crate::branches::REVISION`].

use crate::ptx::{code, declare, is_filler, label, unconditional_branch};
use std::collections::HashMap;

/// The prefix of the predicates and labels the rewrite declares; a body that already uses it is
/// left alone.
const PREFIX: &str = "brx";

/// The module with the rewrite applied to every function body.
pub fn merge(ptx: &str) -> String {
    crate::branches::map_bodies(ptx, merge_body)
}

/// Whether the line is an unpredicated CTA barrier that waits (`barrier.sync`, `bar.sync`).
fn is_barrier(line: &str) -> bool {
    let c = code(line);
    let opcode = c.split_whitespace().next().unwrap_or_default();
    let waits = [
        "barrier.sync",
        "barrier.cta.sync",
        "bar.sync",
        "bar.cta.sync",
    ]
    .iter()
    .any(|b| opcode == *b || opcode.strip_prefix(b) == Some(".aligned"));
    waits && c.ends_with(';') && c.matches(';').count() == 1
}

/// Whether the code after line `at` only passes labels and unconditional branches before it
/// reaches `ret` or `exit`.
fn returns_after(body: &[String], at: usize, labels: &HashMap<&str, usize>) -> bool {
    let mut i = at + 1;
    // Bounded: a cycle of unconditional branches never reaches a return.
    for _ in 0..64 {
        let Some(line) = body.get(i) else {
            return false;
        };
        let c = code(line);
        if is_filler(line) || label(line).is_some() {
            i += 1;
        } else if c == "ret;" || c == "exit;" {
            return true;
        } else if let Some(&to) = unconditional_branch(line).and_then(|t| labels.get(t)) {
            i = to + 1;
        } else {
            return false;
        }
    }
    false
}

/// The lines `at` spans, with the `// begin inline asm` / `// end inline asm` comments around it.
fn with_asm_markers(body: &[String], at: usize) -> (usize, usize) {
    let marker = |i: usize, text: &str| body.get(i).is_some_and(|l| l.trim() == text);
    let start = if at > 0 && marker(at - 1, "// begin inline asm") {
        at - 1
    } else {
        at
    };
    let end = if marker(at + 1, "// end inline asm") {
        at + 1
    } else {
        at
    };
    (start, end)
}

/// The body with every returning copy of a barrier merged into the barrier it copies.
fn merge_body(mut body: Vec<String>) -> Vec<String> {
    if body
        .iter()
        .any(|l| crate::ptx::strip_comment(l).contains(&format!("%{PREFIX}")))
    {
        return body;
    }
    let labels: HashMap<&str, usize> = (0..body.len())
        .filter_map(|i| label(&body[i]).map(|l| (l, i)))
        .collect();
    // Barriers by their text, in order.
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for i in (0..body.len()).filter(|&i| is_barrier(&body[i])) {
        let text = code(&body[i])
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        match groups.iter_mut().find(|(t, _)| *t == text) {
            Some((_, at)) => at.push(i),
            None => groups.push((text, vec![i])),
        }
    }
    // (the barrier kept, the copies merged into it)
    let mut merges: Vec<(usize, Vec<usize>)> = Vec::new();
    for (_, at) in groups.iter().filter(|(_, at)| at.len() >= 2) {
        let (mut copies, others): (Vec<usize>, Vec<usize>) =
            at.iter().partition(|&&i| returns_after(&body, i, &labels));
        let kept = match others[..] {
            [kept] => kept,
            [] => copies.remove(0),
            _ => continue,
        };
        if !copies.is_empty() {
            merges.push((kept, copies));
        }
    }
    if merges.is_empty() {
        return body;
    }

    // Replacements (first line, last line, new lines), applied from the last line back.
    let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for (n, (kept, copies)) in merges.iter().enumerate() {
        let (pred, join) = (format!("%{PREFIX}{n}"), format!("$L__{PREFIX}{n}"));
        let (start, end) = with_asm_markers(&body, *kept);
        let mut lines = vec![format!("\tsetp.ne.u32 \t{pred}, 0, 0;"), format!("{join}:")];
        lines.extend(body[start..=end].iter().cloned());
        lines.push(format!("\t@{pred} ret;"));
        edits.push((start, end, lines));
        for &copy in copies {
            let (start, end) = with_asm_markers(&body, copy);
            let lines = vec![
                format!("\tsetp.eq.u32 \t{pred}, 0, 0;"),
                format!("\tbra.uni \t{join};"),
            ];
            edits.push((start, end, lines));
        }
    }
    edits.sort_by_key(|&(start, _, _)| std::cmp::Reverse(start));
    for (start, end, lines) in edits {
        body.splice(start..=end, lines);
    }
    declare(
        &mut body,
        format!("\t.reg .pred \t%{PREFIX}<{}>;", merges.len()),
    );
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::test_support::{body, instructions};

    /// The heat-equation twin's body as LLVM wrote it, shortened.
    const HEAT: &[&str] = &[
        "\t.reg .pred \t%p<12>;",
        "\tsetp.ge.u64 \t%p1, %rd3, %rd7;",
        "\t@%p1 bra \t$L__BB0_9;",
        "\tld.global.b32 \t%r6, [%rd4];",
        "$L__BB0_4:",
        "\tld.param.b64 \t%rd8, [heat_step_1d_param_4];",
        "\t// begin inline asm",
        "\tbarrier.sync 0;",
        "\t// end inline asm",
        "\tsetp.ge.u64 \t%p11, %rd3, %rd8;",
        "\t@%p11 bra \t$L__BB0_10;",
        "\tst.global.b32 \t[%rd6], %r18;",
        "\tbra.uni \t$L__BB0_10;",
        "$L__BB0_9:",
        "\t// begin inline asm",
        "\tbarrier.sync 0;",
        "\t// end inline asm",
        "$L__BB0_10:",
        "\tret;",
    ];

    #[test]
    fn a_returning_copy_jumps_to_the_barrier_it_copies() {
        let got = instructions(&merge(&body(HEAT)));
        assert_eq!(
            got[2..],
            [
                ".reg .pred %p<12>;",
                ".reg .pred %brx<1>;",
                "setp.ge.u64 %p1, %rd3, %rd7;",
                "@%p1 bra $L__BB0_9;",
                "ld.global.b32 %r6, [%rd4];",
                "$L__BB0_4:",
                "ld.param.b64 %rd8, [heat_step_1d_param_4];",
                "setp.ne.u32 %brx0, 0, 0;",
                "$L__brx0:",
                "barrier.sync 0;",
                "@%brx0 ret;",
                "setp.ge.u64 %p11, %rd3, %rd8;",
                "@%p11 bra $L__BB0_10;",
                "st.global.b32 [%rd6], %r18;",
                "bra.uni $L__BB0_10;",
                "$L__BB0_9:",
                "setp.eq.u32 %brx0, 0, 0;",
                "bra.uni $L__brx0;",
                "$L__BB0_10:",
                "ret;",
                "}",
            ]
        );
    }

    #[test]
    fn a_copy_that_branches_to_the_return_is_merged_too() {
        let mut lines = HEAT.to_vec();
        lines.insert(17, "\tbra.uni \t$L__BB0_10;");
        lines.insert(18, "$L__BB0_11:");
        lines.insert(19, "\tst.global.b32 \t[%rd6], %r1;");
        let got = instructions(&merge(&body(&lines)));
        assert!(got.contains(&"@%brx0 ret;".to_string()), "{got:?}");
        assert_eq!(got.iter().filter(|l| *l == "barrier.sync 0;").count(), 1);
    }

    #[test]
    fn barriers_followed_by_work_or_of_other_numbers_are_unchanged() {
        // The copy does more than return.
        let mut lines = HEAT.to_vec();
        lines.insert(17, "\tst.global.b32 \t[%rd6], %r1;");
        assert_eq!(merge(&body(&lines)), body(&lines));
        // A different barrier number.
        let mut lines = HEAT.to_vec();
        lines[15] = "\tbarrier.sync 1;";
        assert_eq!(merge(&body(&lines)), body(&lines));
        // Two barriers that do not return: which one the copy came from is unknown.
        let mut lines = HEAT.to_vec();
        lines.insert(11, "\tbarrier.sync 0;");
        assert_eq!(merge(&body(&lines)), body(&lines));
        // A predicated barrier is not a copy.
        let mut lines = HEAT.to_vec();
        lines[15] = "\t@%p1 barrier.sync 0;";
        assert_eq!(merge(&body(&lines)), body(&lines));
    }

    #[test]
    fn copies_that_all_return_merge_into_the_first() {
        let ptx = body(&[
            "\t@%p1 bra \t$L__BB0_3;",
            "\tbar.sync \t0;",
            "\tret;",
            "$L__BB0_3:",
            "\tbar.sync \t0;",
            "\tret;",
        ]);
        let got = instructions(&merge(&ptx));
        assert_eq!(
            got[2..],
            [
                ".reg .pred %brx<1>;",
                "@%p1 bra $L__BB0_3;",
                "setp.ne.u32 %brx0, 0, 0;",
                "$L__brx0:",
                "bar.sync 0;",
                "@%brx0 ret;",
                "ret;",
                "$L__BB0_3:",
                "setp.eq.u32 %brx0, 0, 0;",
                "bra.uni $L__brx0;",
                "ret;",
                "}",
            ]
        );
    }

    #[test]
    fn is_barrier_knows_the_waiting_forms() {
        for b in [
            "barrier.sync 0;",
            "barrier.sync.aligned 0;",
            "bar.sync 1, 128;",
            "barrier.cta.sync 0;",
        ] {
            assert!(is_barrier(b), "{b}");
        }
        for other in [
            "bar.arrive 0, 64;",
            "barrier.sync 0; ret;",
            "@%p1 bar.sync 0;",
            "bar.red.popc.u32 %r1, 0, %p1;",
        ] {
            assert!(!is_barrier(other), "{other}");
        }
    }
}
