//! Accuracy of the rest of `gpu::math`'s f32 functions (inverse trigonometric, hyperbolic,
//! `expm1`/`log1p`, `tan`, `cbrt`, `hypot`, `remainder`, `powi`), measured on the CPU in the
//! style of `math_ulp.rs`: random bit patterns over every binade, uniform samples of the
//! useful ranges and the edge cases, against the f64 function of `std`/`libm` (accurate to
//! < 1 ulp of f64); the error is in ulp of the exact result's f32 binade. Each function's
//! documented bound is asserted.

use gpu::math;

mod math_support;
use math_support::f32_ref::{specials, ulp_error};
use math_support::{Rng, f64_ref};

/// Worst error seen and where.
#[derive(Default)]
struct Worst {
    count: u64,
    max: f64,
    at: (f64, f64),
}

impl Worst {
    fn check(&mut self, y: f32, r: f64, at: (f64, f64)) {
        self.record(ulp_error(y, r), at);
    }
    fn record(&mut self, e: f64, at: (f64, f64)) {
        self.count += 1;
        if e > self.max {
            (self.max, self.at) = (e, at);
        }
    }
    fn assert(&self, name: &str, bound: f64) {
        println!(
            "{name:<10} max {:.3} ulp at ({:e}, {:e}), {} inputs",
            self.max, self.at.0, self.at.1, self.count
        );
        assert!(
            self.max <= bound,
            "{name}: {:.3} ulp at ({:e}, {:e}) exceeds the documented {bound} ulp",
            self.max,
            self.at.0,
            self.at.1
        );
    }
}

/// Inputs per random sweep and per uniform range.
const N: usize = 2_000_000;

/// Measures `f` against `reference` over the specials, random bit patterns and uniform samples
/// of each range; panics with the worst input if any error exceeds `bound`.
fn measure(
    name: &str,
    f: impl Fn(f32) -> f32,
    reference: impl Fn(f64) -> f64,
    ranges: &[(f32, f32)],
    bound: f64,
) {
    let mut w = Worst::default();
    let mut check = |x: f32| w.check(f(x), reference(x as f64), (x as f64, 0.0));
    specials().into_iter().for_each(&mut check);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..N {
        check(rng.bits32());
    }
    for &(lo, hi) in ranges {
        for _ in 0..N {
            check(rng.uniform(lo, hi));
        }
    }
    w.assert(name, bound);
}

/// [`measure`] for a function of two arguments: all pairs of specials, random bit pairs, and
/// uniform pairs from each range.
fn measure2(
    name: &str,
    f: impl Fn(f32, f32) -> f32,
    reference: impl Fn(f64, f64) -> f64,
    ranges: &[(f32, f32)],
    bound: f64,
) {
    let mut w = Worst::default();
    let mut check =
        |x: f32, y: f32| w.check(f(x, y), reference(x as f64, y as f64), (x as f64, y as f64));
    let sp = specials();
    for &x in &sp {
        for &y in &sp {
            check(x, y);
        }
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..N {
        check(rng.bits32(), rng.bits32());
    }
    for &(lo, hi) in ranges {
        for _ in 0..N {
            check(rng.uniform(lo, hi), rng.uniform(lo, hi));
        }
    }
    w.assert(name, bound);
}

/// Checks that `f` keeps the sign of a zero argument.
fn odd_at_zero(name: &str, f: impl Fn(f32) -> f32) {
    assert_eq!(f(-0.0).to_bits(), (-0.0f32).to_bits(), "{name}(-0)");
    assert_eq!(f(0.0).to_bits(), 0.0f32.to_bits(), "{name}(+0)");
}

#[test]
fn tan_f32() {
    let ranges = [(-10.0, 10.0), (-1e5, 1e5), (-1e30, 1e30)];
    measure("tan", math::tan, f64::tan, &ranges, 4.0);
    odd_at_zero("tan", math::tan);
}

#[test]
fn atan_f32() {
    measure(
        "atan",
        math::atan,
        f64::atan,
        &[(-4.0, 4.0), (-1e4, 1e4)],
        2.0,
    );
    odd_at_zero("atan", math::atan);
    assert_eq!(math::atan(f32::INFINITY), core::f32::consts::FRAC_PI_2);
}

#[test]
fn atan2_f32() {
    measure2(
        "atan2",
        math::atan2,
        f64::atan2,
        &[(-4.0, 4.0), (-1e-3, 1e-3), (-1e30, 1e30)],
        3.0,
    );
    use core::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};
    assert_eq!(math::atan2(-0.0, 0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(math::atan2(0.0, -0.0), PI);
    assert_eq!(math::atan2(-0.0, -1.0), -PI);
    assert_eq!(math::atan2(1.0, 0.0), FRAC_PI_2);
    assert_eq!(math::atan2(f32::INFINITY, f32::INFINITY), FRAC_PI_4);
    assert_eq!(
        math::atan2(-f32::INFINITY, -f32::INFINITY),
        -3.0 * FRAC_PI_4
    );
    assert!(math::atan2(f32::NAN, 0.0).is_nan());
    assert!(math::atan2(0.0, f32::NAN).is_nan());
}

#[test]
fn asin_acos_f32() {
    let ranges = [(-1.0, 1.0), (0.99, 1.0), (-1.0, -0.99)];
    measure("asin", math::asin, f64::asin, &ranges, 2.0);
    measure("acos", math::acos, f64::acos, &ranges, 2.0);
    odd_at_zero("asin", math::asin);
    assert_eq!(math::acos(1.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(math::acos(-1.0), core::f32::consts::PI);
}

#[test]
fn expm1_log1p_f32() {
    measure(
        "expm1",
        math::expm1,
        libm::expm1,
        &[(-20.0, 90.0), (-1.0, 1.0), (-1e-3, 1e-3)],
        1.0,
    );
    measure(
        "log1p",
        math::log1p,
        libm::log1p,
        &[(-1.0, 4.0), (-1e-3, 1e-3), (0.0, 1e6)],
        1.0,
    );
    odd_at_zero("expm1", math::expm1);
    odd_at_zero("log1p", math::log1p);
    assert_eq!(math::log1p(-1.0), f32::NEG_INFINITY);
    assert_eq!(math::expm1(f32::NEG_INFINITY), -1.0);
}

#[test]
fn sinh_cosh_f32() {
    let ranges = [(-90.0, 90.0), (-2.0, 2.0)];
    measure("sinh", math::sinh, f64::sinh, &ranges, 3.0);
    measure("cosh", math::cosh, f64::cosh, &ranges, 2.0);
    odd_at_zero("sinh", math::sinh);
}

#[test]
fn asinh_acosh_atanh_f32() {
    measure(
        "asinh",
        math::asinh,
        libm::asinh,
        &[(-10.0, 10.0), (-1e5, 1e5)],
        3.0,
    );
    measure(
        "acosh",
        math::acosh,
        // libm's acosh returns numbers for some x < -2 (its range test ignores the sign).
        |x| if x < 1.0 { f64::NAN } else { libm::acosh(x) },
        &[(1.0, 4.0), (1.0, 1e5), (1.0, 1.001)],
        3.0,
    );
    measure(
        "atanh",
        math::atanh,
        libm::atanh,
        &[(-1.0, 1.0), (0.99, 1.0)],
        3.0,
    );
    odd_at_zero("asinh", math::asinh);
    odd_at_zero("atanh", math::atanh);
    assert_eq!(math::acosh(1.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(math::atanh(-1.0), f32::NEG_INFINITY);
}

#[test]
fn cbrt_f32() {
    measure(
        "cbrt",
        math::cbrt,
        f64::cbrt,
        &[(-10.0, 10.0), (0.0, 1e-38)],
        1.0,
    );
    odd_at_zero("cbrt", math::cbrt);
    for k in -100i32..=100 {
        let c = (k * k * k) as f32;
        assert_eq!(math::cbrt(c), k as f32, "cbrt({c})");
    }
}

#[test]
fn hypot_f32() {
    measure2(
        "hypot",
        math::hypot,
        f64::hypot,
        &[(-4.0, 4.0), (-1e-40, 1e-40), (-3e38, 3e38)],
        2.0,
    );
    assert_eq!(math::hypot(f32::NAN, f32::NEG_INFINITY), f32::INFINITY);
    assert_eq!(math::hypot(3.0, -4.0), 5.0);
}

#[test]
fn remainder_f32() {
    let mut rng = Rng(23);
    let sp = specials();
    let pairs = sp
        .iter()
        .flat_map(|&x| sp.iter().map(move |&y| (x, y)))
        .collect::<Vec<_>>();
    let random = (0..N).map(|i| {
        let x = rng.bits32();
        let y = if i % 2 == 0 {
            rng.bits32()
        } else {
            rng.uniform(-10.0, 10.0)
        };
        (x, y)
    });
    for (x, y) in pairs.into_iter().chain(random.collect::<Vec<_>>()) {
        let (f, r) = (math::remainder(x, y), libm::remainderf(x, y));
        assert!(
            f.to_bits() == r.to_bits() || (f.is_nan() && r.is_nan()),
            "remainder({x:e}, {y:e}) = {f:e}, expected {r:e}"
        );
    }
    assert_eq!(math::remainder(5.0, 2.0), 1.0);
    assert_eq!(math::remainder(7.0, 2.0), -1.0);
    assert_eq!(math::remainder(-4.0, 2.0).to_bits(), (-0.0f32).to_bits());
}

#[test]
fn powi_f32() {
    // |n| < 2^24 (`pow` with an exact exponent) and larger |n| (two `pow`s), asserted apart.
    let (mut small, mut large) = (Worst::default(), Worst::default());
    let mut rng = Rng(29);
    let mut check = |x: f32, n: i32| {
        let w = if n.unsigned_abs() < 1 << 24 {
            &mut small
        } else {
            &mut large
        };
        w.check(
            math::powi(x, n),
            (x as f64).powf(n as f64),
            (x as f64, n as f64),
        )
    };
    for &x in &specials() {
        for n in [
            -3,
            -2,
            -1,
            0,
            1,
            2,
            3,
            i32::MIN,
            i32::MAX,
            1 << 24,
            -(1 << 24) - 1,
        ] {
            check(x, n);
        }
    }
    for _ in 0..N / 2 {
        check(rng.bits32(), (rng.next() % 81) as i32 - 40);
        check(rng.uniform(-4.0, 4.0), (rng.next() % 201) as i32 - 100);
        // Huge exponents, with x close enough to 1 for finite results.
        let n = (rng.next() >> 33) as i32 * if rng.next() & 1 == 0 { 1 } else { -1 };
        check(1.0 + rng.uniform(-1e-7, 1e-7), n);
    }
    small.assert("powi", 1.0);
    large.assert("powi huge", 3.0);
    assert_eq!(math::powi(-2.0, 3), -8.0);
    assert_eq!(math::powi(f32::NAN, 0), 1.0);
    assert_eq!(math::powi(-0.0, -(1 << 25) - 1), f32::NEG_INFINITY);
}

#[test]
fn erfc_f32() {
    measure(
        "erfc",
        math::erfc,
        libm::erfc,
        &[(-4.0, 11.0), (-0.5, 0.5), (8.0, 10.1)],
        4.0,
    );
    assert_eq!(math::erfc(f32::NEG_INFINITY), 2.0);
    assert_eq!(math::erfc(f32::INFINITY), 0.0);
    assert_eq!(math::erfc(0.0), 1.0);
}

fn f64_rng(rng: &mut Rng) -> f64 {
    f64::from_bits(rng.next())
}

#[test]
fn cbrt_hypot_f64() {
    use f64_ref::{P, RM, big, ulp_error};
    let mut rng = Rng(31);
    let mut w = Worst::default();
    let mut inputs = f64_ref::specials();
    inputs.extend((0..20_000).map(|_| f64_rng(&mut rng)));
    inputs.extend((0..20_000).map(|_| (rng.next() >> 11) as f64 * 2f64.powi(-50) - 2048.0));
    for &x in &inputs {
        let y = math::cbrt_f64(x);
        let r = if x == 0.0 || !x.is_finite() {
            big(x)
        } else {
            // One Newton step c − (c³ − x)/(3c²) from std's cbrt (53 bits) gives ~106 bits.
            let (c, bx) = (big(x.cbrt()), big(x));
            let c2 = c.mul(&c, P, RM);
            let d = c2.mul(&c, P, RM).sub(&bx, P, RM);
            c.sub(&d.div(&c2.mul(&big(3.0), P, RM), P, RM), P, RM)
        };
        w.record(ulp_error(y, &r), (x, 0.0));
    }
    w.assert("cbrt_f64", 1.0);
    for k in -100i64..=100 {
        let c = (k * k * k) as f64;
        assert_eq!(math::cbrt_f64(c), k as f64, "cbrt_f64({c})");
    }
    assert_eq!(math::cbrt_f64(-0.0).to_bits(), (-0.0f64).to_bits());

    let mut w = Worst::default();
    let sp = f64_ref::specials();
    let mut pairs: Vec<(f64, f64)> = sp
        .iter()
        .flat_map(|&x| sp.iter().map(move |&y| (x, y)))
        .collect();
    for _ in 0..8_000 {
        pairs.push((f64_rng(&mut rng), f64_rng(&mut rng)));
        let (x, y) = (rng.next() >> 11, rng.next() >> 11);
        pairs.push((x as f64 * 2f64.powi(-52), y as f64 * 2f64.powi(-52)));
    }
    for (x, y) in pairs {
        let h = math::hypot_f64(x, y);
        let r = if x.is_infinite() || y.is_infinite() {
            big(f64::INFINITY)
        } else if x.is_nan() || y.is_nan() {
            big(f64::NAN)
        } else {
            let (bx, by) = (big(x), big(y));
            bx.mul(&bx, P, RM)
                .add(&by.mul(&by, P, RM), P, RM)
                .sqrt(P, RM)
        };
        w.record(ulp_error(h, &r), (x, y));
    }
    w.assert("hypot_f64", 2.0);
    assert_eq!(math::hypot_f64(f64::NAN, f64::NEG_INFINITY), f64::INFINITY);
}

#[test]
fn expm1_f64() {
    use f64_ref::{P, RM, big, ulp_error};
    let mut cc = astro_float::Consts::new().expect("constants");
    let mut rng = Rng(37);
    let mut w = Worst::default();
    let mut inputs = f64_ref::specials();
    inputs.extend((0..5_000).map(|_| f64_rng(&mut rng)));
    for (lo, hi) in [(-45.0, 712.0), (-1.0, 1.0), (-1e-3, 1e-3)] {
        inputs.extend(
            (0..3_000).map(|_| lo + (hi - lo) * ((rng.next() >> 11) as f64 / 2f64.powi(53))),
        );
    }
    for &x in &inputs {
        let r = if x.is_nan() {
            big(f64::NAN)
        } else if x == f64::NEG_INFINITY {
            big(-1.0)
        } else if x > 710.0 {
            big(f64::INFINITY)
        } else if x.abs() < 1e-30 {
            // e^x − 1 at 256 bits would lose x itself: x + x²/2 is exact to far below an ulp.
            let bx = big(x);
            bx.add(&bx.mul(&bx, P, RM).div(&big(2.0), P, RM), P, RM)
        } else {
            big(x).exp(P, RM, &mut cc).sub(&big(1.0), P, RM)
        };
        w.record(ulp_error(math::expm1_f64(x), &r), (x, 0.0));
    }
    w.assert("expm1_f64", 1.0);
    assert_eq!(math::expm1_f64(-0.0).to_bits(), (-0.0f64).to_bits());
}

#[test]
fn log1p_f64() {
    use f64_ref::{P, RM, big, ulp_error};
    let mut cc = astro_float::Consts::new().expect("constants");
    let mut rng = Rng(41);
    let mut w = Worst::default();
    let mut inputs = f64_ref::specials();
    inputs.extend((0..5_000).map(|_| f64_rng(&mut rng)));
    for (lo, hi) in [(-1.0, 4.0), (-1e-3, 1e-3), (0.0, 1e6)] {
        inputs.extend(
            (0..3_000).map(|_| lo + (hi - lo) * ((rng.next() >> 11) as f64 / 2f64.powi(53))),
        );
    }
    for &x in &inputs {
        let r = if x.is_nan() || x < -1.0 {
            big(f64::NAN)
        } else if x == -1.0 {
            big(f64::NEG_INFINITY)
        } else if x == f64::INFINITY {
            big(x)
        } else if x.abs() < 1e-30 {
            // log(1 + x) at 256 bits would lose x itself: x − x²/2 is exact far below an ulp.
            let bx = big(x);
            bx.sub(&bx.mul(&bx, P, RM).div(&big(2.0), P, RM), P, RM)
        } else {
            big(x).add(&big(1.0), P, RM).ln(P, RM, &mut cc)
        };
        w.record(ulp_error(math::log1p_f64(x), &r), (x, 0.0));
    }
    w.assert("log1p_f64", 1.0);
    assert_eq!(math::log1p_f64(-0.0).to_bits(), (-0.0f64).to_bits());
}

/// Measures an f64 function against an `astro-float` reference over the specials, random bit
/// patterns (`n`) and uniform samples of `ranges` (2n/3 each).
fn measure64(
    name: &str,
    f: impl Fn(f64) -> f64,
    reference: impl Fn(f64, &mut astro_float::Consts) -> astro_float::BigFloat,
    ranges: &[(f64, f64)],
    bound: f64,
    n: usize,
) {
    let mut cc = astro_float::Consts::new().expect("constants");
    let mut rng = Rng(43);
    let mut w = Worst::default();
    let mut inputs = f64_ref::specials();
    inputs.extend((0..n).map(|_| f64_rng(&mut rng)));
    for &(lo, hi) in ranges {
        inputs.extend(
            (0..n * 2 / 3).map(|_| lo + (hi - lo) * ((rng.next() >> 11) as f64 / 2f64.powi(53))),
        );
    }
    for &x in &inputs {
        w.record(f64_ref::ulp_error(f(x), &reference(x, &mut cc)), (x, 0.0));
    }
    w.assert(name, bound);
}

#[test]
fn hyperbolic_f64() {
    use astro_float::BigFloat;
    use f64_ref::{P, RM, big};
    // The reference for NaN, ±inf and (with `tiny`) inputs so small that 256 bits lose them.
    fn special(x: f64, inf: f64, tiny: f64) -> Option<BigFloat> {
        if x.is_nan() {
            Some(big(f64::NAN))
        } else if x.is_infinite() {
            Some(big(inf.copysign(x)))
        } else if x.abs() < 1e-30 {
            Some(big(tiny))
        } else {
            None
        }
    }
    let wide = [(-30.0, 30.0), (-712.0, 712.0), (-1.0, 1.0)];
    measure64(
        "sinh_f64",
        math::sinh_f64,
        |x, cc| special(x, f64::INFINITY, x).unwrap_or_else(|| big(x).sinh(P, RM, cc)),
        &wide,
        2.0,
        1_200,
    );
    measure64(
        "cosh_f64",
        math::cosh_f64,
        |x, cc| {
            let x = x.abs();
            special(x, f64::INFINITY, 1.0).unwrap_or_else(|| big(x).cosh(P, RM, cc))
        },
        &wide,
        2.0,
        1_200,
    );
    measure64(
        "asinh_f64",
        math::asinh_f64,
        |x, cc| special(x, f64::INFINITY, x).unwrap_or_else(|| big(x).asinh(P, RM, cc)),
        &[(-10.0, 10.0), (-1e10, 1e10), (-1e-3, 1e-3)],
        2.0,
        1_200,
    );
    measure64(
        "acosh_f64",
        math::acosh_f64,
        |x, cc| {
            if x < 1.0 || x.is_nan() {
                big(f64::NAN)
            } else if x == f64::INFINITY {
                big(x)
            } else {
                big(x).acosh(P, RM, cc)
            }
        },
        &[(1.0, 4.0), (1.0, 1e10), (1.0, 1.001)],
        2.0,
        1_200,
    );
    measure64(
        "atanh_f64",
        math::atanh_f64,
        |x, cc| {
            if x.abs() > 1.0 || x.is_nan() {
                big(f64::NAN)
            } else if x.abs() == 1.0 {
                big(f64::INFINITY.copysign(x))
            } else {
                special(x, 0.0, x).unwrap_or_else(|| big(x).atanh(P, RM, cc))
            }
        },
        &[(-1.0, 1.0), (0.99, 1.0), (-1e-3, 1e-3)],
        2.0,
        1_200,
    );
    assert_eq!(math::sinh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(math::asinh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(math::atanh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(math::acosh_f64(1.0).to_bits(), 0.0f64.to_bits());
}

#[test]
fn tan_f64() {
    use f64_ref::{RM, big};
    // Huge arguments need the bits of π far beyond 256 (as in `math_ulp_f64.rs`).
    const WIDE: usize = 1_400;
    measure64(
        "tan_f64",
        math::tan_f64,
        |x, cc| {
            if !x.is_finite() {
                big(f64::NAN)
            } else if x.abs() < 1e-30 {
                big(x)
            } else if x.abs() < 1e6 {
                big(x).tan(f64_ref::P, RM, cc)
            } else {
                astro_float::BigFloat::from_f64(x, WIDE).tan(WIDE, RM, cc)
            }
        },
        &[(-10.0, 10.0), (-1e5, 1e5), (-1.6, 1.6)],
        2.0,
        300,
    );
    assert_eq!(math::tan_f64(-0.0).to_bits(), (-0.0f64).to_bits());
}

#[test]
fn atan_atan2_f64() {
    use f64_ref::{P, RM, big, ulp_error};
    measure64(
        "atan_f64",
        math::atan_f64,
        |x, cc| {
            if x.is_nan() {
                big(f64::NAN)
            } else if x.abs() < 1e-30 {
                big(x)
            } else if x.is_infinite() {
                // π/2 with x's sign.
                let p = cc.pi(P, RM).div(&big(2.0), P, RM);
                if x < 0.0 { p.neg() } else { p }
            } else {
                big(x).atan(P, RM, cc)
            }
        },
        &[(-4.0, 4.0), (-1e10, 1e10), (-0.7, 0.7)],
        2.0,
        1_500,
    );
    let mut cc = astro_float::Consts::new().expect("constants");
    let mut rng = Rng(47);
    let mut w = Worst::default();
    let sp = f64_ref::specials();
    let mut pairs: Vec<(f64, f64)> = sp
        .iter()
        .flat_map(|&x| sp.iter().map(move |&y| (x, y)))
        .collect();
    for _ in 0..1_000 {
        pairs.push((f64_rng(&mut rng), f64_rng(&mut rng)));
        let u = |r: &mut Rng| (r.next() >> 11) as f64 * 2f64.powi(-50) - 4.0;
        pairs.push((u(&mut rng), u(&mut rng)));
    }
    for (y, x) in pairs {
        let r = if x.is_finite() && y.is_finite() && x != 0.0 && y != 0.0 {
            // atan(y/x) at 256 bits, moved to x's half plane.
            let a = big(y).div(&big(x), P, RM).atan(P, RM, &mut cc);
            let pi = cc.pi(P, RM);
            if x > 0.0 {
                a
            } else if y > 0.0 {
                a.add(&pi, P, RM)
            } else {
                a.sub(&pi, P, RM)
            }
        } else {
            // Zeros and infinities: exact multiples of π/4, as std rounds them.
            big(y.atan2(x))
        };
        w.record(ulp_error(math::atan2_f64(y, x), &r), (y, x));
    }
    w.assert("atan2_f64", 2.0);
    assert_eq!(math::atan_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(math::atan2_f64(0.0, -0.0), core::f64::consts::PI);
}

#[test]
fn asin_acos_f64() {
    use f64_ref::{P, RM, big};
    let ranges = [(-1.0, 1.0), (0.99, 1.0), (-1.0, -0.99), (-0.6, 0.6)];
    measure64(
        "asin_f64",
        math::asin_f64,
        |x, cc| {
            if x.is_nan() || x.abs() > 1.0 {
                big(f64::NAN)
            } else if x.abs() < 1e-30 {
                big(x)
            } else {
                big(x).asin(P, RM, cc)
            }
        },
        &ranges,
        2.0,
        1_000,
    );
    measure64(
        "acos_f64",
        math::acos_f64,
        |x, cc| {
            if x.is_nan() || x.abs() > 1.0 {
                big(f64::NAN)
            } else {
                big(x).acos(P, RM, cc)
            }
        },
        &ranges,
        2.0,
        1_000,
    );
    assert_eq!(math::asin_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(math::acos_f64(1.0).to_bits(), 0.0f64.to_bits());
    assert_eq!(math::acos_f64(-1.0), core::f64::consts::PI);
}
