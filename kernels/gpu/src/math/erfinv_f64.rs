//! `erfinv_f64`: M. Giles' scheme ("Approximating the erfinv function", GPU Computing Gems,
//! 2011; CUDA's `erfinv` has the same structure), with polynomials fitted here
//! (`fit_erfinv.py`): erfinv(x) = x·p(t) for t = log2(1 − x²), one polynomial in t for
//! t ≥ −9 (|x| below about 0.998), beyond two in s = √(−t). 1 − x² is one fma; its logarithm
//! has no division: 1 − x² = 2^k·m with m in [√2/2, √2) and log2 m = f·r(f) for f = m − 1,
//! one polynomial. p varies slowly in t (an error δ in t moves the result by at most 0.18·δ
//! relative), so t needs only a small absolute error, and r is fitted for that. The tail
//! corrects the roundings of t and s to first order. [`erfinv`](super::erfinv) has the same
//! steps in f32.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::bank::const_bank;
use super::{fma_f64 as fma, fnma_f64 as fnma, horner64, mul64, sqrt_f64};

/// At or above this 1 − x² the central polynomial (t = log2(1 − x²) ≥ −9, −ln(1 − x²) ≤ 6.24).
const V_CENTRAL: f64 = 1.0 / 512.0;
/// Below this s = √(−t) the first tail polynomial.
const S_SPLIT: f64 = 4.8;

/// r(f) = log2(1 + f)/f on √2/2 − 1 ≤ f ≤ √2 − 1: near-minimax for the absolute error of
/// f·r(f), 2^-56.0 (`fit_erfinv.py logabs 19 --imm 12`). The terms of degree 12 and above
/// have 21-bit coefficients (immediate operands, no constant loads), the rest are in the
/// constant bank.
const LOG2_HIGH: [f64; 8] = [
    f64::from_bits(0xbfa4e0a600000000), // -0.04077643156051636
    f64::from_bits(0x3fb7ad9100000000), // 0.09249216318130493
    f64::from_bits(0xbfb9733a00000000), // -0.09941446781158447
    f64::from_bits(0x3fb6145f00000000), // 0.08624833822250366
    f64::from_bits(0xbfb62e6a00000000), // -0.08664572238922119
    f64::from_bits(0x3fb86c3900000000), // 0.0954013466835022
    f64::from_bits(0xbfba767a00000000), // -0.1033703088760376
    f64::from_bits(0x3fbc6fb900000000), // 0.11107975244522095
];
const_bank! {
/// [`LOG2_HIGH`]'s continuation, degrees 11 to 0.
LOG2 = "__gpu_math_erfinv_log2_f64", [
    f64::from_bits(0xbfbec5fc37090bae), // -0.12020851462970825
    f64::from_bits(0x3fc0c96d5d588ac5), // 0.13114707048324284
    f64::from_bits(0xbfc2776ff1da2de1), // -0.14426993664925106
    f64::from_bits(0x3fc484b38c005ee9), // 0.1602997239685842
    f64::from_bits(0xbfc715475a5ef8bd), // -0.18033687508245136
    f64::from_bits(0x3fca61761d24b12b), // 0.2060992853452118
    f64::from_bits(0xbfcec709dc34f004), // -0.24044917347225703
    f64::from_bits(0x3fd2776c51045ffd), // 0.2885390082533375
    f64::from_bits(0xbfd71547652badc2), // -0.3606737602228486
    f64::from_bits(0x3fdec709dc39e6c1), // 0.48089834696257233
    f64::from_bits(0xbfe71547652b82e6), // -0.721347520444479
    f64::from_bits(0x3ff71547652b8301), // 1.442695040888964
];
}
/// q1(u) with erfinv(x)/x = C0_HI + C0_LO + t·(Q0 + u·q1(u)), u = t + 4.625, t in [−9, 0]:
/// q and C0_LO fitted together, near-minimax for the relative error of erfinv(x)/x, 2^-57.8
/// (`fit_erfinv.py central 23 -9 -4.625 --imm 15`; its terms of degree 15 and above have
/// 21-bit coefficients, immediate operands). The shift is one where q's constant term, whose
/// rounding no other coefficient can absorb, is within 0.004 ulp of an f64.
const CENTRAL_HIGH: [f64; 9] = [
    f64::from_bits(0xbaabdf7300000000), // -4.503101543889349e-26
    f64::from_bits(0xbaee6e0d00000000), // -7.865941134098592e-25
    f64::from_bits(0x3b0f69cb00000000), // 3.2480543134351836e-24
    f64::from_bits(0x3b67e4be00000000), // 1.581140796714124e-22
    f64::from_bits(0x3b8ef0a000000000), // 8.189734299128531e-22
    f64::from_bits(0xbbcb446500000000), // -1.1548094048442359e-20
    f64::from_bits(0xbc0bcec400000000), // -1.8843215712988598e-19
    f64::from_bits(0xbc217e2100000000), // -4.741403407057017e-19
    f64::from_bits(0x3c724d5b00000000), // 1.5874601806517466e-17
];
const_bank! {
/// [`CENTRAL_HIGH`]'s continuation, degrees 14 to 1 (degree 0 is Q0).
CENTRAL = "__gpu_math_erfinv_central_f64", [
    f64::from_bits(0x3cad4457834fd860), // 2.030803326991634e-16
    f64::from_bits(0x3cad93f63b620db6), // 2.0523843702056406e-16
    f64::from_bits(0xbd170f3784f2fd30), // -2.0480897784646533e-14
    f64::from_bits(0xbd4f1d07ccdc3c15), // -2.210740054817134e-13
    f64::from_bits(0x3d43721349666064), // 1.3816934648479878e-13
    f64::from_bits(0x3dbccab82d234658), // 2.6186055772640943e-11
    f64::from_bits(0x3df0a871fa0cd75c), // 2.4240564594678424e-10
    f64::from_bits(0xbe039f1ff29a6fdb), // -5.710631734907692e-10
    f64::from_bits(0xbe62152cac05fb54), // -3.368167744970021e-08
    f64::from_bits(0xbe92dffb9aae8efa), // -2.812584180505954e-07
    f64::from_bits(0x3eb110d3bb5799c1), // 1.0171968204353371e-06
    f64::from_bits(0x3f085f2e415959a3), // 4.648551854973266e-05
    f64::from_bits(0x3f3cf569f74e1e5d), // 0.00044187390386027874
    f64::from_bits(0xbf4ebcac4d0e5fa0), // -0.000938018924091278
];
}
const_bank! {
/// The central formula's constants: √π/2 rounded (C0_HI), the fitted C0_LO beside it, Q0.
CONSTS = "__gpu_math_erfinv_central_k_f64", [
    f64::from_bits(0x3fec5bf891b4ef6b), // 0.886226925452758
    f64::from_bits(0xbc85d49648977020),
    f64::from_bits(0xbfc5c66a0f1bd92f),
];
}
const_bank! {
/// p1(u) with erfinv(x)/x = PA0 + u·p1(u), u = s − 3.7109375 for s = √(−t) in [3, 4.8]:
/// near-minimax for the relative error, 2^-59.5 (`fit_erfinv.py tail 20 2.99 4.8 3.7109375`;
/// the shift chosen as the central one's).
TAIL1 = "__gpu_math_erfinv_tail_a_f64", [
    f64::from_bits(0x3deb9da09d3811a3), // 2.0093089571480076e-10
    f64::from_bits(0xbe155bef2bcbd547), // -1.2432643102391308e-09
    f64::from_bits(0x3e24248d5656b55e), // 2.344928406580078e-09
    f64::from_bits(0x3e30f9b982a9efd1), // 3.952413544558658e-09
    f64::from_bits(0xbe613451c746725f), // -3.2045641615317273e-08
    f64::from_bits(0x3e72945c1181e8bd), // 6.921414230808444e-08
    f64::from_bits(0x3e60994bc8b005fd), // 3.091769781167113e-08
    f64::from_bits(0xbea474d30b778243), // -6.096465971460521e-07
    f64::from_bits(0x3ebac25909314e49), // 1.5949708867161433e-06
    f64::from_bits(0xbe9d7054be2a31ec), // -4.386722009329207e-07
    f64::from_bits(0xbee3b08ded0fead6), // -9.388764199859937e-06
    f64::from_bits(0x3effa3333c679eb4), // 3.0171871708533068e-05
    f64::from_bits(0xbf007ee4d50e140d), // -3.1463011175105004e-05
    f64::from_bits(0xbf15927b5f8d4b70), // -8.229139338071316e-05
    f64::from_bits(0x3f3d36ac3d05a655), // 0.00044576363600032826
    f64::from_bits(0xbf525397ff7a7ebf), // -0.0011185631136995525
    f64::from_bits(0x3f60c9908c7e937e), // 0.0020492385119318937
    f64::from_bits(0xbf6bc2255ca1f8af), // -0.003388474438053533
    f64::from_bits(0x3f75b1ce8a86a24b), // 0.005296522904622745
    f64::from_bits(0x3feaba1a05a48384), // 0.835217486401334
];
}
const_bank! {
/// p1(u) with erfinv(x)/x = PB0 + u·p1(u), u = s − 5.9765625 for s in [4.8, 7.22] (t down to
/// −52, the last f64 below 1): 2^-57.1 (`fit_erfinv.py tail 18 4.79 7.225 5.9765625`).
TAIL2 = "__gpu_math_erfinv_tail_b_f64", [
    f64::from_bits(0xbd6b7d7f3c634a4b), // -7.813191222000861e-13
    f64::from_bits(0x3d847d2cd0841b7f), // 2.3293256464561996e-12
    f64::from_bits(0x3d890310822b1f11), // 2.8435318483012444e-12
    f64::from_bits(0xbdc050ff5a4e463f), // -2.967935210809382e-11
    f64::from_bits(0x3ddf221ef96d76ab), // 1.1326223150068433e-10
    f64::from_bits(0xbdf8ffcab41cff9c), // -3.6378604652386883e-10
    f64::from_bits(0x3e1121c14142738e), // 9.972052116682108e-10
    f64::from_bits(0xbe243f29846b5b63), // -2.357029269118871e-09
    f64::from_bits(0x3e36f229db853c57), // 5.342520585933263e-09
    f64::from_bits(0xbe4efd68f795182f), // -1.4430788774566502e-08
    f64::from_bits(0x3e6e4ed55441ef6f), // 5.6452942349411974e-08
    f64::from_bits(0xbe93543a781d9445), // -2.880248005570462e-07
    f64::from_bits(0x3eba3fb1f233112a), // 1.5645509357379718e-06
    f64::from_bits(0xbee1125e0d63ecee), // -8.140443622731198e-06
    f64::from_bits(0x3f03c0a6806db783), // 3.767498133454199e-05
    f64::from_bits(0xbf20d463dbdde572), // -0.00012840002994688908
    f64::from_bits(0xbf165270b9e956df), // -8.515179659104474e-05
    f64::from_bits(0x3feaea95299520a5), // 0.8411355793150689
];
}
/// The tails' constant terms, and p'(u)/(2s) to 2.4% as d0 + d1·u on each (their first-order
/// correction for the roundings of t and s).
const PA0: f64 = f64::from_bits(0x400761cdacd270e2);
const PB0: f64 = f64::from_bits(0x40134d487f8e1d9a);
const DA: (f64, f64) = (0.11479403739606224, -0.026928647943509);
const DB: (f64, f64) = (0.07182191401383059, -0.011900766566484571);

/// The inverse error function for f64, erf(erfinv(x)) = x: max error 4 ulp (CUDA's `erfinv`:
/// 5 ulp); ±inf at ±1, NaN for |x| > 1 and NaN, ±0 kept.
#[inline(always)]
pub fn erfinv_f64(x: f64) -> f64 {
    let a = x.abs();
    // v = 1 − x² rounded once: in [2^-53, 1] for |x| < 1. At or above 2^-9 (|x| below about
    // 0.998, t ≥ −9) the central polynomial; below, and for |x| ≥ 1 (v ≤ 0) and NaN, the tail
    // branch, which also returns the special cases.
    let v = fnma(a, a, 1.0);
    let iv = v.to_bits() as i64;
    let e = iv.wrapping_sub(0x3fe6_a09e_667f_3bcd) & (0xfff0_0000_0000_0000_u64 as i64);
    let f = f64::from_bits(iv.wrapping_sub(e) as u64) - 1.0;
    let k = ((e >> 32) as i32 >> 20) as f64;
    let r = LOG2::horner_from(horner64(f, LOG2_HIGH), f);
    let t = fma(f, r, k);
    let y = if v >= V_CENTRAL {
        // |x|·(C0_HI + (C0_LO + t·(Q0 + u·q1(u)))). u's rounding (t above −2.3) moves the
        // sum by t·q1·δ, far below an ulp.
        let u = t + 4.625;
        let q = fma(
            u,
            CENTRAL::horner_from(horner64(u, CENTRAL_HIGH), u),
            CONSTS::get::<2>(),
        );
        fma(
            a,
            CONSTS::get::<0>(),
            mul64(a, fma(t, q, CONSTS::get::<1>())),
        )
    } else {
        tail(a, f, r, k, t)
    };
    // Computed for |x|, the sign applied last (so ±0 is kept).
    y.copysign(x)
}

/// erfinv(a) for 1 − a² = 2^k·(1 + f) below 2^-9 (t = log2(1 − a²) = k + f·r), or a ≥ 1, or
/// NaN: +inf at 1, NaN beyond.
#[inline(always)]
fn tail(a: f64, f: f64, r: f64, k: f64, t: f64) -> f64 {
    // The roundings of t and of s = √(−t): t's error is t_lo (k − t is exact: t lies within
    // 1/2 of k), −t − t_lo = (s + ρ/(2s))² to first order, with ρ = −t − t_lo − s² (s·s exact
    // in the fma), and p(u + ρ/(2s)) = p(u) + ρ·p'(u)/(2s). The shifted s are exact
    // (Sterbenz).
    let t_lo = fma(f, r, k - t);
    let s = sqrt_f64(-t);
    let rho = -(fma(s, s, t) + t_lo);
    let (p0, rest) = if s < S_SPLIT {
        let u = s - 3.710_937_5;
        (
            PA0,
            fma(u, TAIL1::horner(u), mul64(fma(u, DA.1, DA.0), rho)),
        )
    } else {
        let u = s - 5.976_562_5;
        (
            PB0,
            fma(u, TAIL2::horner(u), mul64(fma(u, DB.1, DB.0), rho)),
        )
    };
    let y = fma(a, p0, mul64(a, rest));
    if a < 1.0 {
        y
    } else if a == 1.0 {
        f64::INFINITY
    } else {
        f64::NAN
    }
}
