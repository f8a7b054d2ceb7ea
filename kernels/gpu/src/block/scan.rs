//! Block-wide prefix scans over items held in the *blocked* arrangement.

use super::{SCRATCH_SLOTS, scratch, warp_layout};
use crate::DeviceCopy;
use crate::ops::ReduceOp;
use crate::sync::sync_threads;
use crate::thread::WARP_SIZE;
use crate::warp;

/// Slot of the scratch that carries the block prefix from warp 0 to everyone.
const PREFIX_SLOT: usize = SCRATCH_SLOTS - 1;

/// The scan of the thread totals across the block.
struct BlockScan<T> {
    /// `op` over all threads before this one (`None` for thread 0).
    before: Option<T>,
    /// `op` over the whole block.
    aggregate: T,
}

/// Scans the per-thread totals: a warp scan, the warp totals through shared memory, and a
/// second warp scan of those (in every warp, so no further barrier is needed).
#[inline(always)]
fn scan_thread_totals<T: DeviceCopy, O: ReduceOp<T>>(total: T, op: O) -> BlockScan<T> {
    let (warp_id, lane, warps) = warp_layout();
    let inclusive = warp::inclusive_scan(total, op);
    let within_warp = warp::shuffle_up(inclusive, 1);
    if warps == 1 {
        return BlockScan {
            before: (lane > 0).then_some(within_warp),
            aggregate: warp::broadcast(inclusive, WARP_SIZE - 1),
        };
    }
    let s = scratch::<T>();
    if lane == WARP_SIZE - 1 {
        // SAFETY: warp_id < 32 < SCRATCH_SLOTS.
        unsafe { s.write_unchecked(warp_id as usize, inclusive) };
    }
    sync_threads();
    let warp_total = if lane < warps {
        // SAFETY: lane < 32; written before the barrier.
        unsafe { s.read_unchecked(lane as usize) }
    } else {
        inclusive
    };
    let warp_totals_scanned = warp::inclusive_scan(warp_total, op);
    let aggregate = warp::broadcast(warp_totals_scanned, warps - 1);
    // The fold of warps 0..warp_id (meaningful for warp_id > 0).
    let warps_before = warp::shuffle_idx(warp_totals_scanned, warp_id.saturating_sub(1));
    let before = match (warp_id, lane) {
        (0, 0) => None,
        (0, _) => Some(within_warp),
        (_, 0) => Some(warps_before),
        _ => Some(op.combine(warps_before, within_warp)),
    };
    BlockScan { before, aggregate }
}

/// Calls `prefix_of` in warp 0 with the block aggregate and hands lane 0's answer to every
/// thread.
#[inline(always)]
fn block_prefix<T: DeviceCopy>(aggregate: T, prefix_of: impl FnOnce(T) -> T) -> T {
    let (warp_id, lane, _) = warp_layout();
    let s = scratch::<T>();
    if warp_id == 0 {
        let prefix = prefix_of(aggregate);
        if lane == 0 {
            // SAFETY: PREFIX_SLOT < SCRATCH_SLOTS and is not a warp-total slot.
            unsafe { s.write_unchecked(PREFIX_SLOT, prefix) };
        }
    }
    sync_threads();
    // SAFETY: written by warp 0 before the barrier.
    unsafe { s.read_unchecked(PREFIX_SLOT) }
}

/// Thread-local inclusive scan of `items`, in place; returns the thread total.
#[inline(always)]
fn thread_inclusive<T: Copy, O: ReduceOp<T>, const N: usize>(items: &mut [T; N], op: O) -> T {
    for i in 1..N {
        items[i] = op.combine(items[i - 1], items[i]);
    }
    items[N - 1]
}

/// Turns a thread-local inclusive scan into the block's inclusive result given the fold of
/// everything before this thread.
#[inline(always)]
fn apply_inclusive<T: Copy, O: ReduceOp<T>, const N: usize>(
    items: &mut [T; N],
    op: O,
    before: Option<T>,
) {
    if let Some(p) = before {
        for item in items.iter_mut() {
            *item = op.combine(p, *item);
        }
    }
}

/// Turns a thread-local inclusive scan into the block's exclusive result given the fold of
/// everything before this thread (including any seed).
#[inline(always)]
fn apply_exclusive<T: Copy, O: ReduceOp<T>, const N: usize>(items: &mut [T; N], op: O, before: T) {
    for i in (1..N).rev() {
        items[i] = op.combine(before, items[i - 1]);
    }
    items[0] = before;
}

/// Inclusive scan of `N` items per thread (blocked): item `j` of thread `t` becomes the fold of
/// every item up to and including it. Returns the items and the block aggregate (in every
/// thread). Order: thread-sequential, then warp and block trees; float error ≤
/// (N + 10)·ε·Σ|x|.
#[inline(always)]
pub fn inclusive_scan_items<T: DeviceCopy, O: ReduceOp<T>, const N: usize>(
    mut items: [T; N],
    op: O,
) -> ([T; N], T) {
    let total = thread_inclusive(&mut items, op);
    let scan = scan_thread_totals(total, op);
    apply_inclusive(&mut items, op, scan.before);
    sync_threads();
    (items, scan.aggregate)
}

/// Exclusive scan of `N` items per thread (blocked), seeded with `init`: the first item of the
/// block becomes `init`, every other the fold of `init` and all items before it. Returns the
/// items and the block aggregate (without `init`).
#[inline(always)]
pub fn exclusive_scan_items<T: DeviceCopy, O: ReduceOp<T>, const N: usize>(
    mut items: [T; N],
    op: O,
    init: T,
) -> ([T; N], T) {
    let total = thread_inclusive(&mut items, op);
    let scan = scan_thread_totals(total, op);
    let before = match scan.before {
        Some(b) => op.combine(init, b),
        None => init,
    };
    apply_exclusive(&mut items, op, before);
    sync_threads();
    (items, scan.aggregate)
}

/// [`inclusive_scan_items`] with one item per thread: returns `(scan, aggregate)`.
#[inline(always)]
pub fn inclusive_scan<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O) -> (T, T) {
    let ([r], aggregate) = inclusive_scan_items([v], op);
    (r, aggregate)
}

/// [`exclusive_scan_items`] with one item per thread: returns `(scan, aggregate)`.
#[inline(always)]
pub fn exclusive_scan<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O, init: T) -> (T, T) {
    let ([r], aggregate) = exclusive_scan_items([v], op, init);
    (r, aggregate)
}

/// Inclusive scan whose results are all prefixed by a value computed from the block aggregate:
/// `prefix_of(aggregate)` is called by every lane of warp 0 and lane 0's return value becomes
/// the block prefix `p`; item results are `p ⊕ (inclusive scan within the block)`. This is how a
/// tile of a larger scan gets the fold of all earlier tiles (CUB's `BlockPrefixCallbackOp`).
#[inline(always)]
pub fn inclusive_scan_with_prefix<T: DeviceCopy, O: ReduceOp<T>, const N: usize>(
    mut items: [T; N],
    op: O,
    prefix_of: impl FnOnce(T) -> T,
) -> [T; N] {
    let total = thread_inclusive(&mut items, op);
    let scan = scan_thread_totals(total, op);
    let prefix = block_prefix(scan.aggregate, prefix_of);
    let before = match scan.before {
        Some(b) => op.combine(prefix, b),
        None => prefix,
    };
    apply_inclusive(&mut items, op, Some(before));
    sync_threads();
    items
}

/// Exclusive counterpart of [`inclusive_scan_with_prefix`]: the block's first item becomes the
/// prefix `p`, item `j` the fold of `p` and every earlier item of the block.
#[inline(always)]
pub fn exclusive_scan_with_prefix<T: DeviceCopy, O: ReduceOp<T>, const N: usize>(
    mut items: [T; N],
    op: O,
    prefix_of: impl FnOnce(T) -> T,
) -> [T; N] {
    let total = thread_inclusive(&mut items, op);
    let scan = scan_thread_totals(total, op);
    let prefix = block_prefix(scan.aggregate, prefix_of);
    let before = match scan.before {
        Some(b) => op.combine(prefix, b),
        None => prefix,
    };
    apply_exclusive(&mut items, op, before);
    sync_threads();
    items
}

/// [`exclusive_scan_with_prefix`] with its parts kept apart: returns the block-local exclusive
/// scan seeded with `init` (item `j` = `init` ⊕ every earlier item of the block), the block
/// aggregate, and the block prefix `p` = `prefix_of(aggregate)` (lane 0 of warp 0's answer), all
/// in every thread. A tile of a stream compaction needs both: local ranks place items inside the
/// tile's shared-memory buffer, the prefix places the tile's run in the output.
#[inline(always)]
pub fn exclusive_scan_and_prefix<T: DeviceCopy, O: ReduceOp<T>, const N: usize>(
    mut items: [T; N],
    op: O,
    init: T,
    prefix_of: impl FnOnce(T) -> T,
) -> ([T; N], T, T) {
    let total = thread_inclusive(&mut items, op);
    let scan = scan_thread_totals(total, op);
    let prefix = block_prefix(scan.aggregate, prefix_of);
    let before = match scan.before {
        Some(b) => op.combine(init, b),
        None => init,
    };
    apply_exclusive(&mut items, op, before);
    sync_threads();
    (items, scan.aggregate, prefix)
}
