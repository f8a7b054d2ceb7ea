//! Thread, block and grid indices.
//!
//! A launch is a grid of blocks; each block is a 3-D box of threads. Inside a block, threads are
//! numbered x fastest, then y, then z, and cut into warps of [`WARP_SIZE`] consecutive threads.
//! The raw coordinates come from PTX special registers (`%tid`, `%ctaid`, `%ntid`, `%nctaid`,
//! `%laneid`); the helpers here do the index arithmetic most kernels need.
//!
//! Indices that may exceed `u32` (anything counting threads over the whole grid) are `usize`;
//! per-block quantities are `u32`, as the hardware keeps them.
//!
//! Safe `&mut` access to a kernel output needs an index that is unique per thread:
//! [`global_index`] and [`global_index_2d`] (and [`grid_stride`]) produce such values, as
//! [`ThreadIndex`] / [`ThreadIndex2D`]; the plain integer accessors are for reading inputs and
//! other index math.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

pub use crate::slice::{ThreadIndex, ThreadIndex2D};

/// Threads per warp on every NVIDIA GPU so far.
pub const WARP_SIZE: u32 = 32;

/// A 3-D extent or coordinate, like CUDA's `dim3`/`uint3` (the host's launch shapes are the same
/// type).
pub use gpu_abi::Dim3;

/// One accessor per special register. The nvptx target reads them through LLVM intrinsics,
/// which the optimizer knows are pure and bounded (e.g. `%tid.x < 1024`).
macro_rules! special_register {
    ($($(#[$doc:meta])* $name:ident => $intrinsic:ident, $sim:ident.$axis:ident;)*) => { $(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            device!(concat!("thread::", stringify!($name)), {
                // SAFETY: reading a special register has no preconditions.
                unsafe { core::arch::nvptx::$intrinsic() }
            }, sim: { crate::sim::intrinsics::$sim().$axis })
        }
    )* };
}

special_register! {
    /// `threadIdx.x`: this thread's x coordinate within its block.
    thread_idx_x => _thread_idx_x, thread_idx.x;
    /// `threadIdx.y`.
    thread_idx_y => _thread_idx_y, thread_idx.y;
    /// `threadIdx.z`.
    thread_idx_z => _thread_idx_z, thread_idx.z;
    /// `blockIdx.x`: this block's x coordinate within the grid.
    block_idx_x => _block_idx_x, block_idx.x;
    /// `blockIdx.y`.
    block_idx_y => _block_idx_y, block_idx.y;
    /// `blockIdx.z`.
    block_idx_z => _block_idx_z, block_idx.z;
    /// `blockDim.x`: threads per block along x.
    block_dim_x => _block_dim_x, block_dim.x;
    /// `blockDim.y`.
    block_dim_y => _block_dim_y, block_dim.y;
    /// `blockDim.z`.
    block_dim_z => _block_dim_z, block_dim.z;
    /// `gridDim.x`: blocks per grid along x.
    grid_dim_x => _grid_dim_x, grid_dim.x;
    /// `gridDim.y`.
    grid_dim_y => _grid_dim_y, grid_dim.y;
    /// `gridDim.z`.
    grid_dim_z => _grid_dim_z, grid_dim.z;
}

/// `threadIdx`: this thread's coordinates within its block.
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    Dim3::new(thread_idx_x(), thread_idx_y(), thread_idx_z())
}

/// `blockIdx`: this block's coordinates within the grid.
#[inline(always)]
pub fn block_idx() -> Dim3 {
    Dim3::new(block_idx_x(), block_idx_y(), block_idx_z())
}

/// `blockDim`: the block's extent in threads.
#[inline(always)]
pub fn block_dim() -> Dim3 {
    Dim3::new(block_dim_x(), block_dim_y(), block_dim_z())
}

/// `gridDim`: the grid's extent in blocks.
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    Dim3::new(grid_dim_x(), grid_dim_y(), grid_dim_z())
}

/// Threads per block (`blockDim.x * blockDim.y * blockDim.z`, at most 1024).
#[inline(always)]
pub fn block_size() -> u32 {
    block_dim_x() * block_dim_y() * block_dim_z()
}

/// This thread's linear index within its block, x fastest: the order warps are cut in.
#[inline(always)]
pub fn local_index() -> u32 {
    (thread_idx_z() * block_dim_y() + thread_idx_y()) * block_dim_x() + thread_idx_x()
}

/// Blocks in the grid.
#[inline(always)]
pub fn num_blocks() -> usize {
    grid_dim().volume() as usize
}

/// This block's linear index within the grid, x fastest.
#[inline(always)]
pub fn block_index() -> usize {
    (block_idx_z() as usize * grid_dim_y() as usize + block_idx_y() as usize)
        * grid_dim_x() as usize
        + block_idx_x() as usize
}

/// Total threads in the launch: the stride of a grid-stride loop.
#[inline(always)]
pub fn grid_size() -> usize {
    num_blocks() * block_size() as usize
}

/// This thread's global x coordinate: `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
pub fn global_id_x() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// This thread's global y coordinate: `blockIdx.y * blockDim.y + threadIdx.y`.
#[inline(always)]
pub fn global_id_y() -> usize {
    block_idx_y() as usize * block_dim_y() as usize + thread_idx_y() as usize
}

/// This thread's global z coordinate: `blockIdx.z * blockDim.z + threadIdx.z`.
#[inline(always)]
pub fn global_id_z() -> usize {
    block_idx_z() as usize * block_dim_z() as usize + thread_idx_z() as usize
}

/// `(global_id_x(), global_id_y(), global_id_z())`.
#[inline(always)]
pub fn global_id() -> (usize, usize, usize) {
    (global_id_x(), global_id_y(), global_id_z())
}

/// Threads in the grid along x: `gridDim.x * blockDim.x` (the row length of a 2-D launch).
#[inline(always)]
pub fn global_size_x() -> usize {
    grid_dim_x() as usize * block_dim_x() as usize
}

/// Threads in the grid along y: `gridDim.y * blockDim.y`.
#[inline(always)]
pub fn global_size_y() -> usize {
    grid_dim_y() as usize * block_dim_y() as usize
}

/// Threads in the grid along z: `gridDim.z * blockDim.z`.
#[inline(always)]
pub fn global_size_z() -> usize {
    grid_dim_z() as usize * block_dim_z() as usize
}

/// The calling thread's linear index over the whole grid, unique in the launch.
///
/// For a 1-D launch this is `block_idx.x * block_dim.x + thread_idx.x`. Multi-dimensional
/// launches are linearized (block-major, then x fastest within the block), so it stays unique
/// for any launch shape.
#[inline(always)]
pub fn global_index() -> ThreadIndex {
    let index = block_index() * block_size() as usize + local_index() as usize;
    // SAFETY: (block index, index within the block) is a bijection onto [0, grid_size()), so
    // the value differs between every pair of threads of the launch.
    unsafe { ThreadIndex::new_unchecked(index) }
}

/// The calling thread's 2-D index, unique in the launch: `x = global_id_x()`, and
/// `y = global_id_z() * global_size_y() + global_id_y()` (z folded into y, so 3-D launches are
/// unique too). Use with [`crate::DisjointSlice::get_mut_2d`] for row-major images/matrices.
#[inline(always)]
pub fn global_index_2d() -> ThreadIndex2D {
    let y = global_id_z() * global_size_y() + global_id_y();
    // SAFETY: (global x, global y, global z) is unique per thread and `global_id_y()` is below
    // `global_size_y()`, so (x, folded y) is unique per thread.
    unsafe { ThreadIndex2D::new_unchecked(global_id_x(), y) }
}

/// The indices `global_index() + k * grid_size()` below `len`, for grid-stride loops over data
/// larger than the launch. Every yielded index is unique to this thread.
///
/// ```ignore
/// for i in thread::grid_stride(out.len()) {
///     out.set(i, 2.0 * x[i.get()]);
/// }
/// ```
#[inline(always)]
pub fn grid_stride(len: usize) -> GridStride {
    GridStride {
        next: global_index().get(),
        stride: grid_size(),
        end: len,
    }
}

/// Iterator returned by [`grid_stride`].
#[derive(Debug, Clone)]
pub struct GridStride {
    next: usize,
    stride: usize,
    end: usize,
}

impl Iterator for GridStride {
    type Item = ThreadIndex;

    #[inline(always)]
    fn next(&mut self) -> Option<ThreadIndex> {
        if self.next >= self.end {
            return None;
        }
        let current = self.next;
        // Saturating: once past `end` the iterator is finished anyway.
        self.next = self.next.saturating_add(self.stride);
        // SAFETY: `current = global_index() + k * grid_size()` for this thread's own k-th step;
        // global_index() < grid_size(), so two threads (or two steps) never produce the same value.
        Some(unsafe { ThreadIndex::new_unchecked(current) })
    }
}

/// [`grid_stride`]'s indices, as a loop the compiler can unroll: the number of steps is computed
/// once (one division per thread) and counted down, where `grid_stride`'s `i < len; i += stride`
/// has no trip count LLVM can compute (it depends on `i + stride` not wrapping), so it is never
/// unrolled. Unrolled, a thread has several loads in flight: use it for loops with a small body
/// that carries few values — sums, histograms, counts — which are otherwise bound by memory
/// latency. In loops that carry many values (several inputs and outputs, long formulas)
/// unrolling raises register use, which can cost occupancy: keep [`grid_stride`] there.
/// Measured on the twin suite: grid-stride block sum and 256-bin histogram faster, saxpy and
/// Black-Scholes slower (README, "Writing fast kernels").
///
/// ```ignore
/// let mut sum = 0.0f32;
/// for i in thread::grid_stride_unrolled(x.len()) {
///     sum += x[i.get()];
/// }
/// ```
#[inline(always)]
pub fn grid_stride_unrolled(len: usize) -> UnrolledGridStride {
    let start = global_index().get();
    let stride = grid_size();
    // The number of steps, computed once: see the function's docs.
    let steps = if start < len {
        (len - start - 1) / stride + 1
    } else {
        0
    };
    UnrolledGridStride {
        next: start,
        stride,
        steps,
        len,
    }
}

/// Iterator returned by [`grid_stride_unrolled`].
#[derive(Debug, Clone)]
pub struct UnrolledGridStride {
    next: usize,
    stride: usize,
    /// Indices still to yield.
    steps: usize,
    /// The bound every yielded index is below.
    len: usize,
}

impl Iterator for UnrolledGridStride {
    type Item = ThreadIndex;

    #[inline(always)]
    fn next(&mut self) -> Option<ThreadIndex> {
        if self.steps == 0 {
            return None;
        }
        self.steps -= 1;
        let current = self.next;
        // SAFETY: `steps` counted the indices `start + k * stride` below `len`; telling the
        // optimizer lets it drop `x[i]` checks against a slice of that length.
        unsafe { core::hint::assert_unchecked(current < self.len) };
        // After the last step this may pass `len` (or wrap); it is never yielded then.
        self.next = self.next.wrapping_add(self.stride);
        // SAFETY: `current = global_index() + k * grid_size()` for this thread's own k-th step,
        // below `len` (counted by `steps`); global_index() < grid_size(), so two threads (or two
        // steps) never produce the same value.
        Some(unsafe { ThreadIndex::new_unchecked(current) })
    }

    #[inline(always)]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.steps, Some(self.steps))
    }
}

impl ExactSizeIterator for UnrolledGridStride {}

/// This thread's lane within its warp, `0..32` (`%laneid`).
#[inline(always)]
pub fn lane_id() -> u32 {
    device!("thread::lane_id", {
        let lane: u32;
        // SAFETY: reads a special register; no memory access.
        unsafe {
            core::arch::asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(pure, nomem, nostack))
        };
        lane
    }, sim: { crate::sim::intrinsics::lane() })
}

/// This thread's warp within its block: `local_index() / 32`. (Unlike PTX `%warpid`, which
/// names a hardware slot that may change during execution, this is stable.)
#[inline(always)]
pub fn warp_id() -> u32 {
    local_index() / WARP_SIZE
}

/// Warps in this block, counting a partial last warp.
#[inline(always)]
pub fn warps_per_block() -> u32 {
    block_size().div_ceil(WARP_SIZE)
}

/// [`block_index`] as a [`ThreadIndex`] in the first thread of each block (local index 0), and
/// `None` in every other thread: the way to write one result per block into a
/// `DisjointSlice` (e.g. a per-segment sum) without `unsafe`.
#[inline(always)]
pub fn block_leader_index() -> Option<ThreadIndex> {
    if local_index() == 0 {
        // SAFETY: only one thread per block gets a value, and block indices differ between
        // blocks, so the value differs between every pair of threads that get one.
        Some(unsafe { ThreadIndex::new_unchecked(block_index()) })
    } else {
        None
    }
}
