//! Device-wide reduction in one launch.

use core::mem::{MaybeUninit, size_of};

use crate::block;
use crate::block::load::load_v4;
use crate::ops::ReduceOp;
use crate::slice::DisjointSlice;
use crate::sync::{fence_acq_rel, sync_threads_count, sync_threads_or};
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
/// Launch with [`REDUCE_BLOCK`] threads and `G` blocks, `1 ≤ G ≤ max(1, n / tile)` where a tile
/// is `REDUCE_BLOCK · N` elements (the host picks `G` to fill the GPU: the blocks resident at
/// once). The work is spread evenly:
/// - the input splits into a head of fewer than 16 bytes and a 16-byte aligned body (for
///   element sizes dividing 16; other types take the strided path of the last point);
/// - `⌊body tiles / G⌋` rounds in which block `b` folds tile `round · G + b` with 16-byte vector
///   loads through the non-coherent path, each warp load reading 512 consecutive bytes, two
///   tiles (128 bytes per thread) loaded per loop step before they are folded;
/// - the rest (fewer than `G` tiles, the partial tile, the head) is dealt out over all
///   `G · REDUCE_BLOCK` threads in 16-byte chunks and single elements, so no block has a whole
///   extra tile to read while the others wait.
///
/// Each block's threads are reduced ([`block::reduce`]) and the block total written to
/// `partials[b]`. The last block to finish (an atomic ticket on `counter[0]`) folds the `G`
/// partials and writes `out[0]`, then resets the counter to 0 for the next launch. With `G = 1`
/// there are no partials: the block writes `out[0]` directly, so small inputs cost one launch.
///
/// **The operator must be commutative** as well as associative: threads accumulate strided
/// tiles. Float sums: error ≤ (n / (G · REDUCE_BLOCK) + 20) · ε · Σ|x|.
///
/// Panics (the launch fails) if the block is not [`REDUCE_BLOCK`] threads, `G` is out of range,
/// or `partials`/`counter`/`out` are too short.
#[inline(always)]
pub fn reduce<T: DeviceCopy, O: ReduceOp<T>, const N: usize>(
    input: &[T],
    init: T,
    op: O,
    partials: &DisjointSlice<'_, T>,
    counter: &DisjointSlice<'_, u32>,
    out: &DisjointSlice<'_, T>,
) {
    reduce_unrolled::<T, O, N, 2>(input, init, op, partials, counter, out)
}

/// [`reduce`] with `U` tiles per step of the main loop (`U · N` items per thread loaded before
/// they are folded). On the H100, `U = 1, 2, 4` measured the same within noise (ptxas
/// interleaves the loads with the adds); 2 is kept for GPUs with more bandwidth to cover.
#[inline(always)]
fn reduce_unrolled<T: DeviceCopy, O: ReduceOp<T>, const N: usize, const U: usize>(
    input: &[T],
    init: T,
    op: O,
    partials: &DisjointSlice<'_, T>,
    counter: &DisjointSlice<'_, u32>,
    out: &DisjointSlice<'_, T>,
) {
    let n = input.len();
    let threads = REDUCE_BLOCK as usize;
    let tile = threads * N;
    let grid = grid_dim_x() as usize;
    let b = block_idx_x() as usize;
    let t = local_index() as usize;
    assert!(
        block_size() == REDUCE_BLOCK,
        "device::reduce: launch with REDUCE_BLOCK threads per block"
    );
    assert!(
        grid <= (n / tile).max(1),
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

    let fold_in = |acc: Option<T>, x: T| match acc {
        Some(a) => op.combine(a, x),
        None => x,
    };
    let mut acc: Option<T> = None;
    // This thread's index in the grid, and the grid's thread count.
    let (g, all) = (b * threads + t, grid * threads);
    let size = size_of::<T>();
    let addr = input.as_ptr() as usize;
    // Rounds of whole tiles (same count in every block); `0` when nothing runs vectorized.
    let mut rounds = 0;
    if size != 0 && 16 % size == 0 && N * size == 64 && addr.is_multiple_of(size) {
        // Vectorized: head `[0, head)`, body `[head, n)` from a 16-aligned address.
        let per = 16 / size;
        let head = ((16 - addr % 16) % 16 / size).min(n);
        if let Some(&x) = input.get(g).filter(|_| g < head) {
            acc = Some(x);
        }
        // SAFETY: head <= n.
        let body = unsafe { input.as_ptr().add(head) }.cast::<u8>();
        let body_len = n - head;
        rounds = body_len / tile / grid;
        // This thread's first chunk in a tile: chunk `c` of the tile is `16 · (c · B + t)`.
        // (Wrapping: with no whole round it may point past the input; it is then never read.)
        let mine = body.wrapping_add(16 * t);
        let tile_bytes = tile * size;
        let mut round = 0;
        while round + U <= rounds {
            let items: [[T; N]; U] = core::array::from_fn(|u| {
                // SAFETY: tile `(round + u)·G + b` < rounds·G lies inside the body, 16-aligned;
                // the input is not written during the kernel.
                unsafe { load_tile::<T, N>(mine.add(((round + u) * grid + b) * tile_bytes)) }
            });
            let mut sum = items[0];
            // Written out (as in `fold_tree`): with 16-bit items the loops stayed loops and the
            // arrays went to local memory.
            crate::unroll!(U, |u| {
                if u > 0 {
                    crate::unroll!(N, |i| { sum[i] = op.combine(sum[i], items[u][i]) });
                }
            });
            acc = Some(fold_in(acc, fold_tree(sum, op)));
            round += U;
        }
        while round < rounds {
            // SAFETY: as above.
            let items = unsafe { load_tile::<T, N>(mine.add((round * grid + b) * tile_bytes)) };
            acc = Some(fold_in(acc, fold_tree(items, op)));
            round += 1;
        }
        // The rest of the body, `[rest, body_len)`, over all threads: chunks, then elements.
        let rest = rounds * grid * tile;
        let chunks = (body_len - rest) / per;
        let mut c = g;
        while c < chunks {
            // SAFETY: chunk `c` of the rest holds elements `rest + c·per ..` `+ per <=
            // body_len`, 16-aligned; read-only during the kernel.
            let v = unsafe { load_v4(body.add(16 * c + rest * size)) };
            let p = (&raw const v).cast::<T>();
            for k in 0..per {
                // SAFETY: `per · size == 16` bytes; any bit pattern is a valid `T`.
                acc = Some(fold_in(acc, unsafe { p.add(k).read_unaligned() }));
            }
            c += all;
        }
        if let Some(&x) = input.get(head + rest + chunks * per + g) {
            acc = Some(fold_in(acc, x));
        }
    } else {
        // Element by element, `N` strided elements per step.
        let mut e = g;
        while e + (N - 1) * all < n {
            // SAFETY: the largest index, e + (N-1)·all, is < n.
            let items: [T; N] =
                core::array::from_fn(|i| unsafe { *input.get_unchecked(e + i * all) });
            acc = Some(fold_in(acc, fold_tree(items, op)));
            e += N * all;
        }
        while let Some(&x) = input.get(e) {
            acc = Some(fold_in(acc, x));
            e += all;
        }
    }
    // Every thread has a value after a whole round. Otherwise either `G = 1`, where the threads
    // with a value (a chunk or an element) are a prefix of the block, or `G > 1` and the rest
    // (at least `G - 1` tiles) gives every thread a chunk or an element.
    let valid = if rounds > 0 {
        threads as u32
    } else {
        sync_threads_count(acc.is_some())
    };
    let total = block::reduce_partial(acc.unwrap_or(input[0]), op, valid.max(1));

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

/// One thread's share of a tile: `N` items from 16-byte chunks `p`, `p + 16·B`, `p + 32·B`, …
/// (`B` = [`REDUCE_BLOCK`]), so each warp load reads 512 consecutive bytes.
///
/// # Safety
/// The chunks must be 16-aligned readable global memory not written during the kernel;
/// `N · size_of::<T>()` must be a multiple of 16.
#[inline(always)]
unsafe fn load_tile<T: DeviceCopy, const N: usize>(p: *const u8) -> [T; N] {
    let mut out = MaybeUninit::<[T; N]>::uninit();
    let dst = out.as_mut_ptr().cast::<[u32; 4]>();
    for c in 0..N * size_of::<T>() / 16 {
        // SAFETY: the caller guarantees the chunks; `dst` has room for every chunk.
        unsafe {
            dst.add(c)
                .write_unaligned(load_v4(p.add(16 * c * REDUCE_BLOCK as usize)))
        };
    }
    // SAFETY: every byte was written; any bit pattern is a valid `T` (DeviceCopy).
    unsafe { out.assume_init() }
}

/// `items[0] ⊕ … ⊕ items[N-1]` (in a pairwise tree, for instruction-level parallelism; the
/// operator is commutative and associative).
#[inline(always)]
/// Every level and item is written out ([`crate::unroll!`]; `len` is a constant in each copy):
/// left as loops, a long array (16-bit items) was indexed at run time, in local memory.
fn fold_tree<T: Copy, O: ReduceOp<T>, const N: usize>(mut items: [T; N], op: O) -> T {
    const { assert!(N <= 1 << 8, "fold_tree: at most 256 items") };
    let mut len = N;
    crate::unroll!(8, |_level| {
        if len > 1 {
            let half = len / 2;
            crate::unroll!(N, |i| {
                if i < half {
                    items[i] = op.combine(items[i], items[i + len - half]);
                }
            });
            len -= half;
        }
    });
    items[0]
}
