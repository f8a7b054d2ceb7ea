//! `sin`, `cos`, `sincos` for f32: reduction to r in [-π/4, π/4] and a quadrant, then a
//! minimax polynomial for sin or cos of r (CUDA's `sinf`/`cosf` structure).
// Polynomial coefficients are fitted values printed to round-trip exactly (some near ln 2 or
// 1/3 are fits, not those constants).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use super::{TWO_OVER_PI, fma, horner, mul, rint, rint_mul};

/// Below this |x|, the three-constant Cody–Waite reduction is accurate (CUDA's bound).
const FAST_REDUCTION_MAX: f32 = 105_615.0;
const TWO_OVER_PI_F: f32 = 0.636_619_77;
/// π/2 = `PIO2_HI + PIO2_MID + PIO2_LO` to 72 bits.
const PIO2_HI: f32 = f32::from_bits(0x3fc9_0fdb);
const PIO2_MID: f32 = f32::from_bits(0xb33b_bd2e);
const PIO2_LO: f32 = f32::from_bits(0xa6f7_2ced);
/// π/2 · 2^-64 as `HI + LO`: turns a 64-bit fixed-point fraction of a quarter turn into radians.
const PIO2_2M64_HI: f32 = f32::from_bits(0x1fc9_0fdb);
const PIO2_2M64_LO: f32 = f32::from_bits(0x933b_bd2e);

/// (sin r − r)/r³ as a polynomial in r², on r² ≤ (π/4)².
const SIN: [f32; 3] = [-1.958_789_1e-4, 8.332_748e-3, -0.166_666_64];
/// (cos r − 1 + r²/2)/r⁴ as a polynomial in r², on r² ≤ (π/4)².
const COS: [f32; 3] = [2.454_794_2e-5, -1.388_830_2e-3, 4.166_666_4e-2];

/// `x = r + q·π/2` with |r| ≤ π/4 (to within an ulp); only `q mod 4` is meaningful. NaN for
/// ±inf and NaN. The three-constant reduction is computed for every x and replaced by the
/// rare path's result only beyond [`FAST_REDUCTION_MAX`] (or for a non-finite x): one branch an
/// element, around a call, instead of one around each path and one for non-finite x.
#[inline(always)]
fn reduce(x: f32) -> (f32, i32) {
    let j = rint_mul(x, TWO_OVER_PI_F);
    // x − j·PIO2_HI is exact (both are multiples of 2^-24 and the difference is below 1).
    let r = fma(j, -PIO2_HI, x);
    let r = fma(j, -PIO2_MID, r);
    let r = fma(j, -PIO2_LO, r);
    // For j = 0, x itself: keeps the sign of a zero x.
    let r = if j == 0.0 { x } else { r };
    if x.abs() <= FAST_REDUCTION_MAX {
        (r, j as i32)
    } else {
        reduce_rare(x)
    }
}

/// [`reduce`] beyond [`FAST_REDUCTION_MAX`]: Payne–Hanek for a finite x, NaN otherwise.
#[inline(never)]
fn reduce_rare(x: f32) -> (f32, i32) {
    if x.is_finite() {
        reduce_huge(x)
    } else {
        (f32::NAN, 0)
    }
}

/// Payne–Hanek reduction for |x| > [`FAST_REDUCTION_MAX`] (finite): multiplies the 24-bit
/// significand by the 96 bits of 2/π that matter for its exponent, in 32-bit limbs. Bits of 2/π
/// before the window only add multiples of 4 quarter turns; bits after it change the result
/// by less than 2^-70 quarter turns.
#[inline(always)]
fn reduce_huge(x: f32) -> (f32, i32) {
    let bits = x.to_bits();
    let m = (bits & 0x007f_ffff) | 0x0080_0000;
    // x = m·2^e; the window starts at bit e − 1 of 2/π (bit 1 is the first after the point).
    let e = ((bits >> 23) & 0xff) as i32 - 150;
    let pos = (e + 30) as u32; // e - 1 + 31: the table starts with a zero word
    let (i, sh) = ((pos >> 5) as usize, pos & 31);
    let word = |k: usize| (TWO_OVER_PI[k] << sh) | ((TWO_OVER_PI[k + 1] >> 1) >> (31 - sh));
    let (w0, w1, w2) = (word(i), word(i + 1), word(i + 2));
    // m·w as a 120-bit product with 94 fraction bits.
    let p2 = m as u64 * w2 as u64;
    let p1 = m as u64 * w1 as u64 + (p2 >> 32);
    let p0 = m as u64 * w0 as u64 + (p1 >> 32);
    let (r1, r2, r3) = (p0 as u32, p1 as u32, p2 as u32);
    // The top 64 fraction bits; read as signed, fractions ≥ 1/2 become f − 1 (next quadrant).
    let frac = ((r1 as u64) << 34) | ((r2 as u64) << 2) | ((r3 as u64) >> 30);
    let q = (r1 >> 30) as i32 + (frac >> 63) as i32;
    let f = frac as i64;
    // f in radians as a double-f32 product, rounded once at the end.
    let hi = f as f32;
    let lo = f.wrapping_sub(hi as i64) as f32;
    let p = mul(hi, PIO2_2M64_HI);
    let err = fma(hi, PIO2_2M64_HI, -p);
    let r = p + fma(hi, PIO2_2M64_LO, fma(lo, PIO2_2M64_HI, err));
    if x < 0.0 {
        (-r, q.wrapping_neg())
    } else {
        (r, q)
    }
}

/// sin r and cos r for |r| ≤ π/4.
#[inline(always)]
fn kernel(r: f32) -> (f32, f32) {
    let s = mul(r, r);
    // `+ 0.0` makes z +0 for r = ±0, so sin keeps the sign of zero.
    let z = fma(horner(s, SIN), s, 0.0);
    let sin = fma(z, r, r);
    let c = fma(horner(s, COS), s, -0.5);
    let cos = fma(c, s, 1.0);
    (sin, cos)
}

/// sin and cos of x from the reduced argument, by quadrant.
#[inline(always)]
fn by_quadrant(x: f32) -> (f32, f32) {
    let (r, q) = reduce(x);
    let (s, c) = kernel(r);
    let (s, c) = if q & 1 != 0 { (c, -s) } else { (s, c) };
    if q & 2 != 0 { (-s, -c) } else { (s, c) }
}

/// sin(x), x in radians: max error 2 ulp (CUDA's `sinf`: 2 ulp), every finite x; NaN for ±inf
/// and NaN.
#[inline(always)]
pub fn sin(x: f32) -> f32 {
    by_quadrant(x).0
}

/// cos(x), x in radians: max error 2 ulp (CUDA's `cosf`: 2 ulp), every finite x; NaN for ±inf
/// and NaN.
#[inline(always)]
pub fn cos(x: f32) -> f32 {
    by_quadrant(x).1
}

/// `(sin x, cos x)` with one range reduction, each as accurate as [`sin`] and [`cos`].
#[inline(always)]
pub fn sincos(x: f32) -> (f32, f32) {
    by_quadrant(x)
}

/// (sin πr − πr)/r³ and (cos πr − 1)/r² as polynomials in r², on r² ≤ 1/16.
const SINPI: [f32; 4] = [8.122_957_5e-2, -0.599_228_8, 2.550_163_5, -5.167_712_7];
const COSPI: [f32; 5] = [
    -2.550_705e-2,
    0.235_314_26,
    -1.335_262_4,
    4.058_712,
    -4.934_802,
];
/// π as hi + lo.
const PI_HI: f32 = f32::from_bits(0x4049_0fdb);
const PI_LO: f32 = f32::from_bits(0xb3bb_bd2e);

/// sin(πx) and cos(πx): the reduction `x = r + q/2` is exact, so no Payne–Hanek is needed.
#[inline(always)]
fn by_quadrant_pi(x: f32) -> (f32, f32) {
    let ax = x.abs();
    // q = rint(2x) (one `cvt.rni`); from 2^24 on, x is even: quadrant 0.
    let q = rint(mul(x, 2.0));
    // From 2^23 on x is an integer: r = 0 (NaN for ±inf, through x·0).
    let r = if ax < 8_388_608.0 {
        x - mul(q, 0.5)
    } else {
        mul(x, 0.0)
    };
    let qi = if ax < 16_777_216.0 { q as i32 } else { 0 };
    let s = mul(r, r);
    // πr as hi + lo, then the r³ part.
    let hi = mul(r, PI_HI);
    let lo = fma(r, PI_HI, -hi) + mul(r, PI_LO);
    let sin = hi + fma(mul(s, r), horner(s, SINPI), lo);
    let cos = fma(s, horner(s, COSPI), 1.0);
    let (sin, cos) = if qi & 1 != 0 { (cos, -sin) } else { (sin, cos) };
    let (sin, cos) = if qi & 2 != 0 {
        (-sin, -cos)
    } else {
        (sin, cos)
    };
    // Exact zeros: sinpi(n) has the sign of n, cospi(n + 1/2) is +0 (IEEE 754 sinPi/cosPi).
    let sin = if sin == 0.0 { 0.0f32.copysign(x) } else { sin };
    let cos = if cos == 0.0 { 0.0 } else { cos };
    (sin, cos)
}

/// sin(πx): max error 1 ulp, every finite x (exactly ±0 at integers); NaN for ±inf and NaN.
#[inline(always)]
pub fn sinpi(x: f32) -> f32 {
    by_quadrant_pi(x).0
}

/// cos(πx): max error 1 ulp, every finite x (exactly +0 at half-integers); NaN for ±inf and NaN.
#[inline(always)]
pub fn cospi(x: f32) -> f32 {
    by_quadrant_pi(x).1
}
