//! Row softmax and layernorm of `gpu-dense` (f32 and bf16) against CPU references in f64:
//! ragged row lengths (1, 7, 33, 1000, 8192, 20000, and rows longer than the registers hold),
//! large-magnitude inputs (softmax must subtract the row maximum), the general multi-pass path
//! on short rows (small blocks), and bad arguments. On the CPU simulator the shapes are small.

use gpu_dense::{Dense, RowElement};
use gpu_host::{DeviceBuffer, Error, Gpu};
use gpu_test_kit::{RelNormError, XorShift64Star as Rng};
use gpu_tests::gpu_or_skip;
use half::bf16;

/// Test element types: conversions and the tolerance of the relative-norm error.
trait TestElement: RowElement + PartialEq + std::fmt::Debug {
    const NAME: &'static str;
    /// ‖out − ref‖ / ‖ref‖ allowed (f32: rounding and `ex2.approx`; bf16: the output's 8-bit
    /// mantissa, 2^-9 relative per element).
    const TOL: f64;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn poison() -> Self;
}

impl TestElement for f32 {
    const NAME: &'static str = "f32";
    const TOL: f64 = 2e-6;
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn poison() -> f32 {
        f32::NAN
    }
}

impl TestElement for bf16 {
    const NAME: &'static str = "bf16";
    const TOL: f64 = 5e-3;
    fn from_f64(v: f64) -> bf16 {
        bf16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn poison() -> bf16 {
        bf16::NAN
    }
}

fn random<T: TestElement>(rng: &mut Rng, n: usize, scale: f64, offset: f64) -> Vec<T> {
    (0..n)
        .map(|_| {
            let mut v = rng.signed_f64() * scale + offset;
            if v == 0.0 {
                v = 0.5;
            }
            T::from_f64(v)
        })
        .collect()
}

fn softmax_ref<T: TestElement>(x: &[T], cols: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let m = row
            .iter()
            .map(|v| v.to_f64())
            .fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|v| (v.to_f64() - m).exp()).collect();
        let s: f64 = e.iter().sum();
        out.extend(e.iter().map(|v| v / s));
    }
    out
}

fn layernorm_ref<T: TestElement>(
    x: &[T],
    gamma: &[T],
    beta: &[T],
    cols: usize,
    eps: f64,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let mean = row.iter().map(|v| v.to_f64()).sum::<f64>() / cols as f64;
        let var = row.iter().map(|v| (v.to_f64() - mean).powi(2)).sum::<f64>() / cols as f64;
        let rstd = 1.0 / (var + eps).sqrt();
        out.extend(
            row.iter()
                .zip(gamma.iter().zip(beta))
                .map(|(v, (g, b))| (v.to_f64() - mean) * rstd * g.to_f64() + b.to_f64()),
        );
    }
    out
}

/// Relative-norm error; panics on a NaN (an unwritten, poisoned element) or a length mismatch.
fn rel_err<T: TestElement>(what: &str, out: &[T], reference: &[f64]) -> f64 {
    assert_eq!(out.len(), reference.len(), "{what}: length");
    let mut rel = RelNormError::new();
    for (i, (&o, &r)) in out.iter().zip(reference).enumerate() {
        let o = o.to_f64();
        assert!(
            !o.is_nan(),
            "{what}: element {i} is NaN (not written?), reference {r}"
        );
        rel.add(o, r);
    }
    rel.value()
}

fn poisoned<T: TestElement>(gpu: &Gpu, n: usize) -> DeviceBuffer<T> {
    gpu.to_device(&vec![T::poison(); n]).expect("upload")
}

/// (rows, cols) shapes: every ragged length on both back ends, larger ones on a GPU.
fn shapes(gpu: &Gpu) -> Vec<(usize, usize)> {
    let mut s = vec![
        (3, 1),
        (5, 7),
        (4, 33),
        (3, 1000),
        (2, 8192),
        (1, 20000),
        (2, 4099),
    ];
    if !gpu.is_simulator() {
        s.extend([
            (64, 8192),
            (300, 1024),
            (17, 33000),
            (5, 100_003),
            (1000, 123),
        ]);
    }
    s
}

fn check_softmax<T: TestElement>(gpu: &Gpu, dense: &Dense) {
    let mut rng = Rng::new(0x5eed ^ T::VEC as u64);
    let s = gpu.default_stream();
    // (scale, offset): ordinary values, then large magnitudes where exp(x) overflows f32.
    for (scale, offset) in [(4.0, 0.0), (300.0, 5e3)] {
        for (rows, cols) in shapes(gpu) {
            let x = random::<T>(&mut rng, rows * cols, scale, offset);
            let dx = gpu.to_device(&x).unwrap();
            let mut dy = poisoned::<T>(gpu, rows * cols);
            dense.softmax(s, &dx, &mut dy, rows, cols).unwrap();
            let what = format!("softmax_{} {rows}x{cols} scale {scale}", T::NAME);
            let err = rel_err(&what, &dy.to_vec().unwrap(), &softmax_ref(&x, cols));
            assert!(err < T::TOL, "{what}: relative error {err:.3e}");
        }
    }
    // The general (two-pass) path on rows longer than a 32- or 64-thread block holds.
    for (rows, cols, threads) in [(3, 1025, 32), (2, 5000, 64), (2, 2051, 32)] {
        let x = random::<T>(&mut rng, rows * cols, 30.0, -7.0);
        let dx = gpu.to_device(&x).unwrap();
        let mut dy = poisoned::<T>(gpu, rows * cols);
        dense
            .softmax_with_threads(s, &dx, &mut dy, rows, cols, threads)
            .unwrap();
        let what = format!(
            "softmax_{} general {rows}x{cols} ({threads} threads)",
            T::NAME
        );
        let err = rel_err(&what, &dy.to_vec().unwrap(), &softmax_ref(&x, cols));
        assert!(err < T::TOL, "{what}: relative error {err:.3e}");
    }
}

fn check_layernorm<T: TestElement>(gpu: &Gpu, dense: &Dense) {
    let mut rng = Rng::new(0x1a7e ^ T::VEC as u64);
    let s = gpu.default_stream();
    let eps = 1e-5;
    let mut run = |rows: usize, cols: usize, threads: Option<u32>, offset: f64| {
        let x = random::<T>(&mut rng, rows * cols, 3.0, offset);
        let gamma = random::<T>(&mut rng, cols, 1.0, 1.0);
        let beta = random::<T>(&mut rng, cols, 1.0, 0.0);
        let (dx, dg, db) = (
            gpu.to_device(&x).unwrap(),
            gpu.to_device(&gamma).unwrap(),
            gpu.to_device(&beta).unwrap(),
        );
        let mut dy = poisoned::<T>(gpu, rows * cols);
        match threads {
            None => dense.layernorm(s, &dx, &dg, &db, &mut dy, rows, cols, eps as f32),
            Some(t) => {
                dense.layernorm_with_threads(s, &dx, &dg, &db, &mut dy, rows, cols, eps as f32, t)
            }
        }
        .unwrap();
        let what = format!(
            "layernorm_{} {rows}x{cols} threads {threads:?} offset {offset}",
            T::NAME
        );
        let err = rel_err(
            &what,
            &dy.to_vec().unwrap(),
            &layernorm_ref(&x, &gamma, &beta, cols, eps),
        );
        // f32: the mean's rounding (about ε·|mean|) shows relative to the spread when the
        // mean is large; still far under f32's 1e-3 budget.
        let tol = T::TOL.max(2e-5);
        assert!(err < tol, "{what}: relative error {err:.3e}");
    };
    for (rows, cols) in shapes(gpu) {
        if cols > 1 {
            run(rows, cols, None, 0.0);
        }
    }
    // A large mean: the two-pass variance does not cancel.
    run(4, 1000, None, 200.0);
    for (rows, cols, threads) in [(3, 1025, 32), (2, 5000, 64), (2, 2051, 32)] {
        run(rows, cols, Some(threads), 1.5);
    }
}

#[test]
fn softmax_matches_cpu() {
    let Some(gpu) = gpu_or_skip("softmax_matches_cpu") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    check_softmax::<f32>(&gpu, &dense);
    check_softmax::<bf16>(&gpu, &dense);
}

#[test]
fn layernorm_matches_cpu() {
    let Some(gpu) = gpu_or_skip("layernorm_matches_cpu") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    check_layernorm::<f32>(&gpu, &dense);
    check_layernorm::<bf16>(&gpu, &dense);
}

/// One row of length 1: softmax is exactly 1; layernorm gives beta (x − mean = 0).
#[test]
fn single_column() {
    let Some(gpu) = gpu_or_skip("single_column") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let s = gpu.default_stream();
    let x = gpu.to_device(&[3.0f32, -1e30, 7.5]).unwrap();
    let mut y = poisoned::<f32>(&gpu, 3);
    dense.softmax(s, &x, &mut y, 3, 1).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![1.0; 3]);
    let (g, b) = (
        gpu.to_device(&[2.0f32]).unwrap(),
        gpu.to_device(&[0.25f32]).unwrap(),
    );
    dense.layernorm(s, &x, &g, &b, &mut y, 3, 1, 1e-5).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![0.25; 3]);
}

#[test]
fn bad_arguments_are_reported_before_launch() {
    let Some(gpu) = gpu_or_skip("bad_arguments_are_reported_before_launch") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let s = gpu.default_stream();
    let x = gpu.to_device(&[1.0f32; 12]).unwrap();
    let g = gpu.to_device(&[1.0f32; 4]).unwrap();
    let mut y = gpu.alloc_zeroed::<f32>(12).unwrap();
    let mut short = gpu.alloc_zeroed::<f32>(11).unwrap();
    let expect_arg = |r: gpu_host::Result<()>, kernel: &str, argument: &str| match r {
        Err(Error::Argument {
            kernel: k,
            argument: a,
            ..
        }) => {
            assert_eq!((k.as_str(), a.as_str()), (kernel, argument))
        }
        other => panic!("expected a bad `{argument}` for {kernel}, got {other:?}"),
    };
    expect_arg(dense.softmax(s, &x, &mut y, 4, 4), "softmax_f32", "x");
    expect_arg(dense.softmax(s, &x, &mut short, 3, 4), "softmax_f32", "y");
    expect_arg(
        dense.softmax(s, &x, &mut y, usize::MAX, 4),
        "softmax_f32",
        "rows",
    );
    expect_arg(
        dense.softmax_with_threads(s, &x, &mut y, 3, 4, 48),
        "softmax_f32",
        "threads",
    );
    expect_arg(
        dense.layernorm(s, &x, &g, &g, &mut y, 6, 4, 1e-5),
        "layernorm_f32",
        "x",
    );
    expect_arg(
        dense.layernorm(s, &x, &g, &g, &mut y, 4, 3, 1e-5),
        "layernorm_f32",
        "gamma",
    );
    expect_arg(
        dense.layernorm(s, &x, &g, &y, &mut short, 3, 4, 1e-5),
        "layernorm_f32",
        "beta",
    );
    expect_arg(
        dense.layernorm(s, &x, &g, &g, &mut y, 3, 4, -1.0),
        "layernorm_f32",
        "eps",
    );
    expect_arg(
        dense.layernorm(s, &x, &g, &g, &mut y, 3, 4, f32::NAN),
        "layernorm_f32",
        "eps",
    );
    let xb = gpu.to_device(&[bf16::ONE; 12]).unwrap();
    let mut yb = gpu.alloc_zeroed::<bf16>(13).unwrap();
    expect_arg(dense.softmax(s, &xb, &mut yb, 3, 4), "softmax_bf16", "y");
    // Empty shapes are no-ops.
    let e = gpu.alloc_zeroed::<f32>(0).unwrap();
    let mut e2 = gpu.alloc_zeroed::<f32>(0).unwrap();
    dense.softmax(s, &e, &mut e2, 0, 5).unwrap();
    dense.softmax(s, &e, &mut e2, 5, 0).unwrap();
}
