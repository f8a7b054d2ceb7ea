//! `tanh` and `erf` for f32: an odd polynomial near zero, an exponential-based formula beyond.
// Polynomial coefficients are fitted values printed to round-trip exactly (some near ln 2 or
// 1/3 are fits, not those constants).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use super::exp_log::exp_normal;
use super::{fma, horner, mul, quotient};

/// (tanh x − x)/x³ as a polynomial in x², on |x| ≤ 0.5625.
const TANH: [f32; 5] = [
    -6.525_572_4e-3,
    2.126_335_4e-2,
    -5.390_175_4e-2,
    0.133_330_73,
    -0.333_333_3,
];
/// erf(x)/x − 1 as a polynomial in x², on |x| ≤ 0.9375.
pub(super) const ERF_SMALL: [f32; 6] = [
    -5.933_306e-4,
    4.982_215e-3,
    -2.675_944e-2,
    0.112_816_3,
    -0.376_124_77,
    0.128_379_15,
];
/// ln(erfc t) on 0.9375 ≤ t ≤ 4.
const ERF_LARGE: [f32; 10] = [
    -5.727_043_4e-8,
    2.888_707_5e-6,
    -5.789_772_3e-5,
    6.603_044_5e-4,
    -4.971_901e-3,
    2.687_901_3e-2,
    -0.110_715_73,
    -0.631_279_35,
    -1.130_497_3,
    3.745_825_7e-4,
];

/// tanh(x): max error 2 ulp; ±1 for large |x|, NaN for NaN.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    // Both formulas are evaluated and one selected: in a warp of mixed arguments a branch
    // would run both anyway, plus its divergence bookkeeping.
    let a = x.abs();
    let s = mul(x, x);
    // `+ 0.0` keeps the sign of a zero x (see `trig::kernel`).
    let small = fma(fma(horner(s, TANH), s, 0.0), x, x);
    // 1 − 2/(e^2a + 1). From a = 9.1 on this rounds to exactly 1, so a is clamped to 10
    // (a NaN passes through) and e^2a stays in `exp_normal`'s range.
    let c = if a > 10.0 { 10.0 } else { a };
    // The quotient without `div.rn.f32` (a long sequence with a branch to a slow path).
    let large = (1.0 - quotient(2.0, exp_normal(c + c) + 1.0)).copysign(x);
    if a <= 0.5625 { small } else { large }
}

/// erf(x): max error 2 ulp; ±1 for |x| ≥ 4, NaN for NaN.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    // Both formulas evaluated, one selected (see `tanh`).
    let a = x.abs();
    let s = mul(x, x);
    let small = fma(horner(s, ERF_SMALL), x, x);
    // erf = 1 − erfc, with erfc = e^(poly) (below half an ulp of 1 from t = 4 on). A NaN
    // passes through the clamp.
    let t = if a > 4.0 { 4.0 } else { a };
    // The exponent is in [-17.7, -1.7] for t in [0, 4]: `exp_normal`'s range.
    let large = (1.0 - exp_normal(horner(t, ERF_LARGE))).copysign(x);
    if a < 0.9375 { small } else { large }
}
