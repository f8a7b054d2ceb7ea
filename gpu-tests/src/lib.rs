//! Shared helpers for the integration tests: the typed launchers of the test-only kernel
//! crates, and the test kit's backend helpers.

// The GPU-or-simulator choice and the SKIPPED lines live in the shared test kit (benches and
// other crates' tests use them too); re-exported so the test files can name either.
pub use gpu_test_kit::backend::{
    SIMULATOR_MAX_ELEMENTS, cap_len, cuda_gpu_or_skip, gpu_or_skip, hopper_gpu_or_skip, len_ok,
    max_len, sizes_for, skipped,
};

/// Typed launchers for the `device-selftest` kernel crate.
pub mod selftest {
    gpu_host::include_kernels!("device_selftest");
}

/// Typed launchers for the `fault-kernels` crate (planted faults, recovery, soak).
pub mod faults {
    gpu_host::include_kernels!("fault_kernels");
}

// Typed launchers for the `test-kernels` crate (`test_kernels::Module`): the fixed kernels the
// tooling tests and the compile-fail checks name.
gpu_host::include_kernels!("test_kernels");

pub use self::test_kernels::Module as TestKernels;

/// Runs `f` with the GPU (or the simulator, see [`gpu_or_skip`]) and the algorithm kernels
/// loaded on it; prints the SKIPPED line and returns when there is neither.
pub fn with_algorithms(test: &str, f: impl FnOnce(&gpu_host::Gpu, &gpu_algorithms::Algorithms)) {
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    let algos = gpu_algorithms::Algorithms::load(&gpu).expect("loading the algorithm kernels");
    f(&gpu, &algos);
}

/// Asserts that `r` is the error for a bad `argument` (nothing launched), naming `what` was
/// tried when it is not.
pub fn assert_argument_error<T>(what: &str, argument: &str, r: Result<T, gpu_host::Error>) {
    match r {
        Err(gpu_host::Error::Argument { argument: a, .. }) if a == argument => {}
        Err(e) => panic!("{what}: wrong error {e}"),
        Ok(_) => panic!("{what}: accepted"),
    }
}
