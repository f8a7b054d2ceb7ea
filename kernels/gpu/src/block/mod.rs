//! The block layer of the cooperative algorithms: all threads of a block work together on a
//! *tile* of data.
//!
//! | function | what |
//! | --- | --- |
//! | [`load_blocked`], [`load_striped`], [`load_blocked_partial`], [`load_striped_partial`], [`load_unordered`] | global → registers, vectorized (16-byte loads) when alignment allows |
//! | [`store_blocked`], [`store_striped`], [`store_blocked_partial`], [`store_striped_partial`] | registers → global |
//! | [`blocked_to_striped`], [`striped_to_blocked`] | exchange through shared memory |
//! | [`reduce`], [`reduce_partial`] | fold of one value per thread, result in every thread |
//! | [`inclusive_scan`], [`exclusive_scan`] (+ `_items`, `_with_prefix`) | prefix scans with the block aggregate and a prefix callback |
//! | [`radix_rank`], [`radix_sort`], [`radix_sort_pairs`] ([`RadixKey`]: `u32 i32 f32 u64 i64 f64`) | stable 8-bit-digit ranking (`match.any`, warp-private counters) and block sort |
//!
//! Same names as the [`crate::warp`] and [`crate::device`] layers. Every function here is a
//! *collective*: all threads of the block call it (not under a divergent `if`), and it contains
//! barriers. The block size may be any multiple of 32 up to 1024 (1-, 2- or 3-D; threads are
//! ranked by [`crate::thread::local_index`]).
//!
//! # Arrangements
//! A thread holding `N` items of a tile holds them either *blocked* (thread `t` has items
//! `t·N .. t·N+N`, what scans want) or *striped* (thread `t` has items `t, t+B, t+2B, …` for a
//! block of `B` threads, what coalesced loads want). [`blocked_to_striped`] and back convert
//! through shared memory.
//!
//! # Temporary storage
//! [`reduce`] and the scans use a small static scratch in shared memory (34 slots of up to
//! 32 bytes, 1088 bytes per kernel that uses them), so they need nothing from the caller. They end
//! with a barrier, so they can be called back to back. Tile-sized work (exchanges, radix sort,
//! histograms) takes a [`SharedSlice`] from the caller, who sizes it
//! (a [`shared_array!`](crate::shared_array) or the dynamic region).

mod exchange;
pub(crate) mod load;
mod radix;
mod reduce;
mod scan;

pub use exchange::{blocked_to_striped, exchange_scratch_len, striped_to_blocked};
pub use load::{
    load_blocked, load_blocked_partial, load_run, load_striped, load_striped_partial,
    load_unordered, store_blocked, store_blocked_partial, store_run, store_striped,
    store_striped_partial,
};
pub use radix::{
    RADIX_BITS, RADIX_DIGITS, RadixBits, RadixKey, RadixRank, radix_digit, radix_rank,
    radix_rank_scratch_len, radix_rank_zeroed, radix_sort, radix_sort_pairs,
    radix_sort_scratch_len, warp_striped_index,
};
pub use reduce::{reduce, reduce_partial};
pub use scan::{
    exclusive_scan, exclusive_scan_and_prefix, exclusive_scan_items, exclusive_scan_with_prefix,
    inclusive_scan, inclusive_scan_items, inclusive_scan_with_prefix,
};

use crate::DeviceCopy;
use crate::shared::SharedSlice;
use crate::thread::{WARP_SIZE, block_size, local_index};

/// Slots of the static scratch: one per warp (at most 32) plus two for broadcasts.
const SCRATCH_SLOTS: usize = 34;
/// Largest element the static scratch holds.
const SCRATCH_SLOT_BYTES: usize = 32;

/// The static scratch viewed as `SCRATCH_SLOTS` elements of `T`. One declaration serves every
/// instantiation (they never run at the same time: each collective ends with a barrier).
#[inline(always)]
fn scratch<T: DeviceCopy>() -> SharedSlice<T> {
    const {
        assert!(
            core::mem::size_of::<T>() <= SCRATCH_SLOT_BYTES,
            "block reduce/scan: values larger than 32 bytes are not supported"
        )
    };
    let words = crate::shared_array!(u64, SCRATCH_SLOTS * SCRATCH_SLOT_BYTES / 8);
    words.as_slice().cast::<T>()
}

/// This thread's warp and lane within the block, and the block's warp count. Panics if the block
/// size is not a multiple of 32 (the warp collectives need full warps).
#[inline(always)]
fn warp_layout() -> (u32, u32, u32) {
    let threads = block_size();
    if !threads.is_multiple_of(WARP_SIZE) {
        partial_warp(threads);
    }
    let t = local_index();
    (t / WARP_SIZE, t % WARP_SIZE, threads / WARP_SIZE)
}

#[cold]
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
fn partial_warp(_threads: u32) -> ! {
    panic!("block collectives need a block size that is a multiple of 32")
}
