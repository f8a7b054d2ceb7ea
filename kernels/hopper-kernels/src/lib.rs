//! Kernels built for sm_90a (see `[package.metadata.gpu]` in Cargo.toml): their PTX loads only on
//! compute capability 9.0 GPUs (H100, H200). `gpu-dense` loads this module there and falls back to
//! the `dense-kernels` versions elsewhere. `cluster_histogram` shows thread-block clusters and
//! distributed shared memory (gpu-tests/tests/clusters.rs); `attention` is the FlashAttention-3
//! style forward, `attention_backward` its backward pass.
#![no_std]

// Links the device library (its panic handler) even before a module here uses it.
use gpu as _;
pub mod attention;
pub mod attention_backward;
pub mod cluster;
pub mod gemm;
