//! Hopper (sm_90) building blocks for tensor-core kernels: shared-memory barriers with
//! transaction counts ([`mbarrier`]), the tensor memory accelerator's bulk tensor copies
//! ([`tma`]), thread-block clusters and distributed shared memory ([`cluster`]) and, on sm_90a
//! only, warpgroup matrix multiply-accumulate ([`wgmma`]).
//!
//! These are thin wrappers over single PTX instructions. Their contracts (alignment, who may
//! call them, ordering) are on each function; the instructions are asynchronous, so most are
//! `unsafe`. On the CPU simulator they report "unsupported on simulator": host code must pick
//! another kernel there (see `gpu-dense`).
//!
//! Shared memory is addressed with 32-bit shared-window addresses (`SharedSlice::addr()`).

pub mod cluster;
pub mod mbarrier;
pub mod tma;
#[cfg(any(gpu_sm90a, not(target_arch = "nvptx64")))]
pub mod wgmma;
