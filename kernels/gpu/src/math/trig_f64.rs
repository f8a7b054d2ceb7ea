//! `sin_f64`, `cos_f64`, `sincos_f64`: reduction to r + r_lo with |r| ≤ π/4 and a quadrant
//! (Cody–Waite with π/2 in three parts below 2^20, Payne–Hanek above), then minimax
//! polynomials for sin and cos of r corrected by r_lo (fdlibm's `__sin`/`__cos` structure).
// Polynomial coefficients are fitted values printed to round-trip exactly (some near ln 2 or
// 1/3 are fits, not those constants).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use super::bank::const_bank;
use super::{fma_f64 as fma, mul_hi_u64, mul64};

/// Below this |x|, Cody–Waite reduction with π/2 to 159 bits is accurate.
const FAST_REDUCTION_MAX: f64 = 1_048_576.0;
const_bank! {
/// Cody–Waite's constants: 2/π, then -π/2 in three parts (159 bits).
REDUCTION = "__gpu_math_trig_reduction_f64", [
    f64::from_bits(0x3fe4_5f30_6dc9_c883),
    -f64::from_bits(0x3ff9_21fb_5444_2d18),
    f64::from_bits(0x3c91_a626_3314_5c07),
    f64::from_bits(0xb91f_1976_b7ed_8fbc),
];
}
/// π/2 · 2^-64 as hi + lo.
const PIO2_2M64_HI: f64 = f64::from_bits(0x3bf9_21fb_5444_2d18);
const PIO2_2M64_LO: f64 = f64::from_bits(0x3891_a626_3314_5c07);

/// 2/π in 64-bit words after a zero word, enough for the largest f64 exponent.
const TWO_OVER_PI_64: [u64; 21] = [
    0,
    0xa2f9_836e_4e44_1529,
    0xfc27_57d1_f534_ddc0,
    0xdb62_9599_3c43_9041,
    0xfe51_63ab_debb_c561,
    0xb724_6e3a_424d_d2e0,
    0x0649_2eea_09d1_921c,
    0xfe1d_eb1c_b129_a73e,
    0xe882_35f5_2ebb_4484,
    0xe99c_7026_b45f_7e41,
    0x3991_d639_8353_39f4,
    0x9c84_5f8b_bdf9_283b,
    0x1ff8_97ff_de05_980f,
    0xef2f_118b_5a0a_6d1f,
    0x6d36_7ecf_27cb_09b7,
    0x4f46_3f66_9e5f_ea2d,
    0x7527_bac7_ebe5_f17b,
    0x3d07_39f7_8a52_92ea,
    0x6bfb_5fb1_1f8d_5d08,
    0x5603_3046_fc7b_6bab,
    0xf0cf_bc20_9af4_361d,
];

const_bank! {
/// (sin r − r)/r³ as a polynomial in r², on r² ≤ (π/4)².
SIN = "__gpu_math_sin_f64", [
    1.591_812_929_486_660_8e-10,
    -2.505_113_184_500_362_4e-8,
    2.755_731_610_255_244e-6,
    -1.984_126_983_675_857_4e-4,
    8.333_333_333_330_948e-3,
    -0.166_666_666_666_666_66,
];
}
const_bank! {
/// (cos r − 1 + r²/2)/r⁴ as a polynomial in r², on r² ≤ (π/4)².
COS = "__gpu_math_cos_f64", [
    -1.138_263_242_552_171_7e-11,
    2.087_614_626_840_32e-9,
    -2.755_731_727_172_979_3e-7,
    2.480_158_729_876_569e-5,
    -1.388_888_888_888_739_8e-3,
    4.166_666_666_666_666_4e-2,
];
}

/// `a + b` as hi + lo, exactly (Knuth's two-sum).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bv = s - a;
    (s, (a - (s - bv)) + (b - bv))
}

/// `x = r + r_lo + q·π/2`, |r| ≤ π/4 (about), |r_lo| < 2^-49 (not always below ulp(r): for
/// x near a multiple of π/2 it may exceed r, which the kernels' first-order correction in r_lo
/// takes as it is); only `q mod 4` is meaningful.
/// NaN for ±inf and NaN (one test on the common path: |x| < 2^20 is false for both).
#[inline(always)]
fn reduce(x: f64) -> (f64, f64, i64) {
    if x.abs() < FAST_REDUCTION_MAX {
        const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5·2^52
        // 2/π, -π/2's three parts (PIO2_1 ... PIO2_3, π/2 = PIO2_1 + PIO2_2 + PIO2_3).
        let (two_over_pi, neg_pio2_1) = (REDUCTION::get::<0>(), REDUCTION::get::<1>());
        let (pio2_2, pio2_3) = (REDUCTION::get::<2>(), REDUCTION::get::<3>());
        // j = rint(x·2/π), and as an integer from the sum's low bits (no saturating
        // float-to-integer conversion).
        let k = fma(x, two_over_pi, MAGIC);
        let j = k - MAGIC;
        let q = (k.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64);
        // x − j·PIO2_1 is exact (both multiples of 2^-53, difference below 1). For j = 0 every
        // step below gives x itself and lo = 0, but +0 for x = −0 (`by_quadrant` gives sin its
        // sign back).
        let r1 = fma(j, neg_pio2_1, x);
        let w = mul64(j, pio2_2);
        let w_lo = fma(j, pio2_2, -w);
        let (r, e) = two_sum(r1, -w);
        let lo = e - fma(j, pio2_3, w_lo);
        (r, lo, q)
    } else if x.is_finite() {
        reduce_huge(x)
    } else {
        (f64::NAN, 0.0, 0)
    }
}

/// Payne–Hanek reduction for |x| ≥ 2^20 (finite): the 53-bit significand times the 192 bits
/// of 2/π that matter for its exponent (earlier bits only add multiples of 4 quarter turns),
/// keeping 128 fraction bits.
#[inline(never)]
fn reduce_huge(x: f64) -> (f64, f64, i64) {
    let bits = x.to_bits();
    let m = (bits & 0x000f_ffff_ffff_ffff) | 0x0010_0000_0000_0000;
    let e = ((bits >> 52) & 0x7ff) as i32 - 1075; // x = m·2^e
    let pos = (e + 62) as u32; // window starts at bit e − 1; the table starts with a zero word
    let (i, sh) = ((pos >> 6) as usize, pos & 63);
    let t = &TWO_OVER_PI_64;
    let word = |k: usize| (t[k] << sh) | ((t[k + 1] >> 1) >> (63 - sh));
    let (w0, w1, w2) = (word(i), word(i + 1), word(i + 2));
    // m·(w0:w1:w2): limbs l1 (bits 191..128), l2, l3 of the product, 190 fraction bits.
    let (p2_lo, p2_hi) = (m.wrapping_mul(w2), mul_hi_u64(m, w2));
    let (p1_lo, p1_hi) = (m.wrapping_mul(w1), mul_hi_u64(m, w1));
    let p0_lo = m.wrapping_mul(w0);
    let (l2, c) = p1_lo.overflowing_add(p2_hi);
    let l1 = p0_lo.wrapping_add(p1_hi).wrapping_add(c as u64);
    let l3 = p2_lo;
    let q = (l1 >> 62) as i64;
    let f_hi = (l1 << 2) | (l2 >> 62);
    let f_lo = (l2 << 2) | (l3 >> 62);
    // A fraction ≥ 1/2 reads as negative (f − 1): the next quadrant.
    let q = q + (f_hi >> 63) as i64;
    let fi = f_hi as i64;
    let v_hi = fi as f64;
    let v_lo = fi.wrapping_sub(v_hi as i64) as f64 + mul64(f_lo as f64, 5.421_010_862_427_522e-20);
    // (v_hi + v_lo)·π/2·2^-64 as hi + lo.
    let r = mul64(v_hi, PIO2_2M64_HI);
    let lo = fma(v_hi, PIO2_2M64_HI, -r) + (mul64(v_hi, PIO2_2M64_LO) + mul64(v_lo, PIO2_2M64_HI));
    let (r, lo) = two_sum(r, lo);
    if x < 0.0 {
        (-r, -lo, q.wrapping_neg())
    } else {
        (r, lo, q)
    }
}

/// sin(r + lo) and cos(r + lo) for |r| ≤ π/4, |lo| < 2^-49: the terms of r³ and r² are formed
/// from r alone, lo enters to first order (what that drops, lo²/2 and r·lo², is below 2^-98).
#[inline(always)]
fn kernel(r: f64, lo: f64) -> (f64, f64) {
    let s = mul64(r, r);
    let z = mul64(s, r);
    // sin: r + r³·S(r²) + lo·(1 − r²/2).
    let sin = r + fma(z, SIN::horner(s), fma(mul64(-0.5, s), lo, lo));
    // cos: w = 1 − r²/2 rounded, its error recovered, then r⁴·C(r²) − r·lo.
    let hz = mul64(0.5, s);
    let w = 1.0 - hz;
    // (The subtraction of r·lo by a plain `-`, not a negated fma operand: a negation there
    // is an integer operation of its own.)
    let cos = w + fma(mul64(s, s), COS::horner(s), ((1.0 - w) - hz) - mul64(r, lo));
    (sin, cos)
}

#[inline(always)]
fn by_quadrant(x: f64) -> (f64, f64) {
    let (r, lo, q) = reduce(x);
    let (s, c) = kernel(r, lo);
    // sin(±0) = ±0 (the kernel's sum would give +0).
    let s = if x == 0.0 { x } else { s };
    let (s, c) = if q & 1 != 0 { (c, -s) } else { (s, c) };
    if q & 2 != 0 { (-s, -c) } else { (s, c) }
}

/// For [`tan_f64`](super::tan_f64): `(n, n_lo, d, d_lo)` with tan x = (n + n_lo)/(d + d_lo),
/// the reduced argument's sine and cosine before the kernel's last roundings (r + its
/// correction, w + its correction), swapped and negated in odd quadrants (tan x = −cos r/sin r
/// there). +0 for x = −0, as `reduce`.
#[inline(always)]
pub(super) fn tan_parts(x: f64) -> (f64, f64, f64, f64) {
    let (r, lo, q) = reduce(x);
    let s = mul64(r, r);
    let z = mul64(s, r);
    let sin_lo = fma(z, SIN::horner(s), fma(mul64(-0.5, s), lo, lo));
    let hz = mul64(0.5, s);
    let w = 1.0 - hz;
    let cos_lo = fma(mul64(s, s), COS::horner(s), ((1.0 - w) - hz) - mul64(r, lo));
    if q & 1 != 0 {
        (-w, -cos_lo, r, sin_lo)
    } else {
        (r, sin_lo, w, cos_lo)
    }
}

/// sin(x) for f64, x in radians: max error 1 ulp, every finite x; NaN
/// for ±inf and NaN.
#[inline(always)]
pub fn sin_f64(x: f64) -> f64 {
    by_quadrant(x).0
}

/// cos(x) for f64: max error 1 ulp; NaN for ±inf and NaN.
#[inline(always)]
pub fn cos_f64(x: f64) -> f64 {
    by_quadrant(x).1
}

/// `(sin x, cos x)` for f64 with one range reduction.
#[inline(always)]
pub fn sincos_f64(x: f64) -> (f64, f64) {
    by_quadrant(x)
}
