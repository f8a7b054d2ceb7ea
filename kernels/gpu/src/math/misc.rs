//! `tan`, `cbrt`, `hypot`, `remainder`, `powi` for f32, built on the reductions of the other
//! modules ([`sincos`], [`pow`], [`fmod`]) or on exact scaling by powers of two.

use super::{fma, fmod, mul, pow, pow2i, sincos, sqrt};

/// tan(x), x in radians: max error 4 ulp (CUDA's `tanf`: 4 ulp), every finite x; NaN for ±inf
/// and NaN. sin/cos after one shared range reduction: near a pole the small one of the two is
/// the polynomial of the reduced argument, accurate to its last bits.
#[inline(always)]
pub fn tan(x: f32) -> f32 {
    let (s, c) = sincos(x);
    s / c
}

/// Magic constant for the first approximation of a cube root from its argument's bits (the
/// exponent divided by 3, with the bias; FreeBSD's `cbrtf`).
const CBRT_MAGIC: u32 = 709_958_130;

/// ∛x: max error 1 ulp (CUDA's `cbrtf`: 1 ulp), exact for perfect cubes of small integers;
/// ±0, ±inf and NaN map to themselves.
#[inline(always)]
pub fn cbrt(x: f32) -> f32 {
    let a = x.abs();
    let (a, bias) = if a < f32::MIN_POSITIVE {
        (mul(a, 16_777_216.0), -8)
    } else {
        (a, 0)
    };
    // a = 2^(3k)·m with m in [1, 8): ∛a = 2^k·∛m.
    let bits = a.to_bits();
    let e = (bits >> 23) as i32 - 127;
    let k = (e + 129) / 3 - 43; // floor(e/3), the dividend kept positive
    let m = f32::from_bits((bits & 0x007f_ffff) | (((127 + e - 3 * k) as u32) << 23));
    // Five correct bits, then two Halley steps y·(y³ + 2m)/(2y³ + m) (cubic convergence).
    let mut y = f32::from_bits(m.to_bits() / 3 + CBRT_MAGIC);
    for _ in 0..2 {
        let y3 = mul(mul(y, y), y);
        y = mul(y, (y3 + (m + m)) / (y3 + (y3 + m)));
    }
    // A last Newton step on the exact residual y³ − m (y² and y³ as hi + lo; y³ − m is exact
    // by Sterbenz's lemma): the correction is below an ulp, rounded once.
    let y2 = mul(y, y);
    let y2_lo = fma(y, y, -y2);
    let y3 = mul(y2, y);
    let y3_lo = fma(y2, y, -y3) + mul(y2_lo, y);
    let res = (y3 - m) + y3_lo;
    let y = y - res / mul(3.0, y2);
    let r = mul(y, pow2i(k + bias)).copysign(x);
    if x == 0.0 || !x.is_finite() { x } else { r }
}

/// √(x² + y²) without intermediate overflow or underflow: max error 2 ulp (CUDA's `hypotf`:
/// 3 ulp); +inf if either is ±inf (even with a NaN), else NaN if either is NaN.
#[inline(always)]
pub fn hypot(x: f32, y: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    let (a, b) = if ax > ay { (ax, ay) } else { (ay, ax) };
    // Scaled by a power of two (exact) so that a² neither overflows nor underflows (a in
    // [2^-49, 2^58] after scaling); b² may underflow only where it is below 2^-48 of a².
    let s = if a > 1.152_921_5e18 {
        pow2i(-70)
    } else if a < 8.673_617e-19 {
        pow2i(100)
    } else {
        1.0
    };
    let (a, b) = (mul(a, s), mul(b, s));
    let r = sqrt(fma(a, a, mul(b, b)));
    let r = mul(r, 1.0 / s);
    if ax == f32::INFINITY || ay == f32::INFINITY {
        f32::INFINITY
    } else if x.is_nan() || y.is_nan() {
        f32::NAN
    } else {
        r
    }
}

/// The IEEE 754 remainder x − n·y, n = x/y rounded to the nearest integer (ties to even),
/// exact (C's `remainderf`, CUDA: 0 ulp); its magnitude is at most |y|/2 and a zero result has
/// the sign of x. NaN for y = ±0, x = ±inf or a NaN; x for y = ±inf.
#[inline(always)]
pub fn remainder(x: f32, y: f32) -> f32 {
    let ay = y.abs();
    // |x| mod 2|y| (same quotient parity as x/y), then at most two exact subtractions of |y|.
    let r = if ay <= f32::MAX * 0.5 {
        fmod(x, ay + ay)
    } else {
        x
    };
    let r = r.abs();
    let r = if ay < 2.0 * f32::MIN_POSITIVE {
        // |y|/2 would round: compare 2r (exact) with |y|.
        if r + r > ay {
            let r = r - ay;
            if r + r >= ay { r - ay } else { r }
        } else {
            r
        }
    } else {
        let h = mul(ay, 0.5);
        if r > h {
            let r = r - ay;
            if r >= h { r - ay } else { r }
        } else {
            r
        }
    };
    let r = f32::from_bits(r.to_bits() ^ (x.to_bits() & 0x8000_0000));
    if y == 0.0 || x.is_infinite() || x.is_nan() || y.is_nan() {
        f32::NAN
    } else if ay == f32::INFINITY {
        x
    } else {
        r
    }
}

/// x^n for an integer n: max error 3 ulp (1 ulp for |n| < 2^24, where it is [`pow`] with an
/// exact f32 exponent; beyond, the product of two `pow`s), with `pow`'s special cases (x^0 = 1, signs by the parity of n).
#[inline(always)]
pub fn powi(x: f32, n: i32) -> f32 {
    let m = n.unsigned_abs();
    if m < 1 << 24 {
        return pow(x, n as f32);
    }
    // n = hi + lo, both exact in f32 and of n's sign (so x^hi and x^lo over- or underflow
    // together); hi is even, lo carries the parity.
    let (hi, lo) = ((m & !0xff) as f32, (m & 0xff) as f32);
    let (hi, lo) = if n < 0 { (-hi, -lo) } else { (hi, lo) };
    mul(pow(x, hi), pow(x, lo))
}
