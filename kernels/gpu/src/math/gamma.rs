//! `lgamma` and `tgamma` for f32, both from log2 Γ carried as hi + lo:
//! - below 2.5, minimax polynomials of lgamma(1 + t)/t and lgamma(2 + t)/t, so the zeros at 1
//!   and 2 keep their relative accuracy (below 0.75, lgamma(x) = lgamma(1 + x) − ln x);
//! - from 2.5 on, Stirling's formula (x − 1/2)·log2 x − x·log2 e + log2 √(2π) + V(1/x)/x with
//!   log2 x and the products in hi + lo ([`pow`](super::pow)'s `log2_ext`) and a minimax
//!   polynomial V for the correction;
//! - negative x by the reflection |Γ(x)| = π/(|x·sin πx|·Γ(−x)) ([`sinpi`](super::sinpi)).
//!
//! tgamma is then one `exp2` of the hi + lo logarithm, rounded once, so neither the ~34
//! factors of a recurrence nor a large exponent's rounding reach the result.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::exp_log::{LN2_HI, LN2_MID};
use super::expm1_log1p::two_sum;
use super::pow::{exp2_ext, log2_ext};
use super::{fma, horner, log, mul, sinpi, trunc};

/// log2(e), log2 √(2π) and log2 π as hi + lo.
const LOG2E_HI: f32 = f32::from_bits(0x3fb8_aa3b);
const LOG2E_LO: f32 = f32::from_bits(0x32a5_7060);
const LOG2_SQRT2PI_HI: f32 = f32::from_bits(0x3fa9_b21d);
const LOG2_SQRT2PI_LO: f32 = f32::from_bits(0xb2b6_7221);
const LOG2_PI_HI: f32 = f32::from_bits(0x3fd3_643a);
const LOG2_PI_LO: f32 = f32::from_bits(0xb336_7221);

/// lgamma(1 + t)/t on −0.25 ≤ t ≤ 0.5 (relative error 2^-29).
const LGAMMA1: [f32; 11] = [
    -3.479_875_6e-2,
    8.822_904e-2,
    -0.116_961_81,
    0.128_344_01,
    -0.144_061_48,
    0.169_404_24,
    -0.207_374_27,
    0.270_583_75,
    -0.400_685_85,
    0.822_467,
    -0.577_215_7,
];
/// lgamma(2 + t)/t on −0.5 ≤ t ≤ 0.5 (relative error 2^-31).
const LGAMMA2: [f32; 10] = [
    1.223_642_3e-4,
    -2.536_182e-4,
    5.015_166e-4,
    -1.185_959_6e-3,
    2.891_732_6e-3,
    -7.386_158_7e-3,
    2.058_073_5e-2,
    -6.735_228e-2,
    0.322_467_03,
    0.422_784_33,
];
/// x·log2(Γ(x)/(√(2π)·x^(x − 1/2)·e^(−x))) (Stirling's correction, 1/(12 ln 2) at x = ∞) as
/// a polynomial in z = 1/x, on x ≥ 2.5 (relative error 2^-28).
const STIRLING: [f32; 6] = [
    -5.999_882e-4,
    1.331_294_5e-3,
    -2.915_105_5e-5,
    -4.005_320_4e-3,
    -6.033_637_6e-8,
    0.120_224_59,
];

/// (a + a_lo)·(b + b_lo) as hi + lo.
#[inline(always)]
fn mul_ext(a: f32, a_lo: f32, b: f32, b_lo: f32) -> (f32, f32) {
    let p = mul(a, b);
    (p, fma(a, b, -p) + (mul(a, b_lo) + mul(a_lo, b)))
}

/// (a + a_lo) + (b + b_lo) as hi + lo, renormalized.
#[inline(always)]
fn add_ext(a: f32, a_lo: f32, b: f32, b_lo: f32) -> (f32, f32) {
    let (s, e) = two_sum(a, b);
    let e = e + (a_lo + b_lo);
    let r = s + e;
    (r, (s - r) + e)
}

/// For −0.25 ≤ x < 2.5: `(lgamma(x) + [ln |x| if x < 0.75], x < 0.75)`, the first from one of
/// the two polynomials at an exact t (x − 1 and x − 2 are exact there).
#[inline(always)]
fn lgamma_small(x: f32) -> (f32, bool) {
    let t = if x < 0.5 {
        x
    } else if x < 1.5 {
        x - 1.0
    } else {
        x - 2.0
    };
    // lgamma(1 + t) for x < 0.5 and 0.75 ≤ x < 1.5; lgamma(2 + t) otherwise (0.5 ≤ x < 0.75:
    // lgamma(1 + x); 1.5 ≤ x < 2.5: lgamma(x)).
    let first = x < 0.5 || (0.75..1.5).contains(&x);
    let p = if first {
        horner(t, LGAMMA1)
    } else {
        horner(t, LGAMMA2)
    };
    (mul(t, p), x < 0.75)
}

/// log2|Γ(x)| as hi + lo for −0.25 ≤ x < 2.5, x ≠ 0.
#[inline(always)]
fn log2_gamma_small(x: f32) -> (f32, f32) {
    let (lg, sub) = lgamma_small(x);
    let (g, g_lo) = mul_ext(lg, 0.0, LOG2E_HI, LOG2E_LO);
    let (la, la_lo) = log2_ext(x.abs());
    if sub {
        add_ext(g, g_lo, -la, -la_lo)
    } else {
        (g, g_lo)
    }
}

/// log2 Γ(a) as hi + lo for 2.5 ≤ a < 2^60 (Stirling).
#[inline(always)]
fn log2_gamma_stirling(a: f32) -> (f32, f32) {
    let (l, l_lo) = log2_ext(a);
    // a − 1/2 as hi + lo (exact: a − am is 0, 1/2 or 1).
    let am = a - 0.5;
    let am_lo = (a - am) - 0.5;
    let (p, p_lo) = mul_ext(am, am_lo, l, l_lo);
    let q = mul(a, LOG2E_HI);
    let q_lo = fma(a, LOG2E_HI, -q) + mul(a, LOG2E_LO);
    let (s, s_lo) = add_ext(p, p_lo, -q, -q_lo);
    let z = 1.0 / a;
    let v = mul(z, horner(z, STIRLING));
    add_ext(s, s_lo, LOG2_SQRT2PI_HI, LOG2_SQRT2PI_LO + v)
}

/// log2 Γ(a) as hi + lo for 0 < a < 2^60.
#[inline(always)]
fn log2_gamma(a: f32) -> (f32, f32) {
    if a < 2.5 {
        log2_gamma_small(a)
    } else {
        log2_gamma_stirling(a)
    }
}

/// log2(π/|x·sin πx|) as hi + lo for non-integer x (a = |x|): the reflection's factor.
#[inline(always)]
fn log2_reflection(x: f32, a: f32) -> (f32, f32) {
    let s = sinpi(x).abs();
    let m = mul(a, s);
    let m_lo = fma(a, s, -m);
    let (lm, lm_lo) = log2_ext(m);
    // log2(m + m_lo) = log2 m + m_lo/(m·ln 2) to far below an ulp.
    let lm_lo = lm_lo + mul(m_lo / m, LOG2E_HI);
    add_ext(LOG2_PI_HI, LOG2_PI_LO, -lm, -lm_lo)
}

/// ln|Γ(x)| (C's `lgammaf`): max error 4 ulp outside −10.001 < x < −2.264 (CUDA's `lgammaf`:
/// 6 ulp there). Inside, near the zeros of lgamma at negative x (the sum of two terms of
/// opposite sign cancels), the absolute error stays below 2^-20 but the error in ulp grows
/// without bound, as in CUDA. +inf at 0, the negative integers and ±inf; NaN for NaN.
#[inline(always)]
pub fn lgamma(x: f32) -> f32 {
    let a = x.abs();
    // One path per range, taken by a branch: a warp whose inputs share a range runs only its
    // own (the reflection's sinpi and logarithm, the Stirling series and the small-argument
    // polynomial are each long); a mixed warp runs the ones it needs.
    if x.is_nan() {
        return x;
    }
    if a == f32::INFINITY || (x <= 0.0 && trunc(x) == x) {
        return f32::INFINITY;
    }
    if (-0.25..2.5).contains(&x) {
        // One rounding after the polynomial (and ln |x|).
        let (lg, sub) = lgamma_small(x);
        return if sub { lg - log(a) } else { lg };
    }
    if a >= 1.0e18 {
        // From 2^60 on, a·(ln a − 1) is lgamma to far below an ulp; a·ln a alone would
        // overflow in log2 units before lgamma does (from 4.1e36).
        let (l, l_lo) = log2_ext(a);
        let (ln, ln_lo) = mul_ext(l, l_lo, LN2_HI, LN2_MID);
        let (h, h_lo) = add_ext(ln, ln_lo, -1.0, 0.0);
        return fma(a, h, mul(a, h_lo));
    }
    // Everything else from log2 Γ(|x|) in hi + lo.
    let (g, g_lo) = log2_gamma(a);
    let (g, g_lo) = if x < 0.0 {
        // lgamma(x) = log2(π/|x·sin πx|)·ln 2 − lgamma(|x|).
        let (r, r_lo) = log2_reflection(x, a);
        add_ext(r, r_lo, -g, -g_lo)
    } else {
        (g, g_lo)
    };
    let (r, r_lo) = mul_ext(g, g_lo, LN2_HI, LN2_MID);
    r + r_lo
}

/// Γ(x) (C's `tgammaf`): max error 3 ulp (CUDA's `tgammaf`: 5 ulp), subnormal results included;
/// +inf above ~35.04, ±inf at ±0, NaN at the negative integers and −inf, ±0 far left (by the
/// sign of Γ there).
#[inline(always)]
pub fn tgamma(x: f32) -> f32 {
    // As in `lgamma`, one path per range, taken by a branch.
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
    // Γ(64) overflows and 1/Γ(64) underflows already: a clamped there.
    let a = x.abs();
    let ac = if a > 64.0 { 64.0 } else { a };
    let (e, e_lo, sign) = if x > 0.0 {
        let (g, g_lo) = log2_gamma(ac);
        (g, g_lo, x)
    } else if x >= -0.25 {
        // Γ(x) = Γ(1 + x)/x from the small-argument polynomial (the reflection's x·sin πx
        // would underflow for tiny x).
        let (s, s_lo) = log2_gamma_small(x);
        (s, s_lo, x)
    } else {
        // |Γ(x)| = 2^(log2(π/|x·sin πx|) − log2 Γ(|x|)), of the sign of sin πx.
        let (g, g_lo) = log2_gamma(ac);
        let (r, r_lo) = log2_reflection(x, ac);
        let (n, n_lo) = add_ext(r, r_lo, -g, -g_lo);
        (n, n_lo, sinpi(x))
    };
    exp2_ext(e, e_lo).copysign(sign)
}
