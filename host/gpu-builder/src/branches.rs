//! Reshapes LLVM's conditional branches into the form ptxas optimizes.
//!
//! LLVM's NVPTX backend ends many blocks with a conditional branch to the block that follows and
//! an unconditional branch elsewhere (it cannot reverse a branch condition, so branch folding
//! leaves the pair):
//!
//! ```text
//!     setp.eq.s64  %p3, %rd7, %rd9;
//!     @%p3 bra     $L__BB0_5;        // to the next line
//!     bra.uni      $L__BB0_6;
//! $L__BB0_5:
//! ```
//!
//! One branch does the same: `@!%p3 bra $L__BB0_6;`. That is how nvcc's PTX looks, and ptxas
//! treats the two differently: behind the pair it neither if-converts the short blocks nor
//! hoists their loads, so a guarded load waits for the branch (the heat-equation twin's halo
//! loads; README, "Writing fast kernels", has the figures). The rewrite is exact:
//! `@%p bra NEXT; bra.uni ELSE; NEXT:` becomes `@!%p bra ELSE; NEXT:` (and `@!%p` becomes
//! `@%p`), nothing else changes.
//!
//! Forward jumps only. A loop's back edge keeps LLVM's shape (`@%p bra $exit; bra.uni $head`):
//! in nvcc's shape (`@%p bra $head`) ptxas unrolls the loop itself, as it does nvcc's, and on
//! LLVM's 64-bit loop counters that measured slower. The rewrites that run after this one:
//!
//! - [`crate::counters`]: loops whose counter fits 32 bits get both, the 32-bit counter and
//!   nvcc's back edge;
//! - [`crate::speculate`]: loads move above the bounds checks before them;
//! - [`crate::guards`]: runs of bounds checks become one branch;
//! - [`crate::barriers`]: a barrier LLVM copied for threads that only wait and return is
//!   merged back;
//! - [`crate::shared_pairs`]: neighbouring shared-memory words become one vector access.
//!
//! Crates tuned to LLVM's shape can keep it, and skip all of them, with
//! `[package.metadata.gpu] branches = "llvm"` (dense-kernels and hopper-kernels do: ptxas
//! allocates their large kernels differently after the rewrite, with more spills).
//!
//! Comments, blank lines and `.loc` directives between the instructions of a pattern are kept.
//! Anything the rewrite does not recognize is left as LLVM wrote it.

use crate::ptx::{code, conditional_branch, is_filler, label, unconditional_branch};
use std::collections::HashMap;

/// Names this rewrite in the record of what a module's PTX was made from, so that PTX reshaped
/// by an earlier version of it is rebuilt: change it whenever the rewrite's output changes.
pub const REVISION: &str = concat!(
    "forward jumps v1, counted loops v1, merged checks v1, merged exit barriers v1, ",
    "shared pairs v1, loads before checks v1"
);

/// The module with the rewrite applied to every function body, then those of
/// [`crate::counters`], [`crate::speculate`], [`crate::guards`], [`crate::barriers`] and
/// [`crate::shared_pairs`].
pub fn reshape(ptx: &str) -> String {
    let reshaped = crate::counters::narrow(&map_bodies(ptx, reshape_body));
    let checked = crate::guards::merge(&crate::speculate::hoist(&reshaped));
    let merged = crate::barriers::merge(&checked);
    crate::shared_pairs::merge(&merged)
}

/// The module with `rewrite` applied to the lines of every function body (between its braces);
/// text outside the bodies is unchanged. Shared with [`crate::peephole`].
pub(crate) fn map_bodies(ptx: &str, rewrite: impl Fn(Vec<String>) -> Vec<String>) -> String {
    let lines: Vec<String> = ptx.lines().map(str::to_string).collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if code(&lines[i]) == "{" {
            let close = body_end(&lines, i);
            out.push(lines[i].clone());
            out.extend(rewrite(lines[i + 1..close].to_vec()));
            i = close;
        }
        if i < lines.len() {
            out.push(lines[i].clone());
        }
        i += 1;
    }
    let mut text = out.join("\n");
    if ptx.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The line index of the `}` that closes the body opened at `open` (or the last line).
pub(crate) fn body_end(lines: &[impl AsRef<str>], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, line) in lines.iter().enumerate().skip(open) {
        let c = code(line.as_ref());
        depth += c.matches('{').count();
        depth = depth.saturating_sub(c.matches('}').count());
        if depth == 0 {
            return i;
        }
    }
    lines.len() - 1
}

/// The body with the rewrite applied (the lines between its braces).
fn reshape_body(mut body: Vec<String>) -> Vec<String> {
    let code_lines: Vec<usize> = (0..body.len()).filter(|&i| !is_filler(&body[i])).collect();
    let defined_at: HashMap<&str, usize> = code_lines
        .iter()
        .filter_map(|&i| label(&body[i]).map(|l| (l, i)))
        .collect();
    let mut rewrites = Vec::new();
    for w in code_lines.windows(3) {
        let (b, u, l) = (w[0], w[1], w[2]);
        let Some((negated, pred, next)) = conditional_branch(&body[b]) else {
            continue;
        };
        let (Some(other), Some(label)) = (unconditional_branch(&body[u]), label(&body[l])) else {
            continue;
        };
        // Forward jumps only: a loop's back edge stays as LLVM wrote it (module docs).
        let forward = defined_at.get(other).is_some_and(|&at| at > u);
        if next != label || !forward {
            continue;
        }
        let bang = if negated { "" } else { "!" };
        rewrites.push((b, format!("\t@{bang}{pred} bra \t{other};"), u));
    }
    for (b, branch, u) in rewrites.into_iter().rev() {
        body[b] = branch;
        body.remove(u);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::test_support::{body, instructions};

    #[test]
    fn a_guard_branch_and_a_forward_jump_become_one_negated_branch() {
        let ptx = body(&[
            "\tsetp.lt.u64 \t%p5, %rd4, %rd9;",
            "\t@%p5 bra \t$L__BB8_5;",
            "\tbra.uni \t$L__BB8_6;",
            "$L__BB8_5:",
            "\tld.global.b32 \t%r1, [%rd8];",
            "$L__BB8_6:",
            "\tret;",
        ]);
        assert_eq!(
            instructions(&reshape(&ptx))[2..6],
            [
                "setp.lt.u64 %p5, %rd4, %rd9;",
                "@!%p5 bra $L__BB8_6;",
                "$L__BB8_5:",
                "ld.global.b32 %r1, [%rd8];",
            ]
        );
    }

    #[test]
    fn a_loop_back_edge_is_unchanged() {
        let ptx = body(&[
            "$L__BB8_7:",
            "\tadd.s64 \t%rd29, %rd29, 32;",
            "\tsetp.eq.b64 \t%p5, %rd29, 4096;",
            "\t@%p5 bra \t$L__BB8_8;",
            "\tbra.uni \t$L__BB8_7;",
            "$L__BB8_8:",
            "\tret;",
        ]);
        assert_eq!(reshape(&ptx), ptx);
    }

    #[test]
    fn a_negated_branch_becomes_a_positive_one() {
        let ptx = body(&[
            "\t@!%p1 bra \t$L__BB0_2;",
            "\tbra.uni \t$L__BB0_3;",
            "$L__BB0_2:",
            "$L__BB0_3:",
        ]);
        assert_eq!(
            instructions(&reshape(&ptx))[2..4],
            ["@%p1 bra $L__BB0_3;", "$L__BB0_2:"]
        );
    }

    #[test]
    fn comments_between_the_branches_do_not_hide_the_pattern() {
        let ptx = body(&[
            "\t@%p3 bra \t$L__BB1_5;",
            "\t//> src/lib.rs:12  x += 1;",
            "\t.loc 1 12 5",
            "\tbra.uni \t$L__BB1_9;",
            "$L__BB1_5:",
            "$L__BB1_9:",
        ]);
        let got = instructions(&reshape(&ptx));
        assert_eq!(got[2..4], ["@!%p3 bra $L__BB1_9;", ".loc 1 12 5"]);
        assert_eq!(got[4], "$L__BB1_5:");
    }

    #[test]
    fn other_code_is_unchanged() {
        let ptx = body(&[
            // The jump is a branch target itself: it must stay.
            "\t@%p1 bra \t$L__BB0_2;",
            "$L__BB0_9:",
            "\tbra.uni \t$L__BB0_3;",
            "$L__BB0_2:",
            // The conditional branch does not go to the next line.
            "\t@%p4 bra \t$L__BB0_7;",
            "\tbra.uni \t$L__BB0_3;",
            "$L__BB0_5:",
            "\tret;",
        ]);
        assert_eq!(reshape(&ptx), ptx);
    }

    #[test]
    fn text_outside_function_bodies_is_unchanged() {
        let ptx = ".version 8.0\n.target sm_80\n.global .align 8 .b8 g[8];\n";
        assert_eq!(reshape(ptx), ptx);
    }
}
