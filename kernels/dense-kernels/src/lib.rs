//! Dense kernels for any sm_80+ GPU, launched by the host crate `gpu-dense`.
//!
//! Kernel names follow `<kernel>_<type>`, e.g. `sgemm_f32`, `softmax_bf16`.
#![no_std]

// Links the device library (its panic handler) even before a module here uses it.
use gpu as _;

pub mod attention;
pub mod gemm;
pub mod layernorm;
pub mod rows;
pub mod sgemm;
pub mod softmax;
