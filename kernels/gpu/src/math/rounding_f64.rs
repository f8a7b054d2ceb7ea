//! Exact operations for f64: rounding, sign, remainders, and scaling by powers of two — the
//! f32 ones of [`rounding`](super::round) and [`remainder`](super::remainder) on f64 bits.
//! (`floor_f64`, `ceil_f64`, `trunc_f64`, `rint_f64` are single PTX conversions, in the
//! fast-math file; `sqrt_f64` is `sqrt.rn.f64`.)

use super::{mul64, pow2i64, trunc_f64};

const SIGN: u64 = 0x8000_0000_0000_0000;
const MANT: u64 = 0x000f_ffff_ffff_ffff;
const IMPLICIT: u64 = 0x0010_0000_0000_0000;

/// `x` rounded to the nearest integer, ties away from zero (C's `round`), exact.
#[inline(always)]
pub fn round_f64(x: f64) -> f64 {
    let t = trunc_f64(x);
    // x − t is exact; a tie or more moves one away from zero.
    if (x - t).abs() >= 0.5 {
        t + 1.0f64.copysign(x)
    } else {
        t
    }
}

/// The magnitude of `x` with the sign of `y` (bit operations), exact.
#[inline(always)]
pub fn copysign_f64(x: f64, y: f64) -> f64 {
    x.copysign(y)
}

/// `x·2^n`, rounded once (C's `ldexp`/`scalbn`): overflow to ±inf, underflow to subnormals.
#[inline(always)]
pub fn ldexp_f64(x: f64, n: i32) -> f64 {
    // At most three exact steps of 2^1023 up, or 2^-969 down (staying above the subnormal
    // range until the last step, so the result is rounded once).
    let mut y = x;
    let mut n = n;
    if n > 1023 {
        y = mul64(y, pow2i64(1023));
        n -= 1023;
        if n > 1023 {
            y = mul64(y, pow2i64(1023));
            n = (n - 1023).min(1023);
        }
    } else if n < -1022 {
        y = mul64(y, pow2i64(-969));
        n += 969;
        if n < -1022 {
            y = mul64(y, pow2i64(-969));
            n = (n + 969).max(-1022);
        }
    }
    mul64(y, pow2i64(n))
}

/// `(m, e)` with `x = m·2^e` and |m| in [1/2, 1) (C's `frexp`); `(x, 0)` for ±0, ±inf, NaN.
#[inline(always)]
pub fn frexp_f64(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (y, bias) = if x.abs() < f64::MIN_POSITIVE {
        (mul64(x, 18_014_398_509_481_984.0), -54)
    } else {
        (x, 0)
    };
    let bits = y.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32 - 1022 + bias;
    (
        f64::from_bits((bits & (SIGN | MANT)) | 0x3fe0_0000_0000_0000),
        e,
    )
}

/// The remainder of `x / y` truncated toward zero (C's `fmod`), exact; has the sign of `x`.
/// NaN if `y` is 0 or `x` is infinite. Shift-and-subtract over the exponent difference (the
/// loop runs up to 2,097 times for extreme ratios, like `fmod` in CUDA's library).
pub fn fmod_f64(x: f64, y: f64) -> f64 {
    let (mut ux, uy0) = (x.to_bits(), y.to_bits());
    let sx = ux & SIGN;
    let mut ex = ((ux >> 52) & 0x7ff) as i32;
    let mut ey = ((uy0 >> 52) & 0x7ff) as i32;
    if uy0 << 1 == 0 || y.is_nan() || ex == 0x7ff {
        return f64::NAN;
    }
    if ux << 1 <= uy0 << 1 {
        return if ux << 1 == uy0 << 1 { 0.0 * x } else { x };
    }
    // Normalize the significands (subnormals shifted up, exponents going below 1).
    if ex == 0 {
        let lz = (ux << 12).leading_zeros() as i32;
        ex -= lz;
        ux <<= 1 - ex;
    } else {
        ux = (ux & MANT) | IMPLICIT;
    }
    let mut uy = uy0;
    if ey == 0 {
        let lz = (uy << 12).leading_zeros() as i32;
        ey -= lz;
        uy <<= 1 - ey;
    } else {
        uy = (uy & MANT) | IMPLICIT;
    }
    while ex > ey {
        let (d, borrow) = ux.overflowing_sub(uy);
        if !borrow {
            if d == 0 {
                return 0.0 * x;
            }
            ux = d;
        }
        ux <<= 1;
        ex -= 1;
    }
    let (d, borrow) = ux.overflowing_sub(uy);
    if !borrow {
        if d == 0 {
            return 0.0 * x;
        }
        ux = d;
    }
    let lz = ux.leading_zeros() as i32 - 11;
    ux <<= lz;
    ex -= lz;
    // Back to a float: normal, or shifted down into a subnormal (exact: the remainder is
    // smaller than y, so it fits).
    if ex > 0 {
        ux = (ux - IMPLICIT) | ((ex as u64) << 52);
    } else {
        ux >>= 1 - ex;
    }
    f64::from_bits(ux | sx)
}

/// The IEEE 754 remainder x − n·y, n = x/y rounded to the nearest integer (ties to even),
/// exact (C's `remainder`, CUDA: 0 ulp); its magnitude is at most |y|/2 and a zero result has
/// the sign of x. NaN for y = ±0, x = ±inf or a NaN; x for y = ±inf.
#[inline(always)]
pub fn remainder_f64(x: f64, y: f64) -> f64 {
    let ay = y.abs();
    // |x| mod 2|y| (same quotient parity as x/y), then at most two exact subtractions of |y|.
    let r = if ay <= f64::MAX * 0.5 {
        fmod_f64(x, ay + ay)
    } else {
        x
    };
    let r = r.abs();
    let r = if ay < 2.0 * f64::MIN_POSITIVE {
        // |y|/2 would round: compare 2r (exact) with |y|.
        if r + r > ay {
            let r = r - ay;
            if r + r >= ay { r - ay } else { r }
        } else {
            r
        }
    } else {
        let h = mul64(ay, 0.5);
        if r > h {
            let r = r - ay;
            if r >= h { r - ay } else { r }
        } else {
            r
        }
    };
    let r = f64::from_bits(r.to_bits() ^ (x.to_bits() & SIGN));
    if y == 0.0 || x.is_infinite() || x.is_nan() || y.is_nan() {
        f64::NAN
    } else if ay == f64::INFINITY {
        x
    } else {
        r
    }
}
