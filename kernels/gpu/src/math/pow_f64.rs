//! `pow_f64`: x^y = 2^(y·log2 x), the f32 [`pow`](super::pow)'s structure at f64 precision.
//! log2 x and the product y·log2 x are carried as hi + lo (log2 x to about 2^-68 relative),
//! since an error of δ in y·log2 x becomes a relative error of δ·ln 2 in the result and
//! y·log2 x reaches ±1075.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::bank::const_bank;
use super::exp_log_f64::{EXP2, scale, split};
use super::{fma_f64 as fma, mul64, trunc_f64};

/// 1/3 and 2·log2(e) as hi + lo.
const THIRD_HI: f64 = f64::from_bits(0x3fd5_5555_5555_5555);
const THIRD_LO: f64 = f64::from_bits(0x3c75_5555_5555_5555);
const K_HI: f64 = f64::from_bits(0x4007_1547_652b_82fe);
const K_LO: f64 = f64::from_bits(0x3c87_77d0_ffda_0d24);
const_bank! {
/// `exp_log_f64`'s EXP2 coefficients in the constant bank.
EXP2POLY = "__gpu_math_pow_exp2_f64", [
    EXP2[0], EXP2[1], EXP2[2], EXP2[3], EXP2[4], EXP2[5], EXP2[6], EXP2[7], EXP2[8], EXP2[9],
    EXP2[10], EXP2[11], EXP2[12],
];
}
const_bank! {
/// (atanh u − u − u³/3)/u⁵ as a polynomial in u², on |u| ≤ 0.1716 (relative error 2^-57).
ATANH = "__gpu_math_pow_atanh_f64", [
    0.058_630_046_086_851_75,
    0.058_529_818_011_205_88,
    0.066_674_074_831_874_96,
    0.076_922_973_858_846_4,
    0.090_909_091_685_993_62,
    0.111_111_111_108_239_04,
    0.142_857_142_857_146_9,
    0.2,
];
}

/// log2(x) as hi + lo for positive finite x (subnormals included), relative error about 2^-68:
/// x = 2^k·m with m in [√2/2, √2), log2 m = 2·log2(e)·atanh(u) with u = (m − 1)/(m + 1), whose
/// first two terms (u + u³/3) are carried in hi + lo arithmetic.
#[inline(always)]
pub(super) fn log2_ext(x: f64) -> (f64, f64) {
    let (a, k) = split(x);
    // u = a/(m + 1) with a = m − 1 exact: m + 1 = d + d_lo (d − 2 and a − (d − 2) are exact).
    let d = a + 2.0;
    let d_lo = a - (d - 2.0);
    // One division: u = a·(1/d) within 2 ulp of a/d, then u_lo from the residual
    // a − u·d − u·d_lo (the first part exact in an fma), so u + u_lo is a/(d + d_lo) to ~2^-100.
    let rcp = 1.0 / d;
    let u = mul64(a, rcp);
    let u_lo = mul64(fma(-u, d_lo, fma(-u, d, a)), rcp);
    // u², u³, u³/3 as hi + lo.
    let u2 = mul64(u, u);
    let u2_lo = fma(u, u, -u2) + mul64(mul64(2.0, u), u_lo);
    let u3 = mul64(u, u2);
    let u3_lo = fma(u, u2, -u3) + (mul64(u, u2_lo) + mul64(u_lo, u2));
    let t3 = mul64(u3, THIRD_HI);
    let t3_lo = fma(u3, THIRD_HI, -t3) + (mul64(u3, THIRD_LO) + mul64(u3_lo, THIRD_HI));
    let rest = mul64(mul64(u3, u2), ATANH::horner(u2));
    // atanh u = s + s_lo; |t3| < |u|.
    let s = u + t3;
    let s_lo = ((u - s) + t3) + (u_lo + t3_lo + rest);
    // log2 m = K·atanh u, then + k (|k| ≥ 1 > |l| or k = 0).
    let l = mul64(s, K_HI);
    let l_lo = fma(s, K_HI, -l) + (mul64(s, K_LO) + mul64(s_lo, K_HI));
    let hi = k + l;
    let lo = ((k - hi) + l) + l_lo;
    let h = hi + lo;
    (h, (hi - h) + lo)
}

/// 2^(p + p_lo), |p_lo| ≤ ulp(p): +inf above 2^1024, +0 below 2^-1075.
#[inline(always)]
pub(super) fn exp2_ext(p: f64, p_lo: f64) -> f64 {
    // Clamped with selects; a clamped p drops p_lo (an infinite p has a NaN p_lo).
    let pc = p.clamp(-1077.0, 1025.0);
    let p_lo = if pc == p { p_lo } else { 0.0 };
    // rint(pc) by the 1.5·2^52 trick; the integer is read from the sum's low bits.
    const MAGIC: f64 = 6_755_399_441_055_744.0;
    let k = pc + MAGIC;
    let jf = k - MAGIC;
    let t = (pc - jf) + p_lo;
    let r = fma(t, EXP2POLY::horner(t), 1.0);
    let j = (k.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64) as i32;
    scale(r, j)
}

/// x^y for f64 (C's `pow`): max error 1 ulp (CUDA's `pow`: 2 ulp), with the special cases of
/// C99/IEEE 754 `pow` (x^±0 = 1, 1^y = 1, negative x only with integer y, ±0 and ±inf by the
/// sign of y and the parity of y).
#[inline(always)]
pub fn pow_f64(x: f64, y: f64) -> f64 {
    let ax = x.abs();
    let (l, l_lo) = log2_ext(ax);
    let p = mul64(y, l);
    let p_lo = fma(y, l, -p) + mul64(y, l_lo);
    let r = exp2_ext(p, p_lo);
    let y_int = trunc_f64(y) == y;
    // y/2 is exact for |y| ≥ 1 and an integer from 2^53 on (every such f64 is even).
    let h = mul64(y, 0.5);
    let y_odd = y_int && trunc_f64(h) != h;
    // Selects for the finite cases: negative x gives ±r by the parity of an integer y and NaN
    // otherwise.
    let r = if x < 0.0 && y_odd { -r } else { r };
    let r = if x < 0.0 && !y_int { f64::NAN } else { r };
    if ax > 0.0 && ax < f64::INFINITY && y.is_finite() {
        r
    } else {
        special(x, y, y_odd)
    }
}

/// `pow_f64` where x is ±0, ±inf or NaN, or y is ±inf or NaN.
#[inline(never)]
fn special(x: f64, y: f64, y_odd: bool) -> f64 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if x.is_nan() || y.is_nan() {
        return x + y;
    }
    let ax = x.abs();
    if y.is_infinite() {
        if ax == 1.0 {
            return 1.0;
        }
        return if (ax < 1.0) == (y < 0.0) {
            f64::INFINITY
        } else {
            0.0
        };
    }
    // y finite and nonzero; x is ±0 or ±inf.
    let mag = if (ax == 0.0) == (y < 0.0) {
        f64::INFINITY
    } else {
        0.0
    };
    if x.is_sign_negative() && y_odd {
        -mag
    } else {
        mag
    }
}

/// x^n for an integer n (f64): [`pow_f64`] with an exact exponent (every i32 is an f64), so
/// max error 1 ulp and `pow`'s special cases (x^0 = 1, signs by the parity of n).
#[inline(always)]
pub fn powi_f64(x: f64, n: i32) -> f64 {
    pow_f64(x, n as f64)
}
