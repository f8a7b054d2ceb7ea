//! What a failed check in a kernel does: the `checks` build setting.
//!
//! Safe Rust checks every slice index (and `assert!`, `unwrap`, ...). In a kernel a failed check
//! must stop the launch; how it does so decides what the check costs when it passes:
//!
//! - [`Checks::Trap`] (the default): every panic is an inline `trap`. A passing check is a
//!   compare and a branch the hardware predicts; there are no calls, so the kernel keeps its
//!   registers and needs no stack. The host reports the fault and names the kernel, but not the
//!   thread or the message. Loops whose checks add exits are still unrolled
//!   ([`Checks::llvm_flags`]).
//! - [`Checks::Report`]: a panic first writes the panic record (block, thread, launch shape; with
//!   `gpu`'s `panic-report` feature also file, line and message), which the host turns into
//!   `Error::KernelPanic`. The report is a function call on the failure path, and a kernel that
//!   contains a call pays for it even when it never panics: ptxas gives it at least the call
//!   ABI's registers and a stack frame, and cannot unroll or schedule across the checks as
//!   freely. Measured on the twin suite: 2x slower on compute-bound kernels (SGEMM, N-body).
//! - [`Checks::Unchecked`]: indexing checks are removed (core's bounds-check panic, and the
//!   `gpu` crate's shared-memory and scatter-write checks, become "unreachable"): an
//!   out-of-bounds index is undefined behaviour, as in CUDA C++. `assert!` and other explicit
//!   panics still trap. Host builds and the CPU simulator keep every check, so tests catch what
//!   this mode would hide.
//!
//! The setting is per kernel crate (`[package.metadata.gpu] checks = "report"`) and can be
//! forced for every crate with `GPU_KERNEL_CHECKS`. Each mode has its own `core` build (the
//! nvptx sysroot): `report` uses `panic=abort`, the other two `panic=immediate-abort`, and
//! `unchecked` patches core's bounds-check panic.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Environment variable that sets the checks mode of every kernel crate.
pub const CHECKS_ENV: &str = "GPU_KERNEL_CHECKS";

/// What a failed check does in a kernel (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Checks {
    #[default]
    Trap,
    Report,
    Unchecked,
}

impl Checks {
    /// The mode for a crate: `GPU_KERNEL_CHECKS` when set, else the crate's
    /// `[package.metadata.gpu] checks`, else [`Checks::Trap`].
    pub fn resolve(crate_setting: Option<&str>) -> Result<Checks> {
        match std::env::var(CHECKS_ENV) {
            Ok(v) if !v.trim().is_empty() => v
                .parse()
                .map_err(|e: Error| e.context(format!("${CHECKS_ENV}"))),
            _ => crate_setting.map_or(Ok(Checks::Trap), str::parse),
        }
    }

    /// The rustc panic strategy flags for the kernel crate and its sysroot.
    pub fn panic_flags(self) -> &'static [&'static str] {
        match self {
            Checks::Report => &["-Cpanic=abort"],
            Checks::Trap | Checks::Unchecked => &["-Zunstable-options", "-Cpanic=immediate-abort"],
        }
    }

    /// Extra `--cfg`s for the kernel crate's device build.
    pub fn cfgs(self) -> &'static [&'static str] {
        match self {
            Checks::Unchecked => &["gpu_unchecked_indexing"],
            Checks::Trap | Checks::Report => &[],
        }
    }

    /// Extra rustc flags (LLVM options) for the kernel crate's device build in this mode.
    ///
    /// `trap`: LLVM's runtime loop unroller skips loops with more than one exit unless told
    /// otherwise, and in this mode every checked index in a loop is an exit (to its `trap`).
    /// A loop such as `for j in lo..hi { sum += v[j] * x[c[j] as usize] }` (no trip count known
    /// at compile time) then stays rolled, with one chain of dependent loads in flight, while
    /// the same loop in `unchecked` mode is unrolled by 4. `-unroll-runtime-multi-exit` lets
    /// the unroller treat those exits like the loop's own, so the copies' loads that do not
    /// wait on a check issue together (figures: README, "Writing fast kernels"). `unchecked`
    /// loops have no such exits; `report`, a debugging mode, keeps LLVM's default.
    pub fn llvm_flags(self) -> &'static [&'static str] {
        match self {
            Checks::Trap => &["-Cllvm-args=-unroll-runtime-multi-exit"],
            Checks::Report | Checks::Unchecked => &[],
        }
    }

    /// Suffix of the sysroot directory built for this mode.
    pub fn sysroot_suffix(self) -> &'static str {
        match self {
            Checks::Report => "",
            Checks::Trap => "-trap",
            Checks::Unchecked => "-unchecked",
        }
    }
}

impl fmt::Display for Checks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Checks::Trap => "trap",
            Checks::Report => "report",
            Checks::Unchecked => "unchecked",
        })
    }
}

impl FromStr for Checks {
    type Err = Error;

    fn from_str(s: &str) -> Result<Checks> {
        match s.trim() {
            "trap" => Ok(Checks::Trap),
            "report" => Ok(Checks::Report),
            "unchecked" => Ok(Checks::Unchecked),
            other => Err(Error::msg(format!(
                "unknown checks mode `{other}`: expected `trap` (default: a failed check traps), \
                 `report` (a panic reports its block and thread) or `unchecked` (no indexing \
                 checks on the device)"
            ))),
        }
    }
}

/// The text in core's `panicking.rs` that [`patch_core_for_unchecked`] rewrites: the
/// immediate-abort branch of `panic_bounds_check`.
const BOUNDS_CHECK_BODY: &str = "fn panic_bounds_check(index: usize, len: usize) -> ! {
    if cfg!(panic = \"immediate-abort\") {
        super::intrinsics::abort()
    }";

/// Rewrites core's `panicking.rs` text so that a failed slice bounds check is unreachable
/// (LLVM then deletes the check). Errors when this rustc's core has another shape.
pub fn patch_core_for_unchecked(panicking_rs: &str) -> Result<String> {
    if !panicking_rs.contains(BOUNDS_CHECK_BODY) {
        return Err(Error::msg(
            "checks = \"unchecked\": this rustc's core::panicking::panic_bounds_check does not \
             have the expected shape, so indexing checks cannot be removed; use `trap`",
        ));
    }
    Ok(panicking_rs.replacen(
        BOUNDS_CHECK_BODY,
        "fn panic_bounds_check(index: usize, len: usize) -> ! {
    if cfg!(panic = \"immediate-abort\") {
        // Patched by gpu-builder (checks = \"unchecked\"): an out-of-bounds index is UB.
        unsafe { super::intrinsics::unreachable() }
    }",
        1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for m in [Checks::Trap, Checks::Report, Checks::Unchecked] {
            assert_eq!(m.to_string().parse::<Checks>().unwrap(), m);
        }
        let err = "fast".parse::<Checks>().unwrap_err().to_string();
        assert!(err.contains("`fast`") && err.contains("trap"), "{err}");
    }

    #[test]
    fn only_trap_mode_unrolls_loops_with_check_exits() {
        let flag = "-Cllvm-args=-unroll-runtime-multi-exit";
        assert_eq!(Checks::Trap.llvm_flags(), &[flag]);
        assert!(Checks::Report.llvm_flags().is_empty());
        assert!(Checks::Unchecked.llvm_flags().is_empty());
    }

    #[test]
    fn the_bounds_check_patch_applies_once_or_refuses() {
        let text = format!("// head\n{BOUNDS_CHECK_BODY}\n    panic!()\n}}\n");
        let patched = patch_core_for_unchecked(&text).unwrap();
        assert!(patched.contains("intrinsics::unreachable()"));
        assert!(!patched.contains("super::intrinsics::abort()"));
        assert!(patch_core_for_unchecked("fn other() {}").is_err());
    }
}
