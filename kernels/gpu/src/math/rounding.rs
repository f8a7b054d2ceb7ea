//! Exact operations for f32: rounding, sign, remainder, and scaling by powers of two.
//! (`floor`, `ceil`, `trunc`, `rint` are single PTX conversions, in the fast-math file.)

use super::{mul, pow2i, trunc};

/// `x` rounded to the nearest integer, ties away from zero (C's `roundf`), exact.
#[inline(always)]
pub fn round(x: f32) -> f32 {
    let t = trunc(x);
    // x − t is exact; a tie or more moves one away from zero.
    if (x - t).abs() >= 0.5 {
        t + 1.0f32.copysign(x)
    } else {
        t
    }
}

/// The magnitude of `x` with the sign of `y` (bit operations), exact.
#[inline(always)]
pub fn copysign(x: f32, y: f32) -> f32 {
    x.copysign(y)
}

/// `x·2^n`, rounded once (C's `ldexpf`/`scalbnf`): overflow to ±inf, underflow to subnormals.
#[inline(always)]
pub fn ldexp(x: f32, n: i32) -> f32 {
    // At most three exact steps of 2^127 up, or 2^-102 down (staying above the subnormal range
    // until the last step, so the result is rounded once).
    let mut y = x;
    let mut n = n;
    if n > 127 {
        y = mul(y, pow2i(127));
        n -= 127;
        if n > 127 {
            y = mul(y, pow2i(127));
            n = (n - 127).min(127);
        }
    } else if n < -126 {
        y = mul(y, pow2i(-102));
        n += 102;
        if n < -126 {
            y = mul(y, pow2i(-102));
            n = (n + 102).max(-126);
        }
    }
    mul(y, pow2i(n))
}

/// `(m, e)` with `x = m·2^e` and |m| in [1/2, 1) (C's `frexpf`); `(x, 0)` for ±0, ±inf, NaN.
#[inline(always)]
pub fn frexp(x: f32) -> (f32, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (y, bias) = if x.abs() < f32::MIN_POSITIVE {
        (x * 8_388_608.0, -23)
    } else {
        (x, 0)
    };
    let bits = y.to_bits();
    let e = ((bits >> 23) & 0xff) as i32 - 126 + bias;
    (f32::from_bits((bits & 0x807f_ffff) | 0x3f00_0000), e)
}

/// The remainder of `x / y` truncated toward zero (C's `fmodf`), exact; has the sign of `x`.
/// NaN if `y` is 0 or `x` is infinite. Shift-and-subtract over the exponent difference (the
/// loop runs up to 277 times for extreme ratios, like `fmodf` in CUDA's library).
pub fn fmod(x: f32, y: f32) -> f32 {
    let (mut ux, uy0) = (x.to_bits(), y.to_bits());
    let sx = ux & 0x8000_0000;
    let mut ex = ((ux >> 23) & 0xff) as i32;
    let mut ey = ((uy0 >> 23) & 0xff) as i32;
    if uy0 << 1 == 0 || y.is_nan() || ex == 0xff {
        return f32::NAN;
    }
    if ux << 1 <= uy0 << 1 {
        return if ux << 1 == uy0 << 1 { 0.0 * x } else { x };
    }
    // Normalize the significands (subnormals shifted up, exponents going below 1).
    if ex == 0 {
        let lz = (ux << 9).leading_zeros() as i32;
        ex -= lz;
        ux <<= 1 - ex;
    } else {
        ux = (ux & 0x007f_ffff) | 0x0080_0000;
    }
    let mut uy = uy0;
    if ey == 0 {
        let lz = (uy << 9).leading_zeros() as i32;
        ey -= lz;
        uy <<= 1 - ey;
    } else {
        uy = (uy & 0x007f_ffff) | 0x0080_0000;
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
    let lz = ux.leading_zeros() as i32 - 8;
    ux <<= lz;
    ex -= lz;
    // Back to a float: normal, or shifted down into a subnormal (exact: the remainder is
    // smaller than y, so it fits).
    if ex > 0 {
        ux = (ux - 0x0080_0000) | ((ex as u32) << 23);
    } else {
        ux >>= 1 - ex;
    }
    f32::from_bits(ux | sx)
}
