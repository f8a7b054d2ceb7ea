//! `exp10_f64` and `log10_f64`. exp10: e^(x·ln 10) with x·ln 10 carried as hi + lo (an error
//! of δ there is a relative error of δ in the result, and x·ln 10 reaches ±745), then
//! [`exp_f64`](super::exp_f64)'s reduction and polynomial. log10: fdlibm's `e_log10.c`, the
//! structure of [`log2_f64`](super::log2_f64) with 1/ln 10 and log10 2 split so that the
//! leading products are exact.

use super::exp_log_f64::{EXP, LN2_HI, LN2_LO, MAGIC, log_special, log1p_parts, scale, split};
use super::{fma_f64 as fma, horner64, mul64};

/// ln 10 as hi + lo.
const LN10_HI: f64 = f64::from_bits(0x4002_6bb1_bbb5_5516);
const LN10_LO: f64 = f64::from_bits(0xbcaf_48ad_494e_a3e9);
/// 1/ln 10 as hi + lo, hi with 32 significant bits (fdlibm's `ivln10hi`/`ivln10lo`).
const IVLN10_HI: f64 = f64::from_bits(0x3fdb_cb7b_1520_0000);
const IVLN10_LO: f64 = f64::from_bits(0x3dbb_9438_ca9a_add5);
/// log10 2 as hi + lo, hi with 40 significant bits so that k·hi is exact.
const LOG10_2_HI: f64 = f64::from_bits(0x3fd3_4413_509f_6000);
const LOG10_2_LO: f64 = f64::from_bits(0x3d59_fef3_11f1_2b36);

/// 10^x for f64: max error 1 ulp (CUDA's `exp10`: 1 ulp), subnormal results included; +inf
/// above ~308.25, +0 below ~-323.6, NaN for NaN.
#[inline(always)]
pub fn exp10_f64(x: f64) -> f64 {
    // Clamped where the result is ±inf or 0 already (a NaN passes); 2^j stays in `scale`'s range.
    let x = x.clamp(-324.0, 308.5);
    let ph = mul64(x, LN10_HI);
    let pl = fma(x, LN10_HI, -ph) + mul64(x, LN10_LO);
    let j = fma(ph, core::f64::consts::LOG2_E, MAGIC) - MAGIC;
    // ph − j·LN2_HI is exact (as in `exp_f64`); the low parts (up to 2^-42: ph's rounding
    // error) are added to its remainder, and the sum is renormalized to t + t_lo.
    let th = fma(j, -LN2_HI, ph);
    let tl = fma(j, -LN2_LO, pl);
    let t = th + tl;
    let t_lo = (th - t) + tl;
    // e^(t + t_lo) − 1 = t + t²·P(t) + t_lo·(1 + t) to far below an ulp (|t_lo| ≤ 2^-54).
    let q = fma(mul64(t, t), horner64(t, EXP), fma(t, t_lo, t_lo));
    let p = 1.0 + (t + q);
    scale(p, j as i32)
}

/// log10(x) for f64: max error 1 ulp (CUDA's `log10`: 1 ulp); −inf for ±0, NaN below 0.
#[inline(always)]
pub fn log10_f64(x: f64) -> f64 {
    let (f, k) = split(x);
    let (hfsq, sr) = log1p_parts(f);
    // f − f²/2 split so that hi·IVLN10_HI is exact (fdlibm's e_log10.c).
    let hi = f64::from_bits((f - hfsq).to_bits() & 0xffff_ffff_0000_0000);
    let lo = ((f - hi) - hfsq) + sr;
    let val_hi = mul64(hi, IVLN10_HI);
    let y2 = mul64(k, LOG10_2_HI);
    let val_lo = mul64(k, LOG10_2_LO) + (mul64(lo + hi, IVLN10_LO) + mul64(lo, IVLN10_HI));
    let w = y2 + val_hi;
    let val_lo = val_lo + ((y2 - w) + val_hi);
    let r = val_lo + w;
    if x > 0.0 && x < f64::INFINITY {
        r
    } else {
        log_special(x)
    }
}
