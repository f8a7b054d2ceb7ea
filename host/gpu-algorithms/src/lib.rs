//! Device-wide parallel algorithms, called from the host: the CUB "device" layer for Rust.
//!
//! ```ignore
//! use gpu_algorithms::Algorithms;
//! use gpu_host::gpu::ops::{Max, Sum};
//!
//! let gpu = gpu_host::Gpu::first()?;
//! let algos = Algorithms::load(&gpu)?;
//! let stream = gpu.default_stream();
//! let x = gpu.to_device(&[3.0f32, 1.0, 4.0, 1.0, 5.0])?;
//! assert_eq!(algos.reduce(stream, &x, Sum, 0.0)?, 14.0);
//! assert_eq!(algos.reduce(stream, &x, Max, f32::NEG_INFINITY)?, 5.0);
//! let mut prefix = gpu.alloc_zeroed::<f32>(x.len())?;
//! algos.inclusive_scan(stream, &x, &mut prefix, Sum)?;   // [3, 4, 8, 9, 14]
//! ```
//!
//! # What is there
//! | method | kernels | types × operators built in |
//! | --- | --- | --- |
//! | [`Algorithms::reduce`], [`Algorithms::reduce_into`] | one launch ([`gpu::device::reduce`]) | `f32 f64 i32 u32 i64 u64 f16 bf16` × `Sum Min Max` |
//! | [`Algorithms::inclusive_scan`], [`Algorithms::exclusive_scan`] | one launch, decoupled look-back ([`gpu::device::scan`]) | `f32 f64 i32 u32 i64 u64` × `Sum`; `f32 i32` × `Min Max` |
//! | [`Algorithms::segmented_reduce`] | one launch, a block per segment | `f32 f64 i32 u32` × `Sum Min Max` |
//! | [`Algorithms::select_if`], [`Algorithms::partition`] | one launch, look-back over counts ([`gpu::device::select`]) | `f32 f64 i32 u32 i64 u64 f16 bf16`, `x <op> threshold` |
//! | [`Algorithms::histogram_even`] | one launch, shared-memory privatized ([`gpu::device::histogram_even`]) | samples `f32 f64 i32 u32 u8 u16` |
//! | [`Algorithms::merge`], [`Algorithms::lower_bound`] | merge: two launches (merge path: [`gpu::device::merge_partition`], then [`gpu::device::merge`]); lower bound: one launch, a binary search per query ([`gpu::device::lower_bound`]) | `u32 i32 u64 i64` ([`MergeKey`]) |
//! | [`Algorithms::pack_spread`], [`Algorithms::pack`], [`Algorithms::unpack`] | one launch each, one thread per group, packed word or key ([`gpu::device::pack`]) | ascending `u32` runs |
//! | [`Algorithms::fill_uniform`], [`Algorithms::fill_normal`] | one launch, a Philox4x32-10 counter block per 16 bytes ([`gpu::device::random_fill`]) | uniform `u32 f32 f64`, normal `f32 f64` |
//! | [`Algorithms::convert`] | one launch ([`gpu::device::transform`]) | `f32 ↔ f16`, `f32 ↔ bf16` |
//! | [`Algorithms::sort_keys`], [`Algorithms::sort_pairs`] (+ `_with_temp`, bit ranges) | onesweep radix sort: a histogram, then one launch per 8 bits ([`gpu::device::radix_sort_pass`]); inputs of up to 8192 keys in one launch of one block ([`gpu::device::radix_sort_single`]) | keys `u32 i32 f32 u64 i64 f64` ([`SortKey`]) × values `u32 u64` ([`SortPairs`]) |
//!
//! Which (type, operator) pairs exist is checked at compile time through the traits
//! [`ReduceBuiltin`] and [`ScanBuiltin`]. For other types and operators, instantiate the kernel
//! in your own kernel crate with `gpu::reduce_kernel!` / `gpu::inclusive_scan_kernel!` and
//! launch it through its typed launcher with the temporary storage and configuration from
//! [`ReduceTemp`] / [`ScanTemp`] (see their docs).
//!
//! # Temporary storage
//! The plain methods keep temporary storage per stream inside [`Algorithms`] and reuse it, so
//! repeated calls allocate nothing. Callers who manage memory themselves use the `_with_temp`
//! forms with a [`ReduceTemp`] / [`ScanTemp`] they own.
//!
//! # Errors
//! Bad input (an output too short, mismatched devices) returns an error before anything is
//! launched. All methods are asynchronous on the given stream except those that return a value
//! to the host ([`Algorithms::reduce`]), which synchronize.

mod histogram;
pub mod math_maps;
mod merge;
mod pack;
mod random;
mod reduce;
mod scan;
mod segmented;
mod select;
mod sort;
mod temp;
mod transform;

pub use histogram::HistogramBuiltin;
pub use merge::{MergeKey, MergeTemp};
pub use random::{NormalBuiltin, Philox, UniformBuiltin};
pub use reduce::{ReduceBuiltin, ReduceTemp};
pub use scan::{ScanBuiltin, ScanTemp};
pub use segmented::SegmentedBuiltin;
pub use select::SelectBuiltin;
pub use sort::{SortKey, SortPairs, SortTemp};
pub use transform::{ConvertBuiltin, transform_config};

use gpu_host::{Gpu, Kernel, Result};

pub use gpu_host::gpu;

gpu_host::include_kernels!("algorithm_kernels");

/// The built-in algorithm kernels, loaded on one GPU.
pub struct Algorithms {
    module: algorithm_kernels::Module,
    multiprocessors: u32,
    temps: temp::TempCache,
}

impl Algorithms {
    /// Makes the algorithm kernels ready on `gpu`. Nothing is compiled or loaded yet: each
    /// kernel is loaded on its first use, from SASS for the device when the build had ptxas,
    /// else from PTX that the driver JIT-compiles (see [`gpu_host::code`]).
    pub fn load(gpu: &Gpu) -> Result<Algorithms> {
        Ok(Algorithms {
            module: algorithm_kernels::Module::load(gpu)?,
            multiprocessors: gpu.properties().multiprocessor_count,
            temps: temp::TempCache::default(),
        })
    }

    /// The algorithm kernels' module: which kernels are loaded and from what code
    /// ([`gpu_host::Module::loaded_kernels`], [`gpu_host::Kernel::code`]), occupancy queries.
    pub fn raw(&self) -> &gpu_host::Module {
        self.module.raw()
    }

    /// The kernel at `index` (`algorithm_kernels::index::<name>`): for attributes and
    /// occupancy; launches go through the typed launchers.
    fn kernel_at(&self, index: usize) -> Result<&Kernel> {
        self.module.raw().kernel_at(index)
    }

    /// How many blocks of `kernel` at `block_size` threads fill the GPU once.
    fn resident_blocks(&self, kernel: &Kernel, block_size: u32) -> Result<u32> {
        let per_sm = kernel.occupancy(block_size, 0)?.active_blocks_per_sm.max(1);
        Ok(per_sm * self.multiprocessors.max(1))
    }
}
