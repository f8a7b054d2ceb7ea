//! The test kit: what the workspace's tests, benchmarks and examples share, so that each file
//! states only what it checks.
//!
//! - [`rng`]: deterministic input generators (xorshift64, xorshift64*, xorshift32, splitmix64).
//!   Inputs must reproduce from a seed without a `rand` dependency, and the expected values the
//!   tests were written against depend on the exact sequences, so each generator is kept
//!   bit-for-bit.
//! - [`devices`]: device-limit presets for launch validation without a GPU.
//! - [`compare`]: the relative-norm error against a CPU reference.
//! - [`backend`]: the GPU a test runs on (a real GPU, else the CPU simulator), and the visible
//!   `SKIPPED` line when a test needs hardware that is missing.

pub mod backend;
pub mod compare;
pub mod devices;
pub mod rng;

pub use backend::{
    SIMULATOR_MAX_ELEMENTS, cap_len, cuda_gpu_or_skip, gpu_or_skip, hopper_gpu_or_skip, len_ok,
    max_len, sizes_for, skipped,
};
pub use compare::RelNormError;
pub use rng::{SplitMix64, XorShift32, XorShift64, XorShift64Star};
