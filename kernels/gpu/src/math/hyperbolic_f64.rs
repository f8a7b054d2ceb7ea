//! `sinh_f64`, `cosh_f64`, `asinh_f64`, `acosh_f64`, `atanh_f64`: fdlibm's formulas on
//! [`expm1_f64`], [`exp_f64`] and a division-free log1p (e.g. sinh a = (t + t/(t + 1))/2 with
//! t = e^a − 1, which does not cancel near 0), and the f32 functions' e^(a − 64·ln 2)·2^63 near
//! overflow. Quotients are a product with `recip_f64` (IEEE operations only), corrected by their
//! residual where the quotient is a large part of the result: `div.rn.f64` is a long sequence with
//! a branch to a slow path. Ranges are chosen by selects where both sides are cheap.

use super::exp_log_f64::{LN2_HI_K, LN2_LO_K};
use super::expm1_log1p_f64::log1p_plus;
use super::misc_f64::{quotient, recip_f64};
use super::{exp_f64, expm1_f64, fma_f64, mul64, pow2i64, sqrt_f64};

/// Beyond this, asinh a and acosh a are log(2a) to within 2^-56 (√(a² ± 1) = a to f64
/// precision).
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
        let q = quotient(t, t + 1.0);
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
    if a < 22.0 {
        // e/2 + 1/(2e) for every a below 22, fdlibm's 1 + t²/(2(1 + t)) near 0 included: the
        // terms are positive, and near 0, where both are near 1/2, the derivative of the sum in
        // e vanishes, so e's error hardly moves it (one branch instead of a divergent second
        // one through expm1).
        let e = exp_f64(a);
        fma_f64(e, 0.5, quotient(0.5, e))
    } else {
        half_exp(a)
    }
}

/// asinh(x) for f64: max error 2 ulp (CUDA's `asinh`: 3 ulp); ±inf for ±inf, NaN for NaN.
#[inline(always)]
pub fn asinh_f64(x: f64) -> f64 {
    let a = x.abs();
    // log1p(a + a²/(1 + √(1 + a²))) for every a (no cancellation near 0, no branch between
    // small and large arguments); beyond LARGE, where a² may overflow, log(2a) =
    // log1p(a − 1) + ln 2.
    let s = mul64(a, a);
    let big = a > LARGE;
    let w = if big {
        a - 1.0
    } else {
        fma_f64(s, recip_f64(1.0 + sqrt_f64(s + 1.0)), a)
    };
    let r = log1p_plus(w, if big { 1.0 } else { 0.0 });
    // ±inf and NaN.
    let r = if a < f64::INFINITY { r } else { a };
    r.copysign(x)
}

/// acosh(x) for f64: max error 2 ulp (CUDA's `acosh`: 3 ulp); +inf for +inf, NaN below 1 and
/// for NaN.
#[inline(always)]
pub fn acosh_f64(x: f64) -> f64 {
    // log1p(t + √(t² + 2t)) with t = x − 1 (exact below 2^53) for every x: no cancellation and
    // no division; beyond LARGE, where t² may overflow, log(2x) = log1p(x − 1) + ln 2.
    let t = x - 1.0;
    let big = x > LARGE;
    let w = if big {
        t
    } else {
        t + sqrt_f64(fma_f64(t, t, t + t))
    };
    let r = log1p_plus(w, if big { 1.0 } else { 0.0 });
    if (1.0..f64::INFINITY).contains(&x) {
        r
    } else if x == f64::INFINITY {
        x
    } else {
        f64::NAN
    }
}

/// atanh(x) for f64: max error 2 ulp (CUDA's `atanh`: 2 ulp); ±inf at ±1, NaN beyond and for
/// NaN.
#[inline(always)]
pub fn atanh_f64(x: f64) -> f64 {
    let a = x.abs();
    // atanh a = log1p(2a/(1 − a))/2; below 1/2 as 2a + 2a²/(1 − a), to keep 2a exact.
    let d = 1.0 - a;
    let t = a + a;
    let w = if a < 0.5 {
        fma_f64(mul64(t, a), recip_f64(d), t)
    } else {
        quotient(t, d)
    };
    let r = mul64(log1p_plus(w, 0.0), 0.5);
    let r = if a < 1.0 {
        r
    } else if a == 1.0 {
        f64::INFINITY
    } else {
        f64::NAN
    };
    r.copysign(x)
}
