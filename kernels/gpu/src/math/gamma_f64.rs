//! `lgamma_f64` and `tgamma_f64`: the f32 [`lgamma`](super::lgamma)/[`tgamma`](super::tgamma)
//! algorithm in f64 (log2 Γ in hi + lo: polynomials at 1 and 2 below 2.5, Stirling's formula
//! beyond, the reflection for negative x), with [`pow_f64`](super::pow_f64)'s hi + lo
//! logarithm and exponential.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::expm1_log1p_f64::two_sum;
use super::pow_f64::{exp2_ext, log2_ext};
use super::{fma_f64 as fma, horner64, log_f64, mul64, sinpi_f64, trunc_f64};

/// log2(e), log2 √(2π), log2 π and ln 2 as hi + lo.
const LOG2E_HI: f64 = f64::from_bits(0x3ff7_1547_652b_82fe);
const LOG2E_LO: f64 = f64::from_bits(0x3c77_77d0_ffda_0d24);
const LOG2_SQRT2PI_HI: f64 = f64::from_bits(0x3ff5_3643_9a4c_6efc);
const LOG2_SQRT2PI_LO: f64 = f64::from_bits(0xbc94_9e49_a361_efeb);
const LOG2_PI_HI: f64 = f64::from_bits(0x3ffa_6c87_3498_ddf7);
const LOG2_PI_LO: f64 = f64::from_bits(0x3c96_c36c_b93c_202a);
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fefa_39ef);
const LN2_LO: f64 = f64::from_bits(0x3c7a_bc9e_3b39_803f);

/// lgamma(1 + t)/t on −0.25 ≤ t ≤ 0.5 (relative error 2^-55.8).
const LGAMMA1: [f64; 21] = [
    -7.504_357_042_970_485e-3,
    2.798_074_975_040_222_2e-2,
    -4.951_440_224_523_019_6e-2,
    5.943_954_287_824_304_6e-2,
    -6.104_087_419_856_796e-2,
    6.261_672_146_665_105e-2,
    -6.643_259_821_258_565e-2,
    7.137_588_996_234_37e-2,
    -7.694_158_667_284_062e-2,
    8.335_840_959_798_016e-2,
    -9.095_402_437_769_698e-2,
    0.100_099_283_621_312_03,
    -0.111_334_255_255_018_47,
    0.125_509_673_044_977_9,
    -0.144_049_897_074_764_57,
    0.169_557_176_960_347_83,
    -0.207_385_551_025_300_87,
    0.270_580_808_427_962_6,
    -0.400_685_634_386_544_36,
    0.822_467_033_424_113,
    -0.577_215_664_901_532_9,
];
/// lgamma(2 + t)/t on −0.5 ≤ t ≤ 0.5 (relative error 2^-56).
const LGAMMA2: [f64; 18] = [
    2.976_992_638_270_582_7e-7,
    -5.806_132_284_367_821e-7,
    8.999_078_835_731_517e-7,
    -1.974_825_418_526_403_2e-6,
    4.393_518_569_446_189e-6,
    -9.456_079_315_654_91e-6,
    2.050_354_440_684_593_5e-5,
    -4.492_377_184_219_084_5e-5,
    9.945_794_413_983_629e-5,
    -2.231_549_722_704_285_4e-4,
    5.096_694_951_153_251e-4,
    -1.192_753_901_329_044_8e-3,
    2.890_510_331_841_615e-3,
    -7.385_551_028_925_198e-3,
    2.058_080_842_776_596e-2,
    -6.735_230_105_319_576e-2,
    0.322_467_033_424_113_3,
    0.422_784_335_098_467_13,
];
/// x·log2(Γ(x)/(√(2π)·x^(x − 1/2)·e^(−x))) (Stirling's correction) as a polynomial in
/// z = 1/x, on x ≥ 2.5 (relative error 2^-58).
const STIRLING: [f64; 17] = [
    1.166_757_338_086_201_6e-2,
    -4.034_675_998_375_487e-2,
    6.108_434_370_795_664_4e-2,
    -5.079_532_245_322_998_5e-2,
    2.206_407_012_142_241_2e-2,
    -1.436_459_755_679_86e-3,
    -2.926_306_859_014_128e-3,
    9.753_369_011_674_186e-5,
    1.194_318_222_118_699_5e-3,
    2.512_940_518_490_898e-6,
    -8.589_554_367_844_734e-4,
    1.149_565_723_700_333_3e-8,
    1.144_995_656_662_404e-3,
    8.628_776_724_650_194e-12,
    -4.007_486_224_786_814e-3,
    4.140_449_825_816_715e-16,
    0.120_224_586_740_746_94,
];

/// (a + a_lo)·(b + b_lo) as hi + lo.
#[inline(always)]
fn mul_ext(a: f64, a_lo: f64, b: f64, b_lo: f64) -> (f64, f64) {
    let p = mul64(a, b);
    (p, fma(a, b, -p) + (mul64(a, b_lo) + mul64(a_lo, b)))
}

/// (a + a_lo) + (b + b_lo) as hi + lo, renormalized.
#[inline(always)]
fn add_ext(a: f64, a_lo: f64, b: f64, b_lo: f64) -> (f64, f64) {
    let (s, e) = two_sum(a, b);
    let e = e + (a_lo + b_lo);
    let r = s + e;
    (r, (s - r) + e)
}

/// For −0.25 ≤ x < 2.5: `(lgamma(x) + [ln |x| if x < 0.75], x < 0.75)` (as the f32 one).
#[inline(always)]
fn lgamma_small(x: f64) -> (f64, bool) {
    let t = if x < 0.5 {
        x
    } else if x < 1.5 {
        x - 1.0
    } else {
        x - 2.0
    };
    let first = x < 0.5 || (0.75..1.5).contains(&x);
    let p = if first {
        horner64(t, LGAMMA1)
    } else {
        horner64(t, LGAMMA2)
    };
    (mul64(t, p), x < 0.75)
}

/// log2|Γ(x)| as hi + lo for −0.25 ≤ x < 2.5, x ≠ 0.
#[inline(always)]
fn log2_gamma_small(x: f64) -> (f64, f64) {
    let (lg, sub) = lgamma_small(x);
    let (g, g_lo) = mul_ext(lg, 0.0, LOG2E_HI, LOG2E_LO);
    let (la, la_lo) = log2_ext(x.abs());
    if sub {
        add_ext(g, g_lo, -la, -la_lo)
    } else {
        (g, g_lo)
    }
}

/// log2 Γ(a) as hi + lo for 2.5 ≤ a < 2^100 (Stirling).
#[inline(always)]
fn log2_gamma_stirling(a: f64) -> (f64, f64) {
    let (l, l_lo) = log2_ext(a);
    // a − 1/2 as hi + lo (exact: a − am is 0, 1/2 or 1).
    let am = a - 0.5;
    let am_lo = (a - am) - 0.5;
    let (p, p_lo) = mul_ext(am, am_lo, l, l_lo);
    let q = mul64(a, LOG2E_HI);
    let q_lo = fma(a, LOG2E_HI, -q) + mul64(a, LOG2E_LO);
    let (s, s_lo) = add_ext(p, p_lo, -q, -q_lo);
    let z = 1.0 / a;
    let v = mul64(z, horner64(z, STIRLING));
    add_ext(s, s_lo, LOG2_SQRT2PI_HI, LOG2_SQRT2PI_LO + v)
}

/// log2 Γ(a) as hi + lo for 0 < a < 2^100.
#[inline(always)]
fn log2_gamma(a: f64) -> (f64, f64) {
    if a < 2.5 {
        log2_gamma_small(a)
    } else {
        log2_gamma_stirling(a)
    }
}

/// log2(π/|x·sin πx|) as hi + lo for non-integer x (a = |x|): the reflection's factor.
#[inline(always)]
fn log2_reflection(x: f64, a: f64) -> (f64, f64) {
    let s = sinpi_f64(x).abs();
    let m = mul64(a, s);
    let m_lo = fma(a, s, -m);
    let (lm, lm_lo) = log2_ext(m);
    let lm_lo = lm_lo + mul64(m_lo / m, LOG2E_HI);
    add_ext(LOG2_PI_HI, LOG2_PI_LO, -lm, -lm_lo)
}

/// ln|Γ(x)| for f64 (C's `lgamma`): max error 4 ulp outside −23.0001 < x < −2.2637 (CUDA's
/// `lgamma`: 4 ulp there). Inside, near the zeros of lgamma at negative x, the error in ulp
/// grows without bound, as in CUDA; the absolute error stays below 2^-46. +inf at 0, the
/// negative integers and ±inf; NaN for NaN.
#[inline(always)]
pub fn lgamma_f64(x: f64) -> f64 {
    let a = x.abs();
    // One path per range, taken by a branch (see the f32 `lgamma`).
    if x.is_nan() {
        return x;
    }
    if a == f64::INFINITY || (x <= 0.0 && trunc_f64(x) == x) {
        return f64::INFINITY;
    }
    if (-0.25..2.5).contains(&x) {
        let (lg, sub) = lgamma_small(x);
        return if sub { lg - log_f64(a) } else { lg };
    }
    const BIG: f64 = 1.267_650_600_228_229_4e30;
    if a >= BIG {
        // From 2^100 on, a·(ln a − 1) is lgamma to far below an ulp.
        let (l, l_lo) = log2_ext(a);
        let (ln, ln_lo) = mul_ext(l, l_lo, LN2_HI, LN2_LO);
        let (h, h_lo) = add_ext(ln, ln_lo, -1.0, 0.0);
        return fma(a, h, mul64(a, h_lo));
    }
    let (g, g_lo) = log2_gamma(a);
    let (g, g_lo) = if x < 0.0 {
        let (r, r_lo) = log2_reflection(x, a);
        add_ext(r, r_lo, -g, -g_lo)
    } else {
        (g, g_lo)
    };
    let (r, r_lo) = mul_ext(g, g_lo, LN2_HI, LN2_LO);
    r + r_lo
}

/// Γ(x) for f64 (C's `tgamma`): max error 4 ulp (CUDA's `tgamma`: 10 ulp), subnormal results
/// included; +inf above ~171.62, ±inf at ±0, NaN at the negative integers and −inf, ±0 far
/// left.
#[inline(always)]
pub fn tgamma_f64(x: f64) -> f64 {
    // One path per range, taken by a branch (see the f32 `tgamma`).
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::INFINITY.copysign(x);
    }
    if x < 0.0 && trunc_f64(x) == x {
        return f64::NAN;
    }
    // Γ(200) overflows and 1/Γ(200) underflows already: a clamped there.
    let a = x.abs();
    let ac = if a > 200.0 { 200.0 } else { a };
    let (e, e_lo, sign) = if x > 0.0 {
        let (g, g_lo) = log2_gamma(ac);
        (g, g_lo, x)
    } else if x >= -0.25 {
        let (s, s_lo) = log2_gamma_small(x);
        (s, s_lo, x)
    } else {
        let (g, g_lo) = log2_gamma(ac);
        let (r, r_lo) = log2_reflection(x, ac);
        let (n, n_lo) = add_ext(r, r_lo, -g, -g_lo);
        (n, n_lo, sinpi_f64(x))
    };
    exp2_ext(e, e_lo).copysign(sign)
}
