//! Block-wide radix ranking and radix sort (8-bit digits).
//!
//! # Keys
//! [`RadixKey`] maps a key to unsigned bits whose unsigned order is the key's order (as CUB
//! does): unsigned integers as they are, signed integers with the sign bit flipped, floats with
//! all bits flipped when negative and only the sign bit flipped otherwise. For floats that puts
//! `-NaN < -inf < … < -0.0 = +0.0 < … < +inf < +NaN` (NaNs by sign bit, like `total_cmp`), and
//! `-0.0` and `+0.0` rank as *equal* (CUB's behaviour: a stable sort keeps their input order).
//! Keys themselves are never changed: sorts move the original values.
//!
//! # Ranking: [`radix_rank`]
//! The "match" ranking of CUB's onesweep (`BlockRadixRankMatch`): the block's keys are held
//! *warp-striped* (warp `w`, lane `l`, item `i` holds tile item `w·32·N + i·32 + l`, what
//! coalesced loads give), each warp keeps a private 256-counter histogram in shared memory, and
//! for each item `i` the lanes holding the same digit find each other with `match.any`: one of
//! them bumps the warp's counter by the group size, each gets the old value plus the number of
//! group members below it. No atomics, no bank-conflicting scan of per-thread counters. Then an
//! exclusive scan over (digit, warp) counters turns the per-warp ranks into block ranks. The
//! order within a digit is the tile order, so the ranking is **stable**.
//!
//! # Sorting: [`radix_sort`], [`radix_sort_pairs`]
//! One rank + shared-memory scatter per 8 bits of the key, blocked in and blocked out.

use core::mem::size_of;

use super::warp_layout;
use crate::DeviceCopy;
use crate::atomic::{self, Scope};
use crate::math::{clz, popc};
use crate::ops::Sum;
use crate::shared::SharedSlice;
use crate::sync::sync_threads;
use crate::thread::{WARP_SIZE, local_index};
use crate::warp;

use crate::unroll;

/// Bits per radix digit.
pub const RADIX_BITS: u32 = 8;
/// Digit values (and counters per warp): `2^RADIX_BITS`.
pub const RADIX_DIGITS: usize = 1 << RADIX_BITS;

/// The unsigned images of keys: `u32` and `u64`.
pub trait RadixBits: Copy {
    /// Bits in the image.
    const BITS: u32;
    /// `(self >> shift) & mask` as a `u32`; `shift < BITS`.
    fn digit(self, shift: u32, mask: u32) -> u32;
}

impl RadixBits for u32 {
    const BITS: u32 = 32;
    #[inline(always)]
    fn digit(self, shift: u32, mask: u32) -> u32 {
        (self >> shift) & mask
    }
}

impl RadixBits for u64 {
    const BITS: u32 = 64;
    #[inline(always)]
    fn digit(self, shift: u32, mask: u32) -> u32 {
        (self >> shift) as u32 & mask
    }
}

/// Keys a radix sort can order: `u32 i32 f32 u64 i64 f64`. See the module docs for the order.
pub trait RadixKey: DeviceCopy {
    /// The unsigned image (`u32` or `u64`).
    type Bits: RadixBits;
    /// The key whose image is all ones: no key sorts after it (padding for partial tiles,
    /// which a stable sort keeps after equal real keys placed before it).
    const MAX_IMAGE: Self;
    /// Whether the keys are floats (their image takes a few instructions; tuning policies
    /// read it).
    const FLOAT: bool = false;
    /// The order-preserving unsigned image of `self`.
    fn radix_bits(self) -> Self::Bits;
}

macro_rules! radix_keys {
    ($($t:ty => $bits:ty, $max:expr, $float:expr, |$k:ident| $image:expr;)*) => { $(
        impl RadixKey for $t {
            type Bits = $bits;
            const MAX_IMAGE: $t = $max;
            const FLOAT: bool = $float;
            #[inline(always)]
            fn radix_bits(self) -> $bits {
                let $k = self;
                $image
            }
        }
    )* };
}

/// The float image, in three instructions (an arithmetic shift for the sign, a three-input
/// xor-or and a subtract): non-negative values get the sign bit set, and a negative value,
/// read as unsigned bits `b = SIGN | magnitude`, becomes `0 - b = SIGN - magnitude` (larger
/// magnitudes sort first). `-0.0` lands on `+0.0`'s image (`SIGN`), so the two rank equal with
/// no separate test. The image `0` is never produced.
macro_rules! float_image {
    ($bits:expr, $t:ty, $signed:ty) => {{
        const SIGN: $t = 1 << (<$t>::BITS - 1);
        let bits: $t = $bits;
        // All ones for a negative value, else zero.
        let negative = ((bits as $signed) >> (<$t>::BITS - 1)) as $t;
        (bits ^ (negative | SIGN)).wrapping_sub(negative)
    }};
}

radix_keys! {
    u32 => u32, u32::MAX, false, |k| k;
    u64 => u64, u64::MAX, false, |k| k;
    i32 => u32, i32::MAX, false, |k| (k as u32) ^ (1 << 31);
    i64 => u64, i64::MAX, false, |k| (k as u64) ^ (1 << 63);
    // The positive NaN with all payload bits set.
    f32 => u32, f32::from_bits(u32::MAX >> 1), true, |k| float_image!(k.to_bits(), u32, i32);
    f64 => u64, f64::from_bits(u64::MAX >> 1), true, |k| float_image!(k.to_bits(), u64, i64);
}

/// The digit of `key` at bit `shift` with `bits` bits (`1..=8`).
#[inline(always)]
pub fn radix_digit<K: RadixKey>(key: K, shift: u32, bits: u32) -> u32 {
    key.radix_bits().digit(shift, (1 << bits) - 1)
}

/// `u32` counters [`radix_rank`] needs for a block of `threads` threads: 256 per warp.
pub const fn radix_rank_scratch_len(threads: usize) -> usize {
    threads.div_ceil(WARP_SIZE as usize) * RADIX_DIGITS
}

/// The result of [`radix_rank`].
#[derive(Clone, Copy)]
pub struct RadixRank<const N: usize> {
    /// Each item's position in the digit-sorted tile (stable).
    pub ranks: [u32; N],
    /// In thread `t < 256`: how many items of the tile have digit `t`.
    pub digit_count: u32,
    /// In thread `t < 256`: how many items of the tile have a digit below `t` (where the items
    /// of digit `t` start in the sorted tile).
    pub digit_start: u32,
}

#[cold]
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
#[track_caller]
fn rank_scratch_too_small() -> ! {
    panic!(
        "block radix rank: needs a block of at least 256 threads and radix_rank_scratch_len(block_size) counters"
    )
}

/// Ranks the block's items by their digit (`< 256`; higher bits are ignored): returns each
/// item's position in the tile stably sorted by digit, and per digit (thread `t` for digit
/// `t`) the count and start. Items are **warp-striped** (see the module docs): warp `w`, lane
/// `l`, item `i` holds tile item `w·32·N + i·32 + l`, and equal digits keep that order.
///
/// Needs a block of at least 256 threads (one per digit for the digit scan), a multiple of 32,
/// and `counters` of [`radix_rank_scratch_len`]`(block_size)` elements. A collective: ends with
/// a barrier.
#[inline(always)]
#[track_caller]
pub fn radix_rank<const N: usize>(digits: [u32; N], counters: SharedSlice<u32>) -> RadixRank<N> {
    counters.block_fill(0);
    sync_threads();
    let ranks = radix_rank_zeroed(digits, counters, |_| {});
    sync_threads();
    ranks
}

/// The ranking of [`radix_rank`] for callers that want to act on the digit counts early (a
/// device-wide sort publishes them while the block is still ranking): `counters` must be
/// **zero**, and a barrier passed since it was zeroed. Every thread calls `on_counts(count)` as
/// soon as the tile's digit counts are known (`count` is digit `t`'s count in thread `t < 256`,
/// 0 above). Does not end with a barrier: `counters` is still in use until every thread has
/// returned (a barrier before reusing it).
///
/// CUB's "early counts" ranking (`BlockRadixRankMatchEarlyCounts`), in three steps:
/// 1. each warp counts its digits into its own 256 counters with shared-memory atomics whose
///    results nobody waits for, so the items do not wait on each other;
/// 2. thread `t` totals digit `t` over the warps, the block scans the totals, and each warp's
///    counter for digit `t` becomes where that warp's items of digit `t` start in the tile;
/// 3. for each item, the lanes holding the same digit find each other (eight ballots:
///    [`warp::match_any_bits`]; `match.any` was the pass's bottleneck); the highest
///    of them takes the group's places from the warp's counter with one atomic add and passes the
///    old value to the group by a shuffle. An item's atomic is issued only after the previous
///    item's result came back through the shuffle, so the warp's items take their places in
///    order: the ranking is stable.
///
/// Only the digits stay live across the block-wide scan, and no item waits for a store of the
/// previous one (an earlier version read and wrote the counters with a warp barrier between
/// every two items).
#[inline(always)]
#[track_caller]
pub fn radix_rank_zeroed<const N: usize>(
    digits: [u32; N],
    counters: SharedSlice<u32>,
    on_counts: impl FnOnce(u32),
) -> RadixRank<N> {
    let (warp_id, lane, warps) = warp_layout();
    let threads = warps as usize * WARP_SIZE as usize;
    if threads < RADIX_DIGITS || counters.len() < radix_rank_scratch_len(threads) {
        rank_scratch_too_small();
    }
    let digit_mask = RADIX_DIGITS as u32 - 1;
    let own = counters.addr() + 4 * warp_id * RADIX_DIGITS as u32;
    let counter = |digit: u32| own + 4 * (digit & digit_mask);

    // 1. This warp's histogram.
    unroll!(N, |i| {
        // SAFETY: the counter is inside `counters` (length checked above), which threads touch
        // only atomically until the barrier.
        unsafe { atomic::shared::add(counter(digits[i]), 1u32, Scope::Block) };
    });
    sync_threads();

    // 2. Thread t owns digit t: its total over warps, the block scan over digits, then each
    // warp's counter becomes where that warp's items of digit t start in the tile.
    let t = local_index() as usize;
    let mut count = 0;
    if t < RADIX_DIGITS {
        for w in 0..warps as usize {
            // SAFETY: w·256 + t < warps·256 ≤ counters.len().
            count += unsafe { counters.read_unchecked(w * RADIX_DIGITS + t) };
        }
    }
    on_counts(count);
    let (start, _) = super::exclusive_scan(count, Sum, 0u32);
    if t < RADIX_DIGITS {
        let mut run = start;
        for w in 0..warps as usize {
            let slot = w * RADIX_DIGITS + t;
            // SAFETY: in bounds as above; only thread t touches column t here.
            unsafe {
                let c = counters.read_unchecked(slot);
                counters.write_unchecked(slot, run);
                run += c;
            }
        }
    }
    sync_threads();

    // 3. The ranks. A warp barrier first, as CUB has: with the warp known to be converged,
    // ptxas does not check for divergence (`BRA.DIV`) before every key's ballots.
    crate::sync::sync_warp_all();
    let up_to_me_mask = warp::lane_mask_le();
    let mut ranks = [0u32; N];
    unroll!(N, |i| {
        let digit = digits[i] & digit_mask;
        let peers = warp::match_any_bits::<{ RADIX_BITS as usize }>(digit);
        let leader = WARP_SIZE - 1 - clz(peers);
        let up_to_me = popc(peers & up_to_me_mask);
        let mut taken = 0;
        if lane == leader {
            // SAFETY: as in step 1; `up_to_me` is the group's size in its highest lane.
            taken = unsafe { atomic::shared::add(counter(digit), up_to_me, Scope::Block) };
        }
        ranks[i] = warp::shfl_idx(taken, leader) + up_to_me - 1;
    });
    RadixRank {
        ranks,
        digit_count: count,
        digit_start: start,
    }
}

/// Tile position of warp-striped item `i` of this thread (see [`radix_rank`]).
#[inline(always)]
pub fn warp_striped_index<const N: usize>(i: usize) -> usize {
    // Computed in 32 bits (a tile is far smaller than 2^32 items), so that a caller's compare
    // of it against a tile length stays one 32-bit compare instead of a 64-bit pair.
    let t = local_index();
    let (warp_id, lane) = (t / WARP_SIZE, t % WARP_SIZE);
    (warp_id * WARP_SIZE * N as u32 + i as u32 * WARP_SIZE + lane) as usize
}

/// `u32` words of scratch [`radix_sort`] / [`radix_sort_pairs`] need for `threads` threads
/// holding `items` keys of `key_bytes` (and values of `value_bytes`, 0 for keys only): the
/// rank counters plus one tile of the larger of key and value.
pub const fn radix_sort_scratch_len(
    threads: usize,
    items: usize,
    key_bytes: usize,
    value_bytes: usize,
) -> usize {
    let widest = if key_bytes > value_bytes {
        key_bytes
    } else {
        value_bytes
    };
    radix_rank_scratch_len(threads) + (threads * items * widest).div_ceil(16) * 4
}

#[cold]
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
#[track_caller]
fn sort_scratch_too_small() -> ! {
    panic!("block radix sort: scratch shorter than radix_sort_scratch_len")
}

/// Moves `items` to tile positions `pos(i)` through `tile`, then returns the items at
/// positions `take(i)`. Ends with a barrier.
#[inline(always)]
fn permute<T: DeviceCopy, const N: usize>(
    items: [T; N],
    tile: SharedSlice<T>,
    pos: impl Fn(usize) -> usize,
    take: impl Fn(usize) -> usize,
) -> [T; N] {
    for (i, item) in items.into_iter().enumerate() {
        tile.write(pos(i), item);
    }
    sync_threads();
    let out = core::array::from_fn(|i| tile.read(take(i)));
    sync_threads();
    out
}

/// Sorts the block's keys (and values) by bits `begin_bit..end_bit` of their radix image.
#[inline(always)]
#[track_caller]
fn sort_block<K: RadixKey, V: DeviceCopy, const N: usize>(
    mut keys: [K; N],
    mut values: [V; N],
    with_values: bool,
    begin_bit: u32,
    end_bit: u32,
    scratch: SharedSlice<u32>,
) -> ([K; N], [V; N]) {
    let (_, _, warps) = warp_layout();
    let threads = warps as usize * WARP_SIZE as usize;
    let value_bytes = if with_values { size_of::<V>() } else { 0 };
    if scratch.len() < radix_sort_scratch_len(threads, N, size_of::<K>(), value_bytes) {
        sort_scratch_too_small();
    }
    let end_bit = end_bit.min(K::Bits::BITS);
    if begin_bit >= end_bit {
        return (keys, values);
    }
    let (counters, tile) = scratch.split_at(radix_rank_scratch_len(threads));
    let (key_tile, value_tile) = (tile.cast::<K>(), tile.cast::<V>());
    let t = local_index() as usize;
    let blocked = |i: usize| t * N + i;
    let striped = warp_striped_index::<N>;

    // Blocked → warp-striped, so that the stable ranking keeps the input order.
    keys = permute(keys, key_tile, blocked, striped);
    if with_values {
        values = permute(values, value_tile, blocked, striped);
    }
    let mut shift = begin_bit;
    loop {
        let bits = (end_bit - shift).min(RADIX_BITS);
        let digits = keys.map(|k| radix_digit(k, shift, bits));
        let rank = radix_rank(digits, counters);
        shift += bits;
        let last = shift >= end_bit;
        let by_rank = |i: usize| rank.ranks[i] as usize;
        let next = |i: usize| if last { blocked(i) } else { striped(i) };
        keys = permute(keys, key_tile, by_rank, next);
        if with_values {
            values = permute(values, value_tile, by_rank, next);
        }
        if last {
            return (keys, values);
        }
    }
}

/// Sorts the block's `B · N` keys (blocked: thread `t` holds items `t·N .. t·N+N`, in and out)
/// by bits `begin_bit..end_bit` of their radix image (`0..32` or `0..64` for a full sort),
/// stably, one 8-bit digit per pass.
///
/// Needs a block of at least 256 threads (a multiple of 32) and `scratch` of
/// [`radix_sort_scratch_len`]`(B, N, size_of::<K>(), 0)` words. A collective; ends with a
/// barrier.
#[inline(always)]
#[track_caller]
pub fn radix_sort<K: RadixKey, const N: usize>(
    keys: [K; N],
    begin_bit: u32,
    end_bit: u32,
    scratch: SharedSlice<u32>,
) -> [K; N] {
    sort_block(keys, [0u32; N], false, begin_bit, end_bit, scratch).0
}

/// [`radix_sort`] of key-value pairs: each value moves with its key. `scratch` needs
/// [`radix_sort_scratch_len`]`(B, N, size_of::<K>(), size_of::<V>())` words.
#[inline(always)]
#[track_caller]
pub fn radix_sort_pairs<K: RadixKey, V: DeviceCopy, const N: usize>(
    keys: [K; N],
    values: [V; N],
    begin_bit: u32,
    end_bit: u32,
    scratch: SharedSlice<u32>,
) -> ([K; N], [V; N]) {
    sort_block(keys, values, true, begin_bit, end_bit, scratch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_by_image<K: RadixKey, const L: usize>(mut keys: [K; L]) -> [K; L]
    where
        K::Bits: Ord,
    {
        keys.sort_unstable_by_key(|k| k.radix_bits());
        keys
    }

    #[test]
    fn images_preserve_order() {
        assert_eq!(
            sorted_by_image([3i32, -1, i32::MIN, 0, i32::MAX, -7]),
            [i32::MIN, -7, -1, 0, 3, i32::MAX]
        );
        assert_eq!(
            sorted_by_image([3i64, -1, i64::MIN, 0, i64::MAX]),
            [i64::MIN, -1, 0, 3, i64::MAX]
        );
        let f = sorted_by_image([
            1.5f32,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            -2.0,
            f32::NEG_INFINITY,
            0.0,
            -0.5,
        ]);
        assert!(f[0].is_nan() && f[0].is_sign_negative());
        assert_eq!(
            &f[1..7],
            &[f32::NEG_INFINITY, -2.0, -0.5, 0.0, 1.5, f32::INFINITY]
        );
        assert!(f[7].is_nan() && f[7].is_sign_positive());
        assert_eq!((-0.0f32).radix_bits(), 0.0f32.radix_bits());
        assert_eq!((-0.0f64).radix_bits(), 0.0f64.radix_bits());
        assert!((-1e-300f64).radix_bits() < 0.0f64.radix_bits());
        assert!(u64::MAX.radix_bits().digit(56, 0xff) == 0xff);
        assert_eq!(u32::MAX_IMAGE.radix_bits(), u32::MAX);
        assert_eq!(i32::MAX_IMAGE.radix_bits(), u32::MAX);
        assert_eq!(f32::MAX_IMAGE.radix_bits(), u32::MAX);
        assert_eq!(u64::MAX_IMAGE.radix_bits(), u64::MAX);
        assert_eq!(i64::MAX_IMAGE.radix_bits(), u64::MAX);
        assert_eq!(f64::MAX_IMAGE.radix_bits(), u64::MAX);
    }

    /// Over many bit patterns (every sign, exponent and a spread of mantissas): two non-NaN
    /// floats compare as their images do, with `-0.0 = +0.0`; NaNs sit at the ends by sign.
    #[test]
    fn float_images_follow_float_order() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let specials32 = [0u32, 0x8000_0000, 1, 0x8000_0001, 0x7f80_0000, 0xff80_0000];
        let f32s: [f32; 4000] = core::array::from_fn(|i| {
            f32::from_bits(specials32.get(i).copied().unwrap_or(next() as u32))
        });
        for &a in &f32s {
            for &b in f32s.iter().step_by(7) {
                let (ia, ib) = (a.radix_bits(), b.radix_bits());
                match a.partial_cmp(&b) {
                    Some(order) => assert_eq!(ia.cmp(&ib), order, "{a:e} vs {b:e}"),
                    None => {
                        let nan = if a.is_nan() { a } else { b };
                        let image = nan.radix_bits();
                        assert!(nan.is_sign_negative() == (image < (-f32::INFINITY).radix_bits()));
                        assert!(nan.is_sign_positive() == (image > f32::INFINITY.radix_bits()));
                    }
                }
            }
        }
        let specials64 = [0u64, 1 << 63, 1, (1 << 63) | 1, 0x7ff0 << 48, 0xfff0 << 48];
        let f64s: [f64; 4000] =
            core::array::from_fn(|i| f64::from_bits(specials64.get(i).copied().unwrap_or(next())));
        for &a in &f64s {
            for &b in f64s.iter().step_by(7) {
                if let Some(order) = a.partial_cmp(&b) {
                    assert_eq!(a.radix_bits().cmp(&b.radix_bits()), order, "{a:e} vs {b:e}");
                }
            }
        }
    }
}
