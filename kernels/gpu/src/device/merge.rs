//! Device-wide merge of two sorted sequences (merge path) and vectorized binary search.
//!
//! Both exist for the last steps of a distributed sort (each rank merges the sorted runs the
//! other ranks sent it, and finds where splitters fall in its own sorted keys), but they are
//! general: any two ascending runs of an ordered type merge into one, stably.

use crate::DeviceCopy;
use crate::shared_array;
use crate::slice::DisjointSlice;
use crate::sync::sync_threads;
use crate::thread::{block_idx_x, block_size, global_id_x, local_index};

/// Threads per block of the merge kernels.
pub const MERGE_BLOCK: u32 = 256;

/// Threads per block of the lower-bound kernels.
pub const LOWER_BOUND_BLOCK: u32 = 256;

/// Bytes of the merge's tile buffer in shared memory.
const MERGE_TILE_BYTES: usize = 16 * 1024;

/// Output items per thread of the merge of `T`: one block's tile (`MERGE_BLOCK` of them) fills
/// the 16 KiB shared buffer.
pub const fn merge_items<T>() -> usize {
    MERGE_TILE_BYTES / (MERGE_BLOCK as usize * core::mem::size_of::<T>())
}

/// Output elements per block of the merge of `T` (launch `ceil((a + b) / merge_tile)` blocks).
pub const fn merge_tile<T>() -> usize {
    MERGE_BLOCK as usize * merge_items::<T>()
}

/// The merge path: how many of the first `diagonal` outputs of the stable merge of `a` and `b`
/// come from `a` (ties go to `a`). Binary search over the diagonal, `log2(min(a, b))` steps.
#[inline(always)]
pub fn merge_path<T: Copy + PartialOrd>(
    diagonal: usize,
    a_len: usize,
    b_len: usize,
    a: impl Fn(usize) -> T,
    b: impl Fn(usize) -> T,
) -> usize {
    let mut lo = diagonal.saturating_sub(b_len);
    let mut hi = diagonal.min(a_len);
    while lo < hi {
        let mid = (lo + hi) / 2;
        // `a[mid]` is among the first `diagonal` outputs iff it does not come after
        // `b[diagonal - 1 - mid]` (ties: `a` first).
        if b(diagonal - 1 - mid) < a(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The body of a device-wide merge kernel: `out[..a.len() + b.len()]` receives the stable merge
/// of the ascending runs `a` and `b` (equal elements: those of `a` first, each run in its
/// order).
///
/// One block per tile of [`merge_tile::<T>()`](merge_tile) outputs: two threads find where the
/// tile's first and last diagonals cross the merge path (binary searches in global memory), the
/// block loads the tile's parts of `a` and `b` into shared memory with coalesced reads, each
/// thread finds its own `ITEMS`-long stretch of the path there and merges it serially, and the
/// block writes the tile back with coalesced stores. Every input is read once and every output
/// written once (plus the searches).
///
/// Panics (the launch fails) if `out` is shorter than `a.len() + b.len()` or the block has more
/// than [`MERGE_BLOCK`] threads.
#[inline(always)]
pub fn merge<T: DeviceCopy + PartialOrd, const ITEMS: usize>(
    a: &[T],
    b: &[T],
    out: &DisjointSlice<'_, T>,
) {
    let total = a.len() + b.len();
    let tile_len = block_size() as usize * ITEMS;
    let start = block_idx_x() as usize * tile_len;
    if start >= total {
        return;
    }
    assert!(
        out.len() >= total,
        "device::merge: the output is shorter than the two inputs"
    );
    assert!(
        block_size() <= MERGE_BLOCK,
        "device::merge: launch with at most MERGE_BLOCK threads per block"
    );
    let end = (start + tile_len).min(total);
    let t = local_index() as usize;
    let splits = shared_array!(u64, 2);
    let at_a = |i: usize| a[i];
    let at_b = |i: usize| b[i];
    // Two warps search at once: the tile's first and one-past-last diagonals (one thread does
    // both in a block of one).
    if t == 0 {
        splits.write(0, merge_path(start, a.len(), b.len(), at_a, at_b) as u64);
    }
    if t == (block_size() as usize - 1).min(32) {
        splits.write(1, merge_path(end, a.len(), b.len(), at_a, at_b) as u64);
    }
    sync_threads();
    let a0 = splits.read(0) as usize;
    let a1 = splits.read(1) as usize;
    let (b0, b1) = (start - a0, end - a1);
    let (na, len) = (a1 - a0, end - start);
    let s = shared_array!([u32; 4], MERGE_TILE_BYTES / 16)
        .as_slice()
        .cast::<T>();
    // The tile's part of `a`, then its part of `b`, side by side in shared memory.
    let mut j = t;
    while j < len {
        let v = if j < na { a[a0 + j] } else { b[b0 + (j - na)] };
        // SAFETY: `j < len <= tile_len <= MERGE_BLOCK · ITEMS`, which `merge_items` sized to the
        // buffer; each slot is written by one thread.
        unsafe { s.write_unchecked(j, v) };
        j += block_size() as usize;
    }
    sync_threads();
    // This thread's stretch of the path within the tile.
    let nb = b1 - b0;
    let diagonal = (t * ITEMS).min(len);
    // SAFETY (both closures): the search reads `a` at `< na` and `b` at `< nb`, slots written
    // above before the barrier.
    let mut ia = merge_path(
        diagonal,
        na,
        nb,
        |i| unsafe { s.read_unchecked(i) },
        |i| unsafe { s.read_unchecked(na + i) },
    );
    let mut ib = diagonal - ia;
    let mut items = [s.read(0); ITEMS];
    for item in items.iter_mut() {
        // Take from `b` only when `a` is exhausted or `b`'s next is strictly smaller (ties:
        // `a` first).
        let take_b = ib < nb
            && (ia >= na || {
                // SAFETY: `ia < na` and `ib < nb` index written slots.
                let (x, y) = unsafe { (s.read_unchecked(ia), s.read_unchecked(na + ib)) };
                y < x
            });
        if take_b {
            // SAFETY: `ib < nb`.
            *item = unsafe { s.read_unchecked(na + ib) };
            ib += 1;
        } else if ia < na {
            // SAFETY: `ia < na`.
            *item = unsafe { s.read_unchecked(ia) };
            ia += 1;
        }
    }
    sync_threads();
    for (i, &v) in items.iter().enumerate() {
        let k = t * ITEMS + i;
        if k < len {
            // SAFETY: `k < len <= tile_len`, a slot of the buffer; one thread per slot. Every
            // thread finished reading the inputs (barrier above).
            unsafe { s.write_unchecked(k, v) };
        }
    }
    sync_threads();
    let mut j = t;
    while j < len {
        // SAFETY: slot `j < len` was written before the barrier; output `start + j < total <=
        // out.len()` belongs to this tile alone.
        unsafe { out.write_unchecked_race(start + j, s.read_unchecked(j)) };
        j += block_size() as usize;
    }
}

/// The body of a vectorized lower-bound kernel: `out[i]` = the number of elements of the
/// ascending run `sorted` that are less than `queries[i]` (where `queries[i]` would be inserted
/// before any equal element). One thread per query, a binary search each.
///
/// Panics (the launch fails) if `out` is shorter than `queries`.
#[inline(always)]
pub fn lower_bound<T: DeviceCopy + PartialOrd>(
    sorted: &[T],
    queries: &[T],
    out: &DisjointSlice<'_, u64>,
) {
    let i = global_id_x();
    if i >= queries.len() {
        return;
    }
    assert!(
        out.len() >= queries.len(),
        "device::lower_bound: the output is shorter than the queries"
    );
    let q = queries[i];
    let (mut lo, mut hi) = (0, sorted.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if sorted[mid] < q {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    // SAFETY: `i < queries.len() <= out.len()`; one thread per query.
    unsafe { out.write_unchecked_race(i, lo as u64) };
}
