//! `pow` for f32 in f32 arithmetic: `x^y = 2^(y·log2 x)` with log2 x and the product carried as
//! unevaluated sums of two f32 (hi + lo, about 48 bits), since an error of δ in y·log2 x
//! becomes a relative error of δ·ln 2 in the result and y·log2 x reaches ±150.
// Polynomial coefficients are fitted values printed to round-trip exactly (some near ln 2 or
// 1/3 are fits, not those constants).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use super::exp_log::EXP2;
use super::{fma, fms, fnma, horner, mul, pow2i, trunc};

/// 1/3 and 2·log2(e) as hi + lo.
const THIRD_HI: f32 = f32::from_bits(0x3eaa_aaab);
const THIRD_LO: f32 = f32::from_bits(0xb22a_aaab);
const K_HI: f32 = f32::from_bits(0x4038_aa3b);
const K_LO: f32 = f32::from_bits(0x3325_7060);
/// (atanh u − u − u³/3)/u⁵ as a polynomial in u² (Taylor: 1/5, 1/7, ...; |u| ≤ 0.172).
const ATANH: [f32; 4] = [1.0 / 11.0, 1.0 / 9.0, 1.0 / 7.0, 1.0 / 5.0];

/// log2(x) as hi + lo for positive finite x (subnormals included), relative error about 2^-44:
/// x = 2^i·m with m in [√2/2, √2), log2 m = 2·log2(e)·atanh(u) with u = (m − 1)/(m + 1), whose
/// first two terms (u + u³/3) are carried in hi + lo arithmetic.
#[inline(always)]
pub(super) fn log2_ext(x: f32) -> (f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let (x, bias) = if sub {
        (mul(x, 8_388_608.0), -23.0)
    } else {
        (x, 0.0)
    };
    log2_ext_scaled(x, bias)
}

/// log2(x) + bias as hi + lo for a positive normal x ([`log2_ext`] after its scaling of
/// subnormals; `bias` is 0 or -23).
#[inline(always)]
fn log2_ext_scaled(x: f32, bias: f32) -> (f32, f32) {
    let ia = x.to_bits() as i32;
    let e = ia.wrapping_sub(0x3f35_04f3) & (0xff80_0000_u32 as i32);
    let m = f32::from_bits(ia.wrapping_sub(e) as u32);
    let i = (e >> 23) as f32 + bias;
    // u = a/(a + 2) with a = m − 1 (exact).
    let a = m - 1.0;
    // No division (`rcp.rn`/`div.rn` are long sequences with a branch to a slow path): 1/d for
    // d = a + 2 rounded by Newton's method from a linear seed, u = a·(1/d) within about 2 ulp
    // of the quotient. Its residual a − u·(a + 2) = (a − 2u) − u·a, where a − 2u is exact
    // (2u lies within a factor 2 of a), rounded once, times 1/d, is u_lo: u + u_lo is
    // a/(a + 2) to ~2^-45.
    let rcp = recip_d(a + 2.0);
    let u = mul(a, rcp);
    let u_lo = mul(fnma(u, a, fma(-2.0, u, a)), rcp);
    // u², u³, u³/3 as hi + lo.
    let u2 = mul(u, u);
    // Each lo part is its error-free product term plus the cross terms, summed by fmas.
    let u2_lo = fma(mul(2.0, u), u_lo, fms(u, u, u2));
    let u3 = mul(u, u2);
    let u3_lo = fma(u_lo, u2, fma(u, u2_lo, fms(u, u2, u3)));
    let t3 = mul(u3, THIRD_HI);
    let t3_lo = fma(u3_lo, THIRD_HI, fma(u3, THIRD_LO, fms(u3, THIRD_HI, t3)));
    let rest = mul(mul(u3, u2), horner(u2, ATANH));
    // atanh u = s + s_lo; |t3| < |u|.
    let s = u + t3;
    let s_lo = ((u - s) + t3) + (u_lo + t3_lo + rest);
    // log2 m = K·atanh u, then + i (|i| ≥ 1 > |l| or i = 0).
    let l = mul(s, K_HI);
    let l_lo = fma(s_lo, K_HI, fma(s, K_LO, fms(s, K_HI, l)));
    let hi = i + l;
    let lo = ((i - hi) + l) + l_lo;
    let h = hi + lo;
    (h, (hi - h) + lo)
}

/// 1/d for d in [1.7071, 2.4143] (a + 2 above) to within about 1 ulp, from IEEE operations
/// only (so the same bits on the GPU and the host): the minimax linear seed c0 − c1·d
/// (relative error 2^-6.06 at most), then two Newton steps r + r·(1 − d·r), each squaring the
/// relative error (2^-12.1, then 2^-24.2 before the last rounding).
#[inline(always)]
pub(super) fn recip_d(d: f32) -> f32 {
    const C0: f32 = f32::from_bits(0x3f7c_2cfe); // 0.98506153
    const C1: f32 = f32::from_bits(0x3e74_c09c); // 0.239016
    let r = fnma(d, C1, C0);
    let r = fma(r, fnma(d, r, 1.0), r);
    fma(r, fnma(d, r, 1.0), r)
}

/// 2^(p + p_lo), |p_lo| ≤ ulp(p): overflow to +inf above 2^128, +0 below 2^-150.
#[inline(always)]
pub(super) fn exp2_ext(p: f32, p_lo: f32) -> f32 {
    // Clamped with selects (min/max), not branches; a clamped p drops p_lo (an infinite p
    // has a NaN p_lo).
    let pc = p.clamp(-152.0, 130.0);
    let p_lo = if pc == p { p_lo } else { 0.0 };
    let (r, j) = exp2_parts(pc, p_lo);
    if (j + 125) as u32 <= 252 {
        scale_normal(r, j)
    } else {
        scale_wide(r, j)
    }
}

/// 2^(p + p_lo) = r·2^j: j = rint(p) by the 1.5·2^23 trick, read from the sum's low bits,
/// and r = 2^(p − j + p_lo) in [0.7, 1.5). For |p| < 2^22; beyond, or for an infinite or
/// NaN p, r is meaningless and j is outside -125..=127 (the sum's bits are then far from
/// the trick constant's, or its sign bit is set).
#[inline(always)]
fn exp2_parts(p: f32, p_lo: f32) -> (f32, i32) {
    const MAGIC: f32 = 12_582_912.0;
    let k = p + MAGIC;
    let jf = k - MAGIC;
    let t = (p - jf) + p_lo;
    let r = fma(horner(t, EXP2), t, 1.0);
    (r, (k.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32))
}

/// r·2^j for r in [0.7, 1.5) and j in -125..=127 (a normal result): its exponent field plus
/// j, the same bits as the product.
#[inline(always)]
fn scale_normal(r: f32, j: i32) -> f32 {
    f32::from_bits(r.to_bits().wrapping_add((j << 23) as u32))
}

/// r·2^j for the j of an overflow or a subnormal result: two products, the first exact, the
/// second rounding once. Not inlined, so that the common path above is a branch over a call
/// rather than predicated instructions that issue anyway.
#[inline(never)]
fn scale_wide(r: f32, j: i32) -> f32 {
    let j1 = j >> 1;
    mul(mul(r, pow2i(j1)), pow2i(j - j1))
}

/// x^y (C's `powf`): max error 1 ulp, with
/// the special cases of C99/IEEE 754 `pow` (x^±0 = 1, 1^y = 1, negative x only with integer y,
/// ±0 and ±inf by the sign of y and the parity of y).
#[inline(always)]
pub fn pow(x: f32, y: f32) -> f32 {
    // The common case without a test on its way: x positive and normal and a normal result
    // (|y·log2 x| < 125), where no clamp, scaling of a subnormal x or special case applies.
    // Computed for every x (a meaningless value otherwise), then one branch: an x outside
    // [2^-126, inf) (negative, zero, subnormal, inf, NaN; one unsigned compare of its bits),
    // or a j outside -125..=127 (which an infinite or NaN y·log2 x gives too) takes the
    // general path, whose results on the common case are the same bits.
    let (l, l_lo) = log2_ext_scaled(x, 0.0);
    let p = mul(y, l);
    let (r, j) = exp2_parts(p, fma(y, l_lo, fms(y, l, p)));
    let x_normal = x.to_bits().wrapping_sub(0x0080_0000) < 0x7f00_0000;
    if x_normal && (j + 125) as u32 <= 252 {
        scale_normal(r, j)
    } else {
        pow_general(x, y)
    }
}

/// `pow` for every input.
#[inline(never)]
fn pow_general(x: f32, y: f32) -> f32 {
    let ax = x.abs();
    let (l, l_lo) = log2_ext(ax);
    let p = mul(y, l);
    let p_lo = fma(y, l_lo, fms(y, l, p));
    let r = exp2_ext(p, p_lo);
    if ax > 0.0 && ax < f32::INFINITY && y.is_finite() {
        if x < 0.0 { negative_x(r, y) } else { r }
    } else {
        special(x, y, y_odd(y))
    }
}

/// Whether y is an odd integer. y/2 is exact for |y| ≥ 1 and an integer from 2^24 on (every
/// such f32 is even).
#[inline(always)]
fn y_odd(y: f32) -> bool {
    let h = mul(y, 0.5);
    trunc(y) == y && trunc(h) != h
}

/// `pow` for finite x < 0: x^y = ±|x|^y (`r`) for an integer y, NaN otherwise.
#[inline(always)]
fn negative_x(r: f32, y: f32) -> f32 {
    if trunc(y) != y {
        f32::NAN
    } else if y_odd(y) {
        -r
    } else {
        r
    }
}

/// `pow` where x is ±0, ±inf or NaN, or y is ±inf or NaN.
#[inline(never)]
fn special(x: f32, y: f32, y_odd: bool) -> f32 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if x.is_nan() || y.is_nan() {
        return x + y;
    }
    let ax = x.abs();
    if y.is_infinite() {
        if ax == 1.0 {
            return 1.0;
        }
        return if (ax < 1.0) == (y < 0.0) {
            f32::INFINITY
        } else {
            0.0
        };
    }
    // y finite and nonzero; x is ±0 or ±inf.
    let mag = if (ax == 0.0) == (y < 0.0) {
        f32::INFINITY
    } else {
        0.0
    };
    if x.is_sign_negative() && y_odd {
        -mag
    } else {
        mag
    }
}
