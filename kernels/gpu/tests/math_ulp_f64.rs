//! Accuracy of `gpu::math`'s f64 functions against a 256-bit reference (`astro-float`, pure
//! Rust), measured on the CPU (the same code as on the GPU). Fewer inputs than for f32: the
//! reference is slow. Errors are in ulp of the exact result's f64 binade.

use astro_float::{BigFloat, Consts};
use gpu::math;

mod math_support;
use math_support::Rng;
use math_support::f64_ref::{P, RM, big, specials, ulp_error};

/// Measures `f` against `reference` over the specials, random bit patterns and uniform samples
/// of `ranges`; panics with the worst input if any error exceeds `bound`.
fn measure(
    name: &str,
    f: impl Fn(f64) -> f64,
    reference: impl Fn(&BigFloat, &mut Consts) -> BigFloat,
    ranges: &[(f64, f64)],
    count: usize,
    bound: f64,
) {
    let mut cc = Consts::new().expect("astro-float constants");
    let (mut max, mut at, mut n) = (0.0f64, 0.0f64, 0usize);
    let mut check = |x: f64| {
        let r = reference(&big(x), &mut cc);
        let e = ulp_error(f(x), &r);
        n += 1;
        if e > max {
            (max, at) = (e, x);
        }
    };
    specials().into_iter().for_each(&mut check);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..count {
        check(rng.bits64());
    }
    for &(lo, hi) in ranges {
        for _ in 0..count {
            check(rng.uniform_f64(lo, hi));
        }
    }
    println!(
        "{name:<10} max {max:.3} ulp at {at:e} ({:#018x}), {n} inputs",
        at.to_bits()
    );
    assert!(
        max <= bound,
        "{name}: {max:.3} ulp at x = {at:e} ({:#018x}) exceeds the documented {bound} ulp",
        at.to_bits()
    );
}

/// 2^x; ±inf by hand (astro-float's `pow` does not take them).
fn exp2_reference(x: &BigFloat, c: &mut Consts) -> BigFloat {
    if x.is_inf() {
        big(if x.is_negative() { 0.0 } else { f64::INFINITY })
    } else {
        BigFloat::from_f64(2.0, P).pow(x, P, RM, c)
    }
}

#[test]
fn exp_log_f64() {
    let n = 5_000;
    measure(
        "exp_f64",
        math::exp_f64,
        |x, c| x.exp(P, RM, c),
        &[(-746.0, 710.0), (-1.0, 1.0)],
        n,
        1.0,
    );
    measure(
        "exp2_f64",
        math::exp2_f64,
        exp2_reference,
        &[(-1077.0, 1025.0), (-1.0, 1.0)],
        n,
        1.0,
    );
    measure(
        "log_f64",
        math::log_f64,
        |x, c| x.ln(P, RM, c),
        &[(0.0, 4.0), (0.5, 2.0)],
        n,
        1.0,
    );
    measure(
        "log2_f64",
        math::log2_f64,
        |x, c| x.log2(P, RM, c),
        &[(0.0, 4.0), (0.5, 2.0)],
        n,
        1.0,
    );
    for k in -1074..1024 {
        let p = if k >= -1022 {
            f64::from_bits(((k + 1023) as u64) << 52)
        } else {
            f64::from_bits(1 << (k + 1074))
        };
        assert_eq!(math::exp2_f64(k as f64), p, "exp2_f64({k})");
        assert_eq!(math::log2_f64(p), k as f64, "log2_f64(2^{k})");
    }
}

#[test]
fn sin_cos_f64() {
    let n = 4_000;
    // Huge arguments need a reference with enough bits of π: astro-float reduces at the
    // working precision, so those inputs use 1,400 bits (slow: fewer of them).
    let p = |x: &BigFloat| {
        if x.exponent().is_some_and(|e| e > 30) {
            1400
        } else {
            P
        }
    };
    let sin = |x: &BigFloat, c: &mut Consts| x.sin(p(x), RM, c);
    let cos = |x: &BigFloat, c: &mut Consts| x.cos(p(x), RM, c);
    let ranges = [(-10.0, 10.0), (-1e6, 1e6), (-1e9, 1e9)];
    measure("sin_f64", math::sin_f64, sin, &ranges, n, 1.0);
    measure("cos_f64", math::cos_f64, cos, &ranges, n, 1.0);
    assert_eq!(math::sin_f64(-0.0).to_bits(), (-0.0f64).to_bits());
}

#[test]
fn tanh_f64() {
    measure(
        "tanh_f64",
        math::tanh_f64,
        |x, c| x.tanh(P, RM, c),
        &[(-20.0, 20.0), (-1.0, 1.0)],
        5_000,
        2.0,
    );
    assert_eq!(math::tanh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
}
