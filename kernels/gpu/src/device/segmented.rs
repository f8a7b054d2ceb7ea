//! Device-wide segmented reduction: one result per segment of the input.

use super::reduce_items;
use crate::DeviceCopy;
use crate::block;
use crate::ops::ReduceOp;
use crate::slice::DisjointSlice;
use crate::thread::{block_idx_x, block_size, local_index};

/// Threads per block of the segmented reduction kernels.
pub const SEGMENTED_BLOCK: u32 = 256;

/// The body of a segmented reduction kernel: `out[s] = init ⊕ input[offsets[s]] ⊕ … ⊕
/// input[offsets[s+1] - 1]` for every segment `s < offsets.len() - 1` (`init` for an empty one).
///
/// One block per segment (grid = number of segments): threads stride over the segment
/// (coalesced loads, `N` of them in flight per thread per step), then [`block::reduce_partial`].
/// The operator must be commutative. Panics (the launch fails) if offsets decrease, point past
/// the input, or `out` is too short; the host API checks all of that before launching.
#[inline(always)]
pub fn segmented_reduce<T: DeviceCopy, O: ReduceOp<T>, const N: usize>(
    input: &[T],
    offsets: &[u64],
    init: T,
    op: O,
    out: &DisjointSlice<'_, T>,
) {
    let segment = block_idx_x() as usize;
    if segment + 1 >= offsets.len() {
        return;
    }
    let (start, end) = (offsets[segment] as usize, offsets[segment + 1] as usize);
    assert!(
        start <= end && end <= input.len() && segment < out.len(),
        "device::segmented_reduce: bad offsets or short output"
    );
    let (t, threads) = (local_index() as usize, block_size() as usize);
    let len = end - start;
    let mut acc: Option<T> = None;
    let mut base = start + t;
    let step = threads * N;
    while base < end {
        let mut items: [Option<T>; N] = [None; N];
        // Written out ([`crate::unroll!`]): as loops, `items` stayed in local memory (f64).
        crate::unroll!(N, |i| {
            let j = base + i * threads;
            if j < end {
                items[i] = Some(input[j]);
            }
        });
        crate::unroll!(N, |i| {
            if let Some(x) = items[i] {
                acc = Some(match acc {
                    Some(a) => op.combine(a, x),
                    None => x,
                });
            }
        });
        base += step;
    }
    let result = if len == 0 {
        init
    } else {
        let valid = len.min(threads) as u32;
        // Threads past `valid` hold no value; any value will do as they are ignored.
        let total = block::reduce_partial(acc.unwrap_or(input[start]), op, valid);
        op.combine(init, total)
    };
    if t == 0 {
        // SAFETY: block `segment` alone writes out[segment].
        unsafe { out.write_unchecked_race(segment, result) };
    }
}

/// Items per thread per step of the segmented reduction.
pub const fn segmented_items<T>() -> usize {
    let n = reduce_items::<T>();
    if n > 8 { 8 } else { n }
}
