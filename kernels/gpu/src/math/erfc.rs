//! `erfc` for f32: erfc(a) = e^(−a²)·p(t)/(1 + 2a) for a ≥ 0 with t = (a − 2)/(a + 2), one
//! minimax polynomial over the whole half line (the structure of CUDA's `erfcf`), so small
//! results keep their relative accuracy down to the subnormal range; erfc(−a) = 2 − erfc(a).
//! Below a = 0.47 (results in (1/2, 3/2)) it is 1 − [`erf`](super::erf), whose error is then
//! at most an ulp of the result: the polynomial's rounding errors near t = −1 are not.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::{erf, exp, fma, horner, mul};

/// e^(a²)·erfc(a)·(1 + 2a) as a polynomial in t = (a − 2)/(a + 2), on −1 ≤ t ≤ 1 (a ≥ 0).
const ERFC: [f32; 13] = [
    -2.010_893_1e-5,
    6.310_018e-5,
    2.211_054_5e-4,
    -3.571_779e-4,
    -1.463_511_7e-3,
    1.216_665_5e-3,
    8.724_295e-3,
    -8.018_636e-3,
    -5.422_018_5e-2,
    0.164_049_4,
    -0.166_030_39,
    -9.276_376e-2,
    1.276_978_4,
];

/// erfc(x) = 1 − erf(x): max error 4 ulp (CUDA's `erfcf`: 4 ulp), subnormal results
/// included; +0 above ~10.05, 2 for −inf, NaN for NaN.
#[inline(always)]
pub fn erfc(x: f32) -> f32 {
    // Clamped where the result is 0 already (a NaN passes).
    let a = x.abs();
    let a = if a > 11.0 { 11.0 } else { a };
    let t = (a - 2.0) / (a + 2.0);
    let q = horner(t, ERFC) / fma(2.0, a, 1.0);
    // e^(−a²) with a² = h + l exactly: e^(−h)·(1 − l).
    let h = mul(a, a);
    let l = fma(a, a, -h);
    let e = exp(-h);
    let r = mul(fma(e, -l, e), q);
    if a < 0.47 {
        1.0 - erf(x)
    } else if x < 0.0 {
        2.0 - r
    } else {
        r
    }
}
