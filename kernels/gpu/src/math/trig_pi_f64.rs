//! `sinpi_f64` and `cospi_f64`: the f32 [`sinpi`](super::sinpi)'s algorithm with f64
//! polynomials. The reduction x = r + q/2 is exact, so no Payne–Hanek is needed.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::{fma_f64 as fma, horner64, mul64, rint_f64};

/// (sin πr − πr)/r³ and (cos πr − 1)/r² as polynomials in r², on r² ≤ 1/16 (relative errors
/// 2^-63 and 2^-72).
const SINPI: [f64; 7] = [
    -2.174_188_884_005_218e-5,
    4.662_878_991_283_497_5e-4,
    -7.370_430_309_938_718e-3,
    8.214_588_659_720_033e-2,
    -0.599_264_529_320_646_7,
    2.550_164_039_877_345,
    -5.167_712_780_049_97,
];
const COSPI: [f64; 8] = [
    4.268_451_820_889_22e-6,
    -1.046_345_871_763_545_2e-4,
    1.929_574_123_091_889e-3,
    -2.580_689_138_454_401_3e-2,
    0.235_330_630_358_805_94,
    -1.335_262_768_854_588_8,
    4.058_712_126_416_768_5,
    -4.934_802_200_544_679,
];
/// π as hi + lo.
const PI_HI: f64 = f64::from_bits(0x4009_21fb_5444_2d18);
const PI_LO: f64 = f64::from_bits(0x3ca1_a626_3314_5c07);

/// sin(πx) and cos(πx) for f64.
#[inline(always)]
fn by_quadrant_pi(x: f64) -> (f64, f64) {
    let ax = x.abs();
    // q = rint(2x) (one `cvt.rni`); from 2^53 on, x is even: quadrant 0.
    let q = rint_f64(mul64(x, 2.0));
    // From 2^52 on x is an integer: r = 0 (NaN for ±inf, through x·0).
    let r = if ax < 4_503_599_627_370_496.0 {
        x - mul64(q, 0.5)
    } else {
        mul64(x, 0.0)
    };
    let qi = if ax < 9_007_199_254_740_992.0 {
        q as i64
    } else {
        0
    };
    let s = mul64(r, r);
    // πr as hi + lo, then the r³ part.
    let hi = mul64(r, PI_HI);
    let lo = fma(r, PI_HI, -hi) + mul64(r, PI_LO);
    let sin = hi + fma(mul64(s, r), horner64(s, SINPI), lo);
    let cos = fma(s, horner64(s, COSPI), 1.0);
    let (sin, cos) = if qi & 1 != 0 { (cos, -sin) } else { (sin, cos) };
    let (sin, cos) = if qi & 2 != 0 {
        (-sin, -cos)
    } else {
        (sin, cos)
    };
    // Exact zeros: sinpi(n) has the sign of n, cospi(n + 1/2) is +0 (IEEE 754 sinPi/cosPi).
    let sin = if sin == 0.0 { 0.0f64.copysign(x) } else { sin };
    let cos = if cos == 0.0 { 0.0 } else { cos };
    (sin, cos)
}

/// sin(πx) for f64: max error 1 ulp (CUDA's `sinpi`: 2 ulp), every finite x (exactly ±0 at
/// integers); NaN for ±inf and NaN.
#[inline(always)]
pub fn sinpi_f64(x: f64) -> f64 {
    by_quadrant_pi(x).0
}

/// cos(πx) for f64: max error 1 ulp (CUDA's `cospi`: 2 ulp), every finite x (exactly +0 at
/// half-integers); NaN for ±inf and NaN.
#[inline(always)]
pub fn cospi_f64(x: f64) -> f64 {
    by_quadrant_pi(x).1
}
