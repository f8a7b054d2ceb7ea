//! `erfinv_f64`: a start accurate to about 2^-19 (the f32 [`erfinv`](super::erfinv) below
//! w = −ln(1 − x²) = 5) or 2^-8 (the asymptotic y² = w − ln(√(πw)/2) beyond), then two Halley
//! steps on erf(y) = x — on erfc(y) = 1 − |x| (exact) from |x| = 0.85 on, where erf's
//! cancellation would lose bits — with [`erf_f64`](super::erf_f64) and
//! [`erfc_f64`](super::erfc_f64). Halley's method triples the correct bits per step; the
//! result's error is that of erf or erfc divided by erf's slope.

use super::{erf_f64, erfc_f64, erfinv, exp_f64, fma_f64 as fma, log_f64, mul64, sqrt_f64};

/// 2/√π and √π/2.
const TWO_OVER_SQRT_PI: f64 = core::f64::consts::FRAC_2_SQRT_PI;
const SQRT_PI_OVER_2: f64 = 0.886_226_925_452_758;

/// The inverse error function for f64, erf(erfinv(x)) = x: max error 4 ulp (CUDA's `erfinv`:
/// 5 ulp); ±inf at ±1, NaN for |x| > 1 and NaN, ±0 kept.
#[inline(always)]
pub fn erfinv_f64(x: f64) -> f64 {
    let a = x.abs();
    let w = -log_f64(fma(-a, a, 1.0));
    let y = if w < 5.0 {
        erfinv(a as f32) as f64
    } else {
        // erfc(y) ≈ e^(−y²)/(y√π) = (1 − a) ≈ e^(−w)/2 solved once for y.
        sqrt_f64(w - log_f64(mul64(SQRT_PI_OVER_2, sqrt_f64(w))))
    };
    let tail = a >= 0.85;
    let mut y = y;
    for _ in 0..2 {
        // f = erf(y) − a, as (1 − a) − erfc(y) in the tail (1 − a exact there).
        let f = if tail {
            (1.0 - a) - erfc_f64(y)
        } else {
            erf_f64(y) - a
        };
        let d = f / mul64(TWO_OVER_SQRT_PI, exp_f64(-mul64(y, y)));
        // Halley: f'' = −2y·f', so y −= d/(1 + y·d).
        y -= d / fma(y, d, 1.0);
    }
    let y = y.copysign(x);
    if a < 1.0 {
        // ±0 kept (erf(0) − 0 is +0).
        if a == 0.0 { x } else { y }
    } else if a == 1.0 {
        f64::INFINITY.copysign(x)
    } else {
        f64::NAN
    }
}
