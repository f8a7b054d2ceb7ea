//! Merges runs of bounds-check branches to `trap` into one branch.
//!
//! In `checks = "trap"` builds every checked index is a compare and a branch to a block that
//! only traps. A stencil's four neighbour reads become four of them in a row, each waiting for
//! its own compare, before the first load may issue:
//!
//! ```text
//!     setp.ge.u64     %p11, %rd18, %rd8;
//!     @%p11 bra       $L__BB0_12;              // $L__BB0_12: trap; exit;
//!     add.s64         %rd19, %rd5, 1;
//!     setp.lt.u64     %p12, %rd19, %rd8;
//!     @!%p12 bra      $L__BB0_13;              // $L__BB0_13: trap; exit;
//! ```
//!
//! One branch on the union of the failures does the same, with the compares side by side:
//!
//! ```text
//!     setp.ge.u64     %p11, %rd18, %rd8;
//!     add.s64         %rd19, %rd5, 1;
//!     setp.lt.u64     %p12, %rd19, %rd8;
//!     not.pred        %trp0, %p12;
//!     or.pred         %trp1, %p11, %trp0;
//!     @%trp1 bra      $L__BB0_12;
//! ```
//!
//! The launch traps exactly when it trapped before: the lines between the branches are
//! arithmetic on registers (no memory access, barrier, call or other effect), which the merged
//! branch lets run where an earlier check would already have trapped, to no visible effect. A
//! run is merged only when nothing else enters it (no label inside it is a branch target) and
//! no predicate it tests is written again before the merged branch. The Jacobi twin's four
//! neighbour checks, merged by hand, ran 3% faster (README, "Writing fast kernels").
//!
//! It runs as part of [`crate::branches::reshape`], under its switch; its revision is part of
//! [`crate::branches::REVISION`].

use crate::ptx::{
    branch_target, branch_targets, conditional_branch, declare, instruction, is_arithmetic,
    is_filler, label, trap_labels,
};
use std::collections::HashSet;

/// The prefix of the predicates the rewrite declares; a body that already uses it is left alone.
const PREFIX: &str = "%trp";

/// The module with the rewrite applied to every function body.
pub fn merge(ptx: &str) -> String {
    crate::branches::map_bodies(ptx, merge_body)
}

/// A conditional branch to a trap block: `(negated, predicate)`.
fn guard<'a>(line: &'a str, traps: &HashSet<String>) -> Option<(bool, &'a str)> {
    let (negated, pred, target) = conditional_branch(line)?;
    traps.contains(target).then_some((negated, pred))
}

/// An unpredicated single instruction that only computes registers: its destination.
fn pure_destination(line: &str) -> Option<&str> {
    is_arithmetic(line).then(|| instruction(line).map(|(_, ops)| ops[0]))?
}

/// The body with every run of two or more guards merged.
fn merge_body(mut body: Vec<String>) -> Vec<String> {
    if body
        .iter()
        .any(|l| crate::ptx::strip_comment(l).contains(PREFIX))
    {
        return body;
    }
    let code_lines: Vec<usize> = (0..body.len()).filter(|&i| !is_filler(&body[i])).collect();
    let traps = trap_labels(&body);
    if traps.is_empty() {
        return body;
    }
    let targets = branch_targets(&body);

    // Runs: guard indices (into `code_lines`) that may merge.
    let mut runs: Vec<Vec<usize>> = Vec::new();
    let mut run: Vec<usize> = Vec::new();
    let mut tested: Vec<&str> = Vec::new();
    for (k, &i) in code_lines.iter().enumerate() {
        let line = &body[i];
        if let Some((_, pred)) = guard(line, &traps) {
            run.push(k);
            tested.push(pred);
            continue;
        }
        let keeps_run = match (label(line), pure_destination(line)) {
            (Some(l), _) => !targets.contains(l),
            (None, Some(dest)) => !tested.contains(&dest),
            (None, None) => false,
        };
        if !keeps_run {
            if run.len() >= 2 {
                runs.push(std::mem::take(&mut run));
            }
            run.clear();
            tested.clear();
        }
    }
    if run.len() >= 2 {
        runs.push(run);
    }
    if runs.is_empty() {
        return body;
    }

    let mut fresh = 0usize;
    let mut next = || {
        let name = format!("{PREFIX}{fresh}");
        fresh += 1;
        name
    };
    // Rewrite from the last run back, so earlier indices stay valid.
    for run in runs.iter().rev() {
        let lines: Vec<usize> = run.iter().map(|&k| code_lines[k]).collect();
        let first_target = branch_target(&body[lines[0]])
            .unwrap_or_default()
            .to_string();
        let mut merged = Vec::new();
        let mut failed: Option<String> = None;
        for &i in &lines {
            let (negated, pred) = guard(&body[i], &traps).expect("a guard");
            let fail = if negated {
                let t = next();
                merged.push(format!("\tnot.pred \t{t}, {pred};"));
                t
            } else {
                pred.to_string()
            };
            failed = Some(match failed {
                None => fail,
                Some(so_far) => {
                    let t = next();
                    merged.push(format!("\tor.pred \t{t}, {so_far}, {fail};"));
                    t
                }
            });
        }
        let failed = failed.expect("a run has guards");
        merged.push(format!("\t@{failed} bra \t{first_target};"));
        let last = *lines.last().expect("a run has guards");
        body.splice(last..=last, merged);
        for &i in lines[..lines.len() - 1].iter().rev() {
            body.remove(i);
        }
    }
    declare(&mut body, format!("\t.reg .pred \t{PREFIX}<{fresh}>;"));
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::test_support::{body, instructions};

    /// The Jacobi twin's neighbour checks as LLVM wrote them (after the forward-jump rewrite).
    const JACOBI: &[&str] = &[
        "\t.reg .pred \t%p<17>;",
        "$L__BB0_4:",
        "\tadd.s64 \t%rd18, %rd5, -1;",
        "\tsetp.ge.u64 \t%p11, %rd18, %rd8;",
        "\t@%p11 bra \t$L__BB0_12;",
        "\tadd.s64 \t%rd19, %rd5, 1;",
        "\tsetp.lt.u64 \t%p12, %rd19, %rd8;",
        "\t@!%p12 bra \t$L__BB0_13;",
        "$L__BB0_6:",
        "\tsub.s64 \t%rd6, %rd5, %rd4;",
        "\tsetp.lt.u64 \t%p13, %rd6, %rd8;",
        "\t@!%p13 bra \t$L__BB0_13;",
        "$L__BB0_8:",
        "\tld.global.b32 \t%r8, [%rd21+-4];",
        "\tret;",
        "$L__BB0_12:",
        "\ttrap; exit;",
        "$L__BB0_13:",
        "\ttrap; exit;",
    ];

    #[test]
    fn a_run_of_checks_becomes_one_branch_on_any_failure() {
        let got = instructions(&merge(&body(JACOBI)));
        assert_eq!(
            got[2..17],
            [
                ".reg .pred %p<17>;",
                ".reg .pred %trp<4>;",
                "$L__BB0_4:",
                "add.s64 %rd18, %rd5, -1;",
                "setp.ge.u64 %p11, %rd18, %rd8;",
                "add.s64 %rd19, %rd5, 1;",
                "setp.lt.u64 %p12, %rd19, %rd8;",
                "$L__BB0_6:",
                "sub.s64 %rd6, %rd5, %rd4;",
                "setp.lt.u64 %p13, %rd6, %rd8;",
                "not.pred %trp0, %p12;",
                "or.pred %trp1, %p11, %trp0;",
                "not.pred %trp2, %p13;",
                "or.pred %trp3, %trp1, %trp2;",
                "@%trp3 bra $L__BB0_12;",
            ]
        );
        assert_eq!(got[17], "$L__BB0_8:");
    }

    /// `JACOBI` with line `at` replaced.
    fn jacobi_with(at: usize, line: &str) -> String {
        let mut lines = JACOBI.to_vec();
        lines[at] = line;
        body(&lines)
    }

    /// Asserts that the rewritten code has each of `lines`.
    fn assert_has(got: &[String], lines: &[&str]) {
        for line in lines {
            assert!(got.iter().any(|g| g == line), "{line} in {got:?}");
        }
    }

    #[test]
    fn memory_accesses_and_entries_end_a_run() {
        // A load between the second and third check: the first two still merge, not the third.
        let got = instructions(&merge(&jacobi_with(9, "\tld.global.b64 \t%rd6, [%rd5];")));
        assert_has(&got, &["@%trp1 bra $L__BB0_12;", "@!%p13 bra $L__BB0_13;"]);
        // A branch into the run (to $L__BB0_6): only the checks before it merge.
        let mut lines = JACOBI.to_vec();
        lines.insert(15, "\tbra.uni \t$L__BB0_6;");
        let got = instructions(&merge(&body(&lines)));
        assert_has(&got, &["@%trp1 bra $L__BB0_12;", "@!%p13 bra $L__BB0_13;"]);
    }

    #[test]
    fn a_tested_predicate_written_again_ends_the_run() {
        let got = instructions(&merge(&jacobi_with(5, "\tsetp.lt.u64 \t%p11, %rd5, %rd8;")));
        // %p11 is written again after the first check: it stays alone, the next two merge.
        assert_has(
            &got,
            &[
                "@%p11 bra $L__BB0_12;",
                "or.pred %trp2, %trp0, %trp1;",
                "@%trp2 bra $L__BB0_13;",
            ],
        );
    }

    #[test]
    fn single_checks_and_other_branches_are_unchanged() {
        let ptx = body(&[
            "\tsetp.ge.u64 \t%p1, %rd1, %rd2;",
            "\t@%p1 bra \t$L__BB0_9;",
            "\tadd.s64 \t%rd3, %rd1, 1;",
            "\t@%p2 bra \t$L__BB0_4;", // not to a trap block
            "\tsetp.ge.u64 \t%p3, %rd3, %rd2;",
            "\t@%p3 bra \t$L__BB0_9;",
            "$L__BB0_4:",
            "\tret;",
            "$L__BB0_9:",
            "\ttrap; exit;",
        ]);
        assert_eq!(merge(&ptx), ptx);
    }
}
