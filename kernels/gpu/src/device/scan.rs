//! Device-wide inclusive and exclusive scans in a single pass (decoupled look-back).

use core::mem::{MaybeUninit, size_of};

use super::lookback::TileStatus;
use crate::DeviceCopy;
use crate::block;
use crate::block::load::{load_v4, store_v4};
use crate::ops::ReduceOp;
use crate::slice::DisjointSlice;
use crate::sync::sync_threads;
use crate::thread::{block_idx_x, block_size, local_index};

/// Threads per block of the scan kernels.
pub const SCAN_BLOCK: u32 = 256;

/// Items per thread per tile: 16 for values up to 4 bytes (a 4096-element tile), 8 for 8-byte
/// values.
pub const fn scan_items<T>() -> usize {
    if size_of::<T>() <= 4 { 16 } else { 8 }
}

/// The body of a device-wide scan kernel, inclusive (`seed = None`: `output[i] = input[0] ⊕ …
/// ⊕ input[i]`) or exclusive (`seed = Some(init)`: `output[0] = init`, `output[i] = init ⊕
/// input[0] ⊕ … ⊕ input[i-1]`).
///
/// One block per tile of `B · N` elements (`B` = [`SCAN_BLOCK`]); block `k` scans tile `k`:
/// 16-byte vector loads of `N` consecutive items per thread, a [`block`] scan whose prefix
/// callback looks back over earlier tiles' published aggregates ([`TileStatus`]), then vector
/// stores. Every element is read once and written once.
///
/// The operator needs only associativity: values are combined in index order. Float sums:
/// each output is a sum in a fixed tree order; error ≤ (N + 10 + log₂ tiles)·ε·Σ|x| for the
/// prefix's elements, in practice far less.
///
/// Panics (the launch fails) if `output` is shorter than `input` or `status` too short.
#[inline(always)]
pub fn scan<T: DeviceCopy, O: ReduceOp<T>, const N: usize>(
    input: &[T],
    output: &DisjointSlice<'_, T>,
    op: O,
    seed: Option<T>,
    status: &DisjointSlice<'_, u64>,
    epoch: u32,
) {
    let n = input.len();
    let tile_len = block_size() as usize * N;
    let tile = block_idx_x() as usize;
    let start = tile * tile_len;
    if start >= n {
        return;
    }
    assert!(
        output.len() >= n,
        "device scan: output shorter than the input"
    );
    let status = TileStatus::<T>::new(status, n.div_ceil(tile_len), epoch);
    let full = start + tile_len <= n;
    // Items past the end of a partial tile only affect discarded outputs; any value will do.
    let transposed = full && transposable::<T, N>(input.as_ptr());
    let items: [T; N] = if transposed {
        // SAFETY: the full tile is in bounds; `transposable` checked shape and alignment.
        unsafe { load_transposed(input.as_ptr().add(start)) }
    } else if full {
        block::load_blocked(input, start)
    } else {
        block::load_blocked_partial(input, start, input[start])
    };

    let result = if tile == 0 {
        let (result, inclusive_prefix) = match seed {
            None => block::inclusive_scan_items(items, op),
            Some(init) => {
                let (r, aggregate) = block::exclusive_scan_items(items, op, init);
                (r, op.combine(init, aggregate))
            }
        };
        if local_index() == 0 {
            status.publish_inclusive(0, inclusive_prefix);
        }
        result
    } else {
        let prefix_of = |aggregate| status.look_back(tile, aggregate, op);
        match seed {
            None => block::inclusive_scan_with_prefix(items, op, prefix_of),
            Some(_) => block::exclusive_scan_with_prefix(items, op, prefix_of),
        }
    };

    // SAFETY: block `tile` alone writes tile `tile` of the output.
    unsafe {
        if transposed && (output.as_mut_ptr() as usize).is_multiple_of(16) {
            store_transposed(output.as_mut_ptr().add(start), result);
        } else if full {
            block::store_blocked(output, start, result);
        } else {
            block::store_blocked_partial(output, start, result);
        }
    }
}

/// 16-byte chunks per thread of a scan tile (4: tiles are 64 bytes per thread).
const fn chunks<T, const N: usize>() -> usize {
    N * size_of::<T>() / 16
}

/// Whether full tiles of this scan can move through shared memory in 16-byte chunks: 64 bytes
/// per thread, [`SCAN_BLOCK`] threads, elements dividing 16 bytes, a 16-aligned buffer.
#[inline(always)]
pub(crate) fn transposable<T, const N: usize>(p: *const T) -> bool {
    let size = size_of::<T>();
    size != 0
        && 16 % size == 0
        && N * size == 64
        && block_size() == SCAN_BLOCK
        && (p as usize).is_multiple_of(16)
}

/// Slot of chunk `j`: one padding slot per `k` chunks keeps both the coalesced writes and the
/// per-thread reads (stride of `k + 1` slots) free of bank conflicts.
#[inline(always)]
fn padded(j: usize, k: usize) -> usize {
    j + j / k
}

/// Chunks of the tile-transposition buffer (1024 for a 16 KiB tile, plus padding).
const TRANSPOSE_CHUNKS: usize = 1280;

/// Bytes of the tile-transposition buffer, which [`super::select`] reuses to compact a tile.
pub(crate) const TRANSPOSE_BYTES: usize = 16 * TRANSPOSE_CHUNKS;

/// The tile-transposition buffer: 1024 chunks of 16 bytes (a 16 KiB tile) plus padding.
#[inline(always)]
pub(crate) fn transpose_scratch() -> crate::shared::SharedSlice<[u32; 4]> {
    crate::shared_array!([u32; 4], TRANSPOSE_CHUNKS).as_slice()
}

/// Blocked load of a full tile with coalesced DRAM access: each warp instruction reads 512
/// consecutive bytes into shared memory, then each thread reads its own 64-byte run back. (A
/// direct blocked load makes each instruction touch 32 runs 64 bytes apart.)
///
/// # Safety
/// `tile` must point to a full, 16-aligned tile (`SCAN_BLOCK · N` elements) of readable global
/// memory that nothing writes during the kernel; all threads of the block must call it.
#[inline(always)]
pub(crate) unsafe fn load_transposed<T: DeviceCopy, const N: usize>(tile: *const T) -> [T; N] {
    let (t, b, k) = (
        local_index() as usize,
        block_size() as usize,
        chunks::<T, N>(),
    );
    let s = transpose_scratch();
    for c in 0..k {
        let j = c * b + t;
        // SAFETY: j < k·b = 1024 chunks of the tile; padded(j) < 1280.
        unsafe { s.write_unchecked(padded(j, k), load_v4(tile.cast::<u8>().add(16 * j))) };
    }
    sync_threads();
    let mut out = MaybeUninit::<[T; N]>::uninit();
    let dst = out.as_mut_ptr().cast::<[u32; 4]>();
    for c in 0..k {
        // SAFETY: t·k + c < 1024; `dst` holds k chunks.
        unsafe {
            dst.add(c)
                .write_unaligned(s.read_unchecked(padded(t * k + c, k)))
        };
    }
    sync_threads();
    // SAFETY: all N·size bytes written; any bit pattern is a valid T (DeviceCopy).
    unsafe { out.assume_init() }
}

/// The store counterpart of [`load_transposed`].
///
/// # Safety
/// `tile` must point to a full, 16-aligned tile of global memory that only this block accesses;
/// all threads of the block must call it.
#[inline(always)]
unsafe fn store_transposed<T: DeviceCopy, const N: usize>(tile: *mut T, items: [T; N]) {
    let (t, b, k) = (
        local_index() as usize,
        block_size() as usize,
        chunks::<T, N>(),
    );
    let s = transpose_scratch();
    let src = (&raw const items).cast::<[u32; 4]>();
    for c in 0..k {
        // SAFETY: as in `load_transposed`; `items` is padding-free (DeviceCopy).
        unsafe { s.write_unchecked(padded(t * k + c, k), src.add(c).read_unaligned()) };
    }
    sync_threads();
    for c in 0..k {
        let j = c * b + t;
        // SAFETY: chunk j lies in this block's tile.
        unsafe {
            store_v4(
                tile.cast::<u8>().add(16 * j),
                s.read_unchecked(padded(j, k)),
            )
        };
    }
}
