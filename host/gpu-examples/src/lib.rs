//! The examples, each a GPU run checked against a CPU reference.
//!
//! The kernels live in `kernels/example-kernels`; `build.rs` compiles them to PTX and generates the typed
//! launchers included below, so `cargo run -p gpu-examples --bin <example>` just works.

pub mod check;
pub mod image;
pub mod matmul;
pub mod monte_carlo;
pub mod nbody;
pub mod reduce;
pub mod report;
pub mod vector;

/// Typed launchers for the `example_kernels` PTX module (generated at build time).
pub mod kernels {
    gpu_host::include_kernels!("example_kernels");
}

pub use kernels::example_kernels::Module as ExampleKernels;

/// Deterministic pseudo-random inputs in [-1, 1), so runs are reproducible without a rand
/// crate: the test kit's [`signed_f32s`](gpu_test_kit::rng::signed_f32s).
pub fn random_f32(len: usize, seed: u64) -> Vec<f32> {
    gpu_test_kit::rng::signed_f32s(len, seed)
}
