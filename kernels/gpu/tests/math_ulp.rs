//! Accuracy of `gpu::math`'s library functions, measured on the CPU (the same code as on the
//! GPU: `gpu-tests/tests/math.rs` checks the device gives bit-identical results).
//!
//! Each function runs over millions of inputs (random bit patterns, which cover every binade,
//! plus uniform samples of the ranges that matter and the edge cases: ±0, subnormals, ±inf,
//! NaN, huge trigonometric arguments). The reference is the f64 function of `std`/`libm`,
//! accurate to < 1 ulp of f64, rounded to f32: a correctly rounded f32 reference except for
//! the astronomically rare inputs where rounding the f64 result twice differs (the error
//! measured here is then off by at most 2^-29 ulp). Errors are measured against the unrounded
//! f64 reference, in ulp of the result's f32 binade.
//!
//! `GPU_MATH_EXHAUSTIVE=1` sweeps all 2^32 f32 inputs for the one-argument functions instead
//! (minutes per function in an optimized build).

use gpu::math;

mod math_support;
use math_support::Rng;
use math_support::f32_ref::{specials, ulp_error};

struct Report {
    name: &'static str,
    count: u64,
    max: f64,
    at: f32,
}

/// Measures `f` against `reference` over the specials, `random` random bit patterns and
/// `uniform` samples of each range; panics with the worst input if any error exceeds `bound`.
fn measure(
    name: &'static str,
    f: impl Fn(f32) -> f32,
    reference: impl Fn(f64) -> f64,
    ranges: &[(f32, f32)],
    bound: f64,
) -> Report {
    let mut rep = Report {
        name,
        count: 0,
        max: 0.0,
        at: 0.0,
    };
    let mut check = |x: f32| {
        let e = ulp_error(f(x), reference(x as f64));
        rep.count += 1;
        if e > rep.max {
            rep.max = e;
            rep.at = x;
        }
    };
    if std::env::var_os("GPU_MATH_EXHAUSTIVE").is_some() {
        for b in 0..=u32::MAX {
            check(f32::from_bits(b));
        }
    } else {
        specials().into_iter().for_each(&mut check);
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..2_000_000 {
            check(rng.bits32());
        }
        for &(lo, hi) in ranges {
            for _ in 0..2_000_000 {
                check(rng.uniform(lo, hi));
            }
        }
    }
    println!(
        "{:<8} max {:.3} ulp at {:e} ({:#010x}), {} inputs",
        rep.name,
        rep.max,
        rep.at,
        rep.at.to_bits(),
        rep.count
    );
    assert!(
        rep.max <= bound,
        "{name}: {:.3} ulp at x = {:e} ({:#010x}) exceeds the documented {bound} ulp",
        rep.max,
        rep.at,
        rep.at.to_bits()
    );
    rep
}

#[test]
fn sin_cos_f32() {
    let ranges = [(-10.0, 10.0), (-1e5, 1e5), (-1e30, 1e30)];
    measure("sin", math::sin, f64::sin, &ranges, 2.0);
    measure("cos", math::cos, f64::cos, &ranges, 2.0);
    let mut rng = Rng(7);
    for _ in 0..100_000 {
        let x = rng.bits32();
        let (s, c) = math::sincos(x);
        assert_eq!(
            (s.to_bits(), c.to_bits()),
            (math::sin(x).to_bits(), math::cos(x).to_bits())
        );
    }
    assert_eq!(math::sin(-0.0).to_bits(), (-0.0f32).to_bits());
}

#[test]
fn exp_log_f32() {
    measure(
        "exp",
        math::exp,
        f64::exp,
        &[(-104.0, 89.0), (-1.0, 1.0)],
        1.0,
    );
    measure(
        "exp2",
        math::exp2,
        f64::exp2,
        &[(-151.0, 129.0), (-1.0, 1.0)],
        1.0,
    );
    measure("log", math::log, f64::ln, &[(0.0, 4.0), (0.5, 2.0)], 1.0);
    measure(
        "log2",
        math::log2,
        f64::log2,
        &[(0.0, 4.0), (0.5, 2.0)],
        1.0,
    );
    for k in -149..128 {
        assert_eq!(math::exp2(k as f32), 2f64.powi(k) as f32, "exp2({k})");
        assert_eq!(math::log2(2f64.powi(k) as f32), k as f32, "log2(2^{k})");
    }
    assert_eq!(math::log(0.0), f32::NEG_INFINITY);
    assert_eq!(math::log(-0.0), f32::NEG_INFINITY);
    assert_eq!(math::exp(f32::NEG_INFINITY), 0.0);
}

#[test]
fn tanh_erf_f32() {
    measure(
        "tanh",
        math::tanh,
        f64::tanh,
        &[(-10.0, 10.0), (-1.0, 1.0)],
        2.0,
    );
    measure(
        "erf",
        math::erf,
        libm::erf,
        &[(-5.0, 5.0), (-1.0, 1.0)],
        2.0,
    );
    assert_eq!(math::tanh(-0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(math::erf(-0.0).to_bits(), (-0.0f32).to_bits());
}

/// Bit-exact comparison with `std` over random bits and the specials (NaNs compare as NaNs).
fn exact(name: &str, f: impl Fn(f32) -> f32, reference: impl Fn(f32) -> f32) {
    let mut rng = Rng(11);
    let inputs = specials()
        .into_iter()
        .chain((0..1_000_000).map(|_| rng.bits32()));
    let inputs: Vec<f32> = inputs
        .chain((0..1_000_000).map(|i| i as f32 * 0.25 - 1e5))
        .collect();
    for x in inputs {
        let (y, r) = (f(x), reference(x));
        assert!(
            y.to_bits() == r.to_bits() || (y.is_nan() && r.is_nan()),
            "{name}({x:e}) = {y:e}, expected {r:e}"
        );
    }
}

#[test]
fn rounding_f32() {
    exact("floor", math::floor, f32::floor);
    exact("ceil", math::ceil, f32::ceil);
    exact("trunc", math::trunc, f32::trunc);
    exact("rint", math::rint, f32::round_ties_even);
    exact("round", math::round, f32::round);
    exact("sqrt", math::sqrt, f32::sqrt);
    exact(
        "copysign",
        |x| math::copysign(1.5, x),
        |x| 1.5f32.copysign(x),
    );
    let mut rng = Rng(13);
    for i in 0..2_000_000 {
        let (x, y) = (
            rng.bits32(),
            if i % 2 == 0 {
                rng.bits32()
            } else {
                rng.uniform(-10.0, 10.0)
            },
        );
        let (f, r) = (math::fmod(x, y), x % y);
        assert!(
            f.to_bits() == r.to_bits() || (f.is_nan() && r.is_nan()),
            "fmod({x:e}, {y:e}) = {f:e}, expected {r:e}"
        );
        let n = (rng.next() % 700) as i32 - 350;
        let (l, r) = (math::ldexp(x, n), (x as f64 * 2f64.powi(n)) as f32);
        assert!(
            l.to_bits() == r.to_bits() || (l.is_nan() && r.is_nan()),
            "ldexp({x:e}, {n}) = {l:e}, expected {r:e}"
        );
        let (m, e) = math::frexp(x);
        if x.is_finite() && x != 0.0 {
            assert!((0.5..1.0).contains(&m.abs()), "frexp({x:e}) = {m:e}");
            assert_eq!(
                m as f64 * 2f64.powi(e),
                x as f64,
                "frexp({x:e}) = ({m:e}, {e})"
            );
        } else {
            assert!(
                m.to_bits() == x.to_bits() || (m.is_nan() && x.is_nan()),
                "frexp({x:e})"
            );
        }
    }
}

#[test]
fn pow_f32() {
    let mut rng = Rng(17);
    let (mut max, mut at, mut count) = (0.0f64, (0.0f32, 0.0f32), 0u64);
    let mut check = |x: f32, y: f32| {
        let e = ulp_error(math::pow(x, y), (x as f64).powf(y as f64));
        count += 1;
        if e > max {
            (max, at) = (e, (x, y));
        }
    };
    let sp = specials();
    for &x in &sp {
        for &y in &sp {
            check(x, y);
        }
    }
    for _ in 0..2_000_000 {
        // Results spread over the whole range: y chosen so that y·log2 x lands in [-160, 140].
        let x = rng.bits32().abs();
        let z = rng.uniform(-160.0, 140.0);
        let l = (x as f64).log2();
        check(
            x,
            if l != 0.0 && l.is_finite() {
                (z as f64 / l) as f32
            } else {
                z
            },
        );
        // Near 1 with large exponents, negative x with integer y, small operands.
        check(1.0 + rng.uniform(-1e-3, 1e-3), rng.uniform(-1e5, 1e5));
        check(-rng.uniform(0.0, 10.0), (rng.next() % 61) as f32 - 30.0);
        check(rng.uniform(0.0, 10.0), rng.uniform(-10.0, 10.0));
    }
    for _ in 0..1_000_000 {
        check(rng.bits32(), rng.bits32());
    }
    println!(
        "pow      max {max:.3} ulp at ({:e}, {:e}), {count} inputs",
        at.0, at.1
    );
    assert!(
        max <= 1.0,
        "pow: {max:.3} ulp at ({:e}, {:e}) exceeds the documented 1 ulp",
        at.0,
        at.1
    );
    assert_eq!(math::pow(-0.0, 3.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(math::pow(-0.0, -3.0), f32::NEG_INFINITY);
    assert_eq!(math::pow(f32::NAN, 0.0), 1.0);
    assert_eq!(math::pow(1.0, f32::NAN), 1.0);
    assert!(math::pow(-2.0, 0.5).is_nan());
    assert_eq!(math::pow(-2.0, 3.0), -8.0);
}

/// sin(πx), cos(πx) in f64 after an exact reduction of x modulo 2 (π·x itself would round).
fn sinpi_ref(x: f64) -> f64 {
    let y = x % 2.0;
    if y == y.trunc() {
        0.0
    } else {
        (core::f64::consts::PI * y).sin()
    }
}
fn cospi_ref(x: f64) -> f64 {
    let y = x % 2.0;
    if (y + 0.5) == (y + 0.5).trunc() {
        0.0
    } else {
        (core::f64::consts::PI * y).cos()
    }
}

#[test]
fn sinpi_cospi_log10_exp10_f32() {
    let ranges = [(-4.0, 4.0), (-1e6, 1e6)];
    measure("sinpi", math::sinpi, sinpi_ref, &ranges, 1.0);
    measure("cospi", math::cospi, cospi_ref, &ranges, 1.0);
    measure(
        "log10",
        math::log10,
        f64::log10,
        &[(0.0, 4.0), (0.5, 2.0)],
        2.0,
    );
    measure(
        "exp10",
        math::exp10,
        |x| 10f64.powf(x),
        &[(-46.0, 39.0), (-1.0, 1.0)],
        1.0,
    );
    assert_eq!(math::sinpi(-3.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(math::sinpi(2.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(math::cospi(-2.5).to_bits(), 0.0f32.to_bits());
}
