//! Device-wide selection (stream compaction) and stable partition in a single pass.

use super::lookback::TileStatus;
use super::scan::{load_transposed, transposable};
use crate::DeviceCopy;
use crate::block;
use crate::ops::{Predicate, Sum};
use crate::slice::DisjointSlice;
use crate::thread::{block_idx_x, block_size, local_index};

/// Threads per block of the selection kernels.
pub const SELECT_BLOCK: u32 = 256;

/// The body of a device-wide selection kernel: the items of `input` for which `pred` holds go,
/// in their original order, to `selected[0..k]`, and `num_selected[0] = k`. If `rejected` is
/// not empty the other items go, also in order, to `rejected[0..n-k]` (a stable partition).
///
/// One block per tile of `SELECT_BLOCK · N` items (like [`super::scan`]): each thread tests its
/// `N` consecutive items, the block scans the per-thread counts, the tile's prefix comes from a
/// decoupled look-back over earlier tiles' counts, and each thread writes its items at their
/// final places. Input is read once; output written once.
///
/// Panics (the launch fails) if `selected` (or a non-empty `rejected`) is shorter than the
/// input, `num_selected` is empty, or the status storage is too short.
#[inline(always)]
pub fn select<T: DeviceCopy, P: Predicate<T>, const N: usize>(
    input: &[T],
    pred: P,
    selected: &DisjointSlice<'_, T>,
    rejected: &DisjointSlice<'_, T>,
    num_selected: &DisjointSlice<'_, u32>,
    status: &DisjointSlice<'_, u64>,
    epoch: u32,
) {
    let n = input.len();
    let tile_len = block_size() as usize * N;
    let tile = block_idx_x() as usize;
    let start = tile * tile_len;
    if start >= n {
        if n == 0 && tile == 0 && local_index() == 0 && !num_selected.is_empty() {
            // SAFETY: one thread of one block writes the count.
            unsafe { num_selected.write_unchecked_race(0, 0) };
        }
        return;
    }
    assert!(
        selected.len() >= n && (rejected.is_empty() || rejected.len() >= n),
        "device::select: an output is shorter than the input"
    );
    assert!(!num_selected.is_empty(), "device::select: no count output");
    let status = TileStatus::<u32>::new(status, n.div_ceil(tile_len), epoch);
    let full = start + tile_len <= n;
    let items: [T; N] = if full && transposable::<T, N>(input.as_ptr()) {
        // SAFETY: the full tile is in bounds; `transposable` checked shape and alignment.
        unsafe { load_transposed(input.as_ptr().add(start)) }
    } else if full {
        block::load_blocked(input, start)
    } else {
        block::load_blocked_partial(input, start, input[start])
    };
    let first = start + local_index() as usize * N;
    let mut count = 0u32;
    let mut keep = [false; N];
    for i in 0..N {
        keep[i] = first + i < n && pred.test(&items[i]);
        count += keep[i] as u32;
    }
    let [mut rank] = if tile == 0 {
        let ([r], aggregate) = block::exclusive_scan_items([count], Sum, 0u32);
        if local_index() == 0 {
            status.publish_inclusive(0, aggregate);
        }
        [r]
    } else {
        block::exclusive_scan_with_prefix([count], Sum, |aggregate| {
            status.look_back(tile, aggregate, Sum)
        })
    };
    for i in 0..N {
        let index = first + i;
        if index >= n {
            break;
        }
        // SAFETY: ranks are distinct across the whole grid (an exclusive scan of the counts),
        // and `rank < n <= selected.len()`; rejected slots `index - rank` are distinct too.
        unsafe {
            if keep[i] {
                selected.write_unchecked_race(rank as usize, items[i]);
                rank += 1;
            } else if !rejected.is_empty() {
                rejected.write_unchecked_race(index - rank as usize, items[i]);
            }
        }
        if index == n - 1 {
            // SAFETY: exactly one thread holds the last item.
            unsafe { num_selected.write_unchecked_race(0, rank) };
        }
    }
}
