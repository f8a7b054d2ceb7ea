//! `lgamma_f64` and `tgamma_f64`: the f32 [`lgamma`](super::lgamma)/[`tgamma`](super::tgamma)
//! algorithm in f64 (ln Γ in hi + lo from one shared logarithm without division: a polynomial
//! with the zeros at 1 and 2 as factors below 2.5, Stirling's formula beyond, the reflection for
//! negative x on a path not inlined), the polynomials in the constant bank (`math::bank`).
//! Below 2.5 the split is at 1, not 0.75 as in f32: t = x − 1 from 1 on, else t = x with
//! lgamma(x) = lgamma(1 + x) − ln x, so t stays in [0, 1.5] (a shorter polynomial, farther
//! from the pole at t = −1); for 0.75 < x < 1 the two terms cancel by less than a bit.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::bank::const_bank;
use super::exp_log_f64::{EXP, LN2_HI_K, LN2_LO_K, MAGIC, recip_d};
use super::expm1_log1p_f64::two_sum;
use super::misc_f64::recip_f64;
use super::pow_f64::exp2_ext;
use super::{fma_f64 as fma, fms_f64 as fms, fnma_f64 as fnma, mul64, sinpi_f64, trunc_f64};

/// ln √(2π) − 1/2, ln π and log2 e as hi + lo; ln √(2π) rounded.
const C_HI: f64 = f64::from_bits(0x3fda_cfe3_90c9_7d69);
const C_LO: f64 = f64::from_bits(0x3c73_494b_c900_1442);
const LN_PI_HI: f64 = f64::from_bits(0x3ff2_50d0_48e7_a1bd);
const LN_PI_LO: f64 = f64::from_bits(0x3c67_abf2_ad8d_5088);
const LN_SQRT2PI: f64 = f64::from_bits(0x3fed_67f1_c864_beb5);
const LOG2E: f64 = core::f64::consts::LOG2_E;
const LOG2E_HI: f64 = f64::from_bits(0x3ff7_1547_652b_82fe);
const LOG2E_LO: f64 = f64::from_bits(0x3c77_77d0_ffda_0d24);

const_bank! {
/// lgamma(1 + t)/(t·(t − 1)) as a polynomial in s = t − 0.75, on 0 ≤ t ≤ 1.5 (relative error
/// 2^-54.8; `fit_gamma.py lgamma 24 f64 0 1.5`).
LGAMMA = "__gpu_math_lgamma_f64", [
    6.092523944903136e-08,
    -1.513311117199973e-07,
    7.229238433172121e-08,
    1.3105636642795762e-08,
    2.7235663138847927e-07,
    -7.265772255121788e-07,
    1.0862224197332967e-06,
    -1.7917306449809994e-06,
    3.435296059380729e-06,
    -6.475522189287955e-06,
    1.1976427936483938e-05,
    -2.2272362462620237e-05,
    4.169855965610864e-05,
    -7.846312870350712e-05,
    0.00014851793391830283,
    -0.0002831904931603195,
    0.0005448968623903115,
    -0.0010605660819986385,
    0.0020955338884337932,
    -0.004226194125775617,
    0.008776370424952924,
    -0.019053957830247534,
    0.04452044719851427,
    -0.11948158662524275,
    0.4501393121092563,
];
}
const_bank! {
/// x·(lgamma(x) − (x − 1/2)·ln x + x − ln √(2π)) (Stirling's correction) as a polynomial in
/// 1/x², on x ≥ 2.5 (relative error 2^-52; `fit_gamma.py stirling 12 f64`).
STIRLING = "__gpu_math_stirling_f64", [
    1.7300216728578677,
    -2.0531539655042077,
    1.1403498863140014,
    -0.4042895829101169,
    0.10795935516056342,
    -0.025318765352366417,
    0.0062212834778405945,
    -0.0019115154271419636,
    0.0008416230344863763,
    -0.0005952364283526837,
    0.0007936507820152626,
    -0.002777777777744298,
    0.08333333333333331,
];
}
const_bank! {
/// (2·atanh(√v)/√v − 2)/v on 0 ≤ v ≤ 0.0295 (relative error 2^-54; `fit_gamma.py atanh 7
/// f64`).
ATANH = "__gpu_math_lgamma_atanh_f64", [
    0.14390051711528648,
    0.13133423375052888,
    0.15391764747189796,
    0.18181683717248698,
    0.2222222355708604,
    0.28571428565005147,
    0.4000000000001185,
    0.6666666666666666,
];
}
const_bank! {
/// `exp_f64`'s polynomial: (e^t − 1 − t)/t² on |t| ≤ ln 2 / 2.
TEXP = "__gpu_math_tgamma_exp_f64", [
    EXP[0], EXP[1], EXP[2], EXP[3], EXP[4], EXP[5], EXP[6], EXP[7], EXP[8], EXP[9], EXP[10],
];
}

/// (a + a_lo) + (b + b_lo) as hi + lo, renormalized.
#[inline(always)]
fn add_ext(a: f64, a_lo: f64, b: f64, b_lo: f64) -> (f64, f64) {
    let (s, e) = two_sum(a, b);
    let e = e + (a_lo + b_lo);
    let r = s + e;
    (r, (s - r) + e)
}

/// ln x + bias·ln 2 as hi + lo (relative error about 2^-61) for a positive normal x (`bias` 0,
/// or −54 for a subnormal scaled by 2^54): the f32 [`lgamma`](super::lgamma)'s `ln_ext`, with
/// m + 1 as d + d_lo (exact) in the residual of u.
#[inline(always)]
fn ln_ext(x: f64, bias: i32) -> (f64, f64) {
    let ia = x.to_bits() as i64;
    let e = ia.wrapping_sub(0x3fe6_a09e_667f_3bcd) & (0xfff0_0000_0000_0000_u64 as i64);
    let m = f64::from_bits(ia.wrapping_sub(e) as u64);
    let k = ((e >> 52) as i32 + bias) as f64;
    let a = m - 1.0;
    let d = a + 2.0;
    let d_lo = a - (d - 2.0);
    let rcp = recip_d(d);
    let u = mul64(a, rcp);
    let u_lo = mul64(fnma(u, d_lo, fnma(u, d, a)), rcp);
    let v = mul64(u, u);
    // ln m = 2·atanh(u + u_lo) = 2u + 2u_lo·(1 + u²) + u³·s(u²) to far below an ulp.
    let u_lo2 = u_lo + u_lo;
    let tail = fma(mul64(u, v), ATANH::horner(v), fma(v, u_lo2, u_lo2));
    // k·ln 2 + 2u by a fast two-sum (k·LN2_HI_K exact; |2u| < ln 2 unless k = 0).
    let kh = mul64(k, LN2_HI_K);
    let b = u + u;
    let hi = kh + b;
    (hi, (b - (hi - kh)) + fma(k, LN2_LO_K, tail))
}

/// ln |Γ(x)| as hi + lo for −0.25 ≤ x < 2^52, x ≠ 0, from `(l, l_lo)` = ln |x| as hi + lo (the
/// f32 `ln_gamma` with the split at 1). With `EXACT`, the last rounding of the Stirling sum is
/// carried in the low part too.
#[inline(always)]
fn ln_gamma<const EXACT: bool>(x: f64, l: f64, l_lo: f64) -> (f64, f64) {
    if x < 2.5 {
        let sub = x < 1.0;
        let t = if sub { x } else { x - 1.0 };
        let q = LGAMMA::horner(t - 0.75);
        let r = mul64(t, fms(q, t, q));
        if sub { (-l, r - l_lo) } else { (r, 0.0) }
    } else {
        let am = x - 0.5;
        let h = l - 1.0;
        let p = mul64(am, h);
        let p_lo = fms(am, h, p);
        let z = recip_f64(x);
        let lo = fma(am, l_lo, p_lo) + fma(z, STIRLING::horner(mul64(z, z)), C_LO);
        if EXACT {
            let (s, s_lo) = two_sum(p, C_HI);
            (s, s_lo + lo)
        } else {
            (p + C_HI, lo)
        }
    }
}

/// ln |Γ(x)| as hi + lo for −0.25 ≤ x < 0 from `(l, l_lo)` = ln |x|: lgamma(y) − ln |x| with
/// y = 1 + x (rounded: its error moves the result far below an ulp of ln |x| ≥ 1.38), as
/// t = x is outside the polynomial's interval.
#[inline(always)]
fn ln_gamma_neg_small(x: f64, l: f64, l_lo: f64) -> (f64, f64) {
    let y = 1.0 + x;
    let (ly, ly_lo) = ln_ext(y, 0);
    let (g, g_lo) = ln_gamma::<true>(y, ly, ly_lo);
    add_ext(g, g_lo, -l, -l_lo)
}

/// ln(π/|x·sin πx|) as hi + lo for non-integer x with 0.25 ≤ |x| < 2^52 (a = |x|).
#[inline(always)]
fn ln_reflection(x: f64, a: f64) -> (f64, f64) {
    let s = sinpi_f64(x).abs();
    let m = mul64(a, s);
    let m_lo = fms(a, s, m);
    let (lm, lm_lo) = ln_ext(m, 0);
    add_ext(LN_PI_HI, LN_PI_LO, -lm, -(lm_lo + m_lo / m))
}

/// Whether x is positive, normal and below `limit` (a positive normal f64).
#[inline(always)]
fn normal_below(x: f64, limit: f64) -> bool {
    x.to_bits().wrapping_sub(0x0010_0000_0000_0000) < limit.to_bits() - 0x0010_0000_0000_0000
}

/// 2^52.
const TWO52: f64 = 4_503_599_627_370_496.0;

/// ln|Γ(x)| for f64 (C's `lgamma`): max error 4 ulp outside −23.0001 < x < −2.2637 (CUDA's
/// `lgamma`: 4 ulp there). Inside, near the zeros of lgamma at negative x, the error in ulp
/// grows without bound, as in CUDA; the absolute error stays below 2^-46. +inf at 0, the
/// negative integers and ±inf; NaN for NaN.
#[inline(always)]
pub fn lgamma_f64(x: f64) -> f64 {
    // The common case, 2^-1022 ≤ x < 2^52, without a test on its way; the rest not inlined.
    if normal_below(x, TWO52) {
        let (l, l_lo) = ln_ext(x, 0);
        let (g, g_lo) = ln_gamma::<false>(x, l, l_lo);
        g + g_lo
    } else {
        lgamma_other(x)
    }
}

/// [`lgamma_f64`] outside 2^-1022 ≤ x < 2^52.
#[inline(never)]
fn lgamma_other(x: f64) -> f64 {
    let a = x.abs();
    if x.is_nan() {
        return x;
    }
    if a == f64::INFINITY || (x <= 0.0 && trunc_f64(x) == x) {
        return f64::INFINITY;
    }
    if a >= TWO52 {
        // x ≥ 2^52 (larger negative x are integers): x·(ln x − 1) − ln x/2 + ln √(2π).
        let (l, l_lo) = ln_ext(a, 0);
        return fma(a, l - 1.0, fma(a, l_lo, fma(-0.5, l, LN_SQRT2PI)));
    }
    let (s, bias) = if a < f64::MIN_POSITIVE {
        (mul64(a, 18_014_398_509_481_984.0), -54)
    } else {
        (a, 0)
    };
    let (l, l_lo) = ln_ext(s, bias);
    if x > 0.0 {
        // A subnormal x.
        let (g, g_lo) = ln_gamma::<false>(x, l, l_lo);
        return g + g_lo;
    }
    if x >= -0.25 {
        let (g, g_lo) = ln_gamma_neg_small(x, l, l_lo);
        return g + g_lo;
    }
    let (g, g_lo) = ln_gamma::<true>(a, l, l_lo);
    let (r, r_lo) = ln_reflection(x, a);
    let (s, s_lo) = add_ext(r, r_lo, -g, -g_lo);
    s + s_lo
}

/// e^(e + e_lo) for a normal result (e + e_lo within −708..709, |e_lo| ≤ 0.25): the f32
/// `exp_ext_normal` with `exp_f64`'s polynomial.
#[inline(always)]
fn exp_ext_normal(e: f64, e_lo: f64) -> f64 {
    let k = fma(e + e_lo, LOG2E, MAGIC);
    let j = k - MAGIC;
    // e − j·LN2_HI_K is exact (j·LN2_HI_K has at most 42 bits).
    let t = fma(j, -LN2_HI_K, e) + fma(j, -LN2_LO_K, e_lo);
    let p = 1.0 + fma(mul64(t, t), TEXP::horner(t), t);
    let ji = (k.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64);
    f64::from_bits(p.to_bits().wrapping_add((ji << 52) as u64))
}

/// Γ(x) for f64 (C's `tgamma`): max error 4 ulp (CUDA's `tgamma`: 10 ulp), subnormal results
/// included; +inf above ~171.62, ±inf at ±0, NaN at the negative integers and −inf, ±0 far
/// left.
#[inline(always)]
pub fn tgamma_f64(x: f64) -> f64 {
    // The common case, 2^-1022 ≤ x < 171 (a normal result), without a test on its way.
    if normal_below(x, 171.0) {
        let (l, l_lo) = ln_ext(x, 0);
        let (g, g_lo) = ln_gamma::<true>(x, l, l_lo);
        exp_ext_normal(g, g_lo)
    } else {
        tgamma_other(x)
    }
}

/// [`tgamma_f64`] outside 2^-1022 ≤ x < 171.
#[inline(never)]
fn tgamma_other(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::INFINITY.copysign(x);
    }
    if x < 0.0 && trunc_f64(x) == x {
        return f64::NAN;
    }
    // Γ(200) overflows and 1/Γ(200) underflows already: |x| clamped there.
    let a = x.abs().min(200.0);
    let (s, bias) = if a < f64::MIN_POSITIVE {
        (mul64(a, 18_014_398_509_481_984.0), -54)
    } else {
        (a, 0)
    };
    let (l, l_lo) = ln_ext(s, bias);
    let (e, e_lo, sign) = if x > 0.0 {
        // A subnormal x or 171 ≤ x.
        let (g, g_lo) = ln_gamma::<true>(a, l, l_lo);
        (g, g_lo, x)
    } else if x >= -0.25 {
        // Γ(x) = Γ(1 + x)/x (the reflection's x·sin πx would underflow for tiny x).
        let (g, g_lo) = ln_gamma_neg_small(x, l, l_lo);
        (g, g_lo, x)
    } else {
        let (g, g_lo) = ln_gamma::<true>(a, l, l_lo);
        let (r, r_lo) = ln_reflection(x, a);
        let (n, n_lo) = add_ext(r, r_lo, -g, -g_lo);
        (n, n_lo, sinpi_f64(x))
    };
    // In log2 units, renormalized, for the exponential that rounds subnormal results once.
    let (e, e_lo) = two_sum(e, e_lo);
    let p = mul64(e, LOG2E_HI);
    let p_lo = fms(e, LOG2E_HI, p) + (mul64(e, LOG2E_LO) + mul64(e_lo, LOG2E_HI));
    exp2_ext(p, p_lo).copysign(sign)
}
