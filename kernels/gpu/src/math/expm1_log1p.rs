//! `expm1` and `log1p` for f32: e^x − 1 and log(1 + x) without the cancellation of computing
//! them through `exp`/`log`, accurate where the result is tiny. expm1: x = j·ln 2 + t as in
//! [`exp`](super::exp), e^t − 1 as hi + lo, then 2^j·(e^t − 1) + (2^j − 1) summed exactly
//! before one final rounding. log1p: 1 + x = u + c exactly (u rounded), log(1 + x) =
//! log u + c/u with [`log`](super::log)'s reduction and polynomial.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::exp_log::{LN2_HI, LN2_MID, LOG, log_special, split};
use super::{exp, fma, horner, mul, pow2i, rint_mul};

/// (e^t − 1 − t − t²/2)/t³ on |t| ≤ 0.35.
const EXPM1: [f32; 5] = [
    1.988_351_4e-4,
    1.392_691_9e-3,
    8.333_321e-3,
    4.166_654_9e-2,
    0.166_666_67,
];

/// `(s, e)` with s = a + b rounded and s + e = a + b exactly (Knuth's two-sum).
#[inline(always)]
pub(super) fn two_sum(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// e^x − 1: max error 1 ulp (CUDA's `expm1f`: 1 ulp), x itself for tiny x (±0 kept); +inf
/// above ~88.72, −1 below ~−17.3.
#[inline(always)]
pub fn expm1(x: f32) -> f32 {
    if x > 25.0 {
        // e^x − 1 rounds to e^x (the 1 is below 2^-36 of it).
        return exp(x);
    }
    if x < -18.0 {
        // e^x < 2^-25: the result rounds to −1.
        return -1.0;
    }
    let j = rint_mul(x, core::f32::consts::LOG2_E);
    // t = th + tl: x − j·LN2_HI is exact (as in `exp`).
    let th = fma(j, -LN2_HI, x);
    let tl = mul(j, -LN2_MID);
    // e^t − 1 = th + th²/2 + th³·P(th) + tl·(1 + th), as u + u_lo.
    let h = mul(th, 0.5);
    let hs = mul(h, th);
    let hs_err = fma(h, th, -hs);
    let u = th + hs;
    let u_err = hs - (u - th); // |th| ≥ |hs|: exact
    let rest = fma(mul(mul(th, th), th), horner(th, EXPM1), fma(tl, th, tl));
    let u_lo = u_err + (hs_err + rest);
    // 2^j·(u + u_lo) + (2^j − 1): 2^j·u is exact, the sums are kept exactly until the end.
    let p = pow2i(j as i32);
    let (a, a_lo) = two_sum(p, -1.0);
    let (s, s_lo) = two_sum(a, mul(p, u));
    let r = s + (s_lo + (a_lo + mul(p, u_lo)));
    if x == 0.0 { x } else { r }
}

/// log(1 + x): max error 1 ulp (CUDA's `log1pf`: 1 ulp), x itself for tiny x (±0 kept); −inf
/// at −1, NaN below −1.
#[inline(always)]
pub fn log1p(x: f32) -> f32 {
    let (u, c) = two_sum(1.0, x);
    let (f, i) = split(u);
    // log(u + c) = log u + c/u to well below an ulp (|c/u| ≤ 2^-24).
    let cu = c / u;
    let s = mul(f, f);
    let r = f + fma(fma(horner(f, LOG), f, -0.5), s, cu);
    let r = fma(i, LN2_HI, fma(i, LN2_MID, r));
    if x == 0.0 {
        x
    } else if u > 0.0 && u < f32::INFINITY {
        r
    } else {
        log_special(u)
    }
}
