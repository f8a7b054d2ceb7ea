//! Block-wide reduction.

use super::{scratch, warp_layout};
use crate::DeviceCopy;
use crate::ops::ReduceOp;
use crate::sync::sync_threads;
use crate::warp;

/// `op` folded over one value per thread, in thread order; the result in every thread.
///
/// Each warp reduces its 32 values (a `redux.sync` or 5 shuffle steps), the warp totals meet in
/// shared memory, and every warp folds them (5 more steps): one barrier, plus one at the end so
/// the scratch can be reused. Float sums: error ≤ 10·ε·Σ|x|.
#[inline(always)]
pub fn reduce<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O) -> T {
    let (warp_id, lane, warps) = warp_layout();
    let partial = warp::reduce(v, op);
    if warps == 1 {
        return partial;
    }
    combine_warp_totals(partial, op, warp_id, lane, warps)
}

/// Like [`reduce`], but only threads `0..valid` (by [`crate::thread::local_index`]) contribute;
/// all threads must still call it. For the last, partial tile of an input. `valid` must be the
/// same in every thread and at least 1.
#[inline(always)]
pub fn reduce_partial<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O, valid: u32) -> T {
    let (warp_id, lane, warps) = warp_layout();
    if valid >= warps * 32 {
        return reduce(v, op);
    }
    let warp_valid = valid.saturating_sub(warp_id * 32).min(32);
    let partial = warp::reduce_partial(v, op, warp_valid.max(1));
    let valid_warps = valid.div_ceil(32);
    if valid_warps <= 1 {
        // Only warp 0 had values; give its total to everyone.
        return broadcast_from_warp0(partial, warp_id, lane);
    }
    combine_warp_totals(partial, op, warp_id, lane, valid_warps)
}

/// Warp totals of warps `0..warps` → the block total in every thread.
#[inline(always)]
fn combine_warp_totals<T: DeviceCopy, O: ReduceOp<T>>(
    partial: T,
    op: O,
    warp_id: u32,
    lane: u32,
    warps: u32,
) -> T {
    let s = scratch::<T>();
    if lane == 0 && warp_id < warps {
        // SAFETY: warp_id < 32 < SCRATCH_SLOTS.
        unsafe { s.write_unchecked(warp_id as usize, partial) };
    }
    sync_threads();
    let x = if lane < warps {
        // SAFETY: lane < 32 < SCRATCH_SLOTS; written before the barrier.
        unsafe { s.read_unchecked(lane as usize) }
    } else {
        partial
    };
    let total = warp::reduce_partial(x, op, warps);
    sync_threads();
    total
}

/// Warp 0's value in every thread (lane 0's).
#[inline(always)]
fn broadcast_from_warp0<T: DeviceCopy>(v: T, warp_id: u32, lane: u32) -> T {
    let s = scratch::<T>();
    if warp_id == 0 && lane == 0 {
        // SAFETY: slot 0 exists.
        unsafe { s.write_unchecked(0, v) };
    }
    sync_threads();
    // SAFETY: slot 0, written before the barrier.
    let r = unsafe { s.read_unchecked(0) };
    sync_threads();
    r
}
