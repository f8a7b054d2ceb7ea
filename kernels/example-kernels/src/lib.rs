//! The example kernels: what users try first.
//!
//! Each kernel has a CPU reference in `gpu-examples` (host/gpu-examples) that checks it.
#![no_std]

pub mod image;
pub mod matmul;
pub mod monte_carlo;
pub mod nbody;
pub mod reduce;
pub mod vector;
