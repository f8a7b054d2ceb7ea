//! The few elementary functions the distributions need, written as plain arithmetic with
//! explicit fused multiply-adds (`math::fma`), so that the GPU and the simulator compute the
//! same bits: `sqrt`, division and `fma` are correctly rounded on both, and nothing here is left
//! for the compiler to contract. Accurate to a few ulp, not correctly rounded; the hardware's
//! `_approx` instructions would be faster but differ between the GPU and the simulator.
//!
//! Domains are what the distributions pass: `ln` of a positive normal number, `sincos_turns` of
//! `t` in `[0, 1]`, `exp` of `x <= 0`.

use crate::math::{fma, fma_f64};

/// `ln(x)` for a positive normal `x`: `x = m · 2^e` with `m` in `[√½, √2)`, then
/// `ln m = 2·atanh(s)`, `s = (m-1)/(m+1)`, by its odd series (`|s| < 0.172`).
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    let ix = x.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let e = (ix >> 23) as i32 - 0x7f;
    let m = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let mut p = fma(z, 2.0 / 9.0, 2.0 / 7.0);
    p = fma(z, p, 2.0 / 5.0);
    p = fma(z, p, 2.0 / 3.0);
    let ln_m = fma(s * z, p, s + s);
    fma(e as f32, core::f32::consts::LN_2, ln_m)
}

/// ln 2 split as in fdlibm: the upper 32 bits (so `e·LN2_HI` is exact for the exponents here)
/// and the rest.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);

/// `ln(x)` for a positive normal `x`, as [`ln_f32`] with ten terms of the series.
#[inline(always)]
pub fn ln_f64(x: f64) -> f64 {
    const SQRT_HALF: u64 = 0x3fe6_a09e_667f_3bcd;
    let ix = x.to_bits().wrapping_add(0x3ff0_0000_0000_0000 - SQRT_HALF);
    let e = (ix >> 52) as i64 - 0x3ff;
    let m = f64::from_bits((ix & 0x000f_ffff_ffff_ffff) + SQRT_HALF);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let mut p = 2.0 / 21.0;
    for k in (1..10).rev() {
        p = fma_f64(z, p, 2.0 / (2 * k + 1) as f64);
    }
    let ln_m = fma_f64(s * z, p, s + s);
    let e = e as f64;
    e * LN2_HI + fma_f64(e, LN2_LO, ln_m)
}

/// `exp(x)` for `x <= 0` (0 below -708): `x = k·ln 2 + r`, `|r| <= ln 2 / 2`, Taylor to `r^13`.
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    if x < -708.0 {
        return 0.0;
    }
    let k = (x * core::f64::consts::LOG2_E - 0.5) as i32; // x <= 0: truncation rounds
    let kf = k as f64;
    let r = fma_f64(-kf, LN2_LO, fma_f64(-kf, LN2_HI, x));
    let mut p = 1.0 / 6_227_020_800.0; // 1/13!
    let mut fact = 6_227_020_800.0;
    for i in (0..13).rev() {
        fact /= (i + 1) as f64; // i! exactly (all below 2^53)
        p = fma_f64(p, r, 1.0 / fact);
    }
    p * f64::from_bits(((k + 1023) as u64) << 52)
}

/// `(sin 2πt, cos 2πt)` for `t` in `[0, 1]`: the quadrant comes off exactly (`t - q/4`), then
/// Taylor polynomials on `[-π/4, π/4]`.
#[inline(always)]
pub fn sincos_turns_f32(t: f32) -> (f32, f32) {
    // Round 4t to an integer by adding 1.5·2^23: its low bits are q, and no float-to-int
    // conversion (with Rust's saturation checks) is needed. r = t - q/4 is exact.
    const MAGIC: f32 = 12_582_912.0;
    let k = fma(t, 4.0, MAGIC);
    let q = k.to_bits();
    let x = fma(k - MAGIC, -0.25, t) * core::f32::consts::TAU;
    let x2 = x * x;
    let mut s = fma(x2, 1.0 / 362_880.0, -1.0 / 5040.0);
    s = fma(x2, s, 1.0 / 120.0);
    s = fma(x2, s, -1.0 / 6.0);
    let sin = fma(x * x2, s, x);
    let mut c = fma(x2, 1.0 / 40_320.0, -1.0 / 720.0);
    c = fma(x2, c, 1.0 / 24.0);
    c = fma(x2, c, -0.5);
    let cos = fma(x2, c, 1.0);
    quadrant(q, sin, cos)
}

/// `(sin 2πt, cos 2πt)` for `t` in `[0, 1]`, as [`sincos_turns_f32`] to `x^17` / `x^18`.
#[inline(always)]
pub fn sincos_turns_f64(t: f64) -> (f64, f64) {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5·2^52, as in sincos_turns_f32
    let k = fma_f64(t, 4.0, MAGIC);
    let q = k.to_bits() as u32;
    let x = fma_f64(k - MAGIC, -0.25, t) * core::f64::consts::TAU;
    let x2 = x * x;
    // sin x = x + Σ_{k=1..8} (-1)^k x^(2k+1) / (2k+1)!, by Horner in x² from k = 8.
    let mut fact = 355_687_428_096_000.0f64; // 17!
    let mut s = 1.0 / fact;
    for k in (1..8).rev() {
        fact /= ((2 * k + 3) * (2 * k + 2)) as f64; // (2k+1)!, exact
        s = fma_f64(x2, s, if k % 2 == 1 { -1.0 } else { 1.0 } / fact);
    }
    let sin = fma_f64(x * x2, s, x);
    // cos x = 1 + Σ_{k=1..9} (-1)^k x^(2k) / (2k)!, from k = 9.
    let mut fact = 6_402_373_705_728_000.0f64; // 18!
    let mut c = -1.0 / fact;
    for k in (1..9).rev() {
        fact /= ((2 * k + 2) * (2 * k + 1)) as f64; // (2k)!, exact
        c = fma_f64(x2, c, if k % 2 == 1 { -1.0 } else { 1.0 } / fact);
    }
    let cos = fma_f64(x2, c, 1.0);
    quadrant(q, sin, cos)
}

/// `(sin, cos)` of `θ + q·π/2` from those of `θ`, without branches: swap for odd `q`, then
/// flip signs (sin for q = 2, 3; cos for q = 1, 2).
#[inline(always)]
fn quadrant<F: Copy + core::ops::Neg<Output = F>>(q: u32, sin: F, cos: F) -> (F, F) {
    let (s, c) = if q & 1 != 0 { (cos, sin) } else { (sin, cos) };
    let s = if q & 2 != 0 { -s } else { s };
    let c = if q.wrapping_add(1) & 2 != 0 { -c } else { c };
    (s, c)
}
