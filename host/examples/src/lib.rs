//! The seed examples, each a GPU run checked against a CPU reference.
//!
//! The kernels live in `kernels/seed`; `build.rs` compiles them to PTX and generates the typed
//! launchers included below, so `cargo run -p seed-examples --bin <example>` just works.

pub mod check;
pub mod image;
pub mod matmul;
pub mod monte_carlo;
pub mod nbody;
pub mod reduce;
pub mod report;
pub mod vector;

/// Typed launchers for the `seed_kernels` PTX module (generated at build time).
pub mod kernels {
    gpu_host::include_kernels!("seed_kernels");
}

pub use kernels::seed_kernels::Module as SeedKernels;

/// Deterministic pseudo-random inputs (xorshift), so runs are reproducible without a rand crate.
pub fn random_f32(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}
