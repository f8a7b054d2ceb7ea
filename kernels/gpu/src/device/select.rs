//! Device-wide selection (stream compaction) and stable partition in a single pass.

use core::mem::size_of;

use super::lookback::TileStatus;
use super::scan::{TRANSPOSE_BYTES, load_transposed, transposable, transpose_scratch};
use crate::DeviceCopy;
use crate::block;
use crate::ops::{Predicate, Sum};
use crate::slice::DisjointSlice;
use crate::sync::sync_threads;
use crate::thread::{block_idx_x, block_size, local_index};

/// Threads per block of the selection kernels.
pub const SELECT_BLOCK: u32 = 256;

/// The body of a device-wide selection kernel: the items of `input` for which `pred` holds go,
/// in their original order, to `selected[0..k]`, and `num_selected[0] = k`. If `rejected` is
/// not empty the other items go, also in order, to `rejected[0..n-k]` (a stable partition).
///
/// One block per tile of `SELECT_BLOCK · N` items (like [`super::scan`]): each thread tests its
/// `N` consecutive items, the block scans the per-thread counts, the tile's prefix comes from a
/// decoupled look-back over earlier tiles' counts. The tile's selected (and rejected) items are
/// then compacted in shared memory and written out by consecutive threads to consecutive
/// places (coalesced stores; types whose tile exceeds the 20 KiB buffer scatter straight from
/// registers). Input is read once; output written once.
///
/// Panics (the launch fails) if the block has more than [`SELECT_BLOCK`] threads, `selected` (or
/// a non-empty `rejected`) is shorter than the input, `num_selected` is empty, or the status
/// storage is too short.
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
    assert!(
        block_size() <= SELECT_BLOCK,
        "device::select: launch with at most SELECT_BLOCK threads per block"
    );
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
    let t = local_index() as usize;
    let first = start + t * N;
    let mut count = 0u32;
    let mut keep = [false; N];
    // The loops over a thread's items are written out ([`crate::unroll!`]): as loops, `keep`
    // (and `items`) were indexed at run time, in local memory.
    crate::unroll!(N, |i| {
        keep[i] = first + i < n && pred.test(&items[i]);
        count += keep[i] as u32;
    });
    // `local`: selected items of this tile before this thread's; `kept`: the tile's selected
    // items; `prefix`: selected items of all earlier tiles.
    let ([local], kept, prefix) = if tile == 0 {
        let ([r], aggregate) = block::exclusive_scan_items([count], Sum, 0u32);
        if t == 0 {
            status.publish_inclusive(0, aggregate);
        }
        ([r], aggregate, 0)
    } else {
        block::exclusive_scan_and_prefix([count], Sum, 0u32, |aggregate| {
            status.look_back(tile, aggregate, Sum)
        })
    };
    let (local, kept, prefix) = (local as usize, kept as usize, prefix as usize);
    let tile_items = tile_len.min(n - start);
    if const { SELECT_BLOCK as usize * N * size_of::<T>() <= TRANSPOSE_BYTES } {
        // Two-phase scatter: the tile's selected items, then (for a partition) its rejected
        // ones, each in order, are compacted into shared memory at their tile-local ranks; then
        // the block writes each run with consecutive threads on consecutive elements (coalesced
        // stores instead of each thread scattering its own items).
        let s = transpose_scratch().cast::<T>();
        let partition = !rejected.is_empty();
        let mut rank = local;
        crate::unroll!(N, |i| {
            let j = t * N + i;
            let slot = if keep[i] { rank } else { kept + j - rank };
            if keep[i] || (partition && j < tile_items) {
                // SAFETY: selected items take slots `0..kept` (distinct tile-local ranks),
                // rejected ones `kept + (j - rank) < tile_items <= tile_len` (distinct too),
                // which fits the buffer (checked at compile time; at most `SELECT_BLOCK`
                // threads). The buffer is free: `load_transposed` ended with a barrier.
                unsafe { s.write_unchecked(slot, items[i]) };
            }
            rank += keep[i] as usize;
        });
        sync_threads();
        let end = if partition { tile_items } else { kept };
        let mut j = t;
        while j < end {
            // SAFETY: slot `j < end` was written before the barrier. Selected slot `j` goes to
            // `prefix + j` (< n: the global rank of a selected item), rejected slot `j` to
            // `start - prefix + (j - kept)` (its global rejected rank, < n); both are distinct
            // across the grid, as ranks of an exclusive scan.
            unsafe {
                let v = s.read_unchecked(j);
                if j < kept {
                    selected.write_unchecked_race(prefix + j, v);
                } else {
                    rejected.write_unchecked_race(start - prefix + (j - kept), v);
                }
            }
            j += block_size() as usize;
        }
    } else {
        let mut rank = prefix + local;
        crate::unroll!(N, |i| {
            let index = first + i;
            if index < n {
                // SAFETY: ranks are distinct across the whole grid (an exclusive scan of the
                // counts), and `rank < n <= selected.len()`; rejected slots `index - rank` are
                // distinct too.
                unsafe {
                    if keep[i] {
                        selected.write_unchecked_race(rank, items[i]);
                        rank += 1;
                    } else if !rejected.is_empty() {
                        rejected.write_unchecked_race(index - rank, items[i]);
                    }
                }
            }
        });
    }
    if t == 0 && start + tile_len >= n {
        // SAFETY: one thread of the last tile writes the count.
        unsafe { num_selected.write_unchecked_race(0, (prefix + kept) as u32) };
    }
}
