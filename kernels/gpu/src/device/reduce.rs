//! Device-wide reduction in one launch.

use core::mem::size_of;

use crate::block;
use crate::ops::ReduceOp;
use crate::slice::DisjointSlice;
use crate::sync::{fence_acq_rel, sync_threads_or};
use crate::thread::{block_idx_x, block_size, grid_dim_x, local_index};
use crate::{DeviceCopy, atomic};

/// Threads per block of the reduction kernels.
pub const REDUCE_BLOCK: u32 = 256;

/// Items per thread per tile: 64 bytes, i.e. four 16-byte loads in flight per thread.
pub const fn reduce_items<T>() -> usize {
    let size = size_of::<T>();
    if size == 0 || size >= 64 {
        1
    } else {
        64 / size
    }
}

/// The body of a device-wide reduction kernel: `out[0] = init ⊕ (input[0] ⊕ … ⊕ input[n-1])`.
///
/// Launch with [`REDUCE_BLOCK`] threads and `G` blocks, `1 ≤ G ≤ max(1, full tiles)` where a tile
/// is `REDUCE_BLOCK · N` elements (the host picks `G` to fill the GPU: a few blocks per SM).
/// Block `b` folds tiles `b, b + G, …` (16-byte vector loads, one fold per thread), then the
/// block's threads are reduced ([`block::reduce`]) and the block total is written to
/// `partials[b]`. The last block to finish (an atomic ticket on `counter[0]`) folds the `G`
/// partials and writes `out[0]`, then resets the counter to 0 for the next launch. With `G = 1`
/// there are no partials: the block writes `out[0]` directly, so small inputs cost one launch.
///
/// **The operator must be commutative** as well as associative: threads accumulate strided
/// tiles. Float sums: error ≤ (n / (G · REDUCE_BLOCK) + 20) · ε · Σ|x|.
///
/// Panics (the launch fails) if `G` is out of range or `partials`/`counter`/`out` are too short.
#[inline(always)]
pub fn reduce<T: DeviceCopy, O: ReduceOp<T>, const N: usize>(
    input: &[T],
    init: T,
    op: O,
    partials: &DisjointSlice<'_, T>,
    counter: &DisjointSlice<'_, u32>,
    out: &DisjointSlice<'_, T>,
) {
    let n = input.len();
    let threads = block_size() as usize;
    let tile = threads * N;
    let grid = grid_dim_x() as usize;
    let b = block_idx_x() as usize;
    let t = local_index() as usize;
    let full_tiles = n / tile;
    assert!(
        grid <= full_tiles.max(1),
        "device::reduce: more blocks than full tiles"
    );
    assert!(!out.is_empty(), "device::reduce: empty output");
    if n == 0 {
        if t == 0 {
            // SAFETY: only thread 0 of the single block writes out[0].
            unsafe { out.write_unchecked_race(0, init) };
        }
        return;
    }

    let mut acc: Option<T> = None;
    let mut tile_index = b;
    while tile_index < full_tiles {
        let items: [T; N] = block::load_unordered(input, tile_index * tile);
        let folded = fold(items, op);
        acc = Some(match acc {
            Some(a) => op.combine(a, folded),
            None => folded,
        });
        tile_index += grid;
    }
    let tail_start = full_tiles * tile;
    if tail_start < n && b == full_tiles % grid {
        let first = tail_start + t * N;
        for i in 0..N {
            if let Some(&x) = input.get(first + i) {
                acc = Some(match acc {
                    Some(a) => op.combine(a, x),
                    None => x,
                });
            }
        }
    }
    // Every thread has a value when the block had a full tile; otherwise (a lone partial tile)
    // the threads whose first item exists, a prefix of the block.
    let valid = if full_tiles > 0 {
        threads
    } else {
        (n - tail_start).div_ceil(N).min(threads)
    };
    let total = block::reduce_partial(acc.unwrap_or(input[0]), op, valid as u32);

    if grid == 1 {
        if t == 0 {
            // SAFETY: only thread 0 of the single block writes out[0].
            unsafe { out.write_unchecked_race(0, op.combine(init, total)) };
        }
        return;
    }

    assert!(
        partials.len() >= grid && !counter.is_empty(),
        "device::reduce: partials shorter than the grid, or no counter"
    );
    let mut ticket = 0;
    if t == 0 {
        // SAFETY: partials[b] is written by thread 0 of block b only; the counter only
        // atomically. The release fence orders the partial before the ticket.
        unsafe {
            partials.as_mut_ptr().add(b).write_volatile(total);
            fence_acq_rel(atomic::Scope::Device);
            ticket = atomic::add(counter.as_mut_ptr(), 1u32);
        }
    }
    let last = sync_threads_or(t == 0 && ticket as usize == grid - 1);
    if !last {
        return;
    }
    // The last block: every other block's partial is published (acquire, then volatile loads
    // that bypass the non-coherent L1).
    fence_acq_rel(atomic::Scope::Device);
    let mut acc: Option<T> = None;
    let mut i = t;
    while i < grid {
        // SAFETY: i < grid <= partials.len(); all writers finished before their ticket.
        let p = unsafe { partials.as_mut_ptr().add(i).read_volatile() };
        acc = Some(match acc {
            Some(a) => op.combine(a, p),
            None => p,
        });
        i += threads;
    }
    let valid = grid.min(threads) as u32;
    // SAFETY: partials[0] exists (grid >= 2).
    let first = unsafe { partials.as_mut_ptr().read_volatile() };
    let total = block::reduce_partial(acc.unwrap_or(first), op, valid);
    if t == 0 {
        // SAFETY: only thread 0 of the last block writes out[0] and resets the counter, which
        // no other block touches any more.
        unsafe {
            out.write_unchecked_race(0, op.combine(init, total));
            counter.as_mut_ptr().write_volatile(0);
        }
    }
}

/// `items[0] ⊕ … ⊕ items[N-1]`.
#[inline(always)]
fn fold<T: Copy, O: ReduceOp<T>, const N: usize>(items: [T; N], op: O) -> T {
    let mut acc = items[0];
    for &x in &items[1..] {
        acc = op.combine(acc, x);
    }
    acc
}
