//! The few elementary functions the distributions need, written as plain arithmetic with
//! explicit fused multiply-adds (`math::fma`), so that the GPU and the simulator compute the
//! same bits: `sqrt`, division and `fma` are correctly rounded on both, and nothing here is left
//! for the compiler to contract. Accurate to a few ulp, not correctly rounded; the hardware's
//! `_approx` instructions would be faster but differ between the GPU and the simulator.
//!
//! Domains are what the distributions pass: `-2·ln` of `u` in `(0, 1)`, `sincos_quarter_f32`
//! of `a` in `[0, 1]`, `sincos_turns_f64` of `t` in `[0, 1]`, `exp` of `x <= 0`, the square
//! root of `-2·ln u`. The `f64` constants come from the constant bank (`consts`).

use super::consts::*;
use crate::math::{fma, fma_f64, horner, mul, mul64};

/// `-2·ln(x)` for `x` in `(0, 1)` (a normal number): `x = m · 2^e` with `m` in `[√½, √2)`,
/// `g = 2 - 2m` (exact), `-2·ln m = g + g²·R(g)` with `R` a degree-7 near-minimax fit on
/// `[2 - 2√2, 2 - √2]` (relative error 3.1e-8 with its `f32` coefficients), then
/// `-2·ln x = e·(-2 ln 2) - 2·ln m`. No division: Box–Muller's radius needs `-2·ln u` and
/// nothing else, so the factor -2 is folded into the polynomial.
#[inline(always)]
pub fn neg2_ln_f32(x: f32) -> f32 {
    // Coefficients of R, highest degree first, from `fit_coefficients.py` (weighted least
    // squares on Chebyshev nodes in 60-digit arithmetic, reweighted towards the minimax error;
    // each coefficient rounded to f32 and the rest refitted).
    const R: [f32; 8] = [
        f32::from_bits(0x39b2_81c9),
        f32::from_bits(0x3a92_7032),
        f32::from_bits(0x3b18_ca73),
        f32::from_bits(0x3ba9_b0cf),
        f32::from_bits(0x3c4c_68ea),
        f32::from_bits(0x3d00_0248),
        f32::from_bits(0x3daa_ab7b),
        f32::from_bits(0x3e7f_fffd),
    ];
    let ix = x.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let m = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3);
    // e + 127 in the low bits of 2^23: `e` exactly, without an integer-to-float conversion.
    let e = f32::from_bits((ix >> 23) + 0x4b00_0000) - (8_388_608.0 + 127.0);
    let g = fma(m, -2.0, 2.0);
    let l = fma(mul(g, g), horner(g, R), g);
    fma(e, -2.0 * core::f32::consts::LN_2, l)
}

/// ln 2 split as in fdlibm: the upper 32 bits (so `e·LN2_HI` is exact for the exponents here)
/// and the rest.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76); // -2·LN2_LO is `consts::NEG2_LN2_LO`

/// `-2·ln(x)` for `x` in `(0, 1)` (a normal number): `x = m · 2^e` with `m` in `[√½, √2)`,
/// `s = (m-1)/(m+1)`, `ln m = 2s + s·R(s²)` with fdlibm's degree-14 minimax `R` (`e_log.c`,
/// coefficients `Lg1` ... `Lg7`; error below 2^-58.45), the factor -2 folded into the
/// coefficients (exact).
#[inline(always)]
pub fn neg2_ln_f64(x: f64) -> f64 {
    const SQRT_HALF: u64 = 0x3fe6_a09e_667f_3bcd;
    let ix = x.to_bits().wrapping_add(0x3ff0_0000_0000_0000 - SQRT_HALF);
    let m = f64::from_bits((ix & 0x000f_ffff_ffff_ffff) + SQRT_HALF);
    // e + 1023 in the low bits of 2^52: `e` exactly, without an integer-to-float conversion.
    // (2^52 + 1023 from the constant bank: as an immediate its two words took two uniform
    // moves in every iteration of the fill loop.)
    let e = f64::from_bits((ix >> 52) | 0x4330_0000_0000_0000) - k::<EXP_BIAS>();
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = mul64(s, s);
    let mut p = fma_f64(z, k::<LG7>(), k::<LG6>());
    for c in [k::<LG5>(), k::<LG4>(), k::<LG3>(), k::<LG2>(), k::<LG1>()] {
        p = fma_f64(z, p, c);
    }
    let l = fma_f64(mul64(s, z), p, mul64(s, -4.0));
    // e·(-2·LN2_HI) is exact; one rounding for the rest.
    fma_f64(e, k::<NEG2_LN2_HI>(), fma_f64(e, k::<NEG2_LN2_LO>(), l))
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

/// `(sin(π/2·a), cos(π/2·a))` for `a` in `[0, 1]`, both as `v·S(v²)` (`v = a` and `v = 1 - a`,
/// exact), so that each is accurate relative to its own size, also near 0: `S` of degree 4 in
/// `v²` (relative error 2.8e-8, nearly all of it the rounding of π/2 to f32), fitted as
/// [`neg2_ln_f32`]'s. Box–Muller's angle: a quarter turn, the quadrant from two sign bits.
#[inline(always)]
pub fn sincos_quarter_f32(a: f32) -> (f32, f32) {
    const S: [f32; 5] = [
        f32::from_bits(0x3921_3e14),
        f32::from_bits(0xbb99_5081),
        f32::from_bits(0x3da3_363b),
        f32::from_bits(0xbf25_5df0),
        f32::from_bits(0x3fc9_0fdb), // π/2
    ];
    let b = 1.0 - a;
    (mul(a, horner(mul(a, a), S)), mul(b, horner(mul(b, b), S)))
}

/// `√x`, correctly rounded, for `x` in `[2^-100, 2^100]` (Box–Muller's `-2·ln u` is in
/// `[1.2e-7, 33.3]`). On the GPU: the fast path of ptxas's own `sqrt.rn.f32` (an approximate
/// reciprocal square root, then one exact correction step that rounds correctly), without the
/// range test and branch to its slow path that this range never takes; so the bits are those
/// of `sqrt.rn.f32`, and of the host's `sqrt`.
#[inline(always)]
pub fn sqrt_in_range_f32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: arithmetic on registers only.
        unsafe {
            core::arch::asm!(
                "{{ .reg .f32 y, s, h, n, e;",
                "rsqrt.approx.ftz.f32 y, {x};",
                "mul.ftz.f32 s, {x}, y;",
                "mul.ftz.f32 h, y, 0f3F000000;",
                "neg.f32 n, s;",
                "fma.rn.f32 e, n, s, {x};",
                "fma.rn.f32 {r}, e, h, s; }}",
                x = in(reg32) x, r = out(reg32) r,
                options(pure, nomem, nostack),
            )
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::math::sqrt(x)
    }
}

/// `√x`, correctly rounded, for `x` in `[2^-960, 2^1000]` (Box–Muller's `f64` `-2·ln u` is in
/// `[2^-52, 73.4]`). On the GPU: the fast path of ptxas's own `sqrt.rn.f64` (the special
/// function unit's approximate reciprocal square root, one cubic refinement of it, then the
/// exact correction step that rounds correctly), without its range test and branch to the
/// slow path, which this range never takes; so the bits are those of `sqrt.rn.f64`, and of
/// the host's `sqrt`. (ptxas's seed has the approximation's high word and, as its low word,
/// the range test's scratch value; this one a zero low word, the approximation as
/// `rsqrt.approx.f64` returns it.)
#[inline(always)]
pub fn sqrt_in_range_f64(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f64;
        // SAFETY: arithmetic on registers only.
        unsafe {
            core::arch::asm!(
                "{{ .reg .f64 y, t, e, h, s, d, hy; .reg .b32 lo, hi;",
                "rsqrt.approx.ftz.f64 y, {x};",
                "mul.rn.f64 t, y, y;",
                "neg.f64 t, t;",
                "fma.rn.f64 e, {x}, t, 0d3FF0000000000000;",
                "fma.rn.f64 h, e, 0d3FD8000000000000, 0d3FE0000000000000;",
                "mul.rn.f64 t, y, e;",
                "fma.rn.f64 y, h, t, y;",
                "mul.rn.f64 s, {x}, y;",
                "neg.f64 t, s;",
                "fma.rn.f64 d, s, t, {x};",
                "mov.b64 {{lo, hi}}, y;",
                "add.s32 hi, hi, -1048576;",
                "mov.b64 hy, {{lo, hi}};",
                "fma.rn.f64 {r}, d, hy, s; }}",
                x = in(reg64) x, r = out(reg64) r,
                options(pure, nomem, nostack),
            )
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::math::sqrt_f64(x)
    }
}

/// `(sin 2πt, cos 2πt)` for `t` in `[0, 1]`: `4t` rounded to the integer `q` by adding
/// 1.5·2^50 to t (the sum's low bits are `q`, no float-to-int conversion), `r = t - q/4` in `[-1/8, 1/8]`
/// exactly, then fdlibm's minimax kernels on `x = 2πr` in `[-π/4, π/4]` (`k_sin.c`, `k_cos.c`: degree 13
/// and 14, errors below 2^-58 and 2^-58.3), with the quadrant's sign flips made on the sign
/// bits (one logic operation each) rather than by negating doubles.
#[inline(always)]
pub fn sincos_turns_f64(t: f64) -> (f64, f64) {
    // t + 1.5·2^50 rounds t to a multiple of 1/4, q/4, with q in the sum's low bits (the same
    // rounding as 4t + 1.5·2^52; one constant, where fma(t, 4, 1.5·2^52) needed 4 in a
    // register).
    const MAGIC: f64 = 1_688_849_860_263_936.0;
    let n = t + MAGIC;
    let q = n.to_bits() as u32;
    let x = mul64(t - (n - MAGIC), k::<TAU>());
    let y = mul64(x, x);
    let mut ps = fma_f64(y, k::<S6>(), k::<S5>());
    for c in [k::<S4>(), k::<S3>(), k::<S2>(), k::<S1>()] {
        ps = fma_f64(y, ps, c);
    }
    let sin = fma_f64(mul64(x, y), ps, x);
    let mut pc = fma_f64(y, k::<C6>(), k::<C5>());
    for c in [k::<C4>(), k::<C3>(), k::<C2>(), k::<C1>(), -0.5] {
        pc = fma_f64(y, pc, c);
    }
    let cos = fma_f64(y, pc, 1.0);
    // (sin, cos) of x + q·π/2: swapped for odd q, sin negated for q = 2, 3, cos for q = 1, 2.
    let (s, c) = if q & 1 != 0 { (cos, sin) } else { (sin, cos) };
    let flip = |v: f64, sign: u32| f64::from_bits(v.to_bits() ^ ((sign as u64 & 2) << 62));
    (flip(s, q), flip(c, q.wrapping_add(1)))
}
