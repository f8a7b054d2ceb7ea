//! `exp_f64`, `exp2_f64`, `log_f64`, `log2_f64`: the f32 algorithms' structure with f64
//! polynomials; the logarithms follow fdlibm (log(1 + f) = f − (f²/2 − s·(f²/2 + R(s²))) with
//! s = f/(2 + f)), whose error stays below 1 ulp.
// Polynomial coefficients are fitted values printed to round-trip exactly (some near ln 2 or
// 1/3 are fits, not those constants).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use super::{fma_f64 as fma, fnma_f64 as fnma, horner64, mul64, pow2i64};

const LOG2E: f64 = core::f64::consts::LOG2_E;
/// ln 2 as hi + lo, full-width (for exp's Cody–Waite step).
pub(super) const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fefa_39ef);
pub(super) const LN2_LO: f64 = f64::from_bits(0x3c7a_bc9e_3b39_803f);
/// fdlibm's ln 2 and 1/ln 2 splits: the hi parts have trailing zero bits, so k·hi is exact.
pub(super) const LN2_HI_K: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
pub(super) const LN2_LO_K: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
const IVLN2_HI: f64 = f64::from_bits(0x3ff7_1547_6520_0000);
const IVLN2_LO: f64 = f64::from_bits(0x3de7_05fc_2eef_a200);

/// (e^t − 1 − t)/t² on |t| ≤ ln 2 / 2.
pub(super) const EXP: [f64; 11] = [
    2.091_467_937_658_393_5e-9,
    2.510_520_637_395_701e-8,
    2.755_727_366_134_863_7e-7,
    2.755_725_542_574_643_5e-6,
    2.480_158_732_553_336_3e-5,
    1.984_126_987_480_049_3e-4,
    1.388_888_888_888_375_2e-3,
    8.333_333_333_326_141e-3,
    4.166_666_666_666_667e-2,
    0.166_666_666_666_666_7,
    0.5,
];
/// (2^t − 1)/t on |t| ≤ 1/2.
pub(super) const EXP2: [f64; 13] = [
    1.371_696_239_273_758_7e-12,
    2.573_356_830_875_689_2e-11,
    4.445_530_309_105_106_7e-10,
    7.054_894_386_348_348e-9,
    1.017_808_602_118_547_4e-7,
    1.321_548_681_599_997_8e-6,
    1.525_273_380_405_112_9e-5,
    1.540_353_039_336_275_5e-4,
    1.333_355_814_642_844_5e-3,
    9.618_129_107_628_484e-3,
    5.550_410_866_482_158e-2,
    0.240_226_506_959_100_72,
    0.693_147_180_559_945_3,
];
/// R(z)/z of fdlibm's log, z = s², s ≤ (√2 − 1)/(√2 + 1).
const LOG_R: [f64; 7] = [
    0.146_164_496_850_434_06,
    0.153_317_216_005_560_42,
    0.181_828_891_252_617_23,
    0.222_222_111_347_950_8,
    0.285_714_286_259_754_87,
    0.399_999_999_998_995_05,
    0.666_666_666_666_667,
];

/// 1.5·2^52: `k = v + MAGIC` rounds v (|v| < 2^51) to an integer, held in k's low bits.
pub(super) const MAGIC: f64 = 6_755_399_441_055_744.0;

/// `p·2^j` for `j` in -1077..=1025, rounded once: two exact steps.
#[inline(always)]
pub(super) fn scale(p: f64, j: i32) -> f64 {
    let j1 = j >> 1;
    mul64(mul64(p, pow2i64(j1)), pow2i64(j - j1))
}

/// e^x for f64: max error 1 ulp, subnormal results included; +inf above
/// ~709.78, +0 below ~-745.13, NaN for NaN.
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    let x = x.clamp(-746.0, 710.0);
    // `j as i32` here, not `rint_j`: with the bits trick ptxas scheduled the kernel's second
    // vector load after the first items' arithmetic, and `math_exp_f64` ran at 0.89x of torch
    // instead of 1.01x (H100, math-bench).
    let j = fma(x, LOG2E, MAGIC) - MAGIC;
    // x − j·LN2_HI is exact (multiples of 2^-53, difference below 1/2).
    let t = fma(j, -LN2_HI, x);
    let t = fma(j, -LN2_LO, t);
    let p = 1.0 + fma(mul64(t, t), horner64(t, EXP), t);
    scale(p, j as i32)
}

/// 2^x for f64: max error 1 ulp, exact for integer x.
#[inline(always)]
pub fn exp2_f64(x: f64) -> f64 {
    let x = x.clamp(-1077.0, 1025.0);
    let j = (x + MAGIC) - MAGIC;
    let t = x - j;
    let p = fma(t, horner64(t, EXP2), 1.0);
    scale(p, j as i32)
}

/// `x = 2^k·(1 + f)` with 1 + f in [√2/2, √2) for positive finite x: `(f, k)`.
#[inline(always)]
pub(super) fn split(x: f64) -> (f64, f64) {
    let sub = x < f64::MIN_POSITIVE;
    let (x, bias) = if sub {
        (mul64(x, 18_014_398_509_481_984.0), -54.0)
    } else {
        (x, 0.0)
    };
    let ia = x.to_bits() as i64;
    let e = ia.wrapping_sub(0x3fe6_a09e_667f_3bcd) & (0xfff0_0000_0000_0000_u64 as i64);
    let m = f64::from_bits(ia.wrapping_sub(e) as u64);
    (m - 1.0, (e >> 52) as f64 + bias)
}

/// 1/d for d in [1.7071, 2.4143] within about 1 ulp: the minimax linear seed c0 − c1·d
/// (relative error 2^-6.06, the f32 `pow`'s), then two third-order steps
/// r·(1 + e + e²), e = 1 − d·r (2^-18, then 2^-54 before the last rounding).
#[inline(always)]
pub(super) fn recip_d(d: f64) -> f64 {
    const C0: f64 = f32::from_bits(0x3f7c_2cfe) as f64; // 0.98506153
    const C1: f64 = f32::from_bits(0x3e74_c09c) as f64; // 0.239016
    let r = fnma(d, C1, C0);
    let e = fnma(d, r, 1.0);
    let r = fma(r, fma(e, e, e), r);
    let e = fnma(d, r, 1.0);
    fma(r, fma(e, e, e), r)
}

/// fdlibm's log(1 + f) pieces: `(f²/2, s·(f²/2 + R))`.
#[inline(always)]
pub(super) fn log1p_parts(f: f64) -> (f64, f64) {
    let hfsq = mul64(mul64(0.5, f), f);
    // s = f/(2 + f) without a division: s multiplies terms below f²/2, so its error of about
    // an ulp (and 2 + f's rounding) moves the result by far less than an ulp.
    let s = mul64(f, recip_d(2.0 + f));
    let z = mul64(s, s);
    let r = mul64(z, horner64(z, LOG_R));
    (hfsq, mul64(s, hfsq + r))
}

#[inline(always)]
pub(super) fn log_special(x: f64) -> f64 {
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if x == f64::INFINITY {
        x
    } else {
        f64::NAN
    }
}

/// ln(x) for f64: max error 1 ulp; −inf for ±0, NaN below 0.
#[inline(always)]
pub fn log_f64(x: f64) -> f64 {
    let (f, k) = split(x);
    let (hfsq, sr) = log1p_parts(f);
    let r = mul64(k, LN2_HI_K) - ((hfsq - (sr + mul64(k, LN2_LO_K))) - f);
    if x > 0.0 && x < f64::INFINITY {
        r
    } else {
        log_special(x)
    }
}

/// log2(x) for f64: max error 1 ulp, exact for powers of two; −inf for
/// ±0, NaN below 0.
#[inline(always)]
pub fn log2_f64(x: f64) -> f64 {
    let (f, k) = split(x);
    let (hfsq, sr) = log1p_parts(f);
    // f − f²/2 split so that hi·IVLN2_HI is exact (fdlibm's e_log2.c).
    let hi = f64::from_bits((f - hfsq).to_bits() & 0xffff_ffff_0000_0000);
    let lo = ((f - hi) - hfsq) + sr;
    let val_hi = mul64(hi, IVLN2_HI);
    let val_lo = mul64(lo + hi, IVLN2_LO) + mul64(lo, IVLN2_HI);
    let w = k + val_hi;
    let val_lo = val_lo + ((k - w) + val_hi);
    let r = val_lo + w;
    if x > 0.0 && x < f64::INFINITY {
        r
    } else {
        log_special(x)
    }
}
