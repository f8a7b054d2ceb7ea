//! `erf_f64` and `erfc_f64`. erf: an odd polynomial below |x| = 1, 1 − e^(ln erfc |x|) beyond. erfc:
//! the f32 [`erfc`](super::erfc)'s structure (CUDA's), erfc(a) = e^(−a²)·p(t)/(1 + 2a) for
//! a ≥ 0.47 with t = (a − 4)/(a + 4), one minimax polynomial over the rest of the half line, so
//! small results keep their relative accuracy down to the subnormal range; below, 1 − erf.
// Polynomial coefficients are fitted values printed to round-trip exactly.
#![allow(clippy::excessive_precision)]

use super::bank::const_bank;
use super::exp_log_f64::{EXP, LN2_HI, LN2_LO, MAGIC};
use super::{exp_f64, fma_f64 as fma, mul64, pow2i64};

const LOG2E: f64 = core::f64::consts::LOG2_E;

const_bank! {
/// erf(x)/x − 1 as a polynomial in x², on |x| ≤ 1 (absolute error 2^-57).
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
/// ln erfc(t) as a polynomial in t − 1, on 1 ≤ t ≤ 6: near-minimax for the error it makes in
/// erf = 1 − e^p, erfc(t)·|p − ln erfc(t)| ≤ 2^-56.9 (degree 17; Lawson's iteration on 102 Chebyshev nodes in
/// 200-bit arithmetic, each coefficient rounded to f64 lowest degree first and the rest
/// refitted: `fit_erf_tail.py`).
ERFTAIL = "__gpu_math_erf_tail_f64", [
    f64::from_bits(0xbd95c00d63b32bb5), // -4.945423894886081e-12
    f64::from_bits(0x3de0a5059daadde7), // 1.2110552737181985e-10
    f64::from_bits(0xbe16f74dfdb349a0), // -1.336799107868957e-09
    f64::from_bits(0x3e4284c5417bc272), // 8.62341135952726e-09
    f64::from_bits(0xbe6225ae6ce55700), // -3.380178058519187e-08
    f64::from_bits(0x3e6fc039b7516ceb), // 5.9140623877914434e-08
    f64::from_bits(0x3e8b303b5dcc6dfb), // 2.0256940915721751e-07
    f64::from_bits(0xbec1db4abdbc82d8), // -2.1286736976575435e-06
    f64::from_bits(0x3ee446660aa72ac5), // 9.66787077496168e-06
    f64::from_bits(0xbefc846d185fa9ae), // -2.719620672301533e-05
    f64::from_bits(0x3efb9270d0e05ac2), // 2.62947406142976e-05
    f64::from_bits(0x3f2f1b0a399880ec), // 0.00023731708351793586
    f64::from_bits(0xbf6033f5ba66ccd2), // -0.001977901399379791
    f64::from_bits(0x3f848c9d392a36fe), // 0.010033825213465072
    f64::from_bits(0xbfa5477f09a42285), // -0.04156109802903977
    f64::from_bits(0xbfeafabc11a2a706), // -0.843107256359162
    f64::from_bits(0xc0051c9b0006c22a), // -2.638967514234783
    f64::from_bits(0xbffd97fbf27aa2a1), // -1.8496055099332482
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
/// `exp_normal_f64`'s polynomial (`exp_log_f64::EXP`), for [`exp_erfc`].
EXPPOLY = "__gpu_math_erf_exp_f64", [
    EXP[0], EXP[1], EXP[2], EXP[3], EXP[4], EXP[5], EXP[6], EXP[7], EXP[8], EXP[9], EXP[10],
];
}

/// e^x for x in [-700, -1]: `exp_normal_f64` (the same value) with its polynomial's
/// coefficients read from the constant bank (one load each instead of two moves).
#[inline(always)]
fn exp_erfc(x: f64) -> f64 {
    let k = fma(x, LOG2E, MAGIC);
    let j = k - MAGIC;
    let ji = (k.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64) as i32;
    let t = fma(j, -LN2_HI, x);
    let t = fma(j, -LN2_LO, t);
    let p = 1.0 + fma(mul64(t, t), EXPPOLY::horner(t), t);
    mul64(p, pow2i64(ji))
}

/// erfc(a) for a ≥ 0.47 (or NaN).
#[inline(always)]
fn erfc_tail(a: f64) -> f64 {
    // Clamped where the result is 0 already (a NaN passes).
    let a = if a > 27.5 { 27.5 } else { a };
    let t = (a - 4.0) / (a + 4.0);
    let q = ERFC::horner(t) / fma(2.0, a, 1.0);
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

/// erf(x) for f64: max error 2 ulp (CUDA's `erf`: 2 ulp); ±1 for |x| ≥ 6, ±0 kept, NaN for
/// NaN. Beyond |x| = 1, as CUDA's: 1 − e^g with g = ln erfc(|x|) one polynomial (no
/// division; erf needs erfc only to an absolute 2^-55 there, not `erfc_f64`'s relative
/// accuracy down to the subnormal range).
///
/// Both formulas are computed and one selected, without a branch: a thread's elements then
/// share one basic block, where each coefficient's constant-bank load serves all of them.
#[inline(always)]
pub fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    let small = erf_small(x);
    // From a = 6 on erfc(a) < 2^-54: 1 − erfc rounds to 1 (a NaN passes the clamp). t − 1 is
    // exact (t in [1, 6]); ln erfc(t) is in [-38.4, -1.84], so erfc(t) is normal.
    let t = if a > 6.0 { 6.0 } else { a };
    let t = if t < 1.0 { 1.0 } else { t };
    let large = (1.0 - exp_erfc(ERFTAIL::horner(t - 1.0))).copysign(x);
    if a < 1.0 { small } else { large }
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
