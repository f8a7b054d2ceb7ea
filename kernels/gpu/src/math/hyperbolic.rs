//! `sinh`, `cosh`, `asinh`, `acosh`, `atanh` for f32, from [`exp`] and a division-free
//! [`log1p`]: an odd polynomial for `sinh` near zero (where e^x − e^−x cancels), and the
//! cancellation-free forms of the inverse functions (FreeBSD's `e_acoshf`/`s_asinhf`/`e_atanhf`
//! structure), asinh's square root and the quotients by Newton's method from the operands' bits
//! ([`sqrt_ext`](super::sqrt_ext), [`recip`](super::recip)): `sqrt.rn.f32` and `div.rn.f32` are
//! long sequences with a branch to a slow path.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::exp_log::{EXP, LN2_HI, LN2_MID, LOG2E, rint_j};
use super::expm1_log1p::log1p_minus;
use super::{exp, fma, horner, mul, pow2i, quotient, recip, select_gt, sqrt, sqrt_ext};

/// (sinh x − x)/x³ as a polynomial in x², on x² ≤ 1.
const SINH: [f32; 4] = [2.806_280_2e-6, 1.983_810_2e-4, 8.333_339e-3, 0.166_666_67];
/// Beyond this, asinh a and acosh a are log(2a) to within 2^-26 (√(a² ± 1) = a to f32
/// precision).
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
        // e^a/2 and e^−a/2 from one reduction a = j·ln 2 + t (as in `exp`): 2^(j−1)·e^t and
        // 2^(−j−1)·e^−t, the polynomial evaluated at t and at −t (no reciprocal, no division),
        // summed by one fma.
        let (j, ji) = rint_j(a, LOG2E);
        let t = fma(j, -LN2_HI, a);
        let t = fma(j, -LN2_MID, t);
        let p = fma(fma(horner(t, EXP), t, 1.0), t, 1.0);
        let m = -t;
        let q = fma(fma(horner(m, EXP), m, 1.0), m, 1.0);
        // 2^(−j−1) clamped to 2^-126 (normal): from j = 126 on (a near 88) e^−a/2 is far below
        // an ulp of e^a/2 anyway.
        let g = mul(q, pow2i((-ji - 1).max(-126)));
        fma(p, pow2i(ji - 1), if plus { g } else { -g })
    }
}

/// sinh(x): max error 3 ulp (CUDA's `sinhf`: 3 ulp); ±inf beyond ~89.4, NaN for NaN.
#[inline(always)]
pub fn sinh(x: f32) -> f32 {
    // Both formulas evaluated, one selected (see `tanh`).
    let a = x.abs();
    let s = mul(x, x);
    // `+ 0.0` keeps the sign of a zero x (see `tanh`).
    let small = fma(fma(horner(s, SINH), s, 0.0), x, x);
    let large = exp_pair(a, false).copysign(x);
    select_gt(1.0, a, small, large)
}

/// cosh(x): max error 2 ulp (CUDA's `coshf`: 2 ulp); +inf beyond ~89.4, NaN for NaN.
#[inline(always)]
pub fn cosh(x: f32) -> f32 {
    exp_pair(x.abs(), true)
}

/// asinh(x): max error 3 ulp (CUDA's `asinhf`: 3 ulp); ±inf for ±inf, NaN for NaN.
#[inline(always)]
pub fn asinh(x: f32) -> f32 {
    let a = x.abs();
    // log1p(a + a²/(1 + √(1 + a²))) (no cancellation near 0, and no branch between small and
    // large arguments); beyond LARGE, where a² may overflow, log(2a) = log1p(a − 1) + ln 2.
    let s = mul(a, a);
    let big = a > LARGE;
    let w = if big {
        a - 1.0
    } else {
        let (r, r_lo) = sqrt_ext(s + 1.0);
        fma(s, recip(1.0 + (r + r_lo)), a)
    };
    let r = log1p_minus(w, if big { -1.0 } else { -0.0 });
    // ±inf and NaN.
    let r = if a < f32::INFINITY { r } else { a };
    r.copysign(x)
}

/// acosh(x): max error 3 ulp (CUDA's `acoshf`: 4 ulp); +inf for +inf, NaN below 1 and for NaN.
#[inline(always)]
pub fn acosh(x: f32) -> f32 {
    // log1p(t + √(t² + 2t)) with t = x − 1 (exact up to 2^24), for every x: no cancellation;
    // beyond LARGE, where t² may overflow, log(2x) = log1p(x − 1) + ln 2.
    let t = x - 1.0;
    let big = x > LARGE;
    // `sqrt.rn` here: with `sqrt_ext` this function measured slower.
    let w = if big { t } else { t + sqrt(fma(t, t, t + t)) };
    let r = log1p_minus(w, if big { -1.0 } else { -0.0 });
    if (1.0..f32::INFINITY).contains(&x) {
        r
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// atanh(x): max error 3 ulp (CUDA's `atanhf`: 3 ulp); ±inf at ±1, NaN beyond and for NaN.
#[inline(always)]
pub fn atanh(x: f32) -> f32 {
    let a = x.abs();
    // atanh a = log1p(2a/(1 − a))/2.
    let r = mul(log1p_minus(quotient(a + a, 1.0 - a), -0.0), 0.5);
    let r = if a < 1.0 {
        r
    } else if a == 1.0 {
        f32::INFINITY
    } else {
        f32::NAN
    };
    r.copysign(x)
}
