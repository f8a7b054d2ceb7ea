//! `lgamma` and `tgamma` for f32, both from ln Γ(x) carried as hi + lo, with one logarithm
//! ln x (hi + lo, relative error about 2^-31) shared by every range:
//! - below 2.5, one minimax polynomial q with lgamma(1 + t) = t·(t − 1)·q(t − 0.625) for
//!   −0.25 ≤ t ≤ 1.5: t = x − 1 from 0.75 on, else t = x and lgamma(x) = lgamma(1 + x) − ln x;
//!   the zeros at 1 and 2 are explicit factors, so they keep their relative accuracy;
//! - from 2.5 on, Stirling's formula (x − 1/2)·(ln x − 1) + ln √(2π) − 1/2 + z·r(z²), z = 1/x,
//!   with a minimax polynomial r for the correction (ln x − 1 is exact);
//! - negative x (and zeros, subnormals, infinities, NaN, x ≥ 2^23 for lgamma, x ≥ 35 for
//!   tgamma) on a slower path, not inlined: the reflection |Γ(x)| = π/(|x·sin πx|·Γ(−x))
//!   ([`sinpi`]).
//!
//! Inputs of a warp are rarely all in one range, so every range's code runs; they share the
//! logarithm and need no division (1/x by Newton's method). tgamma is then one exponential of
//! the hi + lo logarithm, rounded once, so neither the ~34 factors of a recurrence nor a large
//! exponent's rounding reach the result. The polynomials are fitted by `fit_gamma.py`.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::exp_log::EXP;
use super::expm1_log1p::two_sum;
use super::pow::{exp2_ext, recip_d};
use super::{fma, fms, fnma, horner, mul, recip, sinpi, trunc};

/// ln 2 as hi + lo; the high part has 9 trailing zero bits, so k·LN2_HI is exact for |k| < 512.
const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
const LN2_LO: f32 = f32::from_bits(0x35bf_be8e);
/// ln √(2π) − 1/2, ln π and log2 e as hi + lo; ln √(2π) rounded.
const C_HI: f32 = f32::from_bits(0x3ed6_7f1d);
const C_LO: f32 = f32::from_bits(0xb273_6829);
const LN_PI_HI: f32 = f32::from_bits(0x3f92_8682);
const LN_PI_LO: f32 = f32::from_bits(0x330e_7a1c);
const LN_SQRT2PI: f32 = f32::from_bits(0x3f6b_3f8e);
const LOG2E_HI: f32 = f32::from_bits(0x3fb8_aa3b);
const LOG2E_LO: f32 = f32::from_bits(0x32a5_7060);

/// lgamma(1 + t)/(t·(t − 1)) as a polynomial in s = t − 0.625, on −0.875 ≤ s ≤ 0.875
/// (relative error 2^-26.2).
const LGAMMA: [f32; 14] = [
    -1.7245133e-4,
    2.9539634e-4,
    -2.3609615e-5,
    5.3574022e-5,
    -6.57161e-4,
    1.1621271e-3,
    -1.7754468e-3,
    3.2659338e-3,
    -6.220486e-3,
    1.1999798e-2,
    -2.41941e-2,
    5.257894e-2,
    -0.131579,
    0.46580964,
];
/// x·(lgamma(x) − (x − 1/2)·ln x + x − ln √(2π)) (Stirling's correction, 1/12 at x = ∞) as a
/// polynomial in 1/x², on x ≥ 2.5 (relative error 2^-29).
const STIRLING: [f32; 5] = [
    8.2925294e-4,
    -6.8154617e-4,
    8.05119e-4,
    -2.7782067e-3,
    8.3333336e-2,
];
/// (2·atanh(√v)/√v − 2)/v on 0 ≤ v ≤ 0.0295 (relative error 2^-29).
const ATANH: [f32; 4] = [0.2116887, 0.28649563, 0.3999897, 0.6666667];

/// (a + a_lo) + (b + b_lo) as hi + lo, renormalized.
#[inline(always)]
fn add_ext(a: f32, a_lo: f32, b: f32, b_lo: f32) -> (f32, f32) {
    let (s, e) = two_sum(a, b);
    let e = e + (a_lo + b_lo);
    let r = s + e;
    (r, (s - r) + e)
}

/// ln x + bias·ln 2 as hi + lo (relative error about 2^-31) for a positive normal x (`bias` is
/// 0, or −23 for a subnormal scaled by 2^23): x = 2^k·m with m in [√2/2, √2), and
/// ln m = 2·atanh u = 2u + u³·s(u²) for u = (m − 1)/(m + 1), |u| ≤ 0.172, computed with its
/// rounding error as [`pow`](super::pow())'s `log2_ext` does (no division). 2u is exact and
/// k·ln 2's high part too; the rest goes to the low part.
#[inline(always)]
fn ln_ext(x: f32, bias: i32) -> (f32, f32) {
    let ia = x.to_bits() as i32;
    let e = ia.wrapping_sub(0x3f35_04f3) & (0xff80_0000_u32 as i32);
    let m = f32::from_bits(ia.wrapping_sub(e) as u32);
    let k = ((e >> 23) + bias) as f32;
    let a = m - 1.0;
    let rcp = recip_d(a + 2.0);
    let u = mul(a, rcp);
    let u_lo = mul(fnma(u, a, fma(-2.0, u, a)), rcp);
    let v = mul(u, u);
    let tail = fma(mul(u, v), horner(v, ATANH), u_lo + u_lo);
    // k·ln 2 + 2u by a fast two-sum: |2u| < ln 2 ≤ |k·LN2_HI| unless k = 0, where it is exact.
    let kh = mul(k, LN2_HI);
    let b = u + u;
    let hi = kh + b;
    (hi, (b - (hi - kh)) + fma(k, LN2_LO, tail))
}

/// ln |Γ(x)| as hi + lo for −0.25 ≤ x < 2^23, x ≠ 0, from `(l, l_lo)` = ln |x| as hi + lo.
/// With `EXACT`, the last rounding of the Stirling sum is carried in the low part too (tgamma
/// and the reflection need ln Γ to far below an ulp); without, hi + lo is within 1.5 ulp of
/// lgamma.
#[inline(always)]
fn ln_gamma<const EXACT: bool>(x: f32, l: f32, l_lo: f32) -> (f32, f32) {
    if x < 2.5 {
        // lgamma(1 + t) = t·(t − 1)·q with one rounding in (t − 1)·q. t − 0.625 is exact
        // but for tiny x, where q varies slowly.
        let sub = x < 0.75;
        let t = if sub { x } else { x - 1.0 };
        let q = horner(t - 0.625, LGAMMA);
        let r = mul(t, fms(q, t, q));
        if sub { (-l, r - l_lo) } else { (r, 0.0) }
    } else {
        // (x − 1/2)·(ln x − 1) (x − 1/2 and ln x − 1 exact) with its rounding error, then the
        // constant and the correction.
        let am = x - 0.5;
        let h = l - 1.0;
        let p = mul(am, h);
        let p_lo = fms(am, h, p);
        let z = recip(x);
        let lo = fma(am, l_lo, p_lo) + fma(z, horner(mul(z, z), STIRLING), C_LO);
        if EXACT {
            let (s, s_lo) = two_sum(p, C_HI);
            (s, s_lo + lo)
        } else {
            (p + C_HI, lo)
        }
    }
}

/// ln(π/|x·sin πx|) as hi + lo for non-integer x with 0.25 ≤ |x| < 2^23 (a = |x|): the
/// reflection's term.
#[inline(always)]
fn ln_reflection(x: f32, a: f32) -> (f32, f32) {
    let s = sinpi(x).abs();
    let m = mul(a, s);
    let m_lo = fms(a, s, m);
    let (lm, lm_lo) = ln_ext(m, 0);
    // ln(m + m_lo) = ln m + m_lo/m to far below an ulp.
    add_ext(LN_PI_HI, LN_PI_LO, -lm, -(lm_lo + m_lo / m))
}

/// Whether x is positive, normal and below `limit` (a positive normal f32): one unsigned
/// comparison of the bits.
#[inline(always)]
fn normal_below(x: f32, limit: f32) -> bool {
    x.to_bits().wrapping_sub(0x0080_0000) < limit.to_bits() - 0x0080_0000
}

/// ln|Γ(x)| (C's `lgammaf`): max error 4 ulp outside −10.001 < x < −2.264 (CUDA's `lgammaf`:
/// 6 ulp there). Inside, near the zeros of lgamma at negative x (the sum of two terms of
/// opposite sign cancels), the absolute error stays below 2^-20 but the error in ulp grows
/// without bound, as in CUDA. +inf at 0, the negative integers and ±inf; NaN for NaN.
#[inline(always)]
pub fn lgamma(x: f32) -> f32 {
    // The common case, 2^-126 ≤ x < 2^23, without a test on its way; the rest not inlined.
    if normal_below(x, 8_388_608.0) {
        let (l, l_lo) = ln_ext(x, 0);
        let (g, g_lo) = ln_gamma::<false>(x, l, l_lo);
        g + g_lo
    } else {
        lgamma_other(x)
    }
}

/// [`lgamma`] outside 2^-126 ≤ x < 2^23.
#[inline(never)]
fn lgamma_other(x: f32) -> f32 {
    let a = x.abs();
    if x.is_nan() {
        return x;
    }
    if a == f32::INFINITY || (x <= 0.0 && trunc(x) == x) {
        return f32::INFINITY;
    }
    if a >= 8_388_608.0 {
        // x ≥ 2^23 (larger negative x are integers): x·(ln x − 1) − ln x/2 + ln √(2π), the
        // correction 1/(12x) far below an ulp; +inf from 4.1e36 on.
        let (l, l_lo) = ln_ext(a, 0);
        return fma(a, l - 1.0, fma(a, l_lo, fma(-0.5, l, LN_SQRT2PI)));
    }
    let (s, bias) = if a < f32::MIN_POSITIVE {
        (mul(a, 8_388_608.0), -23)
    } else {
        (a, 0)
    };
    let (l, l_lo) = ln_ext(s, bias);
    if x >= -0.25 {
        // A subnormal x or −0.25 ≤ x < 0: lgamma(1 + x) − ln |x| as for small positive x.
        let (g, g_lo) = ln_gamma::<false>(x, l, l_lo);
        return g + g_lo;
    }
    // lgamma(x) = ln(π/|x·sin πx|) − lgamma(|x|).
    let (g, g_lo) = ln_gamma::<true>(a, l, l_lo);
    let (r, r_lo) = ln_reflection(x, a);
    let (s, s_lo) = add_ext(r, r_lo, -g, -g_lo);
    s + s_lo
}

/// e^(e + e_lo) for a normal result (e + e_lo within −87.3..88.7, |e_lo| ≤ 0.25): one
/// Cody–Waite step with ln 2 in two parts (e − j·LN2_HI is exact), the polynomial of
/// [`exp`](super::exp), and the exponent added to the bits.
#[inline(always)]
fn exp_ext_normal(e: f32, e_lo: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    let k = fma(e + e_lo, LOG2E_HI, MAGIC);
    let j = k - MAGIC;
    let t = fma(j, -LN2_HI, e) + fma(j, -LN2_LO, e_lo);
    let p = fma(fma(horner(t, EXP), t, 1.0), t, 1.0);
    let ji = (k.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    f32::from_bits(p.to_bits().wrapping_add((ji << 23) as u32))
}

/// Γ(x) (C's `tgammaf`): max error 3 ulp (CUDA's `tgammaf`: 5 ulp), subnormal results included;
/// +inf above ~35.04, ±inf at ±0, NaN at the negative integers and −inf, ±0 far left (by the
/// sign of Γ there).
#[inline(always)]
pub fn tgamma(x: f32) -> f32 {
    // The common case, 2^-126 ≤ x < 35 (Γ(35) ≈ 2.95e38: a normal result), without a test on
    // its way; the rest not inlined.
    if normal_below(x, 35.0) {
        let (l, l_lo) = ln_ext(x, 0);
        let (g, g_lo) = ln_gamma::<true>(x, l, l_lo);
        exp_ext_normal(g, g_lo)
    } else {
        tgamma_other(x)
    }
}

/// [`tgamma`] outside 2^-126 ≤ x < 35.
#[inline(never)]
fn tgamma_other(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::INFINITY.copysign(x);
    }
    if x < 0.0 && trunc(x) == x {
        // Negative integers and −inf.
        return f32::NAN;
    }
    // Γ(64) overflows and 1/Γ(64) underflows already: |x| clamped there.
    let a = x.abs().min(64.0);
    let (s, bias) = if a < f32::MIN_POSITIVE {
        (mul(a, 8_388_608.0), -23)
    } else {
        (a, 0)
    };
    let (l, l_lo) = ln_ext(s, bias);
    let (e, e_lo, sign) = if x >= -0.25 {
        // A subnormal x, 35 ≤ x, or −0.25 ≤ x < 0 (Γ(x) = Γ(1 + x)/x: the reflection's
        // x·sin πx would underflow for tiny x).
        let (g, g_lo) = ln_gamma::<true>(x.min(64.0), l, l_lo);
        (g, g_lo, x)
    } else {
        // |Γ(x)| = e^(ln(π/|x·sin πx|) − ln Γ(|x|)), of the sign of sin πx.
        let (g, g_lo) = ln_gamma::<true>(a, l, l_lo);
        let (r, r_lo) = ln_reflection(x, a);
        let (n, n_lo) = add_ext(r, r_lo, -g, -g_lo);
        (n, n_lo, sinpi(x))
    };
    // In log2 units, renormalized, for the exponential that rounds subnormal results once.
    let (e, e_lo) = two_sum(e, e_lo);
    let p = mul(e, LOG2E_HI);
    let p_lo = fms(e, LOG2E_HI, p) + (mul(e, LOG2E_LO) + mul(e_lo, LOG2E_HI));
    exp2_ext(p, p_lo).copysign(sign)
}
