//! `tanh_f64`: an odd polynomial near zero, 1 − 2/(e^2|x| + 1) beyond.
// Polynomial coefficients are fitted values printed to round-trip exactly (some near ln 2 or
// 1/3 are fits, not those constants).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use super::exp_log_f64::exp_normal_f64;
use super::{fma_f64 as fma, horner64, mul64};

/// (tanh x − x)/x³ as a polynomial in x², on |x| ≤ 0.5625.
const TANH: [f64; 13] = [
    -2.910_322_883_401_469e-6,
    1.316_642_215_852_823e-5,
    -3.793_165_148_079_466e-5,
    9.647_636_736_943_323e-5,
    -2.390_309_181_706_396_4e-4,
    5.900_122_238_604_031e-4,
    -1.455_832_763_900_677_7e-3,
    3.592_127_920_121_108_7e-3,
    -8.863_235_524_525_068e-3,
    2.186_948_853_600_713_4e-2,
    -5.396_825_396_825_185e-2,
    0.133_333_333_333_333_33,
    -0.333_333_333_333_333_3,
];

/// tanh(x) for f64: max error 2 ulp; ±1 for large |x|, NaN for NaN.
#[inline(always)]
pub fn tanh_f64(x: f64) -> f64 {
    let a = x.abs();
    if a <= 0.5625 {
        let s = mul64(x, x);
        // `+ 0.0` keeps the sign of a zero x.
        fma(fma(horner64(s, TANH), s, 0.0), x, x)
    } else {
        // From a = 19.1 on this rounds to exactly 1, so a is clamped to 20 (a NaN passes
        // through) and e^2a stays in `exp_normal_f64`'s range.
        let a = if a > 20.0 { 20.0 } else { a };
        let r = 1.0 - 2.0 / (exp_normal_f64(a + a) + 1.0);
        r.copysign(x)
    }
}
