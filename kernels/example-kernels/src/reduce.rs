//! Segmented reduction: one block per segment.

use gpu::prelude::*;
use gpu::{shared_array, sync, warp};

/// Threads per block for [`segmented_sum`] (a multiple of 32, at most 1024).
pub const SEGMENT_BLOCK: u32 = 256;
const WARPS: usize = (SEGMENT_BLOCK / 32) as usize;

/// Sum of the 32 lanes' values, in every lane: butterfly shuffles, no shared memory.
#[inline(always)]
fn warp_sum(mut v: f32) -> f32 {
    let mut offset = 16;
    while offset > 0 {
        v += warp::shfl_xor(v, offset);
        offset /= 2;
    }
    v
}

/// `sums[s] = values[offsets[s]..offsets[s + 1]].sum()`, block `s` handling segment `s`.
///
/// Launch with `SEGMENT_BLOCK` threads per block and one block per segment. Each thread adds a
/// strided slice of the segment (coalesced loads), each warp combines its 32 partial sums with
/// shuffles, the warps' results meet in shared memory and the first warp combines those.
/// Summation order: per-thread strided sums, then two shuffle trees; the error is bounded by
/// about (len / SEGMENT_BLOCK + 13) · ε · Σ|v|.
#[kernel]
pub fn segmented_sum(values: &[f32], offsets: &[u32], mut sums: DisjointSlice<f32>) {
    assert!(thread::block_dim_x() == SEGMENT_BLOCK);
    let segment = thread::block_index();
    let (start, end) = (offsets[segment] as usize, offsets[segment + 1] as usize);
    let tid = thread::thread_idx_x() as usize;

    let mut acc = 0.0f32;
    let mut i = start + tid;
    while i < end {
        acc += values[i];
        i += SEGMENT_BLOCK as usize;
    }
    acc = warp_sum(acc);

    let partials = shared_array!(f32, WARPS);
    let (warp_id, lane) = (tid / 32, tid % 32);
    if lane == 0 {
        partials.write(warp_id, acc);
    }
    sync::sync_threads();
    if warp_id == 0 {
        let v = if lane < WARPS {
            partials.read(lane)
        } else {
            0.0
        };
        let total = warp_sum(v);
        if let Some(leader) = thread::block_leader_index() {
            sums.set(leader, total);
        }
    }
}
