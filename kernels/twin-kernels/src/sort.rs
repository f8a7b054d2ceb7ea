//! Bitonic sort of each block's `SORT_TILE` keys in shared memory (CUDA's `bitonicSortShared`,
//! ascending).

use gpu::prelude::*;

/// Keys sorted per block; the block has `SORT_TILE / 2` threads, each comparing one pair.
pub const SORT_TILE: usize = 1024;

/// Sorts `keys[b * SORT_TILE..(b + 1) * SORT_TILE]` into the same range of `out`, for every
/// block `b`. The length must be a multiple of `SORT_TILE`.
#[kernel(block(512))]
pub fn bitonic_sort_shared(keys: &[u32], out: DisjointSlice<u32>) {
    let s = shared_array!(u32, SORT_TILE);
    let tid = thread::thread_idx_x() as usize;
    let base = thread::block_idx_x() as usize * SORT_TILE;
    let half = SORT_TILE / 2;
    s.write(tid, keys[base + tid]);
    s.write(tid + half, keys[base + tid + half]);
    let mut size = 2;
    while size <= SORT_TILE {
        let descending = tid & (size / 2) != 0;
        let mut stride = size / 2;
        while stride > 0 {
            sync_threads();
            let pos = 2 * tid - (tid & (stride - 1));
            let (a, b) = (s.read(pos), s.read(pos + stride));
            if (a > b) != descending {
                s.write(pos, b);
                s.write(pos + stride, a);
            }
            stride /= 2;
        }
        size *= 2;
    }
    sync_threads();
    // SAFETY: block b writes only its own tile, each thread two distinct elements of it.
    unsafe {
        out.write_unchecked_race(base + tid, s.read(tid));
        out.write_unchecked_race(base + tid + half, s.read(tid + half));
    }
}
