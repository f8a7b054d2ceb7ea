//! `sinh_f64`, `cosh_f64`, `asinh_f64`, `acosh_f64`, `atanh_f64`: fdlibm's formulas on
//! [`expm1_f64`], [`exp_f64`], [`log_f64`] and [`log1p_f64`] (e.g. sinh a = (t + t/(t + 1))/2
//! with t = e^a − 1, which does not cancel near 0), and the f32 functions' e^(a − 64·ln 2)·2^63
//! near overflow.

use super::exp_log_f64::{LN2_HI_K, LN2_LO_K};
use super::{exp_f64, expm1_f64, fma_f64, log_f64, log1p_f64, mul64, pow2i64, sqrt_f64};

/// Beyond this, √(a² ± 1) = a to f64 precision and log(2a) = log a + ln 2.
const LARGE: f64 = 268_435_456.0; // 2^28

/// e^a/2 for a ≥ 22 (e^−a is then below 2^-63 of it), finite up to f64's range: e^t·2^63 with
/// t = a − 64·ln 2, where a − 64·LN2_HI_K is exact and the LN2_LO_K part enters as 1 + tl.
#[inline(always)]
fn half_exp(a: f64) -> f64 {
    let th = a - mul64(64.0, LN2_HI_K);
    let tl = mul64(-64.0, LN2_LO_K);
    let e = exp_f64(th);
    // tl < 0: for e = +inf, e·tl + e would be NaN.
    let e = if e < f64::INFINITY {
        fma_f64(e, tl, e)
    } else {
        e
    };
    mul64(e, pow2i64(63))
}

/// sinh(x) for f64: max error 2 ulp (CUDA's `sinh`: 2 ulp); ±inf beyond ~710.5, NaN for NaN.
#[inline(always)]
pub fn sinh_f64(x: f64) -> f64 {
    let a = x.abs();
    let r = if a < 22.0 {
        let t = expm1_f64(a);
        let q = t / (t + 1.0);
        // (t + t/(t + 1))/2; below 1 as (2t − t·t/(t + 1))/2 (fdlibm).
        if a < 1.0 {
            mul64(t + t - mul64(t, q), 0.5)
        } else {
            mul64(t + q, 0.5)
        }
    } else {
        half_exp(a)
    };
    r.copysign(x)
}

/// cosh(x) for f64: max error 2 ulp (CUDA's `cosh`: 1 ulp); +inf beyond ~710.5, NaN for NaN.
#[inline(always)]
pub fn cosh_f64(x: f64) -> f64 {
    let a = x.abs();
    if a < 0.346_573_590_279_972_6 {
        // 1 + t²/(2(1 + t)) with t = e^a − 1 (a < ln 2 / 2).
        let t = expm1_f64(a);
        let w = 1.0 + t;
        1.0 + mul64(t, t) / (w + w)
    } else if a < 22.0 {
        let e = exp_f64(a);
        mul64(e, 0.5) + 0.5 / e
    } else {
        half_exp(a)
    }
}

/// `log a + ln 2` for a ≥ [`LARGE`].
#[inline(always)]
fn log_twice(a: f64) -> f64 {
    log_f64(a) + core::f64::consts::LN_2
}

/// asinh(x) for f64: max error 2 ulp (CUDA's `asinh`: 3 ulp); ±inf for ±inf, NaN for NaN.
#[inline(always)]
pub fn asinh_f64(x: f64) -> f64 {
    let a = x.abs();
    let r = if a > LARGE {
        log_twice(a)
    } else if a > 2.0 {
        log_f64(a + a + 1.0 / (sqrt_f64(fma_f64(a, a, 1.0)) + a))
    } else {
        let s = mul64(a, a);
        log1p_f64(a + s / (1.0 + sqrt_f64(s + 1.0)))
    };
    r.copysign(x)
}

/// acosh(x) for f64: max error 2 ulp (CUDA's `acosh`: 3 ulp); +inf for +inf, NaN below 1 and
/// for NaN.
#[inline(always)]
pub fn acosh_f64(x: f64) -> f64 {
    let r = if x > LARGE {
        log_twice(x)
    } else if x > 2.0 {
        log_f64(x + x - 1.0 / (x + sqrt_f64(fma_f64(x, x, -1.0))))
    } else {
        let t = x - 1.0;
        log1p_f64(t + sqrt_f64(fma_f64(t, t, t + t)))
    };
    if x >= 1.0 { r } else { f64::NAN }
}

/// atanh(x) for f64: max error 2 ulp (CUDA's `atanh`: 2 ulp); ±inf at ±1, NaN beyond and for
/// NaN.
#[inline(always)]
pub fn atanh_f64(x: f64) -> f64 {
    let a = x.abs();
    let d = 1.0 - a;
    let w = if a < 0.5 {
        let t = a + a;
        t + mul64(t, a) / d
    } else {
        (a + a) / d
    };
    let r = mul64(log1p_f64(w), 0.5);
    if a > 1.0 { f64::NAN } else { r.copysign(x) }
}
