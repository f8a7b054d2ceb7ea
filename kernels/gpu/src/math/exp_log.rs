//! `exp`, `exp2`, `log`, `log2` for f32.
//!
//! exp: x = j·ln 2 + t with j = rint(x/ln 2) and |t| ≤ ln 2 / 2 (Cody–Waite, ln 2 in three
//! parts), e^t by a minimax polynomial, then an exact scaling by 2^j in two steps so that
//! results near overflow and in the subnormal range are rounded once. log: x = 2^i·m with m in
//! [2/3, 4/3), log(1 + f) for f = m − 1 (exact) by a minimax polynomial.
// Polynomial coefficients are fitted values printed to round-trip exactly (some near ln 2 or
// 1/3 are fits, not those constants).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use super::{fma, horner, mul, pow2i};

pub(super) const LOG2E: f32 = core::f32::consts::LOG2_E;
/// ln 2 = `LN2_HI + LN2_MID` to 48 bits.
pub(super) const LN2_HI: f32 = f32::from_bits(0x3f31_7218);
pub(super) const LN2_MID: f32 = f32::from_bits(0xb102_e308);
/// log2(e) = `LOG2E_HI + LOG2E_LO`.
const LOG2E_HI: f32 = f32::from_bits(0x3fb8_aa3b);
const LOG2E_LO: f32 = f32::from_bits(0x32a5_7060);

/// (e^t − 1 − t)/t² on |t| ≤ ln 2 / 2.
pub(super) const EXP: [f32; 5] = [
    1.392_617_6e-3,
    8.363_173e-3,
    4.166_655_6e-2,
    0.166_665_78,
    0.5,
];
/// (2^t − 1)/t on |t| ≤ 1/2.
pub(super) const EXP2: [f32; 7] = [
    1.529_732_4e-5,
    1.546_144_5e-4,
    1.333_350_2e-3,
    9.618_057e-3,
    5.550_411e-2,
    0.240_226_51,
    0.693_147_2,
];
/// (log(1 + f) − f + f²/2)/f³ on |f| ≤ 1/3 (`fit_log1p.py f32 7 log`).
pub(super) const LOG: [f32; 8] = [
    -0.128_854_62,
    0.139_772_5,
    -0.121_855_006,
    0.140_074_43,
    -0.166_804_15,
    0.200_103,
    -0.249_997_99,
    0.333_332_18,
];
/// (log2(1 + f) − f·log2 e)/f² on [√2/2 − 1, √2 − 1] (`fit_log1p.py f32 8 log2`).
const LOG2: [f32; 9] = [
    -0.109_368_11,
    0.186_164_69,
    -0.191_292_82,
    0.204_606_01,
    -0.239_588_29,
    0.288_567_16,
    -0.360_698_04,
    0.480_898_23,
    -0.721_347_33,
];

/// `rint(x·m)` for |x·m| < 2^22, as a float and as an integer: the add-and-subtract trick with
/// 1.5·2^23, whose sum holds the integer in its low bits (no saturating float-to-int
/// conversion, which costs six instructions).
#[inline(always)]
pub(super) fn rint_j(x: f32, m: f32) -> (f32, i32) {
    const MAGIC: f32 = 12_582_912.0;
    let k = fma(x, m, MAGIC);
    (
        k - MAGIC,
        (k.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32),
    )
}

/// `p·2^j` for `j` in -151..=129, rounded once: two exact steps of at most 2^±76.
#[inline(always)]
fn scale(p: f32, j: i32) -> f32 {
    let j1 = j >> 1;
    mul(mul(p, pow2i(j1)), pow2i(j - j1))
}

/// e^x: max error 1 ulp (CUDA's `expf`: 2 ulp), subnormal results included; +inf above
/// ~88.72, +0 below ~-103.97, NaN for NaN.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // Clamped so that j stays small; the clamped results still overflow or underflow. A NaN
    // passes through (comparisons with NaN are false).
    let x = x.clamp(-104.0, 89.0);
    let (j, ji) = rint_j(x, LOG2E);
    // x − j·LN2_HI is exact: both are multiples of 2^-24 and the difference is below 1/2.
    let t = fma(j, -LN2_HI, x);
    let t = fma(j, -LN2_MID, t);
    let p = fma(fma(horner(t, EXP), t, 1.0), t, 1.0);
    scale(p, ji)
}

/// 2^x: max error 1 ulp, subnormal results included; exact for integer x.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    let x = x.clamp(-151.0, 129.0);
    let (j, ji) = rint_j(x, 1.0);
    let t = x - j; // exact
    let p = fma(horner(t, EXP2), t, 1.0);
    scale(p, ji)
}

/// `x = 2^i·m` with m in [2/3, 4/3) for positive finite x (subnormals included): `(m − 1, i)`.
#[inline(always)]
pub(super) fn split(x: f32) -> (f32, f32) {
    split_from(x, 0x3f2a_aaab)
}

/// `x = 2^i·m` with m in [b, 2b) for positive finite x (subnormals included), where `b_bits`
/// are the bits of b (2/3 or √2/2): `(m − 1, i)`.
#[inline(always)]
fn split_from(x: f32, b_bits: i32) -> (f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let (x, bias) = if sub {
        (mul(x, 8_388_608.0), -23.0)
    } else {
        (x, 0.0)
    };
    let ia = x.to_bits() as i32;
    // Exponent of x relative to b: m keeps x's significand, its exponent moves to 0 or −1.
    let e = ia.wrapping_sub(b_bits) & (0xff80_0000_u32 as i32);
    let m = f32::from_bits(ia.wrapping_sub(e) as u32);
    // i = e/2^23 + bias by one fma of the converted field (exact: e has at most 8
    // significant bits), not a shift, a conversion and an add.
    (m - 1.0, fma(e as f32, 1.0 / 8_388_608.0, bias))
}

/// √2/2 rounded down: [`log2`] and [`log10`] take m in [√2/2, √2), where |log m| < |i| for
/// every i ≠ 0, so that adding i rounds once without cancelling.
const SQRT_HALF_BITS: i32 = 0x3f35_04f3;

/// The results of a logarithm outside its positive finite domain: −inf for ±0, +inf for
/// +inf, NaN for negatives and NaN.
#[inline(always)]
pub(super) fn log_special(x: f32) -> f32 {
    if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// A logarithm's result `r`, computed as if x were positive and finite, with the special
/// inputs' results put in by two selects, as libdevice does: x·∞ + ∞ for the bit patterns
/// from +inf's up (+inf gives +inf; NaN, −inf and every negative x give NaN), then −inf for
/// ±0. One integer compare and one float compare an element, where testing `0 < x < ∞`
/// first (LLVM turns it into a class test of five integer instructions) and branching to
/// [`log_special`] cost nine.
#[inline(always)]
pub(super) fn log_result(x: f32, r: f32) -> f32 {
    let r = if x.to_bits() >= 0x7f80_0000 {
        fma(x, f32::INFINITY, f32::INFINITY)
    } else {
        r
    };
    if x == 0.0 { f32::NEG_INFINITY } else { r }
}

/// ln(x): max error 1 ulp (CUDA's `logf`: 1 ulp), subnormal x included; −inf for ±0, NaN
/// below 0.
#[inline(always)]
pub fn log(x: f32) -> f32 {
    let (f, i) = split(x);
    let s = mul(f, f);
    let r = fma(fma(horner(f, LOG), f, -0.5), s, f);
    let r = fma(i, LN2_HI, r);
    log_result(x, r)
}

/// log_b(m) for m = 1 + f from [`split_from`] at √2/2: f·log_b(e) + f²·p(f), with log_b(e) as
/// `e_hi + e_lo` and the sum rounded once ([`log2`], [`log10`]).
#[inline(always)]
fn log_b_m<const N: usize>(f: f32, e_hi: f32, e_lo: f32, p: [f32; N]) -> f32 {
    fma(f, e_hi, fma(f, e_lo, mul(mul(f, f), horner(f, p))))
}

/// log2(x): max error 1 ulp, exact for powers of two; −inf for ±0,
/// NaN below 0.
#[inline(always)]
pub fn log2(x: f32) -> f32 {
    let (f, i) = split_from(x, SQRT_HALF_BITS);
    log_result(x, i + log_b_m(f, LOG2E_HI, LOG2E_LO, LOG2))
}

/// (log10(1 + f) − f·log10 e)/f² on [√2/2 − 1, √2 − 1] (`fit_log1p.py f32 8 log10`).
const LOG10: [f32; 9] = [
    -3.289_363_9e-2,
    5.598_638_6e-2,
    -5.756_831_9e-2,
    6.160_060_7e-2,
    -7.212_657_5e-2,
    8.686_703_4e-2,
    -0.108_580_76,
    0.144_764_8,
    -0.217_147_19,
];
/// log10(e) as hi + lo; log10(2) as hi (12 trailing zero bits: i·hi is exact) + lo.
const LOG10E_HI: f32 = f32::from_bits(0x3ede_5bd9);
const LOG10E_LO: f32 = f32::from_bits(0xb22d_91af);
const LG2_HI: f32 = f32::from_bits(0x3e9a_2000);
const LG2_LO: f32 = f32::from_bits(0x369a_84fc);
/// (10^t − 1)/t on |t| ≤ log10(2)/2.
const EXP10: [f32; 7] = [
    6.828_842e-2,
    0.207_774_12,
    0.539_380_67,
    1.171_246_3,
    2.034_678_7,
    2.650_949,
    2.302_585_1,
];

/// log10(x): max error 2 ulp; −inf for ±0, NaN below 0.
#[inline(always)]
pub fn log10(x: f32) -> f32 {
    let (f, i) = split_from(x, SQRT_HALF_BITS);
    let r = log_b_m(f, LOG10E_HI, LOG10E_LO, LOG10);
    // i·log10 2 + r (i·LG2_HI is exact in the last fma).
    log_result(x, fma(i, LG2_HI, fma(i, LG2_LO, r)))
}

/// 10^x: max error 1 ulp, subnormal results included; +inf above ~38.53, +0 below ~-45.4.
#[inline(always)]
pub fn exp10(x: f32) -> f32 {
    let x = x.clamp(-46.0, 39.0);
    let (j, ji) = rint_j(x, core::f32::consts::LOG2_10);
    // x − j·LG2_HI is exact (j·LG2_HI has 20 bits; the difference is below 1/4).
    let t = fma(j, -LG2_HI, x);
    let t = fma(j, -LG2_LO, t);
    let p = fma(horner(t, EXP10), t, 1.0);
    scale(p, ji)
}
