//! The device a test runs on, and the visible `SKIPPED` line when it cannot run.
//!
//! GPU tests run on the first GPU, or on the CPU simulator when there is none, so that CI
//! without a GPU still runs them; tests that need real hardware (sticky faults, the sanitizer,
//! Hopper-only instructions, timing) print `SKIPPED <test>: <reason>` instead of passing
//! silently.

use gpu_host::{Error, Gpu};

/// The device a GPU test runs on: the first GPU; or the CPU simulator when there is no GPU, or
/// when `GPU_BACKEND=sim`. With `GPU_BACKEND=cuda` a missing GPU is a visible `SKIPPED` line
/// (`None`) instead. Any other error fails the test: a broken GPU must not look like a missing
/// one.
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    match std::env::var("GPU_BACKEND").as_deref() {
        Ok("sim") => Some(simulator()),
        Ok("cuda") => cuda_gpu_or_skip(test),
        _ => Some(first_gpu(test).unwrap_or_else(|_| {
            static NOTE: std::sync::Once = std::sync::Once::new();
            NOTE.call_once(|| {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "NOTE: no GPU here: the GPU tests of this binary run on the CPU simulator"
                );
            });
            simulator()
        })),
    }
}

/// A real GPU for the tests that need hardware (sticky faults and recovery, the sanitizer,
/// timing), or `None` after a visible `SKIPPED` line.
pub fn cuda_gpu_or_skip(test: &str) -> Option<Gpu> {
    first_gpu(test)
        .map_err(|missing| skipped(test, &format!("needs a GPU ({missing})")))
        .ok()
}

/// A compute capability 9.0 GPU for the tests of Hopper-only features (wgmma, TMA, clusters,
/// which the simulator does not model), or `None` after a visible `SKIPPED` line.
pub fn hopper_gpu_or_skip(test: &str) -> Option<Gpu> {
    let gpu = cuda_gpu_or_skip(test)?;
    let cc = gpu.properties().compute_capability;
    if cc != (9, 0) {
        skipped(
            test,
            &format!("needs a compute capability 9.0 GPU, this one is {cc:?}"),
        );
        return None;
    }
    Some(gpu)
}

/// The first GPU, or the error saying there is none (no driver, no device). Any other error
/// panics: a broken GPU must not look like a missing one.
fn first_gpu(test: &str) -> Result<Gpu, Error> {
    match Gpu::first() {
        Ok(gpu) => Ok(gpu),
        Err(missing @ (Error::NoDriver { .. } | Error::NoDevice)) => Err(missing),
        Err(err) => panic!("{test}: opening the GPU failed: {err}"),
    }
}

fn simulator() -> Gpu {
    Gpu::simulator().expect("the CPU simulator always opens")
}

/// Prints `SKIPPED <test>: <reason>` where it is seen: straight to the process's stderr, which
/// the test harness does not capture (it captures `println!`/`eprintln!` of passing tests).
pub fn skipped(test: &str, reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// Largest input the tests give the simulator: it runs kernels thousands of times slower than
/// a GPU, and every edge case (empty, partial tiles, 2^k ± 1, several tiles) fits below it.
pub const SIMULATOR_MAX_ELEMENTS: usize = 70_000;

/// `sizes`, without those above [`SIMULATOR_MAX_ELEMENTS`] when `gpu` is the simulator, and
/// without those above [`max_len`].
pub fn sizes_for(gpu: &Gpu, sizes: &[usize]) -> Vec<usize> {
    sizes
        .iter()
        .copied()
        .filter(|&n| len_ok(n) && (!gpu.is_simulator() || n <= SIMULATOR_MAX_ELEMENTS))
        .collect()
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
