//! Shared helpers for the integration tests.

use gpu_host::{Error, Gpu};

/// The first GPU, or `None` after printing a visible `SKIPPED` line saying why (no driver, no
/// device). Any other error fails the test: a broken GPU must not look like a missing one.
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    match Gpu::first() {
        Ok(gpu) => Some(gpu),
        Err(err @ (Error::NoDriver { .. } | Error::NoDevice)) => {
            skipped(test, &format!("needs a GPU ({err})"));
            None
        }
        Err(err) => panic!("{test}: opening the GPU failed: {err}"),
    }
}

/// The longest input a GPU test should use: `GPU_TEST_MAX_LEN` when set, otherwise unlimited.
/// `cargo xtask sanitize` sets it, because compute-sanitizer slows kernels down by 10 to 1000
/// times; the small sizes still cover every edge case (empty, partial tiles, many tiles).
pub fn max_len() -> usize {
    std::env::var("GPU_TEST_MAX_LEN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX)
}

/// Whether a test should run input length `n` (see [`max_len`]).
pub fn len_ok(n: usize) -> bool {
    n <= max_len()
}

/// `n`, or [`max_len`] when that is smaller: for tests built around one large size.
pub fn cap_len(n: usize) -> usize {
    n.min(max_len())
}

/// Typed launchers for the `device-selftest` kernel crate.
pub mod selftest {
    gpu_host::include_kernels!("device_selftest");
}

/// Prints `SKIPPED <test>: <reason>` where it is seen: straight to the process's stderr, which
/// the test harness does not capture (it captures `println!`/`eprintln!` of passing tests).
pub fn skipped(test: &str, reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// Typed launchers for the `fault-kernels` crate (planted faults, recovery, soak).
pub mod faults {
    gpu_host::include_kernels!("fault_kernels");
}
