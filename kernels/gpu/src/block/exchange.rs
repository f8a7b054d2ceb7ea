//! Rearranging a tile between the blocked and striped arrangements through shared memory.

use crate::DeviceCopy;
use crate::shared::SharedSlice;
use crate::sync::sync_threads;
use crate::thread::{block_size, local_index};

/// Shared-memory elements [`blocked_to_striped`] and [`striped_to_blocked`] need for a block of
/// `threads` threads with `items` items each: the tile plus one padding element per 32, which
/// keeps the strided accesses free of bank conflicts.
pub const fn exchange_scratch_len(threads: usize, items: usize) -> usize {
    let tile = threads * items;
    tile + tile / 32
}

#[inline(always)]
fn padded(i: usize) -> usize {
    i + i / 32
}

#[cold]
// Out of line when panics report (a call keeps the hot path short); inline when every panic is a
// plain `trap` (panic = "immediate-abort", see gpu_builder::Checks), where a call would cost more.
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
#[track_caller]
fn scratch_too_small() -> ! {
    panic!("block exchange: scratch shorter than exchange_scratch_len(block_size, N)")
}

#[inline(always)]
#[track_caller]
fn check_scratch<T: DeviceCopy, const N: usize>(scratch: &SharedSlice<T>) {
    if scratch.len() < exchange_scratch_len(block_size() as usize, N) {
        scratch_too_small();
    }
}

/// Blocked → striped: thread `t` held tile items `t·N + i`, and gets items `t + i·B`.
/// `scratch` needs [`exchange_scratch_len`]`(B, N)` elements; the function ends with a barrier,
/// so the scratch can be reused right away.
#[inline(always)]
#[track_caller]
pub fn blocked_to_striped<T: DeviceCopy, const N: usize>(
    items: [T; N],
    scratch: SharedSlice<T>,
) -> [T; N] {
    check_scratch::<T, N>(&scratch);
    let (t, b) = (local_index() as usize, block_size() as usize);
    for (i, item) in items.into_iter().enumerate() {
        // SAFETY: t·N + i < B·N, padded below the checked scratch length.
        unsafe { scratch.write_unchecked(padded(t * N + i), item) };
    }
    sync_threads();
    // SAFETY: t + i·B < B·N, padded below the checked scratch length.
    let out = core::array::from_fn(|i| unsafe { scratch.read_unchecked(padded(t + i * b)) });
    sync_threads();
    out
}

/// Striped → blocked: the inverse of [`blocked_to_striped`].
#[inline(always)]
#[track_caller]
pub fn striped_to_blocked<T: DeviceCopy, const N: usize>(
    items: [T; N],
    scratch: SharedSlice<T>,
) -> [T; N] {
    check_scratch::<T, N>(&scratch);
    let (t, b) = (local_index() as usize, block_size() as usize);
    for (i, item) in items.into_iter().enumerate() {
        // SAFETY: as in `blocked_to_striped`.
        unsafe { scratch.write_unchecked(padded(t + i * b), item) };
    }
    sync_threads();
    // SAFETY: as in `blocked_to_striped`.
    let out = core::array::from_fn(|i| unsafe { scratch.read_unchecked(padded(t * N + i)) });
    sync_threads();
    out
}
