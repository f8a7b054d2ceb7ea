//! Starts the loads a bounds check guards before the check's branch to `trap`.
//!
//! In `checks = "trap"` builds a checked access is a compare, a branch to a block that only
//! traps, and then the load. ptxas never moves a load above a branch (the load could fault where
//! the branch would have left), so every load waits for the compares before it, and in a loop a
//! check of a loaded value (an index read from memory: SpMV's `x[columns[j]]`) serializes the
//! loads behind one another. nvcc's code has no checks and issues all of them at once.
//!
//! The rewrite moves register arithmetic and plain loads that follow a branch to a trap block
//! up above that branch, repeatedly, so a straight run of code ends up with its loads first and
//! its checks after them, where [`crate::guards`] makes them one branch:
//!
//! ```text
//!     setp.ge.u64  %p13, %rd6, %rd8;               setp.ge.u64  %p13, %rd6, %rd8;
//!     @%p13 bra    $L__BB0_12;          →          ld.global.b32 %r8, [%rd21+-4];
//!     ld.global.b32 %r8, [%rd21+-4];               @%p13 bra    $L__BB0_12;
//! ```
//!
//! **What a failed check does then.** The launch still fails before anything it computed can
//! be stored: only loads and register arithmetic move, never a store, atomic, barrier, call or
//! branch, so every store still waits for every check before it. What changes is how it
//! fails: a load whose check would fail may now run first, with its out-of-range address. It
//! then reads some other memory, whose value is dropped when the check traps, or it faults
//! with an illegal address first. Both stop the launch and reach the host as
//! `Error::KernelFault` naming the kernel; the driver's error code differs
//! (`CUDA_ERROR_ILLEGAL_ADDRESS` instead of `CUDA_ERROR_LAUNCH_FAILED`). `checks = "report"`
//! builds, which name the failing line, branch to a reporting call instead and are left as
//! they are.
//!
//! **What moves.** After a branch to a block that is only `trap; exit;` (or `trap;`), the
//! straight run of code that follows it (the only labels between are ones no branch targets)
//! up to the first instruction that may not move: unpredicated register arithmetic (the
//! list `ptx::ARITHMETIC`: moves, adds, compares, conversions, ...) and plain loads from
//! global, shared, constant or parameter memory (not volatile, not acquire), none writing the
//! branch's predicate. The run moves above the branch, in its order, when it holds a load; a
//! run of arithmetic alone stays below (ptxas schedules arithmetic across branches itself;
//! moved, it only gave ptxas another schedule, a slower one for `select_if`: README, "Writing
//! fast kernels").
//!
//! It runs as part of [`crate::branches::reshape`], under its switch, before
//! [`crate::guards`]; its revision is part of [`crate::branches::REVISION`].

use crate::ptx::{
    branch_targets, conditional_branch, destinations, is_arithmetic, is_filler, is_plain_load,
    label, trap_labels,
};

/// The module with the rewrite applied to every function body.
pub fn hoist(ptx: &str) -> String {
    crate::branches::map_bodies(ptx, hoist_body)
}

/// Whether the line is a load that may start before a check.
fn is_load(line: &str) -> bool {
    is_plain_load(
        line,
        &["ld.global.", "ld.shared.", "ld.const.", "ld.param."],
    )
}

/// The body with the movable lines after each trap branch moved above it.
fn hoist_body(mut body: Vec<String>) -> Vec<String> {
    let traps = trap_labels(&body);
    if traps.is_empty() {
        return body;
    }
    let targets = branch_targets(&body);
    // Each round moves lines up past one branch; a line passes each branch at most once.
    let mut rounds = 0;
    loop {
        let mut moved_any = false;
        let mut g = 0;
        while g < body.len() {
            let Some((_, pred, target)) = conditional_branch(&body[g]) else {
                g += 1;
                continue;
            };
            if !traps.contains(target) {
                g += 1;
                continue;
            }
            let pred = pred.to_string();
            let mut moving = Vec::new();
            for (k, line) in body.iter().enumerate().skip(g + 1) {
                if is_filler(line) {
                    continue;
                }
                if let Some(l) = label(line) {
                    if targets.contains(l) {
                        break;
                    }
                    continue;
                }
                if !(is_arithmetic(line) || is_load(line))
                    || destinations(line).contains(&pred.as_str())
                {
                    break;
                }
                moving.push(k);
            }
            // Only a run with a load in it: arithmetic alone gains nothing above the branch
            // (ptxas schedules it across branches itself).
            if !moving.iter().any(|&k| is_load(&body[k])) {
                g += 1;
                continue;
            }
            // The moved lines, then the branch, then what stays (layout, unused labels).
            let last = *moving.last().expect("a run holds a load");
            let (mut moved, mut stays) = (Vec::new(), vec![body[g].clone()]);
            for (k, line) in body.iter().enumerate().take(last + 1).skip(g + 1) {
                let to = if moving.binary_search(&k).is_ok() {
                    &mut moved
                } else {
                    &mut stays
                };
                to.push(line.clone());
            }
            let n = moved.len();
            moved.extend(stays);
            body.splice(g..=last, moved);
            g += n + 1;
            moved_any = true;
        }
        rounds += 1;
        if !moved_any || rounds > 64 {
            break;
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::test_support::{body, instructions};

    /// A run of checks and loads as LLVM writes them for two checked neighbour reads.
    const TWO_READS: &[&str] = &[
        "\tsetp.ge.u64 \t%p1, %rd5, %rd8;",
        "\t@%p1 bra \t$L__BB0_12;",
        "$L__BB0_3:",
        "\tld.global.b32 \t%r8, [%rd21];",
        "\tadd.s64 \t%rd6, %rd5, 1;",
        "\tsetp.ge.u64 \t%p2, %rd6, %rd8;",
        "\t@%p2 bra \t$L__BB0_12;",
        "\tld.global.nc.b32 \t%r9, [%rd21+4];",
        "\tadd.f32 \t%r10, %r8, %r9;",
        "\tst.global.b32 \t[%rd7], %r10;",
        "\tret;",
        "$L__BB0_12:",
        "\ttrap; exit;",
    ];

    #[test]
    fn loads_and_what_feeds_them_move_above_every_check_before_them() {
        let got = instructions(&hoist(&body(TWO_READS)));
        assert_eq!(
            got[2..14],
            [
                "setp.ge.u64 %p1, %rd5, %rd8;",
                "ld.global.b32 %r8, [%rd21];",
                "add.s64 %rd6, %rd5, 1;",
                "setp.ge.u64 %p2, %rd6, %rd8;",
                "ld.global.nc.b32 %r9, [%rd21+4];",
                "add.f32 %r10, %r8, %r9;",
                "@%p1 bra $L__BB0_12;",
                "$L__BB0_3:",
                "@%p2 bra $L__BB0_12;",
                "st.global.b32 [%rd7], %r10;",
                "ret;",
                "$L__BB0_12:",
            ]
        );
    }

    #[test]
    fn stores_targets_and_other_effects_stay_behind_the_check() {
        // A label some branch targets: code after it may be entered without the check.
        let mut lines = TWO_READS.to_vec();
        lines.insert(0, "\t@%p9 bra \t$L__BB0_3;");
        let got = instructions(&hoist(&body(&lines)));
        assert_eq!(got[4], "@%p1 bra $L__BB0_12;");
        // A store, a volatile load, an atomic, a barrier right after the first check.
        for first in [
            "\tst.global.b32 \t[%rd7], %r1;",
            "\tld.volatile.global.b32 \t%r8, [%rd21];",
            "\tatom.global.add.u32 \t%r8, [%rd21], 1;",
            "\tbarrier.sync 0;",
            "\t@%p3 ld.global.b32 \t%r8, [%rd21];",
        ] {
            let mut lines = TWO_READS.to_vec();
            lines[3] = first;
            let got = instructions(&hoist(&body(&lines)));
            assert_eq!(got[3], "@%p1 bra $L__BB0_12;", "{first}");
        }
        // Not a trap block: an ordinary branch.
        let text = body(&TWO_READS[..11]);
        assert_eq!(hoist(&text), text);
    }

    #[test]
    fn arithmetic_without_a_load_stays_below_the_check() {
        let mut lines = TWO_READS.to_vec();
        lines.remove(7); // the second load
        let got = instructions(&hoist(&body(&lines)));
        // The first check's run has a load and moves; after the second check only arithmetic.
        assert_eq!(got[8], "@%p2 bra $L__BB0_12;");
        assert_eq!(got[9], "add.f32 %r10, %r8, %r9;");
    }

    #[test]
    fn a_line_that_writes_the_tested_predicate_stays() {
        let mut lines = TWO_READS.to_vec();
        lines[3] = "\tsetp.lt.u64 \t%p1, %rd5, %rd9;";
        let got = instructions(&hoist(&body(&lines)));
        assert_eq!(got[3], "@%p1 bra $L__BB0_12;");
        assert_eq!(got[4], "$L__BB0_3:");
    }
}
