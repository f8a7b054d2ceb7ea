//! The warp layer of the cooperative algorithms: reduce, scan and broadcast over the 32 lanes,
//! for any [`DeviceCopy`] value (up to 32 bytes) and any associative [`ReduceOp`].
//!
//! Same names as the [`crate::block`] and [`crate::device`] layers; the caller picks the scope.
//! All functions here are *full-warp* collectives: every lane of the warp must call them
//! together (no divergence, no partial warp). Values move through `shfl.sync` one 32-bit word at
//! a time, so a value of `k` bytes costs `⌈k/4⌉` shuffles per step.
//!
//! Combination order: results are combined in lane order (lower lane on the left), so
//! non-commutative operators are fine. Sums of floats are tree-ordered: error ≤ 5·ε·Σ|x| for a
//! warp reduce (5 levels).

use core::mem::size_of;

use super::{FULL_MASK, Mode, shfl32};
use crate::DeviceCopy;
use crate::ops::ReduceOp;
use crate::thread::{WARP_SIZE, lane_id};

/// The largest value the generic shuffles move: 8 words.
const MAX_WORDS: usize = 8;

/// A value viewed as 32-bit words for shuffling. `DeviceCopy` types have no padding, so every
/// byte of `value` is initialized; the words beyond `size_of::<T>()` are zeroed first.
#[repr(C)]
union Words<T: Copy> {
    value: T,
    words: [u32; MAX_WORDS],
}

/// Applies `f` (a shuffle of one 32-bit word) to each word of `v`.
#[inline(always)]
fn per_word<T: DeviceCopy>(v: T, f: impl Fn(u32) -> u32) -> T {
    const {
        assert!(
            size_of::<T>() <= 4 * MAX_WORDS,
            "warp shuffles of values larger than 32 bytes are not supported"
        )
    };
    let mut src = Words {
        words: [0; MAX_WORDS],
    };
    src.value = v;
    let mut dst = Words {
        words: [0; MAX_WORDS],
    };
    for w in 0..size_of::<T>().div_ceil(4) {
        // SAFETY: `words` is plain data, fully initialized (zeroed, then `value`'s bytes, which
        // have no padding as `T: DeviceCopy`).
        let word = unsafe { src.words[w] };
        // SAFETY: writing a `Copy` union field.
        unsafe { dst.words[w] = f(word) };
    }
    // SAFETY: the first `size_of::<T>()` bytes are a shuffled copy of some lane's `T`, and every
    // bit pattern of a `DeviceCopy` type is a valid value.
    unsafe { dst.value }
}

/// PTX `c` operand of a full-width shuffle: clamp lane 0 for `up`, 31 otherwise.
const fn clamp(mode: Mode) -> u32 {
    match mode {
        Mode::Up => 0,
        _ => 0x1f,
    }
}

/// `v` from lane `src_lane` (any `DeviceCopy` value up to 32 bytes; full warp).
#[inline(always)]
pub fn shuffle_idx<T: DeviceCopy>(v: T, src_lane: u32) -> T {
    per_word(v, |w| {
        shfl32(Mode::Idx, FULL_MASK, w, src_lane, clamp(Mode::Idx))
    })
}

/// `v` from lane `lane - delta`; lanes below `delta` keep their own (full warp).
#[inline(always)]
pub fn shuffle_up<T: DeviceCopy>(v: T, delta: u32) -> T {
    per_word(v, |w| {
        shfl32(Mode::Up, FULL_MASK, w, delta, clamp(Mode::Up))
    })
}

/// `v` from lane `lane + delta`; lanes above `31 - delta` keep their own (full warp).
#[inline(always)]
pub fn shuffle_down<T: DeviceCopy>(v: T, delta: u32) -> T {
    per_word(v, |w| {
        shfl32(Mode::Down, FULL_MASK, w, delta, clamp(Mode::Down))
    })
}

/// `v` from lane `lane ^ lane_mask` (full warp).
#[inline(always)]
pub fn shuffle_xor<T: DeviceCopy>(v: T, lane_mask: u32) -> T {
    per_word(v, |w| {
        shfl32(Mode::Xor, FULL_MASK, w, lane_mask, clamp(Mode::Xor))
    })
}

/// `v` of lane `src_lane`, in every lane.
#[inline(always)]
pub fn broadcast<T: DeviceCopy>(v: T, src_lane: u32) -> T {
    shuffle_idx(v, src_lane)
}

/// `op` folded over the 32 lanes' values in lane order, the result in every lane.
///
/// Built-in operators on 32-bit integers use one `redux.sync` (sm_80+); everything else a
/// butterfly of 5 shuffle steps.
#[inline(always)]
pub fn reduce<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O) -> T {
    op.__warp_all_reduce(v)
}

/// The butterfly behind [`reduce`]: after the step with mask `m`, each lane holds the fold of its
/// aligned group of `2m` lanes; the lower half's value goes on the left.
#[doc(hidden)]
#[inline(always)]
pub fn butterfly_reduce<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O) -> T {
    let lane = lane_id();
    let mut acc = v;
    let mut m = 1;
    while m < WARP_SIZE {
        let other = shuffle_xor(acc, m);
        acc = if lane & m == 0 {
            op.combine(acc, other)
        } else {
            op.combine(other, acc)
        };
        m *= 2;
    }
    acc
}

/// `op` folded over the values of lanes `0..valid` (in lane order), the result in every lane;
/// the other lanes' values are ignored, but all 32 lanes must call it. `valid` must be the
/// same in all lanes and at least 1 (with 0 the result is unspecified).
#[inline(always)]
pub fn reduce_partial<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O, valid: u32) -> T {
    if valid >= WARP_SIZE {
        return reduce(v, op);
    }
    let lane = lane_id();
    let mut acc = v;
    let mut offset = 1;
    while offset < WARP_SIZE {
        let other = shuffle_down(acc, offset);
        if lane + offset < valid {
            acc = op.combine(acc, other);
        }
        offset *= 2;
    }
    shuffle_idx(acc, 0)
}

/// Inclusive scan: lane `i` gets `v₀ ⊕ v₁ ⊕ … ⊕ vᵢ` (Kogge–Stone, 5 shuffle steps). The warp's
/// total is lane 31's result: `broadcast(r, 31)`.
#[inline(always)]
pub fn inclusive_scan<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O) -> T {
    let lane = lane_id();
    let mut acc = v;
    let mut offset = 1;
    while offset < WARP_SIZE {
        let other = shuffle_up(acc, offset);
        if lane >= offset {
            acc = op.combine(other, acc);
        }
        offset *= 2;
    }
    acc
}

/// Exclusive scan seeded with `init`: lane 0 gets `init`, lane `i` gets
/// `init ⊕ v₀ ⊕ … ⊕ vᵢ₋₁`. Returns `(exclusive, warp_aggregate)` where the aggregate is
/// `v₀ ⊕ … ⊕ v₃₁` (without `init`), in every lane.
#[inline(always)]
pub fn exclusive_scan<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O, init: T) -> (T, T) {
    let inclusive = inclusive_scan(v, op);
    let aggregate = shuffle_idx(inclusive, WARP_SIZE - 1);
    let previous = shuffle_up(inclusive, 1);
    let exclusive = if lane_id() == 0 {
        init
    } else {
        op.combine(init, previous)
    };
    (exclusive, aggregate)
}
