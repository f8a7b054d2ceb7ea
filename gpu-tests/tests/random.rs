//! Random fills of `gpu-algorithms` (Philox4x32-10): the Random123 known answers through the
//! kernel, bit-identical results against the host computation of the same formulas (so GPU and
//! simulator agree), statistical sanity (moments, chi-square on buckets, independence across
//! streams), argument errors, and the Monte Carlo example. On the GPU, or the CPU simulator
//! when there is none (`gpu_tests::gpu_or_skip`).

use gpu_algorithms::{Algorithms, Philox};
use gpu_host::gpu::random::{
    counter, key, normal_pair_f32, normal_pair_f64, philox4x32_10, uniform_f32, uniform_f64,
};
use gpu_host::{DeviceCopy, Error, Gpu};
use gpu_tests::{gpu_or_skip, sizes_for};

/// Random123's known-answer vectors (github.com/DEShawResearch/random123, `tests/kat_vectors`,
/// the three `philox4x32 10` lines: counter[4], key[2], expected[4]).
const KAT: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
    (
        [0, 0, 0, 0],
        [0, 0],
        [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
    ),
    (
        [u32::MAX; 4],
        [u32::MAX; 2],
        [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
    ),
    (
        [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
        [0xa4093822, 0x299f31d0],
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
    ),
];

fn words(lo: u32, hi: u32) -> u64 {
    (hi as u64) << 32 | lo as u64
}

fn setup(test: &str) -> Option<(Gpu, Algorithms)> {
    let gpu = gpu_or_skip(test)?;
    let algos = Algorithms::load(&gpu).expect("loading the algorithm kernels");
    Some((gpu, algos))
}

/// The host computation of a fill: block `offset + q` of the stream, converted by `f`.
fn reference<T: Copy, const N: usize>(
    rng: Philox,
    n: usize,
    f: impl Fn([u32; 4]) -> [T; N],
) -> Vec<T> {
    let mut out: Vec<T> = (0..n.div_ceil(N) as u64)
        .flat_map(|q| {
            f(philox4x32_10(
                counter(rng.subsequence, rng.offset.wrapping_add(q)),
                key(rng.seed),
            ))
        })
        .collect();
    out.truncate(n);
    out
}

fn fill_uniform<T: gpu_algorithms::UniformBuiltin>(
    gpu: &Gpu,
    algos: &Algorithms,
    rng: &mut Philox,
    n: usize,
) -> Vec<T> {
    let mut out = gpu.alloc_zeroed::<T>(n).unwrap();
    algos
        .fill_uniform(gpu.default_stream(), rng, &mut out)
        .unwrap();
    out.to_vec().unwrap()
}

fn fill_normal<T: gpu_algorithms::NormalBuiltin>(
    gpu: &Gpu,
    algos: &Algorithms,
    rng: &mut Philox,
    mean: T,
    sd: T,
    n: usize,
) -> Vec<T> {
    let mut out = gpu.alloc_zeroed::<T>(n).unwrap();
    algos
        .fill_normal(gpu.default_stream(), rng, mean, sd, &mut out)
        .unwrap();
    out.to_vec().unwrap()
}

#[test]
fn fill_u32_gives_the_random123_known_answers() {
    let Some((gpu, algos)) = setup("fill_u32_gives_the_random123_known_answers") else {
        return;
    };
    for (ctr, k, want) in KAT {
        let start = Philox {
            seed: words(k[0], k[1]),
            subsequence: words(ctr[2], ctr[3]),
            offset: words(ctr[0], ctr[1]),
        };
        let mut rng = start;
        assert_eq!(fill_uniform::<u32>(&gpu, &algos, &mut rng, 4), want);
        assert_eq!(rng.offset, start.offset.wrapping_add(1), "one block used");
        let mut rng = start;
        assert_eq!(fill_uniform::<u32>(&gpu, &algos, &mut rng, 3), want[..3]);
    }
}

const SIZES: &[usize] = &[0, 1, 2, 3, 4, 5, 7, 1023, 1025, 65_537, (1 << 22) + 3];

fn bits_equal<T: DeviceCopy + PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: element {i} of {}: got {:?}, want {:?}",
            got.len(),
            got[i],
            want[i]
        );
    }
}

#[test]
fn fills_equal_the_host_computation_bit_for_bit() {
    let Some((gpu, algos)) = setup("fills_equal_the_host_computation_bit_for_bit") else {
        return;
    };
    let start = Philox {
        seed: 0x5eed_0000_0000_0017,
        subsequence: 3,
        offset: 1_000_000,
    };
    for n in sizes_for(&gpu, SIZES) {
        let mut rng = start;
        let got = fill_uniform::<u32>(&gpu, &algos, &mut rng, n);
        bits_equal(&format!("u32 n={n}"), &got, &reference(start, n, |w| w));
        assert_eq!(rng.offset, start.offset + n.div_ceil(4) as u64);

        let got: Vec<u32> = fill_uniform::<f32>(&gpu, &algos, &mut { start }, n)
            .iter()
            .map(|x| x.to_bits())
            .collect();
        let want = reference(start, n, |w| w.map(|x| uniform_f32(x).to_bits()));
        bits_equal(&format!("uniform f32 n={n}"), &got, &want);

        let mut rng = start;
        let got: Vec<u64> = fill_uniform::<f64>(&gpu, &algos, &mut rng, n)
            .iter()
            .map(|x| x.to_bits())
            .collect();
        let want = reference(start, n, |w| {
            [uniform_f64(w[0], w[1]), uniform_f64(w[2], w[3])].map(f64::to_bits)
        });
        bits_equal(&format!("uniform f64 n={n}"), &got, &want);
        assert_eq!(rng.offset, start.offset + n.div_ceil(2) as u64);

        let (mean, sd) = (1.5f32, 0.25f32);
        let got: Vec<u32> = fill_normal(&gpu, &algos, &mut { start }, mean, sd, n)
            .iter()
            .map(|x: &f32| x.to_bits())
            .collect();
        let want = reference(start, n, |w| {
            let [a, b] = normal_pair_f32(w[0], w[1], mean, sd);
            let [c, d] = normal_pair_f32(w[2], w[3], mean, sd);
            [a, b, c, d].map(f32::to_bits)
        });
        bits_equal(&format!("normal f32 n={n}"), &got, &want);

        let (mean, sd) = (-2.0f64, 3.0f64);
        let got: Vec<u64> = fill_normal(&gpu, &algos, &mut { start }, mean, sd, n)
            .iter()
            .map(|x: &f64| x.to_bits())
            .collect();
        let want = reference(start, n, |w| normal_pair_f64(w, mean, sd).map(f64::to_bits));
        bits_equal(&format!("normal f64 n={n}"), &got, &want);
    }
    // A fill whose block count carries into the high word part-way (the 32-bit fills' loop
    // runs in two passes, one per high word).
    let start = Philox {
        offset: (7 << 32) | 0xffff_f000,
        ..start
    };
    let n = 65_537;
    let got = fill_uniform::<u32>(&gpu, &algos, &mut { start }, n);
    bits_equal("u32 across the carry", &got, &reference(start, n, |w| w));
    let got: Vec<u32> = fill_normal(&gpu, &algos, &mut { start }, 0.0f32, 1.0, n)
        .iter()
        .map(|x: &f32| x.to_bits())
        .collect();
    let want = reference(start, n, |w| {
        let [a, b] = normal_pair_f32(w[0], w[1], 0.0, 1.0);
        let [c, d] = normal_pair_f32(w[2], w[3], 0.0, 1.0);
        [a, b, c, d].map(f32::to_bits)
    });
    bits_equal("normal f32 across the carry", &got, &want);
}

/// Mean, variance, and standardized third and fourth moments.
fn moments(x: &[f64]) -> (f64, f64, f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let m = |k: i32| x.iter().map(|v| (v - mean).powi(k)).sum::<f64>() / n;
    let var = m(2);
    (mean, var, m(3) / var.powf(1.5), m(4) / (var * var))
}

/// Pearson's chi-square statistic of `counts` against equal expected counts.
fn chi_square(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let e = total as f64 / counts.len() as f64;
    counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

/// Bound on a 63-degree chi-square statistic: its mean is 63 and its standard deviation 11.2;
/// 130 is beyond the 1 - 10⁻⁶ quantile (the inputs are fixed, so the test is deterministic).
const CHI2_63_BOUND: f64 = 130.0;

#[test]
fn uniforms_have_the_right_moments_and_buckets() {
    let Some((gpu, algos)) = setup("uniforms_have_the_right_moments_and_buckets") else {
        return;
    };
    let n = 1 << 16;
    let tol = |sd_of_one: f64| 5.0 * sd_of_one / (n as f64).sqrt();
    let mut rng = Philox::new(42);
    let f32s: Vec<f64> = fill_uniform::<f32>(&gpu, &algos, &mut rng, n)
        .into_iter()
        .map(f64::from)
        .collect();
    let f64s = fill_uniform::<f64>(&gpu, &algos, &mut rng, n);
    for (what, x) in [("f32", &f32s), ("f64", &f64s)] {
        assert!(
            x.iter().all(|&v| v > 0.0 && v < 1.0),
            "{what}: outside (0, 1)"
        );
        let (mean, var, skew, _) = moments(x);
        assert!(
            (mean - 0.5).abs() < tol((1.0f64 / 12.0).sqrt()),
            "{what}: mean {mean}"
        );
        assert!(
            (var - 1.0 / 12.0).abs() < tol(0.0745),
            "{what}: variance {var}"
        );
        assert!(skew.abs() < tol(1.5), "{what}: skewness {skew}");
        let mut counts = [0u64; 64];
        for &v in x.iter() {
            counts[(v * 64.0) as usize] += 1;
        }
        let chi2 = chi_square(&counts);
        assert!(
            chi2 < CHI2_63_BOUND,
            "{what}: chi-square {chi2} on 64 buckets"
        );
    }
    let u32s = fill_uniform::<u32>(&gpu, &algos, &mut rng, n);
    for shift in [0, 13, 26] {
        let mut counts = [0u64; 64];
        for &v in &u32s {
            counts[((v >> shift) & 63) as usize] += 1;
        }
        let chi2 = chi_square(&counts);
        assert!(
            chi2 < CHI2_63_BOUND,
            "u32 bits {shift}..{}: chi-square {chi2}",
            shift + 6
        );
    }
}

#[test]
fn normals_have_the_right_moments_and_tails() {
    let Some((gpu, algos)) = setup("normals_have_the_right_moments_and_tails") else {
        return;
    };
    let n = (1 << 16) + 1; // odd: the last value is the first of a pair
    let tol = |sd_of_one: f64| 5.0 * sd_of_one / (n as f64).sqrt();
    let mut rng = Philox::new(7);
    let f32s: Vec<f64> = fill_normal(&gpu, &algos, &mut rng, 0.0f32, 1.0, n)
        .into_iter()
        .map(f64::from)
        .collect();
    let f64s = fill_normal(&gpu, &algos, &mut rng, 0.0f64, 1.0, n);
    for (what, x) in [("f32", &f32s), ("f64", &f64s)] {
        let (mean, var, skew, kurt) = moments(x);
        assert!(mean.abs() < tol(1.0), "{what}: mean {mean}");
        assert!(
            (var - 1.0).abs() < tol(2f64.sqrt()),
            "{what}: variance {var}"
        );
        assert!(skew.abs() < tol(6f64.sqrt()), "{what}: skewness {skew}");
        assert!(
            (kurt - 3.0).abs() < tol(24f64.sqrt()),
            "{what}: kurtosis {kurt}"
        );
        // Mass within 1 and 2 standard deviations (Φ(1) - Φ(-1), Φ(2) - Φ(-2)).
        for (k, p) in [
            (1.0, 0.682_689_492_137_086f64),
            (2.0, 0.954_499_736_103_642),
        ] {
            let inside = x.iter().filter(|v| v.abs() < k).count() as f64 / n as f64;
            let sd = (p * (1.0 - p)).sqrt();
            assert!(
                (inside - p).abs() < tol(sd),
                "{what}: P(|z| < {k}) = {inside}, want {p}"
            );
        }
    }
    // Mean and standard deviation are applied.
    let x: Vec<f64> = fill_normal(&gpu, &algos, &mut rng, 10.0f32, 2.0, n)
        .into_iter()
        .map(f64::from)
        .collect();
    let (mean, var, _, _) = moments(&x);
    assert!((mean - 10.0).abs() < tol(2.0) && (var - 4.0).abs() < tol(4.0 * 2f64.sqrt()));
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let (ma, va, _, _) = moments(a);
    let (mb, vb, _, _) = moments(b);
    let cov = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - ma) * (y - mb))
        .sum::<f64>()
        / a.len() as f64;
    cov / (va * vb).sqrt()
}

#[test]
fn streams_are_independent_and_fills_continue() {
    let Some((gpu, algos)) = setup("streams_are_independent_and_fills_continue") else {
        return;
    };
    let n = 1 << 15;
    let bound = 5.0 / (n as f64).sqrt();
    let uniform = |rng: Philox| -> Vec<f64> { fill_uniform::<f64>(&gpu, &algos, &mut { rng }, n) };
    let base = uniform(Philox::new(1));
    let others = [
        (
            "next subsequence",
            Philox {
                subsequence: 1,
                ..Philox::new(1)
            },
        ),
        ("next seed", Philox::new(2)),
        (
            "next block",
            Philox {
                offset: 1,
                ..Philox::new(1)
            },
        ),
    ];
    for (what, rng) in others {
        let other = uniform(rng);
        let r = correlation(&base, &other);
        assert!(r.abs() < bound, "{what}: correlation {r}");
        // Also the pairs' joint distribution: chi-square on 8 × 8 cells.
        let mut counts = [0u64; 64];
        for (a, b) in base.iter().zip(&other) {
            counts[(a * 8.0) as usize * 8 + (b * 8.0) as usize] += 1;
        }
        let chi2 = chi_square(&counts);
        assert!(chi2 < CHI2_63_BOUND, "{what}: joint chi-square {chi2}");
    }
    let r = correlation(&base[..n - 1], &base[1..]);
    assert!(r.abs() < bound, "lag-1 autocorrelation {r}");

    // Two fills from one `Philox` are the one fill of both lengths.
    let mut rng = Philox::new(9);
    let mut both = fill_uniform::<u32>(&gpu, &algos, &mut rng, 1000);
    both.extend(fill_uniform::<u32>(&gpu, &algos, &mut rng, 1000));
    assert_eq!(
        both,
        fill_uniform::<u32>(&gpu, &algos, &mut Philox::new(9), 2000)
    );
}

#[test]
fn bad_arguments_are_refused_and_empty_fills_launch_nothing() {
    let Some((gpu, algos)) = setup("bad_arguments_are_refused_and_empty_fills_launch_nothing")
    else {
        return;
    };
    let s = gpu.default_stream();
    let mut out = gpu.alloc_zeroed::<f32>(8).unwrap();
    let mut rng = Philox::new(1);
    for (mean, sd, arg) in [
        (0.0, -1.0, "std_dev"),
        (0.0, f32::NAN, "std_dev"),
        (0.0, f32::INFINITY, "std_dev"),
        (f32::NAN, 1.0, "mean"),
    ] {
        match algos.fill_normal(s, &mut rng, mean, sd, &mut out) {
            Err(Error::Argument {
                kernel,
                argument,
                message,
            }) => {
                assert_eq!(
                    (kernel.as_str(), argument.as_str()),
                    ("fill_normal_f32", arg)
                );
                assert!(message.contains("finite"), "{message}");
            }
            other => panic!("mean {mean}, std_dev {sd}: expected an argument error, got {other:?}"),
        }
    }
    assert_eq!(out.to_vec().unwrap(), [0.0; 8], "nothing was written");
    assert_eq!(rng, Philox::new(1), "nothing was used");
    let mut empty = gpu.alloc_zeroed::<f64>(0).unwrap();
    algos.fill_uniform(s, &mut rng, &mut empty).unwrap();
    algos
        .fill_normal(s, &mut rng, 0.0, 1.0, &mut empty)
        .unwrap();
    assert_eq!(rng, Philox::new(1));
}

#[test]
fn monte_carlo_call_price_is_within_four_standard_errors() {
    use gpu_examples::monte_carlo::{CallOption, black_scholes_call, price_call};
    let Some(gpu) = gpu_or_skip("monte_carlo_call_price_is_within_four_standard_errors") else {
        return;
    };
    let kernels = gpu_examples::ExampleKernels::load(&gpu).unwrap();
    let option = CallOption {
        spot: 100.0,
        strike: 105.0,
        rate: 0.05,
        volatility: 0.2,
        maturity: 1.0,
    };
    let (threads, quads) = if gpu.is_simulator() {
        (1024, 4)
    } else {
        (1 << 16, 16)
    };
    let est = price_call(&gpu, &kernels, option, 11, threads, quads).unwrap();
    let exact = black_scholes_call(option);
    assert!(
        (est.price - exact).abs() < 4.0 * est.std_error,
        "{} paths: {} ± {} vs Black–Scholes {exact}",
        est.paths,
        est.price,
        est.std_error
    );
    // The closed form itself, against a published value: S=100, K=100, r=5%, σ=20%, T=1
    // gives 10.4506 (Hull, "Options, Futures, and Other Derivatives").
    let atm = CallOption {
        strike: 100.0,
        ..option
    };
    assert!((black_scholes_call(atm) - 10.4506).abs() < 1e-4);
}
