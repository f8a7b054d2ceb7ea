//! `gpu::random` on the host (the `sim` feature gives `gpu::math` its host implementations):
//! the elementary functions behind the conversions against `std`, and the moments of the
//! exponential and Poisson variates. The Random123 known answers are unit tests of
//! `random::philox`; fills through kernels are in `gpu-tests/tests/random.rs`.

use gpu::random::__float::{
    exp_f64, neg2_ln_f32, neg2_ln_f64, sincos_quarter_f32, sincos_turns_f64, sqrt_in_range_f32,
};
use gpu::random::{
    Philox4x32, box_muller_f32, box_muller_f64, normal_pair_f32, normal_pair_f64, uniform_f32,
    uniform_f64,
};

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

/// Error of `got` against `want` in units of `f32::EPSILON · |want|` (relative "ulp").
fn rel_f32(got: f32, want: f64) -> f64 {
    (got as f64 - want).abs() / (f32::EPSILON as f64 * want.abs())
}

/// The f32 pieces of Box–Muller over every input the normals can give them (all 2^23 uniform
/// values), relative to their own size: `-2·ln u` (fitted polynomial, no division), the
/// quarter-turn sine and cosine (also near 0, where `|z|` is small), and the square root's
/// exact fast path (the host's own `sqrt` here; the GPU fills are compared bit for bit with the
/// host in `gpu-tests/tests/random.rs`).
#[test]
fn f32_pieces_are_accurate_over_every_uniform() {
    let (mut ln_max, mut sin_max, mut cos_max) = (0.0f64, 0.0f64, 0.0f64);
    for k in 0..1u32 << 23 {
        let u = uniform_f32(k << 9);
        let uf = u as f64;
        ln_max = ln_max.max(rel_f32(neg2_ln_f32(u), -2.0 * uf.ln()));
        let (s, c) = sincos_quarter_f32(u);
        let t = std::f64::consts::FRAC_PI_2 * uf;
        sin_max = sin_max.max(rel_f32(s, t.sin()));
        cos_max = cos_max.max(rel_f32(c, t.cos()));
        let l = neg2_ln_f32(u);
        assert_eq!(sqrt_in_range_f32(l), l.sqrt());
    }
    println!(
        "f32 relative errors (units of 2^-23): -2·ln u {ln_max:.3}, sin {sin_max:.3}, cos {cos_max:.3}"
    );
    // The bounds the `gpu::random` docs state.
    assert!(ln_max < 2.0, "-2·ln u: {ln_max}");
    assert!(
        sin_max < 2.0 && cos_max < 2.0,
        "sin {sin_max}, cos {cos_max}"
    );
}

#[test]
fn f64_pieces_are_accurate() {
    let (mut ln_max, mut sc_max) = (0.0f64, 0.0f64);
    for x in sample_words() {
        let v = uniform_f64(x, x.rotate_left(7));
        let want = -2.0 * v.ln();
        ln_max = ln_max.max((neg2_ln_f64(v) - want).abs() / (f64::EPSILON * want.abs()));
        let (s, c) = sincos_turns_f64(v);
        let t = std::f64::consts::TAU * v;
        // TAU·v itself is rounded: the reference carries about 2^-52 of error (absolute).
        sc_max = sc_max
            .max((s - t.sin()).abs() / f64::EPSILON)
            .max((c - t.cos()).abs() / f64::EPSILON);
    }
    println!("f64: -2·ln u {ln_max:.3} (relative), sin/cos {sc_max:.3} (absolute), units of 2^-52");
    assert!(ln_max < 2.0, "-2·ln u: {ln_max}");
    assert!(sc_max < 8.0, "sin/cos: {sc_max}");
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
    let max64 = (-2.0 * (2f64.powi(-53)).ln()).sqrt() * (1.0 + f64::EPSILON);
    for x in sample_words().step_by(7) {
        let w = [x, x.rotate_left(3), x.wrapping_mul(0x9e37_79b9), !x];
        let z = box_muller_f64(w);
        for z in z {
            assert!(z.is_finite() && z.abs() <= max64, "{z}");
        }
        // The fills' scaled pairs: the standard ones for mean 0, sd 1; the scale on the radius.
        assert_eq!(normal_pair_f64(w, 0.0, 1.0), z);
        let y = x.wrapping_mul(0x9e37_79b9);
        assert_eq!(normal_pair_f32(x, y, 0.0, 1.0), box_muller_f32(x, y));
        let [a, b] = normal_pair_f32(x, y, 10.0, 2.0);
        let [p, q] = box_muller_f32(x, y);
        assert!((a - (10.0 + 2.0 * p)).abs() <= 1e-5 && (b - (10.0 + 2.0 * q)).abs() <= 1e-5);
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
