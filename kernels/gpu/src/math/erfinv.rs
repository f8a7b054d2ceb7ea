//! `erfinv` for f32: erfinv(x) = x·p(w) with w = −ln(1 − x²) (M. Giles, "Approximating the
//! erfinv function", 2010), with minimax polynomials refitted for f32: one in w below w = 5, one
//! in √w beyond (up to w = 16.6, the last f32 below 1). 1 − x² is one `fma` (a single
//! rounding); w and √w are carried as hi + lo (rounded to f32 they alone would cost up to half
//! an ulp: erfinv grows like √w), and the polynomials' constant terms are carried as hi + lo
//! into the final `fma`.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::exp_log::{LN2_HI, LN2_MID};
use super::pow::log2_ext;
use super::{fma, horner, mul, sqrt};

/// (erfinv(x)/x − C0)/w as a polynomial in w, on 0 ≤ w ≤ 5 (relative error 2^-28). In w
/// itself, not centred: near x = 0 the rounding of a shifted w − c would cost half an ulp.
const CENTRAL: [f32; 10] = [
    3.355_731e-10,
    -1.716_216_3e-8,
    3.098_055e-7,
    -2.497_930_4e-6,
    5.835_801_4e-6,
    4.048_639_3e-5,
    -1.220_020_5e-4,
    -2.338_541_2e-3,
    1.155_033_6e-2,
    0.232_013_55,
];
const CENTRAL_C0_HI: f32 = f32::from_bits(0x3f62_dfc5);
const CENTRAL_C0_LO: f32 = f32::from_bits(0xb2d3_8636);
/// (erfinv(x)/x − C0)/v over v = √w − 3, on 5 ≤ w ≤ 16.6 (relative error 2^-27).
const TAIL: [f32; 9] = [
    1.213_275_7e-4,
    -3.139_990_4e-4,
    -6.511_881e-5,
    1.490_413_3e-3,
    -3.593_009_7e-3,
    5.685_040_3e-3,
    -7.638_201e-3,
    9.445_497e-3,
    1.001_675,
];
const TAIL_C0_HI: f32 = f32::from_bits(0x4035_4f7e);
const TAIL_C0_LO: f32 = f32::from_bits(0xb2ab_5d21);

/// The inverse error function, erf(erfinv(x)) = x: max error 2 ulp (CUDA's `erfinvf`: 2 ulp);
/// ±inf at ±1, NaN for |x| > 1 and NaN, ±0 kept.
#[inline(always)]
pub fn erfinv(x: f32) -> f32 {
    let a = x.abs();
    // 1 − x² rounded once: its absolute error (2^-25 near 1, relative 2^-24 near 0) moves the
    // result by below 0.1 ulp either way.
    let (l, l_lo) = log2_ext(fma(-a, a, 1.0));
    // w = −ln(1 − x²) = −(l + l_lo)·ln 2 as w + w_lo.
    let wh = mul(l, -LN2_HI);
    let wl = fma(l, -LN2_HI, -wh) - (mul(l, LN2_MID) + mul(l_lo, LN2_HI));
    let w = wh + wl;
    let w_lo = (wh - w) + wl;
    // Both polynomials evaluated, one selected (no divergence in a warp of mixed arguments).
    // p(v + v_lo) = c0 + v·q(v) + v_lo·q(v) to well below an ulp (q's slope is small).
    let (v, v_lo, q, c0_hi, c0_lo) = if w < 5.0 {
        (w, w_lo, horner(w, CENTRAL), CENTRAL_C0_HI, CENTRAL_C0_LO)
    } else {
        // √(w + w_lo) = s + (w − s² + w_lo)/(2s); s − 3 is exact.
        let s = sqrt(w);
        let s_lo = (fma(-s, s, w) + w_lo) / (s + s);
        let v = s - 3.0;
        (v, s_lo, horner(v, TAIL), TAIL_C0_HI, TAIL_C0_LO)
    };
    let y = fma(x, c0_hi, mul(x, fma(v, q, fma(q, v_lo, c0_lo))));
    if a < 1.0 {
        // ±0 kept (the sum above is +0 for both).
        if a == 0.0 { x } else { y }
    } else if a == 1.0 {
        f32::INFINITY.copysign(x)
    } else {
        f32::NAN
    }
}
