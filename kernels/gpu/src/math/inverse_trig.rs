//! `atan`, `atan2`, `asin`, `acos` for f32: an odd minimax polynomial on a reduced interval
//! (|t| ≤ 1 for atan, |x| ≤ 1/2 for asin), with the complements (π/2 − atan(1/t),
//! π/2 − 2·asin(√((1 − x)/2))) added in two-part constants so they cost under half an ulp.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::{fma, horner, mul, quotient, sqrt_ext};

/// π/2 and π as hi + lo.
const PIO2_HI: f32 = f32::from_bits(0x3fc9_0fdb);
const PIO2_LO: f32 = f32::from_bits(0xb33b_bd2e);
const PI_HI: f32 = f32::from_bits(0x4049_0fdb);
const PI_LO: f32 = f32::from_bits(0xb3bb_bd2e);

/// (atan t − t)/t³ as a polynomial in t², on t² ≤ 1.
const ATAN: [f32; 9] = [
    -0.002_386_997_2,
    0.013_507_771,
    -0.035_871_54,
    0.062_501_69,
    -0.086_568_8,
    0.110_337_645,
    -0.142_785_68,
    0.199_997_4,
    -0.333_333_3,
];
/// (asin √z/√z − 1)/z as a polynomial in z, on z ≤ 1/4.
const ASIN: [f32; 6] = [
    0.033_690_847,
    0.017_149_238,
    0.031_100_662,
    0.044_599_403,
    0.075_000_94,
    0.166_666_66,
];

/// atan t for |t| ≤ 1 (keeps the sign of a zero t).
#[inline(always)]
fn atan_kernel(t: f32) -> f32 {
    let s = mul(t, t);
    // `+ 0.0` keeps the sign of a zero t (see `tanh`).
    fma(fma(horner(s, ATAN), s, 0.0), t, t)
}

/// `(r, big)` with r = asin a for 0 ≤ a ≤ 1 (a = |x|) and big = a > 1/2: one polynomial for
/// both ranges, asin s = s + s³·P(s²), at s = a (z = a²) or, for a > 1/2, at
/// s = √((1 − a)/2) (z = (1 − a)/2, 1 − a exact) with √z as s + lo ([`sqrt_ext`]), then
/// asin a = π/2 − 2·asin s. Selects, no branch: a warp with inputs on both sides runs one
/// polynomial.
#[inline(always)]
fn asin_parts(a: f32) -> (f32, bool) {
    let big = a > 0.5;
    let z = if big { mul(1.0 - a, 0.5) } else { mul(a, a) };
    let (s, lo) = sqrt_ext(z);
    let (s, lo) = if big { (s, lo) } else { (a, 0.0) };
    // The polynomial's term from s + lo rounded (s alone is 2^-17 off).
    (s + fma(mul(s + lo, z), horner(z, ASIN), lo), big)
}

/// atan(x): max error 2 ulp (CUDA's `atanf`: 2 ulp); ±π/2 for ±inf, NaN for NaN.
#[inline(always)]
pub fn atan(x: f32) -> f32 {
    // One kernel evaluation, on x or on 1/|x|: atan a = π/2 − atan(1/a) beyond 1.
    let a = x.abs();
    let big = a > 1.0;
    // 1/a by Newton's method (`div.rn` is a long sequence with a branch to a slow path), a
    // clamped to 2^60: from 2^26 on the result rounds to π/2 whatever the quotient, and the
    // clamp makes 1/inf (and a NaN, which `big` does not take) finite.
    let inv = quotient(1.0, a.min(1.152_921_5e18));
    let r = atan_kernel(if big { inv } else { x });
    if big {
        (PIO2_HI + (PIO2_LO - r)).copysign(x)
    } else {
        r
    }
}

/// atan2(y, x), the angle of the point (x, y) in (−π, π]: max error 3 ulp (CUDA's `atan2f`:
/// 3 ulp), with C99's special cases (±0 and ±inf operands give exact multiples of π/4 with
/// the sign of y; NaN if either is NaN).
#[inline(always)]
pub fn atan2(y: f32, x: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    let swap = ay > ax;
    let (n, d) = if swap { (ax, ay) } else { (ay, ax) };
    // n ≤ d: both zero gives angle 0, both infinite angle π/4.
    let t = if d == 0.0 {
        0.0
    } else if n == f32::INFINITY {
        1.0
    } else {
        n / d
    };
    let r = atan_kernel(t);
    // The angle is c ± r, c one of 0, π/2, π (x < 0 includes x = −0).
    let neg = x.is_sign_negative();
    let (c_hi, c_lo) = match (swap, neg) {
        (false, false) => (0.0, 0.0),
        (true, _) => (PIO2_HI, PIO2_LO),
        (false, true) => (PI_HI, PI_LO),
    };
    let r = if swap != neg { -r } else { r };
    let r = (c_hi + (c_lo + r)).copysign(y);
    if x.is_nan() || y.is_nan() { x + y } else { r }
}

/// asin(x): max error 2 ulp (CUDA's `asinf`: 2 ulp); NaN outside [−1, 1].
#[inline(always)]
pub fn asin(x: f32) -> f32 {
    let a = x.abs();
    let (r, big) = asin_parts(a);
    let r = if big {
        PIO2_HI + (PIO2_LO - (r + r))
    } else {
        r
    };
    // A NaN x gives NaN from the polynomial; beyond 1, the parts are finite.
    if a > 1.0 { f32::NAN } else { r.copysign(x) }
}

/// acos(x): max error 2 ulp (CUDA's `acosf`: 2 ulp); NaN outside [−1, 1].
#[inline(always)]
pub fn acos(x: f32) -> f32 {
    let a = x.abs();
    let (r, big) = asin_parts(a);
    // acos x = π/2 − asin x for |x| ≤ 1/2; beyond, acos a = 2·asin s and acos(−a) = π − acos a.
    let r2 = r + r;
    let r = if !big {
        PIO2_HI + (PIO2_LO - r.copysign(x))
    } else if x > 0.0 {
        r2
    } else {
        PI_HI + (PI_LO - r2)
    };
    if a > 1.0 { f32::NAN } else { r }
}
