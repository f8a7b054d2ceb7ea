//! `tanh` and `erf` for f32: an odd polynomial near zero, an exponential-based formula beyond.
// Polynomial coefficients are fitted values printed to round-trip exactly (some near ln 2 or
// 1/3 are fits, not those constants).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use super::exp_log::{EXP, LOG2E, rint_j};
use super::{fma, fnma, horner, mul, pow2i, select_gt};

/// `exp`'s polynomial for e^2u with u = t/2: 4·H(2u) for (e^t − 1 − t)/t² = H(t), each
/// coefficient scaled by a power of two (exact).
const EXP_2U: [f32; 5] = [
    EXP[0] * 64.0,
    EXP[1] * 32.0,
    EXP[2] * 16.0,
    EXP[3] * 8.0,
    EXP[4] * 4.0,
];
/// (tanh x − x)/x³ as a polynomial in x², on |x| ≤ 0.5625 (`fit_tanh.py 3 0.5625 --f32`).
const TANH: [f32; 4] = [
    f32::from_bits(0x3c85_037e), // 0.016237016767263412
    f32::from_bits(0xbd57_510e), // -0.052567534148693085
    f32::from_bits(0x3e08_6347), // 0.13319121301174164
    f32::from_bits(0xbeaa_aa12), // -0.3333287835121155
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
/// log2(erfc t) on 0.9375 ≤ t ≤ 4 (`fit_erf.py --f32-large 6`).
const ERF_LARGE: [f32; 7] = [
    f32::from_bits(0x3992_92ce), // 0.00027956668054684997
    f32::from_bits(0xbb8e_ddaf), // -0.0043599228374660015
    f32::from_bits(0x3d02_d8bf), // 0.031944986432790756
    f32::from_bits(0xbe19_480a), // -0.14968886971473694
    f32::from_bits(0xbf6b_6783), // -0.9195482134819031
    f32::from_bits(0xbfd0_385e), // -1.6267201900482178
    f32::from_bits(0xb9a9_e487), // -0.0003240445803385228
];
/// (2^f − 1)/f on |f| ≤ 1/2 (`fit_erf.py --f32-exp2 5`).
const ERF_EXP2: [f32; 6] = [
    f32::from_bits(0x3920_b8f1), // 0.00015327685105148703
    f32::from_bits(0x3aaf_84a4), // 0.0013390970416367054
    f32::from_bits(0x3c1d_96ed), // 0.009618503041565418
    f32::from_bits(0x3d63_57bd), // 0.05550359562039375
    f32::from_bits(0x3e75_fdee), // 0.24022647738456726
    f32::from_bits(0x3f31_7218), // 0.6931471824645996
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
    // 1 − 1/h with h = (e^2a + 1)/2. From a = 9.1 on this rounds to exactly 1, so a is clamped
    // to 9.5 (a NaN becomes 9.5 there: the select at the end takes `small` for it).
    let c = a.min(9.5);
    // e^2c = 2^j·e^2u with u = c − j·ln 2/2 (as `exp` with t = 2u: the same roundings, each
    // scaled by a power of two, without forming 2c). One constant for ln 2: the reduction's
    // error j·(ln 2 − LN_2)/2, under 2^-26 relative for the j ≤ 3 where tanh is sensitive to
    // it, shrinks faster than 1 − tanh grows.
    let (j, ji) = rint_j(c, 2.0 * LOG2E);
    let u = fma(j, -0.5 * core::f32::consts::LN_2, c);
    let p = fma(fma(horner(u, EXP_2U), u, 2.0), u, 1.0);
    // h rounded once (the scaling by 2^(j−1) is exact), then 1/h from its bits by a Newton
    // step and a third-order step (relative error 0.0505^6 before rounding): no division and
    // no correction of a quotient.
    let h = fma(p, pow2i(ji - 1), 0.5);
    let y = f32::from_bits(0x7ef3_11c3_u32.wrapping_sub(h.to_bits()));
    let y = fma(y, fnma(h, y, 1.0), y);
    let e = fnma(h, y, 1.0);
    let y = fma(y, fma(e, e, e), y);
    let large = (1.0 - y).copysign(x);
    select_gt(a, 0.5625, large, small)
}

/// erf(x): max error 2 ulp; ±1 for |x| ≥ 4, NaN for NaN.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    // Both formulas evaluated, one selected (see `tanh`).
    let a = x.abs();
    let s = mul(x, x);
    let small = fma(horner(s, ERF_SMALL), x, x);
    // erf = 1 − erfc with erfc = 2^g, g = log2 erfc t a polynomial (below half an ulp of 1
    // from t = 4 on). A NaN becomes 4 here; the select at the end takes `small` for it.
    let t = a.min(4.0);
    let g = horner(t, ERF_LARGE);
    // g in [-26, -2.4]: 2^g = 2^j·2^f with f = g − j exact, and 1 − 2^g rounded once.
    let (j, ji) = rint_j(g, 1.0);
    let f = g - j;
    let p = fma(horner(f, ERF_EXP2), f, 1.0);
    let large = fnma(p, pow2i(ji), 1.0).copysign(x);
    select_gt(a, 0.9375, large, small)
}
