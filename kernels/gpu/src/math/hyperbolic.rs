//! `sinh`, `cosh`, `asinh`, `acosh`, `atanh` for f32, from [`exp`], [`log`] and [`log1p`]: an odd
//! polynomial for `sinh` near zero (where e^x − e^−x cancels), and the cancellation-free forms
//! of the inverse functions (FreeBSD's `e_acoshf`/`s_asinhf`/`e_atanhf` structure).
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::exp_log::{LN2_HI, LN2_MID};
use super::{exp, fma, horner, log, log1p, mul, pow2i, sqrt};

/// (sinh x − x)/x³ as a polynomial in x², on x² ≤ 1.
const SINH: [f32; 4] = [2.806_280_2e-6, 1.983_810_2e-4, 8.333_339e-3, 0.166_666_67];
/// Beyond this, log(2a) = log a + ln 2 to within an ulp: √(a² ± 1) = a to f32 precision.
const LARGE: f32 = 4096.0;

/// `(e^a ± e^−a)/2` for a ≥ 1 (+ for cosh).
#[inline(always)]
fn exp_pair(a: f32, plus: bool) -> f32 {
    if a > 88.0 {
        // e^a/2 = e^t·2^63 with t = a − 64·ln 2, which stays finite up to the f32 range
        // (a ≤ 89.4); e^−a is far below an ulp. a − 64·LN2_HI is exact (a and 64·LN2_HI are
        // multiples of 2^-17 and 2^-15, the difference is below 64); the LN2_MID part enters
        // as the factor 1 + tl.
        let th = a - mul(64.0, LN2_HI);
        let tl = mul(-64.0, LN2_MID);
        let e = exp(th);
        mul(fma(e, tl, e), pow2i(63))
    } else {
        let e = exp(a);
        let h = mul(e, 0.5);
        let g = 0.5 / e;
        if plus { h + g } else { h - g }
    }
}

/// sinh(x): max error 3 ulp (CUDA's `sinhf`: 3 ulp); ±inf beyond ~89.4, NaN for NaN.
#[inline(always)]
pub fn sinh(x: f32) -> f32 {
    let a = x.abs();
    if a < 1.0 {
        let s = mul(x, x);
        // `+ 0.0` keeps the sign of a zero x (see `tanh`).
        fma(fma(horner(s, SINH), s, 0.0), x, x)
    } else {
        exp_pair(a, false).copysign(x)
    }
}

/// cosh(x): max error 2 ulp (CUDA's `coshf`: 2 ulp); +inf beyond ~89.4, NaN for NaN.
#[inline(always)]
pub fn cosh(x: f32) -> f32 {
    exp_pair(x.abs(), true)
}

/// `log a + ln 2` for a ≥ [`LARGE`] (+inf for +inf).
#[inline(always)]
fn log_twice(a: f32) -> f32 {
    log(a) + (LN2_HI + LN2_MID)
}

/// asinh(x): max error 3 ulp (CUDA's `asinhf`: 3 ulp); ±inf for ±inf, NaN for NaN.
#[inline(always)]
pub fn asinh(x: f32) -> f32 {
    let a = x.abs();
    let r = if a > LARGE {
        log_twice(a)
    } else if a > 2.0 {
        // log(a + √(a² + 1)) = log(2a + 1/(√(a² + 1) + a)).
        log(a + a + 1.0 / (sqrt(fma(a, a, 1.0)) + a))
    } else {
        // log1p(a + a²/(1 + √(1 + a²))): no cancellation near 0.
        let s = mul(a, a);
        log1p(a + s / (1.0 + sqrt(s + 1.0)))
    };
    r.copysign(x)
}

/// acosh(x): max error 3 ulp (CUDA's `acoshf`: 4 ulp); +inf for +inf, NaN below 1 and for NaN.
#[inline(always)]
pub fn acosh(x: f32) -> f32 {
    let r = if x > LARGE {
        log_twice(x)
    } else if x > 2.0 {
        // log(x + √(x² − 1)) = log(2x − 1/(x + √(x² − 1))).
        log(x + x - 1.0 / (x + sqrt(fma(x, x, -1.0))))
    } else {
        // log1p(t + √(t² + 2t)) with t = x − 1 (exact for x in [1, 2]).
        let t = x - 1.0;
        log1p(t + sqrt(fma(t, t, t + t)))
    };
    if x >= 1.0 { r } else { f32::NAN }
}

/// atanh(x): max error 3 ulp (CUDA's `atanhf`: 3 ulp); ±inf at ±1, NaN beyond and for NaN.
#[inline(always)]
pub fn atanh(x: f32) -> f32 {
    let a = x.abs();
    // atanh a = log1p(2a/(1 − a))/2; below 1/2, as 2a + 2a²/(1 − a) to keep 2a exact.
    let d = 1.0 - a;
    let w = if a < 0.5 {
        let t = a + a;
        t + mul(t, a) / d
    } else {
        (a + a) / d
    };
    let r = mul(log1p(w), 0.5);
    if a > 1.0 { f32::NAN } else { r.copysign(x) }
}
