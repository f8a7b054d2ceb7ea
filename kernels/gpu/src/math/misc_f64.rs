//! `tan_f64`, `cbrt_f64` and `hypot_f64`: the f64 versions of [`tan`](super::tan),
//! [`cbrt`](super::cbrt) and [`hypot`](super::hypot), built the same way (one shared
//! reduction for sin/cos; exact scaling by powers of two, a last Newton step on an exactly
//! computed residual).

use super::trig_f64::tan_parts;
use super::{fma_f64, fms_f64, fnma_f64, mul64, pow2i64, sqrt_f64};

/// tan(x) for f64, x in radians: max error 2 ulp (CUDA's `tan`: 2 ulp), every finite x; NaN
/// for ±inf and NaN. The quotient of the reduced argument's sine and cosine, each as hi + lo
/// (`trig_f64`'s kernel before its last rounding): a quotient of the rounded sin x and cos x
/// reaches 2.07 ulp.
#[inline(always)]
pub fn tan_f64(x: f64) -> f64 {
    let (n, n_lo, d, d_lo) = tan_parts(x);
    // (n + n_lo)/(d + d_lo) without a division (`div.rn.f64` is a long sequence with a branch
    // to a slow path): q = n·(1/d) rounded, then q corrected by its residual
    // (n + n_lo) − q·(d + d_lo) times 1/d (the residual is a tenth of n at most, each of its
    // roundings far below an ulp of q), rounded once.
    let dr = d + d_lo;
    let y = recip_f64(dr.abs()).copysign(dr);
    let q = mul64(n + n_lo, y);
    let res = fnma_f64(q, d_lo, fnma_f64(q, d, n) + n_lo);
    let t = fma_f64(res, y, q);
    // tan(±0) = ±0 (the reduction gives +0).
    if x == 0.0 { x } else { t }
}

/// 1/x for a positive normal x below 2^1022 within about 1 ulp, from IEEE operations only:
/// the bits of a magic constant minus those of x (relative error below 0.06), a Newton step
/// and two third-order steps y·(1 + e + e²), e = 1 − x·y (2^-8.1, 2^-24, 2^-72 before the
/// last rounding).
#[inline(always)]
pub(super) fn recip_f64(x: f64) -> f64 {
    let y = f64::from_bits(0x7fde_6238_22fc_16e6_u64.wrapping_sub(x.to_bits()));
    let y = fma_f64(y, fnma_f64(x, y, 1.0), y);
    let e = fnma_f64(x, y, 1.0);
    let y = fma_f64(y, fma_f64(e, e, e), y);
    let e = fnma_f64(x, y, 1.0);
    fma_f64(y, fma_f64(e, e, e), y)
}

/// t/d for a positive normal d below 2^1021 (and a normal quotient): t·(1/d)
/// corrected by its residual t − q·d (exact by an FMA), within a fraction of an ulp of a
/// correctly rounded quotient.
#[inline(always)]
pub(super) fn quotient(t: f64, d: f64) -> f64 {
    let y = recip_f64(d);
    let q = mul64(t, y);
    fma_f64(fnma_f64(q, d, t), y, q)
}

/// ∛x for f64: max error 1 ulp (CUDA's `cbrt`: 1 ulp), exact for perfect cubes of small
/// integers; ±0, ±inf and NaN map to themselves.
#[inline(always)]
pub fn cbrt_f64(x: f64) -> f64 {
    let a = x.abs();
    let (a, bias) = if a < f64::MIN_POSITIVE {
        (mul64(a, pow2i64(54)), -18)
    } else {
        (a, 0)
    };
    // a = 2^(3k)·m with m in [1, 8): ∛a = 2^k·∛m.
    let bits = a.to_bits();
    let e = (bits >> 52) as i32 - 1023;
    let k = (e + 1026) / 3 - 342; // floor(e/3), the dividend kept positive
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | (((1023 + e - 3 * k) as u64) << 52));
    // No division: r ≈ m^(-1/3) from the high word of m's bits (relative error below 0.035),
    // then two third-order steps r·(1 + ε/3 + 2ε²/9), ε = 1 − m·r³ (errors 2^-12, 2^-34).
    let r = f64::from_bits(((0x553e_f100 - (m.to_bits() >> 32) as u32 / 3) as u64) << 32);
    let r = cbrt_step(m, r);
    let r = cbrt_step(m, r);
    // y = m·r² ≈ ∛m, then a last Newton step y − (y³ − m)/(3y²) on the exact residual (y² and
    // y³ as hi + lo; y³ − m is exact by Sterbenz's lemma), 1/(3y²) as r²/3: the correction,
    // far above an ulp, is accurate to 2^-60 of itself, and y − it is rounded once.
    let r2 = mul64(r, r);
    let y = mul64(m, r2);
    let y2 = mul64(y, y);
    let y2_lo = fms_f64(y, y, y2);
    let y3 = mul64(y2, y);
    let y3_lo = fma_f64(y2_lo, y, fms_f64(y2, y, y3));
    let res = (y3 - m) + y3_lo;
    let y = fnma_f64(res, mul64(r2, 1.0 / 3.0), y);
    let r = mul64(y, pow2i64(k + bias)).copysign(x);
    if x == 0.0 || !x.is_finite() { x } else { r }
}

/// One third-order step for r ≈ m^(-1/3): r·(1 + ε/3 + 2ε²/9) with ε = 1 − m·r³ (the series
/// of (1 − ε)^(-1/3) to ε², relative error about 4.7·δ³ after an error δ).
#[inline(always)]
fn cbrt_step(m: f64, r: f64) -> f64 {
    let eps = fnma_f64(m, mul64(mul64(r, r), r), 1.0);
    fma_f64(r, mul64(eps, fma_f64(eps, 2.0 / 9.0, 1.0 / 3.0)), r)
}

/// √(x² + y²) for f64 without intermediate overflow or underflow: max error 2 ulp (CUDA's
/// `hypot`: 2 ulp); +inf if either is ±inf (even with a NaN), else NaN if either is NaN.
#[inline(always)]
pub fn hypot_f64(x: f64, y: f64) -> f64 {
    let (ax, ay) = (x.abs(), y.abs());
    let (a, b) = if ax > ay { (ax, ay) } else { (ay, ax) };
    // Scaled by a power of two (exact) so that a² neither overflows nor underflows (a in
    // [2^-474, 2^424] after scaling); b² may underflow only where it is below 2^-106 of a².
    let (s, back) = if a > pow2i64(500) {
        (pow2i64(-600), pow2i64(600))
    } else if a < pow2i64(-500) {
        (pow2i64(600), pow2i64(-600))
    } else {
        (1.0, 1.0)
    };
    let (a, b) = (mul64(a, s), mul64(b, s));
    let r = mul64(sqrt_f64(fma_f64(a, a, mul64(b, b))), back);
    if ax == f64::INFINITY || ay == f64::INFINITY {
        f64::INFINITY
    } else if x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        r
    }
}
