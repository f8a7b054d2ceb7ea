//! `gpu::random` on the host (the `sim` feature gives `gpu::math` its host implementations):
//! the elementary functions behind the conversions against `std`, and the moments of the
//! exponential and Poisson variates. The Random123 known answers are unit tests of
//! `random::philox`; fills through kernels are in `gpu-tests/tests/random.rs`.

use gpu::random::__float::{exp_f64, ln_f32, ln_f64, sincos_turns_f32, sincos_turns_f64};
use gpu::random::{Philox4x32, box_muller_f32, uniform_f32, uniform_f64};

/// Every 4099th word, and the extremes.
fn sample_words() -> impl Iterator<Item = u32> {
    (0..=u32::MAX)
        .step_by(4099)
        .chain([u32::MAX, 1, 0x200, 0x1ff])
}

#[test]
fn conversions_are_open_interval_midpoints() {
    assert_eq!(uniform_f32(0), 2f32.powi(-24));
    assert_eq!(uniform_f32(u32::MAX), 1.0 - 2f32.powi(-24));
    assert_eq!(uniform_f64(0, 0), 2f64.powi(-53));
    assert_eq!(uniform_f64(u32::MAX, u32::MAX), 1.0 - 2f64.powi(-53));
    for x in sample_words() {
        let want = ((x >> 9) as f64 + 0.5) / (1u64 << 23) as f64;
        assert_eq!(uniform_f32(x) as f64, want, "word {x:#x}");
    }
}

#[test]
fn elementary_functions_are_accurate_to_a_few_ulp() {
    for x in sample_words() {
        let u = uniform_f32(x);
        let want = (u as f64).ln();
        let err = (ln_f32(u) as f64 - want).abs();
        assert!(
            err <= 2.5 * f32::EPSILON as f64 * want.abs().max(0.5),
            "ln_f32({u}) off by {err}"
        );
        let (s, c) = sincos_turns_f32(u);
        let t = std::f64::consts::TAU * u as f64;
        assert!(
            (s as f64 - t.sin()).abs() < 2.0 * f32::EPSILON as f64,
            "sin 2π·{u}"
        );
        assert!(
            (c as f64 - t.cos()).abs() < 2.0 * f32::EPSILON as f64,
            "cos 2π·{u}"
        );

        let v = uniform_f64(x, x.rotate_left(7));
        let want = v.ln();
        let err = (ln_f64(v) - want).abs();
        assert!(
            err <= 4.0 * f64::EPSILON * want.abs().max(0.5),
            "ln_f64({v}) off by {err}"
        );
        let (s, c) = sincos_turns_f64(v);
        let t = std::f64::consts::TAU * v;
        // TAU·v itself is rounded: the reference carries about 2^-52 of error.
        assert!(
            (s - t.sin()).abs() < 8.0 * f64::EPSILON,
            "sin 2π·{v}: {} vs {}",
            s,
            t.sin()
        );
        assert!((c - t.cos()).abs() < 8.0 * f64::EPSILON, "cos 2π·{v}");
    }
    for i in 0..=7070 {
        let x = -(i as f64) * 0.1;
        let (got, want) = (exp_f64(x), x.exp());
        assert!(
            (got - want).abs() <= 4.0 * f64::EPSILON * want,
            "exp({x}): {got} vs {want}"
        );
    }
    assert_eq!(exp_f64(-800.0), 0.0);
}

#[test]
fn box_muller_values_are_bounded_and_normal() {
    let max = (-2.0 * (2f64.powi(-24)).ln()).sqrt() as f32 * (1.0 + f32::EPSILON);
    let (mut sum, mut sum2) = (0.0f64, 0.0f64);
    let mut count = 0;
    for x in sample_words().step_by(7) {
        for z in box_muller_f32(x, x.wrapping_mul(0x9e37_79b9)) {
            assert!(z.is_finite() && z.abs() <= max, "{z}");
            sum += z as f64;
            sum2 += (z as f64).powi(2);
            count += 1;
        }
    }
    let (mean, var) = (sum / count as f64, sum2 / count as f64);
    assert!(
        mean.abs() < 0.02 && (var - 1.0).abs() < 0.03,
        "mean {mean}, variance {var}"
    );
}

/// Mean and variance of `n` draws, each from its own stream (subsequence `i`) as kernels do.
fn draw(n: u64, mut f: impl FnMut(&mut Philox4x32) -> f64) -> (f64, f64) {
    let xs: Vec<f64> = (0..n)
        .map(|i| f(&mut Philox4x32::new(2026, i, 0)))
        .collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, var)
}

#[test]
fn exponential_and_poisson_moments() {
    let n = 40_000u64;
    let tol = |sd: f64| 5.0 * sd / (n as f64).sqrt();
    let (m, v) = draw(n, |r| r.exponential_f32() as f64);
    assert!(
        (m - 1.0).abs() < tol(1.0) && (v - 1.0).abs() < tol(8f64.sqrt()),
        "{m} {v}"
    );
    let (m, v) = draw(n, |r| r.exponential_f64());
    assert!(
        (m - 1.0).abs() < tol(1.0) && (v - 1.0).abs() < tol(8f64.sqrt()),
        "{m} {v}"
    );
    for lambda in [0.1, 3.5, 40.0, 600.0] {
        let (m, v) = draw(n, |r| r.poisson(lambda) as f64);
        // Var(sample variance) ≈ (μ4 - σ⁴)/n with μ4 = λ(1 + 3λ) for the Poisson distribution.
        let sd_var = (lambda * (1.0 + 3.0 * lambda) - lambda * lambda).sqrt();
        assert!(
            (m - lambda).abs() < tol(lambda.sqrt()),
            "λ={lambda}: mean {m}"
        );
        assert!((v - lambda).abs() < tol(sd_var), "λ={lambda}: variance {v}");
    }
    let (mut r, lambda) = (Philox4x32::new(1, 0, 0), 2.0);
    let zeros = (0..n).filter(|_| r.poisson(lambda) == 0).count() as f64 / n as f64;
    let p0 = (-lambda).exp();
    assert!(
        (zeros - p0).abs() < tol((p0 * (1.0 - p0)).sqrt()),
        "P(0) = {zeros}, want {p0}"
    );
    assert_eq!(Philox4x32::new(1, 0, 0).poisson(0.0), 0);
    assert_eq!(Philox4x32::new(1, 0, 0).poisson(f64::NAN), 0);
}

#[test]
fn spare_normals_are_the_second_of_each_pair() {
    let mut a = Philox4x32::new(5, 1, 0);
    let mut b = Philox4x32::new(5, 1, 0);
    let [x, y] = [a.normal_f32(), a.normal_f32()];
    let w = b.next_u32x4();
    assert_eq!([x, y], box_muller_f32(w[0], w[1]));
    let [p, q] = [a.normal_f64(), a.normal_f64()];
    assert_eq!([p, q], Philox4x32::new(5, 1, 2).normal_f64x2());
}
