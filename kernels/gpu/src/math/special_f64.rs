//! `tanh_f64`: an odd polynomial near zero, 1 − 2/(e^2|x| + 1) beyond.
// Polynomial coefficients are fitted values printed to round-trip exactly (some near ln 2 or
// 1/3 are fits, not those constants).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use super::exp_log_f64::{EXP, LN2_HI, LN2_LO, MAGIC};
use super::misc_f64::recip_f64;
use super::{fma_f64 as fma, horner64, mul64, select_gt_f64};

/// (tanh x − x)/x³ as a polynomial in x², on |x| ≤ 0.5625 (`fit_tanh.py 10 0.5625`).
const TANH: [f64; 11] = [
    f64::from_bits(0xbef3ce658c60e859), // -1.888869953623642e-05
    f64::from_bits(0x3f15955526aa74c1), // 8.233387203878102e-05
    f64::from_bits(0xbf2e7ff6d988f935), // -0.00023269546797339562
    f64::from_bits(0x3f4345f76a26e44d), // 0.0005881746367811886
    f64::from_bits(0xbf57d8b6c00fe59c), // -0.0014554772062623572
    f64::from_bits(0x3f6d6d243efc77dd), // 0.0035920818262544633
    f64::from_bits(0xbf8226e2ce84e3c2), // -0.008863231589758661
    f64::from_bits(0x3f9664f48486dcda), // 0.021869488323969268
    f64::from_bits(0xbfaba1ba1b931314), // -0.0539682539615908
    f64::from_bits(0x3fc1111111110255), // 0.13333333333322864
    f64::from_bits(0xbfd555555555554b), // -0.33333333333333276
];

/// tanh(x) for f64: max error 2 ulp; ±1 for large |x|, NaN for NaN.
#[inline(always)]
pub fn tanh_f64(x: f64) -> f64 {
    // Both formulas evaluated, one selected (see `tanh`).
    let a = x.abs();
    let s = mul64(x, x);
    // `+ 0.0` keeps the sign of a zero x.
    let small = fma(fma(horner64(s, TANH), s, 0.0), x, x);
    // 1 − 1/h with h = (e^2a + 1)/2. From a = 19.1 on this rounds to exactly 1, so a is
    // clamped to 19.5 (a NaN passes through).
    let c = if a > 19.5 { 19.5 } else { a };
    let c2 = c + c;
    // e^2c = 2^j·(1 + q), q = e^t − 1.
    let k = fma(c2, core::f64::consts::LOG2_E, MAGIC);
    let j = k - MAGIC;
    let t = fma(j, -LN2_HI, c2);
    let t = fma(j, -LN2_LO, t);
    let q = fma(mul64(t, t), horner64(t, EXP), t);
    // h = q·2^(j−1) + (2^(j−1) + 1/2), rounded once: the sum is exact up to j = 53, and
    // beyond, 1/h is below half an ulp of 1. Its reciprocal by Newton's method, not a
    // division (`div.rn.f64` has a range test and a branch to a slow path). 2^(j−1) from k's
    // bits by wrapping integer operations: for a NaN x they hold anything (the select below
    // takes `small` then), and must not overflow.
    let p = f64::from_bits(
        k.to_bits()
            .wrapping_sub(MAGIC.to_bits())
            .wrapping_add(1022)
            .wrapping_shl(52),
    );
    let y = recip_f64(fma(q, p, p + 0.5));
    let large = (1.0 - y).copysign(x);
    select_gt_f64(a, 0.5625, large, small)
}
