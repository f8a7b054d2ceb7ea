//! Warp-level operations: shuffles, votes, match, reductions, the active mask, and the warp
//! layer of the cooperative algorithms ([`reduce`], [`inclusive_scan`], [`exclusive_scan`],
//! [`broadcast`]) for any [`DeviceCopy`](crate::DeviceCopy) value and any
//! [`ReduceOp`](crate::ops::ReduceOp).
//!
//! All of these are `.sync` forms (sm_70+): they take a *member mask* naming the lanes that
//! take part. Every lane named in the mask must execute the same call (with the same mask), and
//! the calling lane must be in it; otherwise the result is undefined (and the warp may hang).
//! The functions without a mask argument use [`FULL_MASK`] and so must be reached by all 32
//! lanes (no divergence, no partial last warp). Results are plain values of types for which
//! every bit pattern is valid, so misuse gives wrong numbers, never memory unsafety.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

use crate::thread::WARP_SIZE;

pub use crate::asm::{lane_mask_eq, lane_mask_ge, lane_mask_gt, lane_mask_le, lane_mask_lt};

/// All 32 lanes.
pub const FULL_MASK: u32 = u32::MAX;

mod sealed {
    pub trait Sealed {}
}

/// Values that can cross lanes: 32-bit types move in one shuffle, 64-bit types in two (high and
/// low halves), smaller ones are widened. Implemented for `u8 i8 u16 i16 u32 i32 f32 u64 i64 f64
/// usize isize` and, with the `half` feature, `f16 bf16`.
pub trait WarpValue: Copy + sealed::Sealed {
    #[doc(hidden)]
    const WIDE: bool;
    #[doc(hidden)]
    fn to_bits(self) -> u64;
    #[doc(hidden)]
    fn from_bits(bits: u64) -> Self;
}

macro_rules! impl_warp_value {
    ($($t:ty: $wide:literal, |$v:ident| $to:expr, |$b:ident| $from:expr;)*) => { $(
        impl sealed::Sealed for $t {}
        impl WarpValue for $t {
            const WIDE: bool = $wide;
            #[inline(always)]
            fn to_bits(self) -> u64 {
                let $v = self;
                $to
            }
            #[inline(always)]
            fn from_bits(bits: u64) -> Self {
                let $b = bits;
                $from
            }
        }
    )* };
}

impl_warp_value! {
    u8: false, |v| v as u64, |b| b as u8;
    i8: false, |v| v as u8 as u64, |b| b as u8 as i8;
    u16: false, |v| v as u64, |b| b as u16;
    i16: false, |v| v as u16 as u64, |b| b as u16 as i16;
    u32: false, |v| v as u64, |b| b as u32;
    i32: false, |v| v as u32 as u64, |b| b as u32 as i32;
    f32: false, |v| v.to_bits() as u64, |b| f32::from_bits(b as u32);
    u64: true, |v| v, |b| b;
    i64: true, |v| v as u64, |b| b as i64;
    f64: true, |v| v.to_bits(), |b| f64::from_bits(b);
    usize: true, |v| v as u64, |b| b as usize;
    isize: true, |v| v as u64, |b| b as isize;
}

#[cfg(feature = "half")]
impl_warp_value! {
    half::f16: false, |v| v.to_bits() as u64, |b| half::f16::from_bits(b as u16);
    half::bf16: false, |v| v.to_bits() as u64, |b| half::bf16::from_bits(b as u16);
}

#[derive(Clone, Copy)]
enum Mode {
    Up,
    Down,
    Xor,
    Idx,
}

/// One `shfl.sync.<mode>.b32`. `c` packs the segment mask and clamp value as PTX wants it.
#[inline(always)]
fn shfl32(mode: Mode, mask: u32, v: u32, b: u32, c: u32) -> u32 {
    device!("warp::shfl", {
        let out: u32;
        // SAFETY: a register-to-register exchange between lanes; no memory access.
        unsafe {
            match mode {
                Mode::Up => {
                    core::arch::asm!("shfl.sync.up.b32 {d}, {a}, {b}, {c}, {m};", d = out(reg32) out, a = in(reg32) v, b = in(reg32) b, c = in(reg32) c, m = in(reg32) mask, options(nomem, nostack))
                }
                Mode::Down => {
                    core::arch::asm!("shfl.sync.down.b32 {d}, {a}, {b}, {c}, {m};", d = out(reg32) out, a = in(reg32) v, b = in(reg32) b, c = in(reg32) c, m = in(reg32) mask, options(nomem, nostack))
                }
                Mode::Xor => {
                    core::arch::asm!("shfl.sync.bfly.b32 {d}, {a}, {b}, {c}, {m};", d = out(reg32) out, a = in(reg32) v, b = in(reg32) b, c = in(reg32) c, m = in(reg32) mask, options(nomem, nostack))
                }
                Mode::Idx => {
                    core::arch::asm!("shfl.sync.idx.b32 {d}, {a}, {b}, {c}, {m};", d = out(reg32) out, a = in(reg32) v, b = in(reg32) b, c = in(reg32) c, m = in(reg32) mask, options(nomem, nostack))
                }
            }
        };
        out
    }, sim: { crate::sim::intrinsics::shfl(match mode { Mode::Up => 0, Mode::Down => 1, Mode::Xor => 2, Mode::Idx => 3 }, mask, v, b, c) })
}

#[inline(always)]
fn shfl<T: WarpValue>(mode: Mode, mask: u32, v: T, b: u32, width: u32) -> T {
    // PTX `c` operand: bits 8..12 hold the mask of the segment-relative lane bits
    // ((32 - width) << 8); bits 0..4 the clamp lane (0 for `up`, 31 otherwise).
    let clamp = if matches!(mode, Mode::Up) { 0 } else { 0x1f };
    let c = ((WARP_SIZE - width) << 8) | clamp;
    let bits = v.to_bits();
    let lo = shfl32(mode, mask, bits as u32, b, c) as u64;
    if T::WIDE {
        let hi = shfl32(mode, mask, (bits >> 32) as u32, b, c) as u64;
        T::from_bits(hi << 32 | lo)
    } else {
        T::from_bits(lo)
    }
}

/// `__shfl_up_sync(mask, v, delta, width)`: the value of lane `lane - delta` within segments of
/// `width` lanes (a power of two ≤ 32); lanes below `delta` keep their own value.
#[inline(always)]
pub fn shfl_up_sync<T: WarpValue>(mask: u32, v: T, delta: u32, width: u32) -> T {
    shfl(Mode::Up, mask, v, delta, width)
}

/// `__shfl_down_sync(mask, v, delta, width)`: the value of lane `lane + delta` within segments
/// of `width` lanes; lanes whose source is past the segment keep their own value.
#[inline(always)]
pub fn shfl_down_sync<T: WarpValue>(mask: u32, v: T, delta: u32, width: u32) -> T {
    shfl(Mode::Down, mask, v, delta, width)
}

/// `__shfl_xor_sync(mask, v, lane_mask, width)`: the value of lane `lane ^ lane_mask` (a
/// butterfly exchange, the building block of warp reductions).
#[inline(always)]
pub fn shfl_xor_sync<T: WarpValue>(mask: u32, v: T, lane_mask: u32, width: u32) -> T {
    shfl(Mode::Xor, mask, v, lane_mask, width)
}

/// `__shfl_sync(mask, v, src_lane, width)`: the value of lane `src_lane` of this lane's
/// segment (a broadcast when every lane passes the same `src_lane`).
#[inline(always)]
pub fn shfl_idx_sync<T: WarpValue>(mask: u32, v: T, src_lane: u32, width: u32) -> T {
    shfl(Mode::Idx, mask, v, src_lane, width)
}

/// [`shfl_up_sync`] over the full warp.
#[inline(always)]
pub fn shfl_up<T: WarpValue>(v: T, delta: u32) -> T {
    shfl(Mode::Up, FULL_MASK, v, delta, WARP_SIZE)
}

/// [`shfl_down_sync`] over the full warp.
#[inline(always)]
pub fn shfl_down<T: WarpValue>(v: T, delta: u32) -> T {
    shfl(Mode::Down, FULL_MASK, v, delta, WARP_SIZE)
}

/// [`shfl_xor_sync`] over the full warp.
#[inline(always)]
pub fn shfl_xor<T: WarpValue>(v: T, lane_mask: u32) -> T {
    shfl(Mode::Xor, FULL_MASK, v, lane_mask, WARP_SIZE)
}

/// [`shfl_idx_sync`] over the full warp.
#[inline(always)]
pub fn shfl_idx<T: WarpValue>(v: T, src_lane: u32) -> T {
    shfl(Mode::Idx, FULL_MASK, v, src_lane, WARP_SIZE)
}

/// Butterfly all-reduce over the full warp with any associative, commutative `op`: every lane
/// gets `op` folded over all 32 lanes' values (5 `shfl.xor` steps, two per step for 64-bit).
///
/// ```ignore
/// let warp_sum = warp::all_reduce(x, |a, b| a + b);
/// ```
#[inline(always)]
pub fn all_reduce<T: WarpValue>(v: T, op: impl Fn(T, T) -> T) -> T {
    let mut acc = v;
    let mut lane_mask = WARP_SIZE / 2;
    while lane_mask > 0 {
        acc = op(acc, shfl_xor(acc, lane_mask));
        lane_mask /= 2;
    }
    acc
}

/// `__all_sync`: whether `predicate` is true in every lane of `mask` (`vote.sync.all.pred`).
#[inline(always)]
pub fn all_sync(mask: u32, predicate: bool) -> bool {
    device!("warp::all_sync", {
        let r: u32;
        // SAFETY: a register exchange between lanes; predicates are local to the asm block.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred %gpu_p, %gpu_q;",
                "setp.ne.u32 %gpu_p, {p}, 0;",
                "vote.sync.all.pred %gpu_q, %gpu_p, {m};",
                "selp.u32 {r}, 1, 0, %gpu_q; }}",
                p = in(reg32) predicate as u32,
                m = in(reg32) mask,
                r = out(reg32) r,
                options(nomem, nostack),
            )
        };
        r != 0
    }, sim: { crate::sim::intrinsics::ballot(mask, predicate) == mask & crate::sim::intrinsics::warp_exists_mask() })
}

/// `__any_sync`: whether `predicate` is true in any lane of `mask` (`vote.sync.any.pred`).
#[inline(always)]
pub fn any_sync(mask: u32, predicate: bool) -> bool {
    device!("warp::any_sync", {
        let r: u32;
        // SAFETY: as for `all_sync`.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred %gpu_p, %gpu_q;",
                "setp.ne.u32 %gpu_p, {p}, 0;",
                "vote.sync.any.pred %gpu_q, %gpu_p, {m};",
                "selp.u32 {r}, 1, 0, %gpu_q; }}",
                p = in(reg32) predicate as u32,
                m = in(reg32) mask,
                r = out(reg32) r,
                options(nomem, nostack),
            )
        };
        r != 0
    }, sim: { crate::sim::intrinsics::ballot(mask, predicate) != 0 })
}

/// `__ballot_sync`: bit `i` set iff lane `i` is in `mask` and its `predicate` is true
/// (`vote.sync.ballot.b32`).
#[inline(always)]
pub fn ballot_sync(mask: u32, predicate: bool) -> u32 {
    device!("warp::ballot_sync", {
        let r: u32;
        // SAFETY: as for `all_sync`.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred %gpu_p;",
                "setp.ne.u32 %gpu_p, {p}, 0;",
                "vote.sync.ballot.b32 {r}, %gpu_p, {m}; }}",
                p = in(reg32) predicate as u32,
                m = in(reg32) mask,
                r = out(reg32) r,
                options(nomem, nostack),
            )
        };
        r
    }, sim: { crate::sim::intrinsics::ballot(mask, predicate) })
}

/// [`all_sync`] over the full warp.
#[inline(always)]
pub fn all(predicate: bool) -> bool {
    all_sync(FULL_MASK, predicate)
}

/// [`any_sync`] over the full warp.
#[inline(always)]
pub fn any(predicate: bool) -> bool {
    any_sync(FULL_MASK, predicate)
}

/// [`ballot_sync`] over the full warp.
#[inline(always)]
pub fn ballot(predicate: bool) -> u32 {
    ballot_sync(FULL_MASK, predicate)
}

/// `__activemask()`: the lanes currently executing this code together (`activemask.b32`).
/// A snapshot, not a guarantee of convergence; do not use it as a `.sync` mask to *force*
/// lanes together.
#[inline(always)]
pub fn active_mask() -> u32 {
    device!("warp::active_mask", {
        let m: u32;
        // SAFETY: reads the warp's execution state; no memory access.
        unsafe {
            core::arch::asm!("activemask.b32 {m};", m = out(reg32) m, options(nomem, nostack))
        };
        m
    }, sim: { crate::sim::intrinsics::active_mask() })
}

/// `__match_any_sync` (sm_70+): the lanes of `mask` whose `v` has the same bits as this lane's
/// (`match.any.sync.b32`/`.b64`).
#[inline(always)]
pub fn match_any_sync<T: WarpValue>(mask: u32, v: T) -> u32 {
    device!("warp::match_any_sync", {
        let r: u32;
        // SAFETY: a comparison across lanes; no memory access.
        unsafe {
            if T::WIDE {
                core::arch::asm!("match.any.sync.b64 {r}, {v}, {m};", r = out(reg32) r, v = in(reg64) v.to_bits(), m = in(reg32) mask, options(nomem, nostack))
            } else {
                core::arch::asm!("match.any.sync.b32 {r}, {v}, {m};", r = out(reg32) r, v = in(reg32) v.to_bits() as u32, m = in(reg32) mask, options(nomem, nostack))
            }
        };
        r
    }, sim: { crate::sim::intrinsics::match_any(mask, v.to_bits()) })
}

/// `__match_all_sync` (sm_70+): `mask` if every lane of `mask` has the same bits in `v`,
/// otherwise 0 (`match.all.sync.b32`/`.b64`).
#[inline(always)]
pub fn match_all_sync<T: WarpValue>(mask: u32, v: T) -> u32 {
    device!("warp::match_all_sync", {
        let r: u32;
        // SAFETY: a comparison across lanes; no memory access.
        unsafe {
            if T::WIDE {
                core::arch::asm!("match.all.sync.b64 {r}, {v}, {m};", r = out(reg32) r, v = in(reg64) v.to_bits(), m = in(reg32) mask, options(nomem, nostack))
            } else {
                core::arch::asm!("match.all.sync.b32 {r}, {v}, {m};", r = out(reg32) r, v = in(reg32) v.to_bits() as u32, m = in(reg32) mask, options(nomem, nostack))
            }
        };
        r
    }, sim: { crate::sim::intrinsics::match_all(mask, v.to_bits()) })
}

/// [`match_any_sync`] over the full warp.
#[inline(always)]
pub fn match_any<T: WarpValue>(v: T) -> u32 {
    match_any_sync(FULL_MASK, v)
}

/// The lanes whose `v` has the same low `BITS` bits as this lane's (higher bits are ignored),
/// over the full warp: [`match_any`] of `v & (2^BITS - 1)`, computed with `BITS` ballots instead
/// of `match.any`. On sm_70 to sm_90 `match.any` issues slowly and its result comes late, so for
/// small labels (radix digits: `BITS` = 8) the ballots are faster; CUB's radix ranking does the
/// same. `BITS` is at most 32.
#[inline(always)]
pub fn match_any_bits<const BITS: usize>(v: u32) -> u32 {
    const { assert!(BITS <= 32, "match_any_bits: at most 32 bits") };
    // A host build without the simulator compiles neither body below (they panic there).
    #[cfg_attr(not(any(target_arch = "nvptx64", feature = "sim")), allow(unused_mut))]
    let mut peers = FULL_MASK;
    crate::unroll!(BITS, |b| {
        device!("warp::match_any_bits", {
            // CUB's form (`MatchAny`): the bit test, the ballot and the complement for lanes
            // whose bit is clear share one predicate, so ptxas tests the bits with few
            // instructions (`R2P`) and each bit costs a ballot and two logic ops. Written in
            // Rust, the test became a 0/1 value that was shifted, masked, compared and
            // subtracted: twice the instructions.
            let lanes: u32;
            // SAFETY: a ballot over the full warp; no memory access.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred %gpu_p;",
                    "and.b32 {t}, {v}, {bit};",
                    "setp.ne.u32 %gpu_p, {t}, 0;",
                    "vote.sync.ballot.b32 {r}, %gpu_p, -1;",
                    "@!%gpu_p not.b32 {r}, {r}; }}",
                    v = in(reg32) v,
                    bit = in(reg32) 1u32 << b,
                    t = out(reg32) _,
                    r = out(reg32) lanes,
                    options(nomem, nostack),
                )
            };
            peers &= lanes;
        }, sim: {
            let set = v >> b & 1 != 0;
            let lanes = ballot(set);
            peers &= if set { lanes } else { !lanes };
        })
    });
    peers
}

/// [`match_all_sync`] over the full warp.
#[inline(always)]
pub fn match_all<T: WarpValue>(v: T) -> u32 {
    match_all_sync(FULL_MASK, v)
}

/// 32-bit integers with hardware warp reductions (`redux.sync`, sm_80+): `u32`, `i32`.
pub trait ReduxValue: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn __redux(op: ReduxOp, mask: u32, v: Self) -> Self;
}

#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

macro_rules! impl_redux {
    ($t:ty, $add:literal, $min:literal, $max:literal) => {
        impl ReduxValue for $t {
            #[inline(always)]
            fn __redux(op: ReduxOp, mask: u32, v: Self) -> Self {
                device!("warp::reduce", {
                    let r: $t;
                    // SAFETY: a reduction across lanes; no memory access.
                    unsafe {
                        match op {
                            ReduxOp::Add => core::arch::asm!($add, r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask, options(nomem, nostack)),
                            ReduxOp::Min => core::arch::asm!($min, r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask, options(nomem, nostack)),
                            ReduxOp::Max => core::arch::asm!($max, r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask, options(nomem, nostack)),
                            ReduxOp::And => core::arch::asm!("redux.sync.and.b32 {r}, {v}, {m};", r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask, options(nomem, nostack)),
                            ReduxOp::Or => core::arch::asm!("redux.sync.or.b32 {r}, {v}, {m};", r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask, options(nomem, nostack)),
                            ReduxOp::Xor => core::arch::asm!("redux.sync.xor.b32 {r}, {v}, {m};", r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask, options(nomem, nostack)),
                        }
                    };
                    r
                }, sim: { crate::sim::intrinsics::redux(match op { ReduxOp::Add => 0, ReduxOp::Min => 1, ReduxOp::Max => 2, ReduxOp::And => 3, ReduxOp::Or => 4, ReduxOp::Xor => 5 }, <$t>::MIN != 0, mask, v as u32) as $t })
            }
        }
    };
}

impl_redux!(
    u32,
    "redux.sync.add.u32 {r}, {v}, {m};",
    "redux.sync.min.u32 {r}, {v}, {m};",
    "redux.sync.max.u32 {r}, {v}, {m};"
);
impl_redux!(
    i32,
    "redux.sync.add.s32 {r}, {v}, {m};",
    "redux.sync.min.s32 {r}, {v}, {m};",
    "redux.sync.max.s32 {r}, {v}, {m};"
);

macro_rules! redux_fns {
    ($($op:ident => $sync:ident, $full:ident: $doc:literal;)*) => { $(
        #[doc = concat!("Warp reduction (sm_80+, `redux.sync`): ", $doc, " of `v` over the lanes of `mask`; every lane gets the result.")]
        #[inline(always)]
        pub fn $sync<T: ReduxValue>(mask: u32, v: T) -> T {
            T::__redux(ReduxOp::$op, mask, v)
        }

        #[doc = concat!("[`", stringify!($sync), "`] over the full warp.")]
        #[inline(always)]
        pub fn $full<T: ReduxValue>(v: T) -> T {
            T::__redux(ReduxOp::$op, FULL_MASK, v)
        }
    )* };
}

redux_fns! {
    Add => reduce_add_sync, reduce_add: "the wrapping sum";
    Min => reduce_min_sync, reduce_min: "the minimum";
    Max => reduce_max_sync, reduce_max: "the maximum";
    And => reduce_and_sync, reduce_and: "the bitwise and";
    Or => reduce_or_sync, reduce_or: "the bitwise or";
    Xor => reduce_xor_sync, reduce_xor: "the bitwise xor";
}

mod collective;

#[doc(hidden)]
pub use collective::butterfly_reduce;
pub use collective::{
    broadcast, exclusive_scan, inclusive_scan, reduce, reduce_partial, shuffle_down, shuffle_idx,
    shuffle_up, shuffle_xor,
};
