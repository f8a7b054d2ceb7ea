//! `atan_f64`, `atan2_f64`, `asin_f64`, `acos_f64`: fdlibm's `atan` (|x| reduced to
//! |t| ≤ 7/16 around 0, 1/2, 1, 3/2 or ∞, atan of the breakpoint added as hi + lo) with a fitted
//! odd polynomial, selected constants rather than a table; `atan2_f64`, `asin_f64` and
//! `acos_f64` as the f32 [`atan2`](super::atan2), [`asin`](super::asin), [`acos`](super::acos).
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::misc_f64::quotient;
use super::{fma_f64, fnma_f64, horner64, mul64, sqrt_f64};
use core::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

/// (atan t − t)/t³ as a polynomial in t², on t² ≤ (7/16)².
const ATAN: [f64; 12] = [
    0.014_773_184_616_983_806,
    -0.033_128_134_256_069_586,
    0.044_922_592_931_936_56,
    -0.052_166_797_393_136_56,
    0.058_769_464_567_550_61,
    -0.066_662_419_233_599_64,
    0.076_922_855_548_892_86,
    -0.090_909_083_556_025_92,
    0.111_111_110_966_450_38,
    -0.142_857_142_855_668_06,
    0.199_999_999_999_994_1,
    -0.333_333_333_333_333_3,
];
/// (asin √z/√z − 1)/z as a polynomial in z, on z ≤ 1/4.
const ASIN: [f64; 13] = [
    0.028_757_851_367_421_566,
    -0.014_851_887_071_247_204,
    0.017_400_879_442_694_02,
    0.005_457_506_718_640_358,
    0.010_322_814_350_185_78,
    0.011_479_177_415_184_906,
    0.013_971_212_973_552_933,
    0.017_352_392_720_869_973,
    0.022_372_172_942_149_89,
    0.030_381_944_138_531_247,
    0.044_642_857_146_355_43,
    0.074_999_999_999_984_33,
    0.166_666_666_666_666_69,
];
/// atan(1/2), atan(1), atan(3/2), π/2 as hi + lo; π as hi + lo.
const ATAN_HALF: (f64, f64) = (0.463_647_609_000_806_1, 2.269_877_745_296_168_7e-17);
const ATAN_ONE: (f64, f64) = (FRAC_PI_4, 3.061_616_997_868_383e-17);
const ATAN_THREE_HALVES: (f64, f64) = (0.982_793_723_247_329, 1.390_331_103_123_099_8e-17);
const PIO2: (f64, f64) = (FRAC_PI_2, 6.123_233_995_736_766e-17);
const PI_HL: (f64, f64) = (PI, 1.224_646_799_147_353_2e-16);

/// atan a for a ≥ 0 (or NaN).
#[inline(always)]
fn atan_pos(a: f64) -> f64 {
    // The reductions' numerators are exact (Sterbenz); 1 + 1.5a is rounded once. The interval's
    // numerator and denominator are selected and divided once, by a Newton quotient (`div.rn`
    // is a long sequence with a branch to a slow path, and a branch per interval ran each
    // division a warp's arguments needed). Beyond 1e300 the denominator is clamped (the
    // result is π/2 either way; a NaN passes).
    let (n, d, c) = if a < 0.6875 {
        (a + a - 1.0, 2.0 + a, ATAN_HALF)
    } else if a < 1.1875 {
        (a - 1.0, a + 1.0, ATAN_ONE)
    } else if a < 2.4375 {
        (a - 1.5, fma_f64(1.5, a, 1.0), ATAN_THREE_HALVES)
    } else {
        (-1.0, if a > 1e300 { 1e300 } else { a }, PIO2)
    };
    let q = quotient(n, d);
    let (t, (hi, lo)) = if a < 0.4375 { (a, (0.0, 0.0)) } else { (q, c) };
    let s = mul64(t, t);
    // hi + lo + t + t³·P, the small terms first.
    hi + ((mul64(mul64(t, s), horner64(s, ATAN)) + lo) + t)
}

/// atan(x) for f64: max error 2 ulp (CUDA's `atan`: 2 ulp); ±π/2 for ±inf, NaN for NaN.
#[inline(always)]
pub fn atan_f64(x: f64) -> f64 {
    atan_pos(x.abs()).copysign(x)
}

/// atan2(y, x) for f64, the angle of (x, y) in (−π, π]: max error 2 ulp (CUDA's `atan2`:
/// 2 ulp), with C99's special cases as [`atan2`](super::atan2).
#[inline(always)]
pub fn atan2_f64(y: f64, x: f64) -> f64 {
    let (ax, ay) = (x.abs(), y.abs());
    let swap = ay > ax;
    let (n, d) = if swap { (ax, ay) } else { (ay, ax) };
    let t = if d == 0.0 {
        0.0
    } else if n == f64::INFINITY {
        1.0
    } else {
        n / d
    };
    let r = atan_pos(t);
    let neg = x.is_sign_negative();
    let (c_hi, c_lo) = match (swap, neg) {
        (false, false) => (0.0, 0.0),
        (true, _) => PIO2,
        (false, true) => PI_HL,
    };
    let r = if swap != neg { -r } else { r };
    let r = (c_hi + (c_lo + r)).copysign(y);
    if x.is_nan() || y.is_nan() { x + y } else { r }
}

/// asin a for a = |x| as `(r, big)`: r = asin a for a ≤ 1/2, else asin √z with z = (1 − a)/2
/// (asin a = π/2 − 2r). One polynomial in z either way, its argument and leading term
/// selected (as the f32 `asin_parts`): a warp of mixed arguments evaluates it once, not on
/// each side of a branch.
#[inline(always)]
fn asin_parts(a: f64) -> (f64, bool) {
    let big = a > 0.5;
    let z = if big {
        mul64(1.0 - a, 0.5)
    } else {
        mul64(a, a)
    };
    let s = sqrt_f64(z);
    // √z's rounding error (z − s²)/(2s) (below ulp(s)), with 1/(2s) to 2^-8 by one Newton step
    // from its bits: no `div.rn`. 2s ≥ 2^-26 wherever it is taken (z = 0 only at a = 1, where
    // the clamp keeps 0·(1/2s) finite).
    let d = (s + s).max(1e-300);
    let y = f64::from_bits(0x7fde_6238_22fc_16e6_u64.wrapping_sub(d.to_bits()));
    let y = fma_f64(y, fnma_f64(d, y, 1.0), y);
    let s_lo = mul64(fma_f64(-s, s, z), y);
    let (s, s_lo) = if big { (s, s_lo) } else { (a, 0.0) };
    (s + fma_f64(mul64(s, z), horner64(z, ASIN), s_lo), big)
}

/// asin(x) for f64: max error 2 ulp (CUDA's `asin`: 2 ulp); NaN outside [−1, 1].
#[inline(always)]
pub fn asin_f64(x: f64) -> f64 {
    let (r, big) = asin_parts(x.abs());
    // asin a = π/2 − 2·asin √((1 − a)/2) beyond 1/2.
    let r = if big { PIO2.0 + (PIO2.1 - (r + r)) } else { r };
    r.copysign(x)
}

/// acos(x) for f64: max error 2 ulp (CUDA's `acos`: 2 ulp); NaN outside [−1, 1].
#[inline(always)]
pub fn acos_f64(x: f64) -> f64 {
    let (r, big) = asin_parts(x.abs());
    // acos x = π/2 − asin x up to 1/2; beyond, acos a = 2·asin √((1 − a)/2), acos(−a) = π − acos a.
    let r2 = r + r;
    if !big {
        PIO2.0 + (PIO2.1 - r.copysign(x))
    } else if x > 0.0 {
        r2
    } else {
        PI_HL.0 + (PI_HL.1 - r2)
    }
}
