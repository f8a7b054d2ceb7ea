//! `erf_f64` and `erfc_f64`. erf: 1 − e^(−h) with h = −ln erfc |x| one polynomial (CUDA's
//! scheme) over the whole range, no selection between formulas. erfc:
//! the f32 [`erfc`](super::erfc)'s structure (CUDA's), erfc(a) = e^(−a²)·p(t)/(1 + 2a) for
//! a ≥ 0.47 with t = (a − 4)/(a + 4), one minimax polynomial over the rest of the half line, so
//! small results keep their relative accuracy down to the subnormal range, the quotients by a
//! Newton reciprocal corrected by their residual (no `div.rn.f64`); below, 1 − erf.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::bank::const_bank;
use super::exp_log_f64::{LN2_HI, MAGIC};
use super::misc_f64::quotient;
use super::{exp_f64, fma_f64 as fma, fms_f64 as fms, fnma_f64 as fnma, mul64};

const LOG2E: f64 = core::f64::consts::LOG2_E;

const_bank! {
/// erf(x)/x − 1 as a polynomial in x², on |x| ≤ 1 (absolute error 2^-57): `erfc_f64` below 0.47.
ERF = "__gpu_math_erf_f64", [
    -7.801_178_483_565_149e-10,
    1.372_296_910_121_093e-8,
    -1.620_917_383_016_347e-7,
    1.644_751_734_204_668_5e-6,
    -1.492_474_463_013_600_7e-5,
    1.205_529_531_840_900_6e-4,
    -8.548_325_989_613_565e-4,
    5.223_977_607_421_429_4e-3,
    -2.686_617_064_327_593_4e-2,
    0.112_837_916_709_452_51,
    -0.376_126_389_031_835_5,
    0.128_379_167_095_512_56,
];
}
const_bank! {
/// p(a) with −ln erfc(a) = a + a·p(a), on 0 ≤ a ≤ 5.87: near-minimax for the relative error it
/// makes in erf = 1 − e^(−a − a·p), a·erfc(a)/erf(a)·|p − p*| ≤ 2^-55.3 (degree 23; Lawson's
/// iteration on 120 Chebyshev nodes in 160-bit arithmetic, each coefficient rounded to f64
/// lowest degree first and the rest refitted: `fit_erf.py 23`).
ERFH = "__gpu_math_erf_h_f64", [
    f64::from_bits(0xbcf038015f0f91dd), // -3.60129058237911e-15
    f64::from_bits(0x3d46c8a975e9659d), // 1.6188888994461307e-13
    f64::from_bits(0xbd8daa669648f3d3), // -3.372591419766497e-12
    f64::from_bits(0x3dc7b4e6cb617e16), // 4.3122139038908265e-11
    f64::from_bits(0xbdf9e7f4c9324816), // -3.7698306385968963e-10
    f64::from_bits(0x3e2453b256780b15), // 2.3663672581783417e-09
    f64::from_bits(0xbe47326b1eee66fe), // -1.0801920217497458e-08
    f64::from_bits(0x3e62a037f4bbbb1e), // 3.469335626930236e-08
    f64::from_bits(0xbe71bb864841788b), // -6.605877628368297e-08
    f64::from_bits(0xbe477a0f99ff3d08), // -1.0932237170997034e-08
    f64::from_bits(0x3ea318fbae72b174), // 5.691525445570637e-07
    f64::from_bits(0xbec111fb4275e1b6), // -2.0349312028178824e-06
    f64::from_bits(0x3eca4216b6cfad83), // 3.1302164900014967e-06
    f64::from_bits(0x3eca9c80e37ac919), // 3.172319136123967e-06
    f64::from_bits(0xbeff03b221d99c40), // -2.9577671844551812e-05
    f64::from_bits(0x3f10e3437a92f199), // 6.442164762438528e-05
    f64::from_bits(0x3efb298b9e22110f), // 2.5903975150246924e-05
    f64::from_bits(0xbf4356635eeb8e76), // -0.0005901322564025441
    f64::from_bits(0x3f5bca6912afdb0b), // 0.0016962076285815277
    f64::from_bits(0xbf2b6b6a0df59bb8), // -0.00020919484721135056
    f64::from_bits(0xbf939668590be16a), // -0.01912844699379105
    f64::from_bits(0x3fba4f4e2a1aa6e0), // 0.10277260330135674
    f64::from_bits(0x3fe45f306dc9c8cf), // 0.6366197723675898
    f64::from_bits(0x3fc06eba8214db68), // 0.12837916709551256
];
}
const_bank! {
/// e^(a²)·erfc(a)·(1 + 2a) as a polynomial in t = (a − 4)/(a + 4), on 0.47 ≤ a ≤ 27.5
/// (relative error 2^-60).
ERFC = "__gpu_math_erfc_f64", [
    1.633_423_133_800_398_2e-9,
    -9.728_344_032_264_645e-9,
    -1.736_193_236_600_674_3e-8,
    1.034_665_404_990_404_5e-7,
    7.401_197_352_110_494e-8,
    -8.197_550_506_297_816e-7,
    2.941_805_061_054_264_7e-7,
    5.706_655_772_554_06e-6,
    -1.122_215_883_813_144_7e-5,
    -2.439_812_136_946_575_6e-5,
    1.506_217_027_538_542e-4,
    -1.992_569_495_942_665_6e-4,
    -7.577_732_917_238_351e-4,
    5.031_970_016_098_789e-3,
    -1.619_773_405_768_379_7e-2,
    3.716_751_553_402_148_5e-2,
    -6.633_036_581_220_278e-2,
    9.373_283_499_852_302e-2,
    -0.101_039_066_036_305_96,
    6.809_705_425_468_87e-2,
    1.537_965_210_261_978_5e-2,
    -0.139_621_116_840_562_5,
    1.232_995_118_625_552_6,
];
}

const_bank! {
/// (e^t − 1 − t)/t² on |t| ≤ ln 2 / 2: near-minimax for the relative error of e^t − 1 =
/// t + t²·q(t), 2^-55.5 (degree 9, `fit_erf.py --exp 9`).
ERFEXP = "__gpu_math_erf_exp_f64", [
    f64::from_bits(0x3e5ae902983986e9), // 2.5062072873933406e-08
    f64::from_bits(0x3e928a27a4df2c7c), // 2.76262572704209e-07
    f64::from_bits(0x3ec71de70ffdec70), // 2.755738137181318e-06
    f64::from_bits(0x3efa019a6b5f10c1), // 2.4801504615160718e-05
    f64::from_bits(0x3f2a01a017f5c893), // 0.00019841269748216826
    f64::from_bits(0x3f56c16c17f28c6f), // 0.001388888893224995
    f64::from_bits(0x3f81111111117167), // 0.008333333333376115
    f64::from_bits(0x3fa555555555211f), // 0.04166666666657392
    f64::from_bits(0x3fc5555555555541), // 0.1666666666666661
    f64::from_bits(0x3fe0000000000005), // 0.5000000000000006
];
}

/// erfc(a) for a ≥ 0.47 (or NaN).
#[inline(always)]
fn erfc_tail(a: f64) -> f64 {
    // Clamped where the result is 0 already (a NaN passes).
    let a = if a > 27.5 { 27.5 } else { a };
    let t = quotient(a - 4.0, a + 4.0);
    let q = quotient(ERFC::horner(t), fma(2.0, a, 1.0));
    // e^(−a²) with a² = h + l exactly: e^(−h)·(1 − l). A subnormal e^(−h) is exact to half
    // of 2^-1074, and q < 1 shrinks that absolute error.
    let h = mul64(a, a);
    let l = fma(a, a, -h);
    let e = exp_f64(-h);
    mul64(fma(e, -l, e), q)
}

/// erf(x) for |x| < 1.
#[inline(always)]
fn erf_small(x: f64) -> f64 {
    fma(ERF::horner(mul64(x, x)), x, x)
}

/// erf(x) for f64: max error 2 ulp (CUDA's `erf`: 2 ulp); ±1 for |x| ≥ 5.87, ±0 kept, NaN for
/// NaN. As CUDA's: erf(a) = 1 − e^(−h) for a = |x|, with h = −ln erfc(a) = a + a·p(a) one
/// polynomial on [0, 5.87] (beyond, erfc(a) < 2^-54 and erf rounds to 1), carried as h + h_lo;
/// e^(−h) = 2^j·(1 + m) with m = e^t − 1 for the reduced t, and erf = (1 − 2^j) − 2^j·m, which
/// for j = 0 (a below ~0.3) is −m, accurate relative to erf's own size down to the
/// subnormals. One path for every argument: no division, no branch, no selection between
/// formulas (a thread's elements share each coefficient's constant-bank load).
#[inline(always)]
pub fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    let p = ERFH::horner(a);
    // h = a + a·p rounded, and h_lo = (a + a·p) − h: a − h is exact while h ≤ 2a (a up to
    // ~1.3), and beyond, its rounding is scaled by erfc(a) < 0.07 in the result.
    let h = fma(p, a, a);
    let h_lo = fma(p, a, a - h);
    // e^(−h − h_lo): j = round(−h/ln 2) (≥ −55), t = −h − j·ln 2 in [−ln 2/2, ln 2/2], one
    // rounding (ln 2's own rounding, |j|·2^-55.3, is scaled by 2^j in the result).
    let k = fma(h, -LOG2E, MAGIC);
    let j = k - MAGIC;
    let t = fms(j, -LN2_HI, h);
    // m = e^(t − h_lo) − 1 to first order in h_lo (|h_lo| ≤ 2^-47).
    let m = t + fms(mul64(t, ERFEXP::horner(t)), t, h_lo);
    // 2^j from k's low word (j), exact; 1 − 2^j is exact for j ≥ −53 (and rounds to 1 below,
    // where the result does).
    let s = f64::from_bits(((k.to_bits() as u32 as i32 + 1023) as u64) << 52);
    let r = fnma(m, s, 1.0 - s);
    let r = if a >= 5.87 { 1.0 } else { r };
    r.copysign(x)
}

/// erfc(x) = 1 − erf(x) for f64: max error 5 ulp (CUDA's `erfc`: 5 ulp), subnormal results
/// included; +0 above ~27.23, 2 for −inf, NaN for NaN.
#[inline(always)]
pub fn erfc_f64(x: f64) -> f64 {
    let a = x.abs();
    if a < 0.47 {
        1.0 - erf_small(x)
    } else {
        let r = erfc_tail(a);
        if x < 0.0 { 2.0 - r } else { r }
    }
}
