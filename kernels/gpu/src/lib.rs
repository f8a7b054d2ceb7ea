//! Device library for GPU kernels written in plain Rust.
//!
//! A kernel crate is an ordinary `#![no_std]` crate that depends on `gpu`; `cargo xtask
//! build-kernels` compiles it to one PTX module with rustc's `nvptx64-nvidia-cuda` target.
//! The same crate also compiles for the host, so host code can share its parameter types; on
//! the host, device intrinsics run on the CPU simulator (`sim` feature, which `gpu-host` turns
//! on), or panic with a message saying they need a GPU.
//!
//! ```ignore
//! #![no_std]

//! use gpu::prelude::*;
//!
//! #[kernel]
//! pub fn saxpy(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
//!     let i = thread::global_index();
//!     if let Some(o) = out.get_mut(i) {
//!         *o = a * x[i.get()] + y[i.get()];
//!     }
//! }
//! ```
//!
//! # Modules
//! - [`thread`]: thread/block/grid indices, lane and warp ids.
//! - [`sync`]: block barriers (plain and with a reduction of a predicate), warp barrier, fences.
//! - [`shared`]: block-shared memory, static ([`shared_array!`]) and dynamic.
//! - [`warp`]: shuffles, votes, match, and the warp layer of the algorithms (reduce, scan).
//! - [`block`]: the block layer: tile loads/stores, exchange, reduce, scan.
//! - [`device`]: the bodies of the device-wide algorithms, for instantiating as kernels.
//! - [`ops`]: operators (`Sum`, `Min`, `Max`, bitwise, closures, your own).
//! - [`atomic`]: atomic read-modify-write on global and shared memory, with a scope.
//! - [`grid`]: between blocks: the grid barrier of cooperative launches, and turns on a
//!   global counter (blocks taking a section in a fixed order: deterministic sums).
//! - [`matrix`]: read-only 2-D views of inputs, `m[(row, col)]`, checked the way kernels guard.
//! - [`math`]: the hardware's fast approximate math and bit operations.
//! - [`mma`]: tensor cores (`mma.sync`), `ldmatrix`, `cp.async` (sm_80+).
//! - `packed`: `Bf16x2`/`F16x2` packed 16-bit floats and hardware conversions.
//! - [`random`]: the Philox4x32-10 counter-based generator; uniform, normal, exponential,
//!   Poisson variates.
//! - [`time`]: clocks, the global timer, `nanosleep`.
//! - [`print`]: device-side `printf!`.
//! - [`asm`]: how to write your own inline PTX, with small examples.
//! - `sim` (host builds with the `sim` feature): the CPU simulator that runs these kernels with
//!   CUDA semantics, for CI and debugging.
//!
//! # Requirements
//! The library targets sm_70 and newer (it uses `shfl.sync`, `fence`, scoped atomics,
//! `nanosleep`); [`warp::reduce_add`] and friends need sm_80. An intrinsic that the target GPU
//! lacks is reported by `ptxas` when the PTX is assembled, and only if a kernel uses it.
#![no_std]

// The simulator (host only) uses std: threads, fibers, panic capture.
#[cfg(all(feature = "sim", not(target_arch = "nvptx64")))]
extern crate std;

// Lets macro expansions that name `::gpu::...` (e.g. `shared_array!`) work inside this crate too.
extern crate self as gpu;

/// Runs `$body` on the GPU. On the host, with the `sim` feature, runs `$sim` (the simulator's
/// implementation, see [`sim`]); otherwise, or without a `sim:` body, panics with a message
/// naming the intrinsic (the crate is also compiled for the host so host code can share types).
/// Every device intrinsic goes through this.
macro_rules! device {
    ($what:expr, $body:block) => {
        device!($what, $body, sim: { crate::host::unsupported_on_simulator($what) })
    };
    ($what:expr, $body:block, sim: $sim:block) => {{
        #[cfg(target_arch = "nvptx64")]
        $body
        #[cfg(all(not(target_arch = "nvptx64"), feature = "sim"))]
        $sim
        #[cfg(all(not(target_arch = "nvptx64"), not(feature = "sim")))]
        {
            crate::host::unsupported($what)
        }
    }};
}

pub mod asm;
pub mod atomic;
pub mod block;
pub mod copy;
pub mod device;
pub mod grid;
#[cfg(any(gpu_sm90, not(target_arch = "nvptx64")))]
pub mod hopper;
pub mod math;
pub mod matrix;
pub mod mma;
pub mod ops;
#[cfg(feature = "half")]
pub mod packed;
pub mod print;
pub mod random;
pub mod shared;
pub mod slice;
pub mod sync;
pub mod thread;
pub mod time;
pub mod unroll;
pub mod warp;

mod host;
#[cfg(all(feature = "sim", not(target_arch = "nvptx64")))]
pub mod sim;

#[cfg(target_arch = "nvptx64")]
mod panic;

pub use copy::DeviceCopy;
/// Kernels as types (`#[kernel]` implements [`kernel_type::KernelType`] for each kernel).
pub use gpu_abi::kernel_type;
pub use gpu_macros::{DeviceCopy, kernel, shared_array};
pub use matrix::Matrix;
pub use slice::{DisjointSlice, ThreadIndex, ThreadIndex2D};

/// Everything a kernel usually needs, in one `use gpu::prelude::*;`.
///
/// Brings the item modules into scope by name (`thread::global_index()`, `warp::shfl_down(..)`,
/// `atomic::add(..)`, `math::rsqrt(..)`), plus the types and macros used in almost every kernel.
pub mod prelude {
    pub use crate::matrix::Matrix;
    pub use crate::ops::{BitAnd, BitOr, BitXor, Identity, Max, Min, ReduceOp, Sum};
    pub use crate::shared::{SharedArray, SharedSlice};
    pub use crate::slice::{DisjointSlice, ThreadIndex, ThreadIndex2D};
    pub use crate::sync::sync_threads;
    pub use crate::thread::{Dim3, WARP_SIZE};
    pub use crate::{DeviceCopy, kernel, printf, shared_array};
    pub use crate::{atomic, block, math, shared, sync, thread, time, warp};
}

/// Support for code generated by `#[kernel]`; not a public API.
#[doc(hidden)]
pub mod __private {
    /// Tells the optimizer the block shape of a `#[kernel(block(x, y, z))]` entry: the thread
    /// indices are below it and the block dimensions equal it, so index checks they imply go
    /// away and `block_dim_*()` folds to a constant.
    ///
    /// # Safety
    /// The launch's block shape must be `(x, y, z)`. Generated entries call it only when their
    /// PTX carries `.reqntid x, y, z`, with which the driver refuses every other shape.
    #[inline(always)]
    pub unsafe fn assume_block_dim(x: u32, y: u32, z: u32) {
        #[cfg(target_arch = "nvptx64")]
        {
            use crate::thread::*;
            // SAFETY: forwarded from the caller.
            unsafe {
                core::hint::assert_unchecked(block_dim_x() == x);
                core::hint::assert_unchecked(block_dim_y() == y);
                core::hint::assert_unchecked(block_dim_z() == z);
                core::hint::assert_unchecked(thread_idx_x() < x);
                core::hint::assert_unchecked(thread_idx_y() < y);
                core::hint::assert_unchecked(thread_idx_z() < z);
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        let _ = (x, y, z);
    }

    /// The grid shape of a `#[kernel(grid_dims(N))]` kernel, told to the optimizer: at most
    /// `dims` dimensions (1: `gridDim.y == gridDim.z == 1`; 2: `gridDim.z == 1`). So
    /// `thread::global_index()` is `blockIdx.x * blockDim.x + threadIdx.x`, as in CUDA C++,
    /// rather than the linearized 3-D index, and `global_index_2d()` does not fold in z.
    ///
    /// Nothing is checked on the device: `gpu-host` refuses any other grid before launching
    /// (every launch path validates it), and the PTX carries the requirement as a comment for
    /// other launchers, whose contract it is, as the slice lengths are. A check at entry (a
    /// branch to `trap` on `%nctaid`) made every block wait for the constant-bank read before
    /// its first load, and at the end it changed the code around the stores: both cost short
    /// memory-bound kernels a few percent (README, "Writing fast kernels").
    ///
    /// # Safety
    /// The launch's grid has at most `dims` dimensions.
    #[inline(always)]
    pub unsafe fn assume_grid_dims(dims: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: a block coordinate is below the grid's extent on its axis (hardware), and the
        // extents beyond `dims` are 1 (the caller's contract).
        unsafe {
            use crate::thread::*;
            if dims == 1 {
                core::hint::assert_unchecked(grid_dim_y() == 1);
                core::hint::assert_unchecked(block_idx_y() == 0);
            }
            core::hint::assert_unchecked(grid_dim_z() == 1);
            core::hint::assert_unchecked(block_idx_z() == 0);
        }
        #[cfg(not(target_arch = "nvptx64"))]
        let _ = dims;
    }

    /// A kernel's read-only slice parameter, rebuilt from the pointer and length the host passed.
    ///
    /// # Safety
    /// `ptr` must point to `len` initialized `T` that nothing writes during the kernel, or `len`
    /// must be 0 (the host may pass a null pointer for an empty buffer).
    #[inline(always)]
    pub unsafe fn slice_from_raw<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
        if len == 0 {
            &[]
        } else {
            // SAFETY: the caller guarantees `ptr` addresses `len` valid, unaliased-by-writers `T`.
            unsafe { core::slice::from_raw_parts(ptr, len) }
        }
    }
}
