//! Reductions, a block scan and a histogram: the shared-memory and warp-shuffle classics.

use gpu::prelude::*;

/// Threads per block of the reductions and the scan.
pub const BLOCK: u32 = 256;
const B: usize = BLOCK as usize;
/// Bins of the byte histogram.
pub const BINS: usize = 256;

/// One partial sum per block with a shared-memory tree (Harris's "reduction #4": each thread
/// adds two elements while loading, then sequential addressing). The block sums `2 * BLOCK`
/// elements; a second pass (or the CPU) adds the partial sums.
#[kernel(block(256), grid_dims(1))]
pub fn reduce_shared_tree(input: &[f32], mut block_sums: DisjointSlice<f32>) {
    let partial = shared_array!(f32, B);
    let tid = thread::thread_idx_x() as usize;
    let i = thread::block_idx_x() as usize * (2 * B) + tid;
    let mut sum = 0.0;
    if i < input.len() {
        sum = input[i];
    }
    if i + B < input.len() {
        sum += input[i + B];
    }
    partial.write(tid, sum);
    sync_threads();
    let mut s = B / 2;
    while s > 0 {
        if tid < s {
            partial.write(tid, partial.read(tid) + partial.read(tid + s));
        }
        sync_threads();
        s /= 2;
    }
    if let Some(block) = thread::block_leader_index() {
        block_sums.set(block, partial.read(0));
    }
}

/// One partial sum per block of a grid-stride sum: each thread adds its strided elements, warps
/// reduce with shuffles, the first warp adds the warps' sums.
#[kernel(block(256), grid_dims(1))]
pub fn block_sum_grid_stride(input: &[f32], mut block_sums: DisjointSlice<f32>) {
    let warp_sums = shared_array!(f32, B / 32);
    let mut sum = 0.0f32;
    for i in thread::grid_stride_unrolled(input.len()) {
        sum += input[i.get()];
    }
    let mut offset = 16;
    while offset > 0 {
        sum += warp::shfl_down(sum, offset);
        offset /= 2;
    }
    let (lane, warp_id) = (thread::lane_id() as usize, thread::warp_id() as usize);
    if lane == 0 {
        warp_sums.write(warp_id, sum);
    }
    sync_threads();
    if warp_id == 0 {
        sum = if lane < B / 32 {
            warp_sums.read(lane)
        } else {
            0.0
        };
        let mut offset = 16;
        while offset > 0 {
            sum += warp::shfl_down(sum, offset);
            offset /= 2;
        }
    }
    if let Some(block) = thread::block_leader_index() {
        block_sums.set(block, sum);
    }
}

/// Inclusive prefix sum of each block's `BLOCK` elements (Hillis–Steele in shared memory).
#[kernel(block(256), grid_dims(1))]
pub fn block_scan(input: &[f32], mut out: DisjointSlice<f32>) {
    let temp = shared_array!(f32, B);
    let tid = thread::thread_idx_x() as usize;
    let i = thread::global_index();
    temp.write(
        tid,
        if i.get() < input.len() {
            input[i.get()]
        } else {
            0.0
        },
    );
    sync_threads();
    let mut offset = 1;
    while offset < B {
        let add = if tid >= offset {
            temp.read(tid - offset)
        } else {
            0.0
        };
        sync_threads();
        temp.write(tid, temp.read(tid) + add);
        sync_threads();
        offset *= 2;
    }
    out.set(i, temp.read(tid));
}

/// 256-bin histogram of bytes: per-block counts in shared memory with shared atomics, then one
/// global atomic per bin and block. `bins` must hold `BINS` zeroed counters.
#[kernel(block(256), grid_dims(1))]
pub fn histogram_256(data: &[u8], bins: DisjointSlice<u32>) {
    let counts = shared_array!(u32, BINS);
    let tid = thread::thread_idx_x() as usize;
    let mut b = tid;
    while b < BINS {
        counts.write(b, 0);
        b += B;
    }
    sync_threads();
    for i in thread::grid_stride_unrolled(data.len()) {
        counts.atomic_add(data[i.get()] as usize, 1);
    }
    sync_threads();
    let mut b = tid;
    while b < BINS {
        let c = counts.read(b);
        if c > 0 {
            assert!(b < bins.len());
            // SAFETY: `b` is in bounds; concurrent updates of the bin are atomic.
            unsafe { atomic::add(bins.as_mut_ptr().add(b), c) };
        }
        b += B;
    }
}
