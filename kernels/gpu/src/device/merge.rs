//! Device-wide merge of two sorted sequences (merge path) and vectorized binary search.
//!
//! Both exist for the last steps of a distributed sort (each rank merges the sorted runs the
//! other ranks sent it, and finds where splitters fall in its own sorted keys), but they are
//! general: any two ascending runs of an ordered type merge into one, stably.
//!
//! The merge is two launches, as CUB's and ModernGPU's are: [`merge_partition`] finds where the
//! merge path crosses every tile boundary, then [`merge`] merges one tile per block.

use core::ops::{Add, Div, Sub};

use crate::DeviceCopy;
use crate::shared_array;
use crate::slice::DisjointSlice;
use crate::sync::sync_threads;
use crate::thread::{block_idx_x, block_size, global_id_x, global_index, local_index};
use crate::unroll;

/// Threads per block of the merge kernels.
pub const MERGE_BLOCK: u32 = 256;

/// Threads per block of the lower-bound kernels.
pub const LOWER_BOUND_BLOCK: u32 = 256;

/// Bytes of the merge's tile buffer in shared memory.
const MERGE_TILE_BYTES: usize = 16 * 1024;

/// Output items per thread of the merge of `T`: the most that let one block's tile
/// (`MERGE_BLOCK` of them) fill the 16 KiB shared buffer, made odd. Thread `t` stores its item
/// `i` to slot `t · ITEMS + i`: with an odd count the 32 lanes' slots of 4-byte keys fall in 32
/// different banks (with 16 they fell in two, a 16-way conflict on every store).
pub const fn merge_items<T>() -> usize {
    let n = MERGE_TILE_BYTES / (MERGE_BLOCK as usize * core::mem::size_of::<T>());
    if n > 1 && n.is_multiple_of(2) {
        n - 1
    } else {
        n
    }
}

/// Output elements per block of the merge of `T`: [`merge_partition`] splits the output every
/// `merge_tile` elements, and [`merge`] runs one block per tile (`ceil((a + b) / merge_tile)`
/// blocks, [`merge_splits`] splits).
pub const fn merge_tile<T>() -> usize {
    MERGE_BLOCK as usize * merge_items::<T>()
}

/// Splits the merge of runs of `total` elements needs: one per tile boundary, both ends included.
pub const fn merge_splits(total: usize, tile: usize) -> usize {
    total.div_ceil(tile) + 1
}

/// The merge path: how many of the first `diagonal` outputs of the stable merge of `a` and `b`
/// come from `a` (ties go to `a`). Binary search over the diagonal, `log2(min(a, b))` steps.
///
/// `I` is the index type: `usize` for runs in global memory, `u32` inside a tile (32-bit
/// arithmetic where the lengths allow it: one instruction per operation, not two).
#[inline(always)]
pub fn merge_path<T, I>(
    diagonal: I,
    a_len: I,
    b_len: I,
    a: impl Fn(I) -> T,
    b: impl Fn(I) -> T,
) -> I
where
    T: Copy + PartialOrd,
    I: Copy + Ord + From<u8> + Add<Output = I> + Sub<Output = I> + Div<Output = I>,
{
    let (zero, one, two) = (I::from(0), I::from(1), I::from(2));
    let mut lo = if diagonal > b_len {
        diagonal - b_len
    } else {
        zero
    };
    let mut hi = diagonal.min(a_len);
    while lo < hi {
        let mid = (lo + hi) / two;
        // `a[mid]` is among the first `diagonal` outputs iff it does not come after
        // `b[diagonal - 1 - mid]` (ties: `a` first).
        if b(diagonal - one - mid) < a(mid) {
            hi = mid;
        } else {
            lo = mid + one;
        }
    }
    lo
}

/// The body of a merge-partition kernel, the first of a device-wide merge's two launches:
/// `splits[i]` = how many of the first `i · tile` outputs of the stable merge of `a` and `b`
/// come from `a` (the diagonal clamped to `a.len() + b.len()`), for every `i <
/// splits.len()`. One thread per split, a binary search in global memory each.
///
/// Doing the searches here, all at once, rather than in each block of [`merge`] keeps their
/// chain of dependent global loads (about 30 for runs of 2^28) off the merge's critical path:
/// a block that searched for itself held its 256 threads idle meanwhile.
#[inline(always)]
pub fn merge_partition<T: Copy + PartialOrd>(
    a: &[T],
    b: &[T],
    tile: usize,
    splits: &mut DisjointSlice<'_, u64>,
) {
    let i = global_index();
    if i.get() >= splits.len() {
        return;
    }
    let diagonal = i.get().saturating_mul(tile).min(a.len() + b.len());
    let split = merge_path(diagonal, a.len(), b.len(), |k| a[k], |k| b[k]);
    splits.set(i, split as u64);
}

/// The body of a device-wide merge kernel, the second launch: `out[..a.len() + b.len()]`
/// receives the stable merge of the ascending runs `a` and `b` (equal elements: those of `a`
/// first, each run in its order), given the `splits` that [`merge_partition`] wrote for the
/// tile `block_size() · ITEMS`.
///
/// One block per tile of outputs: the block reads where its tile starts and ends on the merge
/// path, loads the tile's parts of `a` and `b` into shared memory with coalesced reads, each
/// thread finds its own `ITEMS`-long stretch of the path there and merges it serially (one
/// shared load per output, the two candidates kept in registers), and the block writes the tile
/// back with coalesced stores. Every input is read once and every output written once.
///
/// Panics (the launch fails) if `out` is shorter than `a.len() + b.len()`, the block has more
/// than [`MERGE_BLOCK`] threads, or `splits` are not a merge path of `a` and `b` at this tile.
#[inline(always)]
pub fn merge<T: DeviceCopy + PartialOrd, const ITEMS: usize>(
    a: &[T],
    b: &[T],
    splits: &[u64],
    out: &DisjointSlice<'_, T>,
) {
    let total = a.len() + b.len();
    let tile_len = block_size() as usize * ITEMS;
    let block = block_idx_x() as usize;
    let start = block * tile_len;
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
    let len = end - start;
    let (a0, a1) = (splits[block] as usize, splits[block + 1] as usize);
    assert!(
        a0 <= a1 && a0 <= start && a1 <= a.len() && a1 - a0 <= len && end - a1 <= b.len(),
        "device::merge: the splits are not this merge's path at this tile (run merge_partition \
         with the same runs and tile first)"
    );
    let (b0, na) = (start - a0, a1 - a0);
    let nb = len - na;
    // Positions inside the tile are below `tile_len` (a few thousand): 32-bit arithmetic.
    let (na32, nb32, len32) = (na as u32, nb as u32, len as u32);
    let t = local_index();
    let bs = block_size();
    let s = shared_array!([u32; 4], MERGE_TILE_BYTES / 16)
        .as_slice()
        .cast::<T>();
    // The tile's part of `a`, then its part of `b`, side by side in shared memory. All of a
    // thread's loads are issued before its first store, so `ITEMS` loads per thread are in
    // flight at once (one at a time, the block could not cover the memory latency). Every loop
    // over `ITEMS` is unrolled in the source: rolled, LLVM indexes the register arrays
    // dynamically (a select over all of them per access).
    let (a_part, b_part) = (&a[a0..a1], &b[b0..b0 + nb]);
    // Slot `j` of the tile reads `a_part[j]` below `na`, else `b_part[j - na]`: one address
    // select and one load per item (no branch around each load).
    let (a_base, b_base) = (a_part.as_ptr(), b_part.as_ptr().wrapping_sub(na));
    // SAFETY: `T: DeviceCopy` is plain data, valid for any bit pattern (zeros included); slots
    // past the tile's end are never stored.
    let mut loaded: [T; ITEMS] = [unsafe { core::mem::zeroed() }; ITEMS];
    unroll!(ITEMS, |i| {
        let j = t + i as u32 * bs;
        let from = if j < na32 { a_base } else { b_base };
        if j < len32 {
            // SAFETY: `j < na` is `a_part[j]`, else `j - na < len - na = nb` is `b_part[j - na]`
            // (`b_base + j`), inside their slices.
            loaded[i] = unsafe { from.wrapping_add(j as usize).read() };
        }
    });
    unroll!(ITEMS, |i| {
        let j = t + i as u32 * bs;
        if j < len32 {
            // SAFETY: `j < len <= tile_len <= MERGE_BLOCK · ITEMS`, which `merge_items` sized
            // to fit the buffer; each slot is written by one thread.
            unsafe { s.write_unchecked(j as usize, loaded[i]) };
        }
    });
    sync_threads();
    // This thread's stretch of the path within the tile.
    let diagonal = (t * ITEMS as u32).min(len32);
    // SAFETY (both closures): the search reads `a` at `< na` and `b` at `< nb`, slots written
    // above before the barrier.
    let mut ia = merge_path(
        diagonal,
        na32,
        nb32,
        |i| unsafe { s.read_unchecked(i as usize) },
        |i| unsafe { s.read_unchecked((na32 + i) as usize) },
    );
    let mut ib = diagonal - ia;
    // The next candidate of each run, in registers; a run's position past its end reads a
    // clamped slot whose value is never taken. SAFETY (all reads below): `min(.., last)` is a
    // slot `< len`, written before the barrier.
    let last = len32 - 1;
    let mut ka = unsafe { s.read_unchecked(ia.min(last) as usize) };
    let mut kb = unsafe { s.read_unchecked((na32 + ib).min(last) as usize) };
    let mut items = [ka; ITEMS];
    unroll!(ITEMS, |i| {
        // Take from `b` only when `a` is exhausted or `b`'s next is strictly smaller (ties: `a`
        // first); then load only the replaced candidate.
        let take_a = !(ib < nb32 && (ia >= na32 || kb < ka));
        items[i] = if take_a { ka } else { kb };
        ia += take_a as u32;
        ib += !take_a as u32;
        let next = if take_a { ia } else { na32 + ib };
        let v = unsafe { s.read_unchecked(next.min(last) as usize) };
        if take_a {
            ka = v;
        } else {
            kb = v;
        }
    });
    sync_threads();
    unroll!(ITEMS, |i| {
        let k = t * ITEMS as u32 + i as u32;
        if k < len32 {
            // SAFETY: `k < len <= tile_len`, a slot of the buffer; one thread per slot. Every
            // thread finished reading the inputs (barrier above).
            unsafe { s.write_unchecked(k as usize, items[i]) };
        }
    });
    sync_threads();
    // The tile's outputs, `out[start..end]` (`end <= total <= out.len()`, checked above).
    let tile_out = out.as_mut_ptr().wrapping_add(start);
    unroll!(ITEMS, |i| {
        let j = t + i as u32 * bs;
        if j < len32 {
            // SAFETY: slot `j < len` was written before the barrier; output `start + j < end`
            // is inside `out` and belongs to this tile alone.
            unsafe { tile_out.add(j as usize).write(s.read_unchecked(j as usize)) };
        }
    });
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
