//! `erfinv` for f32: M. Giles' scheme ("Approximating the erfinv function", GPU Computing
//! Gems, 2011; CUDA's `erfinvf` has the same structure) with polynomials fitted here
//! (`fit_erfinv.py ... --f32`): erfinv(x) = x·p(t) for t = log2(1 − x²), one polynomial in t
//! for 1 − x² ≥ 0.0066 (t ≥ −7.24, |x| below about 0.9967), beyond one in s = √(−t). 1 − x² is one `fma`; its
//! logarithm has no division: 1 − x² = 2^k·m with m in [√2/2, √2) and log2 m = f·r(f) for
//! f = m − 1, one polynomial. p varies slowly in t (an error δ in t moves the result by at
//! most 0.18·δ relative), so t needs only a small absolute error, and r is fitted for that.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::{fma, fms, fnma, horner, mul, sqrt_ext};

/// r(f) = log2(1 + f)/f on √2/2 − 1 ≤ f ≤ √2 − 1: near-minimax for the absolute error of
/// f·r(f), 2^-27.1 (`fit_erfinv.py logabs 8 --f32`).
const LOG2: [f32; 9] = [
    f32::from_bits(0x3e007d1f), // 0.12547729909420013
    f32::from_bits(0xbe56f9b6), // -0.2099369466304779
    f32::from_bits(0x3e5e5e17), // 0.2171557992696762
    f32::from_bits(0xbe744c64), // -0.23857265710830688
    f32::from_bits(0x3e934cd1), // 0.28769543766975403
    f32::from_bits(0xbeb8b029), // -0.3607189953327179
    f32::from_bits(0x3ef63b33), // 0.4809204041957855
    f32::from_bits(0xbf38aa35), // -0.7213471531867981
    f32::from_bits(0x3fb8aa3a), // 1.442694902420044
];
/// q1(u) with erfinv(x)/x = C0_HI + C0_LO + t·(Q0 + u·q1(u)), u = t + 3.71875, t in [−7.25, 0]:
/// q and C0_LO fitted together, near-minimax for the relative error of erfinv(x)/x, 2^-27.1 (`fit_erfinv.py
/// central 8 -7.25 -3.71875 --f32`). The shift is one where q's constant term, whose rounding
/// no other coefficient can absorb, is within 0.005 ulp of an f32.
const CENTRAL: [f32; 8] = [
    f32::from_bits(0x2fb35411), // 3.2619643097753226e-10
    f32::from_bits(0x31124feb), // 2.1291224339137216e-09
    f32::from_bits(0xb2f8838d), // -2.8930822182360316e-08
    f32::from_bits(0xb4f8b057), // -4.6321903823809407e-07
    f32::from_bits(0xb5365e41), // -6.793744091737608e-07
    f32::from_bits(0x3846a499), // 4.73601721751038e-05
    f32::from_bits(0x3a15a477), // 0.0005708406097255647
    f32::from_bits(0xb7ad1711), // -2.0633948224713095e-05
];
/// q's constant term.
const Q0: f32 = f32::from_bits(0xbe2ea9d3);
/// √π/2 rounded, and the fitted constant beside it (√π/2's rounding error, about).
const C0_HI: f32 = f32::from_bits(0x3f62_dfc5);
const C0_LO: f32 = f32::from_bits(0xb2b820e1);
/// At or above this 1 − x² the central polynomial (t = log2(1 − x²) ≥ −7.243, inside its
/// fitted range; the tail's starts at −7.24).
const V_CENTRAL: f32 = 0.0066;
/// p1(u) with erfinv(x)/x = P0 + u·p1(u), u = s − 3.59375 for s = √(−t) in [2.69, 4.8] (t down
/// to −23, the last f32 below 1): near-minimax for the relative error, 2^-27.3 (`fit_erfinv.py
/// tail 9 2.69 4.8 3.59375 --f32`; the shift chosen as the central one's).
const TAIL: [f32; 9] = [
    f32::from_bits(0x37d0c36f), // 2.4886538085411303e-05
    f32::from_bits(0xb89e97e4), // -7.562318933196366e-05
    f32::from_bits(0xb78576c4), // -1.5910140064079314e-05
    f32::from_bits(0x3a02dd8e), // 0.00049921206664294
    f32::from_bits(0xbabfc63e), // -0.001463122433051467
    f32::from_bits(0x3b3785ba), // 0.0028003291226923466
    f32::from_bits(0xbb93f3c5), // -0.0045151435770094395
    f32::from_bits(0x3bdac1ae), // 0.006675920449197292
    f32::from_bits(0x3f55755d), // 0.8338220715522766
];
/// p's constant term.
const P0: f32 = f32::from_bits(0x4034cc19);
const TAIL_SHIFT: f32 = 3.593_75;
/// p'(u)/(2s) to 3.3% as d0 + d1·u: the tail's first-order correction for the roundings of s
/// and t.
const D0: f32 = 0.119_251_59;
const D1: f32 = -0.028_701_34;

/// The inverse error function, erf(erfinv(x)) = x: max error 2 ulp (CUDA's `erfinvf`: 2 ulp);
/// ±inf at ±1, NaN for |x| > 1 and NaN, ±0 kept.
#[inline(always)]
pub fn erfinv(x: f32) -> f32 {
    let a = x.abs();
    // v = 1 − x² rounded once: in [2^-23, 1] for |x| < 1. Its absolute error (2^-25 at most)
    // moves the result by below 0.1 ulp. At or above V_CENTRAL the central polynomial; below,
    // and for |x| ≥ 1 (v ≤ 0) and NaN, the tail branch, which also returns the special cases.
    let v = fnma(a, a, 1.0);
    let iv = v.to_bits() as i32;
    let e = iv.wrapping_sub(0x3f35_04f3) & (0xff80_0000_u32 as i32);
    let f = f32::from_bits(iv.wrapping_sub(e) as u32) - 1.0;
    let k = (e >> 23) as f32;
    let r = horner(f, LOG2);
    let t = fma(f, r, k);
    // t's rounding error: k − t is exact (t lies within 1/2 of k, or k = 0).
    let t_lo = fma(f, r, k - t);
    let y = if v >= V_CENTRAL {
        // erfinv(x)/x = C0_HI + z for z = C0_LO + (t + t_lo)·(Q0 + u·q1(u)), u = t + 3.71875.
        // Near the boundary z is about 1.1 and the result about 2, so z is carried as
        // z + z_lo: its large part t·Q0 goes into one fma, whose rounding error is recovered;
        // the rest (u·q1, under 0.06, and the lo terms) is small. u's rounding (t above −1.86)
        // moves it by t·q1·δ, far below an ulp.
        let u = t + 3.718_75;
        let w = fma(mul(t, u), horner(u, CENTRAL), fma(t_lo, Q0, C0_LO));
        let z = fma(t, Q0, w);
        let z_lo = fms(t, Q0, z) + w;
        fma(a, z, fma(a, C0_HI, mul(a, z_lo)))
    } else {
        tail(a, t, t_lo)
    };
    // Computed for |x|, the sign applied last (so ±0 is kept).
    y.copysign(x)
}

/// erfinv(a) for t + t_lo = log2(1 − a²) below log2(V_CENTRAL), or a ≥ 1, or NaN: +inf at 1,
/// NaN beyond.
#[inline(always)]
fn tail(a: f32, t: f32, t_lo: f32) -> f32 {
    // The roundings of t and of s = √(−t): −t − t_lo = (s + ρ/(2s))² to first order, with
    // ρ = −t − t_lo − s² (s·s exact in the fma), and p(u + ρ/(2s)) = p(u) + ρ·p'(u)/(2s).
    // s − 3.59375 is exact (Sterbenz). p = P0 + u·p1(u), P0 exact in the final fma.
    // √(−t) without `sqrt.rn` (a branch to a slow path): s + lo rounded once.
    let (s, s_lo) = sqrt_ext(-t);
    let s = s + s_lo;
    let rho = -(fma(s, s, t) + t_lo);
    let u = s - TAIL_SHIFT;
    let rest = fma(u, horner(u, TAIL), mul(fma(u, D1, D0), rho));
    let y = fma(a, P0, mul(a, rest));
    if a < 1.0 {
        y
    } else if a == 1.0 {
        f32::INFINITY
    } else {
        f32::NAN
    }
}
