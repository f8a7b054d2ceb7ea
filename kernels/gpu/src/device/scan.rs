//! Device-wide inclusive and exclusive scans in a single pass (decoupled look-back).

use core::mem::size_of;

use super::lookback::TileStatus;
use crate::DeviceCopy;
use crate::block;
use crate::ops::ReduceOp;
use crate::slice::DisjointSlice;
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
    let items: [T; N] = if full {
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
        if full {
            block::store_blocked(output, start, result);
        } else {
            block::store_blocked_partial(output, start, result);
        }
    }
}
