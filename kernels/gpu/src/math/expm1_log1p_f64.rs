//! `expm1_f64` and `log1p_f64`. expm1: the f32 [`expm1`](super::expm1)'s algorithm with an
//! f64 polynomial and the reduced argument carried as hi + lo (its low part's square matters at
//! f64 precision). log1p: 1 + x = u + c exactly, then [`log_f64`](super::log_f64)'s fdlibm
//! reduction of u with c/u added to its low-order terms (fdlibm's `log1p`), without division.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::bank::const_bank;
use super::exp_log_f64::{LN2_HI_K, LN2_LO_K, log_special, log1p_parts, scale};
use super::{exp_f64, fma_f64 as fma, fnma_f64 as fnma, mul64, pow2i64};
const_bank! {
/// (e^t − 1 − t − t²/2)/t³ on |t| ≤ 0.35.
EXPM1 = "__gpu_math_expm1_f64", [
    1.608_482_553_369_974e-10,
    2.091_543_359_807_600_3e-9,
    2.505_207_679_486_242_7e-8,
    2.755_727_183_153_613e-7,
    2.755_731_924_091_844e-6,
    2.480_158_732_699_005e-5,
    1.984_126_984_126_613_6e-4,
    1.388_888_888_888_333_2e-3,
    8.333_333_333_333_333e-3,
    4.166_666_666_666_667e-2,
    0.166_666_666_666_666_66,
];
}

/// `(s, e)` with s = a + b rounded and s + e = a + b exactly.
#[inline(always)]
pub(super) fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// e^x − 1 for f64: max error 1 ulp (CUDA's `expm1`: 1 ulp), x itself for tiny x (±0 kept);
/// +inf above ~709.78, −1 below ~−37.4.
#[inline(always)]
pub fn expm1_f64(x: f64) -> f64 {
    if x > 40.0 {
        // e^x − 1 rounds to e^x (the 1 is below 2^-57 of it).
        return exp_f64(x);
    }
    if x < -40.0 {
        // e^x < 2^-57: the result rounds to −1.
        return -1.0;
    }
    const MAGIC: f64 = 6_755_399_441_055_744.0;
    let j = fma(x, core::f64::consts::LOG2_E, MAGIC) - MAGIC;
    // t = x − j·ln 2 as t + t_lo: x − j·LN2_HI_K is exact.
    let th = fma(j, -LN2_HI_K, x);
    let tl = mul64(j, -LN2_LO_K);
    let t = th + tl;
    let t_lo = (th - t) + tl;
    // e^(t + t_lo) − 1 = t + t²/2 + t³·P(t) + t_lo·(1 + t), as u + u_lo.
    let h = mul64(t, 0.5);
    let hs = mul64(h, t);
    let hs_err = fma(h, t, -hs);
    let u = t + hs;
    let u_err = hs - (u - t); // |t| ≥ |hs|: exact
    let rest = fma(mul64(mul64(t, t), t), EXPM1::horner(t), fma(t_lo, t, t_lo));
    let u_lo = u_err + (hs_err + rest);
    // 2^j·(u + u_lo) + (2^j − 1), summed exactly until the last addition.
    let p = pow2i64(j as i32);
    let (a, a_lo) = two_sum(p, -1.0);
    let (s, s_lo) = two_sum(a, mul64(p, u));
    let r = s + (s_lo + (a_lo + mul64(p, u_lo)));
    if x == 0.0 { x } else { r }
}

/// log(1 + w) + m·ln 2 for a finite w > −1 and m = 0.0 or 1.0 (fdlibm's `log1p` without its
/// divisions; `asinh_f64` and `acosh_f64` add ln 2 for huge arguments through m).
///
/// 1 + w = u + c exactly, u = 2^k·(1 + f) with 1 + f in [√2/2, √2). For k = 0, f = w exactly
/// (fdlibm's shortcut: no rounding at all). Otherwise f = (1 + f) − 1 is exact and
/// log(u + c) = log u + c/u, where |c/u| ≤ 2^-53 and |log u| ≥ ln √2 (c is zero for u < 1, by
/// Sterbenz), so c/u needs only a few correct bits: 1/(1 + f) from the seed 1 − f (relative
/// error f² ≤ 0.18) and two Newton steps (f⁸ ≤ 2^-10). u is never subnormal (it is 0 or at
/// least 2^-53).
#[inline(always)]
pub(super) fn log1p_plus(w: f64, m: f64) -> f64 {
    let (u, c) = two_sum(1.0, w);
    let ia = u.to_bits() as i64;
    let e = ia.wrapping_sub(0x3fe6_a09e_667f_3bcd) & (0xfff0_0000_0000_0000_u64 as i64);
    let mm = f64::from_bits(ia.wrapping_sub(e) as u64);
    let ki = (e >> 52) as i32;
    let f = if ki == 0 { w } else { mm - 1.0 };
    let y = 1.0 - f;
    let y = fma(y, fnma(mm, y, 1.0), y);
    let y = fma(y, fnma(mm, y, 1.0), y);
    let cu = if ki == 0 {
        0.0
    } else {
        scale(mul64(c, y), -ki)
    };
    let k = ki as f64 + m;
    let (hfsq, sr) = log1p_parts(f);
    mul64(k, LN2_HI_K) - ((hfsq - (sr + (mul64(k, LN2_LO_K) + cu))) - f)
}

/// log(1 + x) for f64: max error 1 ulp (CUDA's `log1p`: 1 ulp), x itself for tiny x (±0
/// kept); −inf at −1, NaN below −1.
#[inline(always)]
pub fn log1p_f64(x: f64) -> f64 {
    let r = log1p_plus(x, 0.0);
    if x == 0.0 {
        x
    } else if x > -1.0 && x < f64::INFINITY {
        r
    } else {
        log_special(x + 1.0)
    }
}
