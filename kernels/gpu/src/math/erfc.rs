//! `erfc` for f32, CUDA's `erfcf` structure: erfc(a) = e^(−a²)·g(t)/(a + K) for a = |x|, with
//! g a polynomial in t = (a − K)/(a + K), one over the rest of the half line from a = 0.47, so
//! small results keep their relative accuracy down to the subnormal range; erfc(−a) = 2 −
//! erfc(a); below 0.47, 1 − erf(x). No division and no branch: 1/(a + K) by Newton's method
//! from a seed in its bits, carried with its residual to first order, and t from it; CUDA's
//! second reciprocal, 1/(1 + 2a), is folded into g. e^(−a²) and the corrections for the
//! reciprocal's residual and a²'s rounding are applied as one factor 1 + w close to 1.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::exp_log::{LN2_HI, LN2_MID};
use super::special::ERF_SMALL;
use super::{fma, fms, fnma, horner, mul, pow2i};

/// t = (a − K)/(a + K): K is near CUDA's 2, chosen so that g's constant term, whose rounding no
/// other coefficient can absorb, is within 0.009 ulp of an f32.
const K: f32 = 2.312_5;
/// g(t) = e^(a²)·erfc(a)·(a + K) on 0.47 ≤ a ≤ 10.1: near-minimax for the relative error,
/// 2^-29.7 (`fit_erfc.py 2.3125 0.47 10.1 9 --f32`), scaled by 2^-64 (exactly, in the
/// exponent) for the final scaling below.
const ERFC: [f32; 10] = [
    f32::from_bits(0x39636390 - (64 << 23)), // 0.00021685496903955936
    f32::from_bits(0x398c005b - (64 << 23)), // 0.00026703145704232156
    f32::from_bits(0xbac326d1 - (64 << 23)), // -0.0014888887526467443
    f32::from_bits(0xbafc39f3 - (64 << 23)), // -0.0019243344431743026
    f32::from_bits(0x3c401a70 - (64 << 23)), // 0.011725053191184998
    f32::from_bits(0x3b51e8a0 - (64 << 23)), // 0.0032029524445533752
    f32::from_bits(0xbdf29148 - (64 << 23)), // -0.11844116449356079
    f32::from_bits(0x3ec93cc2 - (64 << 23)), // 0.3930416703224182
    f32::from_bits(0xbf4422d8 - (64 << 23)), // -0.7661566734313965
    f32::from_bits(0x3f859a22 - (64 << 23)), // 1.0437662601470947
];
/// (e^t − 1 − t)/t² on |t| ≤ ln 2 / 2 (`exp`'s).
const EXP: [f32; 5] = [
    1.392_617_6e-3,
    8.363_173e-3,
    4.166_655_6e-2,
    0.166_665_78,
    0.5,
];

/// erfc(x) = 1 − erf(x): max error 4 ulp (CUDA's `erfcf`: 4 ulp), subnormal results
/// included; +0 above ~10.05, 2 for −inf, NaN for NaN.
#[inline(always)]
pub fn erfc(x: f32) -> f32 {
    // Clamped where the result is 0 already (a NaN passes).
    let a = x.abs();
    let a = if a > 10.1 { 10.1 } else { a };
    // d + d_lo = a + K exactly: d − K is exact (K is a multiple of 2^-4 and d ≥ K), and so is
    // a − (d − K), d's rounding error.
    let d = a + K;
    let d_lo = a - (d - K);
    // r = 1/d from a seed in its bits (relative error 5% at most) and three Newton steps
    // r + r·(1 − d·r), each squaring the error; then r·(1 + e) = 1/(a + K) to 2^-40.
    let r = f32::from_bits(0x7ef3_11c3_u32.wrapping_sub(d.to_bits()));
    let r = fma(r, fnma(d, r, 1.0), r);
    let r = fma(r, fnma(d, r, 1.0), r);
    let r = fma(r, fnma(d, r, 1.0), r);
    let e = fnma(d_lo, r, fnma(d, r, 1.0));
    // t = 1 − 2K·r·(1 + e) (two roundings). g varies slowly with t (by 0.7·δ relative at
    // most for an error δ); the result's main dependence on a, through 1/(a + K), is the
    // factor r·(1 + e), which keeps its relative accuracy.
    let t = fnma(mul(2.0 * K, r), e, fnma(2.0 * K, r, 1.0));
    let g = horner(t, ERFC);
    // e^(−a²) with a² = h + l exactly: 2^j·e^u·(1 − l), u = −h − j·ln 2 (its first step
    // exact, as in `exp`).
    let h = mul(a, a);
    let l = fms(a, a, h);
    const MAGIC: f32 = 12_582_912.0;
    let kk = fma(h, -core::f32::consts::LOG2_E, MAGIC);
    let j = kk - MAGIC;
    let ji = (kk.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let u = fms(j, -LN2_HI, h);
    let u = fma(j, -LN2_MID, u);
    // (1 + e)·(1 − l)·e^u = 1 + w: 1 + c with c = e − l to first order (|c| ≤ 2^-18),
    // e^u = 1 + u·p with p = 1 + u·EXP(u), so w = c + u·p·(1 + c), below 0.42: its roundings
    // cost less than a rounding of each factor.
    let c = e - l;
    let up = mul(u, fma(horner(u, EXP), u, 1.0));
    let w = fma(up, c, up) + c;
    let s = mul(r, fma(g, w, g));
    // s·2^-64 is normal; times 2^(j + 64) it is rounded once (j ≥ −148).
    let r = mul(s, pow2i(ji + 64));
    let r = if x < 0.0 { 2.0 - r } else { r };
    // Below 0.47 (results in (1/2, 3/2)) 1 − erf(x), erf's odd polynomial: there the roundings
    // above, relative to intermediate values near 1 or 2, would cost up to 3 ulp of a result
    // just below 1.
    let small = 1.0 - fma(horner(mul(x, x), ERF_SMALL), x, x);
    if a < 0.47 { small } else { r }
}
