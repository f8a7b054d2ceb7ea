//! `expm1` and `log1p` for f32: e^x − 1 and log(1 + x) without the cancellation of computing
//! them through `exp`/`log`, accurate where the result is tiny. expm1: x = j·ln 2 + t as in
//! [`exp`](super::exp), e^t − 1 as hi + lo, then 2^j·(e^t − 1) + (2^j − 1) summed exactly
//! before one final rounding. log1p: 1 + x = u + c exactly (u rounded), log(1 + x) =
//! log u + c/u with [`log`](super::log)'s reduction and polynomial.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::exp_log::{LN2_HI, LN2_MID, log_special};
use super::{exp, fma, horner, mul, pow2i, rint_mul};

/// (e^t − 1 − t − t²/2)/t³ on |t| ≤ 0.35.
const EXPM1: [f32; 5] = [
    1.988_351_4e-4,
    1.392_691_9e-3,
    8.333_321e-3,
    4.166_654_9e-2,
    0.166_666_67,
];

/// `(s, e)` with s = a + b rounded and s + e = a + b exactly (Knuth's two-sum).
#[inline(always)]
pub(super) fn two_sum(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `(s, e)` with s = a + b rounded and s + e = a + b exactly, for |a| ≥ |b| or a = 0
/// (Dekker's fast two-sum: three additions instead of [`two_sum`]'s six).
#[inline(always)]
fn fast_two_sum(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    (s, b - (s - a))
}

/// e^x − 1: max error 1 ulp (CUDA's `expm1f`: 1 ulp), x itself for tiny x (±0 kept); +inf
/// above ~88.72, −1 below ~−17.3.
#[inline(always)]
pub fn expm1(x: f32) -> f32 {
    if x > 25.0 {
        // e^x − 1 rounds to e^x (the 1 is below 2^-36 of it).
        return exp(x);
    }
    if x < -18.0 {
        // e^x < 2^-25: the result rounds to −1.
        return -1.0;
    }
    let j = rint_mul(x, core::f32::consts::LOG2_E);
    // t = th + tl: x − j·LN2_HI is exact (as in `exp`).
    let th = fma(j, -LN2_HI, x);
    let tl = mul(j, -LN2_MID);
    // e^t − 1 = th + th²/2 + th³·P(th) + tl·(1 + th), as u + u_lo.
    let h = mul(th, 0.5);
    let hs = mul(h, th);
    let hs_err = fma(h, th, -hs);
    let u = th + hs;
    let u_err = hs - (u - th); // |th| ≥ |hs|: exact
    let rest = fma(mul(mul(th, th), th), horner(th, EXPM1), fma(tl, th, tl));
    let u_lo = u_err + (hs_err + rest);
    // 2^j·(u + u_lo) + (2^j − 1): 2^j·u is exact, the sums are kept exactly until the end.
    let p = pow2i(j as i32);
    let (a, a_lo) = two_sum(p, -1.0);
    // |a| ≥ |2^j·u| (|u| < 0.42: for j ≥ 1, a ≥ 2^(j−1); for j ≤ −1, a ≤ −1/2; for j = 0,
    // a = 0 and s = 2^j·u exactly), so the fast two-sum is exact.
    let (s, s_lo) = fast_two_sum(a, mul(p, u));
    let r = s + (s_lo + (a_lo + mul(p, u_lo)));
    if x == 0.0 { x } else { r }
}

/// (log(1 + f) − f + f²/2)/f³ on −1/4 ≤ f ≤ 1/2 (`fit_log1p.py f32 7`).
const LOG1P: [f32; 8] = [
    -0.045_101_665,
    0.104_671_93,
    -0.131_632_05,
    0.144_784_33,
    -0.166_470_89,
    0.199_908_2,
    -0.250_001_01,
    0.333_334_5,
];
/// ln 2·2^-23 (ln 2 rounded to f32, scaled to multiply an exponent field): its error, below
/// 2^-28 of ln 2, moves the result by less than 0.07 ulp.
const LN2_EXP: f32 = f32::from_bits(0x3f31_7218 - (23 << 23));

/// log(1 + w) − m·ln 2 for finite w > −1 and an integer m (as a float: −0.0 for none); for m =
/// −0.0 a zero w keeps its sign.
///
/// 1 + w = 2^i·(1 + f) with 1 + f near [3/4, 3/2]; then f = w·2^-i − (1 − 2^-i), where w·2^-i
/// is an exponent shift and the difference is exact (Sterbenz: both terms within a factor 2 of
/// each other, or i = 0 and f = w), so the rounding of 1 + w is not lost and needs no
/// correction term. (1 − 2^-i rounds only for i > 24, by far less than the result's ulp.) That
/// takes i = 0 for every w in (−1/4, 1/2), i > 0 only for w ≥ 1/2 and i < 0 only for w < −1/4:
/// i comes from u = (1 + w)(1 + 2^-23) rounded, whose binades [3/4 + 2^-23, 3/2 + 2^-22)·2^i
/// hold those ranges whichever way u rounds (with u = 1 + w, rounding up to 3/2 from below
/// would give i = 1 for w = 1/2 − 2^-25, whose f = −1/4 − 2^-26 is not a float). Then
/// log(1 + f) = f − f²/2 + f³·p(f).
#[inline(always)]
pub(super) fn log1p_minus(w: f32, m: f32) -> f32 {
    const K: f32 = 1.0 + f32::EPSILON;
    let u = fma(w, K, K);
    // −i·2^23: minus the exponent of u relative to 3/4 + 2^-23 (rounded towards −inf), in the
    // exponent field (((b − C) & mask) negated is (C + 2^23 − 1 − b) & mask).
    let ne = 0x3fc0_0001_i32.wrapping_sub(u.to_bits() as i32) & (0xff80_0000_u32 as i32);
    let ws = f32::from_bits((w.to_bits() as i32).wrapping_add(ne) as u32);
    // 4·2^-i stays normal for i up to 128 (2^-i would not).
    let s4 = f32::from_bits(0x4080_0000_i32.wrapping_add(ne) as u32);
    let f = ws - fma(-0.25, s4, 1.0);
    let s = mul(f, f);
    let r = fma(fma(horner(f, LOG1P), f, -0.5), s, f);
    // −(i + m)·2^23, +0.0 for i = 0 and m = −0.0: the product is then −0.0, and a zero r = f
    // keeps its sign.
    let j = ne as f32 + m * 8_388_608.0;
    fma(j, -LN2_EXP, r)
}

/// log(1 + x): max error 1 ulp (CUDA's `log1pf`: 1 ulp), x itself for tiny x (±0 kept); −inf
/// at −1, NaN below −1.
#[inline(always)]
pub fn log1p(x: f32) -> f32 {
    let r = log1p_minus(x, -0.0);
    if x > -1.0 && x < f32::INFINITY {
        r
    } else {
        log_special(x + 1.0)
    }
}
