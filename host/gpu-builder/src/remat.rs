//! Recomputes a thread's indices where they are used after a loop, instead of keeping them in
//! registers through it.
//!
//! A kernel often computes its global index first and uses it once more at the end, to store
//! what a loop accumulated (N-body's `accel.set(i, ..)` after the tiles, a GEMM's store after
//! the k loop). In `usize` that index is 64-bit arithmetic on `%ctaid`, `%ntid` and `%tid`, and
//! LLVM keeps its result (and its byte offset) live through the loop: four registers that the
//! loop cannot use. ptxas sizes a kernel for occupancy (32 registers a thread for 256-thread
//! blocks at full occupancy) and schedules the loop in what is left, so fewer loads are in
//! flight: the N-body twin's tile loads issued two bodies ahead instead of nvcc's three (nvcc's
//! `int` index is one register). README, "Writing fast kernels", has the figures.
//!
//! The rewrite recomputes such a register where it is used after the loops, one copy placed
//! before its first use there:
//!
//! ```text
//!     mov.u32      %r5, %tid.x;                  mov.u32      %r5, %tid.x;
//!     cvt.u64.u32  %rd3, %r5;                    cvt.u64.u32  %rd3, %r5;
//!     or.b64       %rd4, %rd19, %rd3;            or.b64       %rd4, %rd19, %rd3;
//!     ...                                        ...
//! $L__BB0_7:                                     $L__BB0_7:
//!     ...              // the loop nest          ...
//!     @%p5 bra     $L__BB0_7;                    @%p5 bra     $L__BB0_7;
//!     setp.lt.u64  %p7, %rd4, %rd10;    →        mov.u32      %remat_b32_0, %tid.x;
//!                                                cvt.u64.u32  %remat_b64_0, %remat_b32_0;
//!                                                ...
//!                                                or.b64       %remat_b64_3, ..., %remat_b64_0;
//!                                                setp.lt.u64  %p7, %remat_b64_3, %rd10;
//! ```
//!
//! so the original registers die before the loops. It is exact: what is recomputed depends on
//! nothing that changes while a thread runs, and the copy is placed where every later use is
//! reached only through it. A register qualifies when all of this holds, and is left as it is
//! otherwise:
//! - it is 64-bit (`.b64`, `.u64`, `.s64`: two registers; a 32-bit one is not worth a copy);
//! - one unpredicated line writes it, an integer `mov`, `cvt`, `cvta`, `add`, `sub`, `mul`,
//!   `mad`, `shl`, `shr`, `and`, `or` or `xor` (no carry) or an `ld.param`, whose operands are
//!   literals, `%tid`, `%ntid`, `%ctaid` or `%nctaid` components, variable names (addresses)
//!   or registers that qualify themselves, at most [`MAX_LINES`] lines in all;
//! - a loop nest (a branch back to a label above it, with another such loop inside) lies
//!   between that line and the uses, and does not mention the register; the uses are in no
//!   loop, so the copy runs once; and no branch from above the first use goes to a label
//!   between the first and the last.
//!
//! It runs after the other rewrites, in every crate unless `[package.metadata.gpu]
//! recompute_indices = false` (or `GPU_KERNEL_RECOMPUTE_INDICES=0` for a build) turns it off: the
//! tuned library crates keep their measured shape.

use crate::ptx::{
    branch_target, code, declare, destinations, instruction, is_filler, label, parse_literal,
    registers,
};
use std::collections::{BTreeSet, HashMap};

/// Names this rewrite in the record of what a module's PTX was made from (see
/// [`crate::branches::REVISION`]): change it whenever the rewrite's output changes.
pub const REVISION: &str = "recomputed indices v1";

/// The prefix of the registers the rewrite declares; a body that already uses it is left alone.
const PREFIX: &str = "%remat_";

/// The most lines one recomputation may take.
pub const MAX_LINES: usize = 24;

/// The module with the rewrite applied to every function body.
pub fn recompute(ptx: &str) -> String {
    crate::branches::map_bodies(ptx, recompute_body)
}

/// Opcodes (up to the first `.`) of the integer arithmetic that may be recomputed, and the
/// modifiers and types allowed after them.
const OPCODES: &[&str] = &[
    "mov", "cvt", "cvta", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "ld",
];
const MODIFIERS: &[&str] = &[
    "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "b8", "b16", "b32", "b64", "lo", "hi",
    "wide", "to", "global", "shared", "const", "param",
];
/// The register types worth a copy: 64-bit, two registers each.
const WIDE: &[&str] = &[".b64", ".u64", ".s64"];
/// Special registers that are constant for a thread.
const SPECIAL: &[&str] = &["%tid.", "%ntid.", "%ctaid.", "%nctaid."];

/// What a qualifying line computes from.
enum Operand<'a> {
    /// A register that has to qualify too.
    Register(&'a str),
    /// A literal, special register, variable name or parameter: constant.
    Constant,
}

/// The destination and register operands of `line` if it is arithmetic that may be
/// recomputed ([`OPCODES`] on integers, no predicate) with only such operands.
fn recomputable(line: &str) -> Option<(&str, Vec<&str>)> {
    let (opcode, operands) = instruction(line)?;
    let mut parts = opcode.split('.');
    let base = parts.next()?;
    if !OPCODES.contains(&base) || !parts.all(|p| MODIFIERS.contains(&p)) {
        return None;
    }
    if base == "ld" && !opcode.starts_with("ld.param.") {
        return None;
    }
    let (dest, sources) = operands.split_first()?;
    if !is_register(dest) {
        return None;
    }
    let mut regs = Vec::new();
    for s in sources {
        match operand(s, base == "ld")? {
            Operand::Register(r) => regs.push(r),
            Operand::Constant => {}
        }
    }
    Some((dest, regs))
}

/// One source operand, or `None` if it may change while the thread runs.
fn operand(s: &str, param: bool) -> Option<Operand<'_>> {
    if param {
        let inner = s.strip_prefix('[')?.strip_suffix(']')?;
        return (!inner.contains('%')).then_some(Operand::Constant);
    }
    if SPECIAL.iter().any(|p| s.starts_with(p)) {
        return Some(Operand::Constant);
    }
    if is_register(s) {
        return Some(Operand::Register(s));
    }
    if parse_literal(s).is_some() || is_identifier(s) {
        return Some(Operand::Constant);
    }
    None
}

fn is_register(s: &str) -> bool {
    s.strip_prefix('%').is_some_and(is_identifier)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// The type each register of the body was declared with (`.b64`, ...), by name or, for
/// `%rd<30>` declarations, by prefix.
fn register_types(body: &[String]) -> HashMap<String, String> {
    let mut types = HashMap::new();
    for line in body {
        let Some(decl) = code(line).strip_prefix(".reg ") else {
            continue;
        };
        let Some((ty, names)) = decl.trim().split_once(char::is_whitespace) else {
            continue;
        };
        for name in names.trim().trim_end_matches(';').split(',') {
            let name = name.trim();
            let name = name.split_once('<').map_or(name, |(prefix, _)| prefix);
            types.insert(name.to_string(), ty.to_string());
        }
    }
    types
}

fn type_of<'a>(types: &'a HashMap<String, String>, reg: &str) -> Option<&'a str> {
    types
        .get(reg)
        .or_else(|| types.get(reg.trim_end_matches(|c: char| c.is_ascii_digit())))
        .map(String::as_str)
}

/// `line` with every mention of register `from` (not of a longer name) replaced by `to`.
fn replace_register(line: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(from) {
        let after = &rest[at + from.len()..];
        out.push_str(&rest[..at]);
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// One recomputation: the registers it replaces, each with the lines that read it, and the
/// lines that compute them (in order).
#[derive(Default)]
struct Plan {
    registers: Vec<(String, Vec<usize>)>,
    lines: BTreeSet<usize>,
}

/// The body with the qualifying uses after loop nests given their own recomputation.
fn recompute_body(mut body: Vec<String>) -> Vec<String> {
    if body.iter().any(|l| code(l).contains(PREFIX)) {
        return body;
    }
    let types = register_types(&body);
    let plans = plan(&body, &types);
    if plans.is_empty() {
        return body;
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut inserts: Vec<(usize, Vec<String>)> = Vec::new();
    for (first, plan) in plans {
        let mut renamed: HashMap<String, String> = HashMap::new();
        let mut copy = Vec::new();
        for &i in &plan.lines {
            let dest = destinations(&body[i])[0].to_string();
            // Known: `plan` keeps only recomputations whose registers all have a type.
            let tag = type_of(&types, &dest).unwrap_or_default();
            let tag = tag.trim_start_matches('.');
            let n = counts.entry(tag.to_string()).or_default();
            let fresh = format!("{PREFIX}{tag}_{n}");
            *n += 1;
            let mut line = body[i].clone();
            for (from, to) in &renamed {
                line = replace_register(&line, from, to);
            }
            copy.push(replace_register(&line, &dest, &fresh));
            renamed.insert(dest, fresh);
        }
        for (r, at) in &plan.registers {
            for &u in at {
                body[u] = replace_register(&body[u], r, &renamed[r]);
            }
        }
        inserts.push((first, copy));
    }
    for (u, copy) in inserts.into_iter().rev() {
        body.splice(u..u, copy);
    }
    let mut tags: Vec<_> = counts.into_iter().collect();
    tags.sort();
    for (tag, n) in tags {
        declare(&mut body, format!("\t.reg .{tag} \t{PREFIX}{tag}_<{n}>;"));
    }
    body
}

/// The recomputations worth making in `body`, by the line they go before, in line order.
fn plan(body: &[String], types: &HashMap<String, String>) -> Vec<(usize, Plan)> {
    let code_lines: Vec<usize> = (0..body.len()).filter(|&i| !is_filler(&body[i])).collect();
    let labels: HashMap<&str, usize> = code_lines
        .iter()
        .filter_map(|&i| label(&body[i]).map(|l| (l, i)))
        .collect();
    // Loops as (head, back edge) line pairs.
    let loops: Vec<(usize, usize)> = code_lines
        .iter()
        .filter_map(|&b| {
            let &h = labels.get(branch_target(&body[b])?)?;
            (h < b).then_some((h, b))
        })
        .collect();
    // Loops that hold another loop: what a kept register can cost a kernel (a register-hungry
    // inner loop that runs long). Across a lone loop (a search, a short scan) it measured no
    // better, and the copy costs instructions and registers where it is used.
    let nests: Vec<(usize, usize)> = loops
        .iter()
        .copied()
        .filter(|&(h, b)| {
            loops
                .iter()
                .any(|&(h2, b2)| (h2, b2) != (h, b) && h <= h2 && b2 <= b)
        })
        .collect();
    if nests.is_empty() {
        return Vec::new();
    }
    let mut writes: HashMap<&str, Vec<usize>> = HashMap::new();
    for &i in &code_lines {
        for d in destinations(&body[i]) {
            writes.entry(d).or_default().push(i);
        }
    }
    // Registers written once, by a line that may be recomputed: their line and operands.
    let defs: HashMap<&str, (usize, Vec<&str>)> = writes
        .iter()
        .filter_map(|(&r, at)| {
            let [i] = at[..] else { return None };
            let (dest, regs) = recomputable(&body[i])?;
            (dest == r).then_some((r, (i, regs)))
        })
        .collect();
    // The lines that recompute a register, if they all qualify, are few enough and write
    // registers of a known type.
    let closure = |r: &str| -> Option<BTreeSet<usize>> {
        let mut lines = BTreeSet::new();
        let mut todo = vec![r];
        while let Some(r) = todo.pop() {
            let (i, regs) = defs.get(r)?;
            type_of(types, r)?;
            if lines.insert(*i) {
                todo.extend(regs.iter().copied());
            }
            if lines.len() > MAX_LINES {
                return None;
            }
        }
        Some(lines)
    };
    let mentions = |r: &str, from: usize, to: usize| {
        body[from..=to].iter().any(|l| registers(l).any(|x| x == r))
    };
    let in_loop = |u: usize| loops.iter().any(|&(h, b)| h <= u && u <= b);

    // Each 64-bit register's uses after a loop nest it is kept through (a 32-bit one is only
    // one register: not worth a copy).
    let mut uses: HashMap<&str, Vec<usize>> = HashMap::new();
    for &u in &code_lines {
        if label(&body[u]).is_some() || in_loop(u) {
            continue;
        }
        let written = destinations(&body[u]);
        for r in registers(&body[u]) {
            let Some((d, _)) = defs.get(r) else { continue };
            let wide = type_of(types, r).is_some_and(|t| WIDE.contains(&t));
            let spans = nests
                .iter()
                .any(|&(h, b)| *d < h && b < u && !mentions(r, h, b));
            if wide && spans && !written.contains(&r) {
                let at = uses.entry(r).or_default();
                if !at.contains(&u) {
                    at.push(u);
                }
            }
        }
    }
    // One copy per register, before its first such use, when every later one is reached only
    // through it: no branch from above the first use goes to a label between them (a branch
    // from below would be a loop, and the uses are in none).
    let jumps_in = |first: usize, last: usize| {
        code_lines.iter().any(|&j| {
            j < first
                && branch_target(&body[j])
                    .and_then(|t| labels.get(t))
                    .is_some_and(|&l| first < l && l <= last)
        })
    };
    let mut plans: HashMap<usize, Plan> = HashMap::new();
    for (r, at) in uses {
        let (first, last) = (at[0], at[at.len() - 1]);
        let Some(lines) = closure(r).filter(|_| !jumps_in(first, last)) else {
            continue;
        };
        let plan = plans.entry(first).or_default();
        plan.registers.push((r.to_string(), at));
        plan.lines.extend(lines);
    }
    let mut plans: Vec<(usize, Plan)> = plans
        .into_iter()
        .filter(|(_, plan)| plan.lines.len() <= MAX_LINES)
        .collect();
    plans.sort_by_key(|(first, _)| *first);
    for (_, plan) in &mut plans {
        plan.registers.sort();
    }
    plans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::test_support::{body, instructions};

    /// N-body's shape: the global index computed first, a loop nest, the index used after it.
    fn kernel(loop_line: &str) -> String {
        body(&[
            "\t.reg .pred \t%p<8>;",
            "\t.reg .b32 \t%r<9>;",
            "\t.reg .b64 \t%rd<9>;",
            "\tld.param.b64 \t%rd1, [k_param_0];",
            "\tmov.u32 \t%r1, %ctaid.x;",
            "\tmul.wide.u32 \t%rd2, %r1, 256;",
            "\tmov.u32 \t%r2, %tid.x;",
            "\tcvt.u64.u32 \t%rd3, %r2;",
            "\tor.b64 \t%rd4, %rd2, %rd3;",
            "\tmov.b32 \t%r3, 0;",
            "$L__BB0_1:",
            loop_line,
            "$L__BB0_9:",
            "\tadd.s32 \t%r5, %r5, 1;",
            "\tsetp.ne.s32 \t%p3, %r5, 8;",
            "\t@%p3 bra \t$L__BB0_9;",
            "\tadd.s32 \t%r3, %r3, 1;",
            "\tsetp.ne.s32 \t%p1, %r3, 256;",
            "\t@%p1 bra \t$L__BB0_1;",
            "\tsetp.lt.u64 \t%p2, %rd4, %rd1;",
            "\t@!%p2 bra \t$L__BB0_3;",
            "\tshl.b64 \t%rd5, %rd4, 4;",
            "\tst.global.b32 \t[%rd5], %r3;",
            "$L__BB0_3:",
            "\tret;",
        ])
    }

    #[test]
    fn an_index_used_after_a_loop_is_recomputed_there() {
        let got = instructions(&recompute(&kernel("\tld.shared.b32 \t%r4, [%r3];")));
        let at = got.iter().position(|l| l == "@%p1 bra $L__BB0_1;").unwrap();
        assert_eq!(
            got[at + 1..at + 8],
            [
                "ld.param.b64 %remat_b64_0, [k_param_0];",
                "mov.u32 %remat_b32_0, %ctaid.x;",
                "mul.wide.u32 %remat_b64_1, %remat_b32_0, 256;",
                "mov.u32 %remat_b32_1, %tid.x;",
                "cvt.u64.u32 %remat_b64_2, %remat_b32_1;",
                "or.b64 %remat_b64_3, %remat_b64_1, %remat_b64_2;",
                "setp.lt.u64 %p2, %remat_b64_3, %remat_b64_0;",
            ]
        );
        // The store's address, reached only through the compare, uses the same copy.
        assert!(
            got.contains(&"shl.b64 %rd5, %remat_b64_3, 4;".to_string()),
            "{got:#?}"
        );
        assert!(got.contains(&".reg .b64 %remat_b64_<4>;".to_string()));
        assert!(got.contains(&".reg .b32 %remat_b32_<2>;".to_string()));
        // The original computation stays where it was.
        assert!(got.contains(&"or.b64 %rd4, %rd2, %rd3;".to_string()));
    }

    #[test]
    fn an_index_the_loop_reads_is_left_alone() {
        let ptx = kernel("\tld.global.b32 \t%r4, [%rd4];");
        let got = recompute(&ptx);
        assert!(!got.contains("%remat_b64_3"), "{got}");
        // The parameter is not read in the loop: it is still recomputed.
        assert!(
            got.contains("ld.param.b64 \t%remat_b64_0, [k_param_0];"),
            "{got}"
        );
    }

    #[test]
    fn values_that_change_are_not_recomputed() {
        // %rd4 written twice; %r3 a loop counter; a load from global memory.
        let ptx = body(&[
            "\t.reg .pred \t%p<8>;",
            "\t.reg .b32 \t%r<9>;",
            "\t.reg .b64 \t%rd<9>;",
            "\tld.global.b64 \t%rd1, [%rd8];",
            "\tmov.u32 \t%r2, %tid.x;",
            "\tcvt.u64.u32 \t%rd4, %r2;",
            "\t@%p3 add.s64 \t%rd4, %rd4, 1;",
            "\tmov.b32 \t%r3, 0;",
            "$L__BB0_1:",
            "\tadd.s32 \t%r3, %r3, 1;",
            "\tsetp.ne.s32 \t%p1, %r3, 256;",
            "\t@%p1 bra \t$L__BB0_1;",
            "\tadd.s64 \t%rd5, %rd4, %rd1;",
            "\tst.global.b32 \t[%rd5], %r3;",
            "\tret;",
        ]);
        assert_eq!(recompute(&ptx), ptx);
    }

    /// A kernel whose body computes `%rd2` = the thread index, then runs `lines`.
    fn tid_kernel(lines: &[&str]) -> String {
        let mut all = vec![
            "\t.reg .pred \t%p<8>;",
            "\t.reg .b32 \t%r<9>;",
            "\t.reg .b64 \t%rd<9>;",
            "\tmov.u32 \t%r2, %tid.x;",
            "\tcvt.u64.u32 \t%rd2, %r2;",
        ];
        all.extend_from_slice(lines);
        body(&all)
    }

    #[test]
    fn uses_inside_a_later_loop_or_before_any_loop_are_left_alone() {
        let ptx = tid_kernel(&[
            "\tst.global.b64 \t[%rd1], %rd2;",
            "$L__BB0_1:",
            "$L__BB0_9:",
            "\t@%p3 bra \t$L__BB0_9;",
            "\t@%p1 bra \t$L__BB0_1;",
            "$L__BB0_2:",
            "\tst.global.b64 \t[%rd1], %rd2;",
            "\t@%p1 bra \t$L__BB0_2;",
            "\tret;",
        ]);
        assert_eq!(recompute(&ptx), ptx);
    }

    #[test]
    fn a_use_reached_around_the_first_one_keeps_the_register() {
        // The second store is reached from above the first one too (`@%p2 bra $L__BB0_3`), so
        // a copy at the first would not reach it: both keep %rd2.
        let ptx = tid_kernel(&[
            "$L__BB0_1:",
            "$L__BB0_9:",
            "\t@%p3 bra \t$L__BB0_9;",
            "\t@%p1 bra \t$L__BB0_1;",
            "\t@%p2 bra \t$L__BB0_3;",
            "\tst.global.b64 \t[%rd1], %rd2;",
            "$L__BB0_3:",
            "\tst.global.b64 \t[%rd1+8], %rd2;",
            "\tret;",
        ]);
        assert_eq!(recompute(&ptx), ptx);
        // Without that branch, one copy serves both.
        let straight = ptx.replace("\t@%p2 bra \t$L__BB0_3;\n", "");
        let got = instructions(&recompute(&straight));
        assert_eq!(
            got[got.len() - 6..got.len() - 1],
            [
                "cvt.u64.u32 %remat_b64_0, %remat_b32_0;",
                "st.global.b64 [%rd1], %remat_b64_0;",
                "$L__BB0_3:",
                "st.global.b64 [%rd1+8], %remat_b64_0;",
                "ret;",
            ]
        );
    }

    #[test]
    fn a_lone_loop_is_not_worth_a_copy() {
        let ptx = kernel("\tld.shared.b32 \t%r4, [%r3];").replace(
            "$L__BB0_9:\n\tadd.s32 \t%r5, %r5, 1;\n\tsetp.ne.s32 \t%p3, %r5, 8;\n\t@%p3 bra \t$L__BB0_9;\n",
            "",
        );
        assert!(!ptx.contains("BB0_9"));
        assert_eq!(recompute(&ptx), ptx);
    }

    #[test]
    fn register_names_are_replaced_whole() {
        assert_eq!(
            replace_register("add.s64 %rd4, %rd40, %rd4;", "%rd4", "%x"),
            "add.s64 %x, %rd40, %x;"
        );
    }
}
