//! `Dense::gemm_wgmma` (bf16/f16 GEMM on Hopper tensor cores, wgmma + TMA): GPU-only, on
//! compute capability 9.0 devices; SKIPPED elsewhere (the simulator has no wgmma/TMA).

use gpu_dense::{Dense, WgmmaElement};
use gpu_host::{Error, Gpu};
use gpu_test_kit::{RelNormError, XorShift64, hopper_gpu_or_skip};
use half::{bf16, f16};

/// A Hopper GPU and the loaded kernels, or `None` after a SKIPPED line.
fn hopper_or_skip(test: &str) -> Option<(Gpu, Dense)> {
    let gpu = hopper_gpu_or_skip(test)?;
    let dense = Dense::load(&gpu).expect("loading the dense kernels");
    assert!(dense.has_hopper());
    Some((gpu, dense))
}

/// Deterministic pseudo-random values in [-1, 1), never exactly zero.
fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = XorShift64::from_seed(seed);
    (0..len)
        .map(|_| {
            let v = rng.signed_f32();
            if v == 0.0 { 0.5 } else { v }
        })
        .collect()
}

trait TestElement: WgmmaElement + Copy {
    fn from_f32(x: f32) -> Self;
    fn to_f64(self) -> f64;
    const POISON: Self;
}
impl TestElement for bf16 {
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    const POISON: Self = bf16::NAN;
}
impl TestElement for f16 {
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    const POISON: Self = f16::NAN;
}

/// Runs one GEMM and returns ‖C − C_ref‖ / ‖C_ref‖ over the rows checked (every row, or a
/// sample of rows for big shapes), with the reference accumulated in f64 from the rounded
/// inputs. Panics on any unwritten (NaN poison) element of the checked rows.
fn run_case<T: TestElement>(
    gpu: &Gpu,
    dense: &Dense,
    m: usize,
    n: usize,
    k: usize,
    seed: u64,
) -> f64 {
    let a: Vec<T> = random(m * k, seed).into_iter().map(T::from_f32).collect();
    let b: Vec<T> = random(n * k, seed + 1)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let s = gpu.default_stream();
    let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
    let mut dc = s.to_device(&vec![T::POISON; m * n]).unwrap();
    dense
        .gemm_wgmma(s, &da, &db, &mut dc, m, n, k)
        .unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
    let c = dc.to_vec().unwrap();
    let rows: Vec<usize> = if m * n * k <= 300_000_000 {
        (0..m).collect()
    } else {
        // Every 61st row plus the last tile's rows: a spot check that stays fast on the CPU.
        (0..m).step_by(61).chain(m.saturating_sub(130)..m).collect()
    };
    let mut rel = RelNormError::new();
    for &i in &rows {
        for j in 0..n {
            let mut r = 0.0f64;
            for p in 0..k {
                r += a[i * k + p].to_f64() * b[j * k + p].to_f64();
            }
            let got = c[i * n + j].to_f64();
            assert!(!got.is_nan(), "{m}x{n}x{k}: C[{i}][{j}] not written (NaN)");
            rel.add(got, r);
        }
    }
    rel.value()
}

fn check_shapes<T: TestElement>(test: &str, name: &str) {
    let Some((gpu, dense)) = hopper_or_skip(test) else {
        return;
    };
    let shapes = [
        (64, 64, 64),
        (128, 256, 64),
        (130, 70, 40),
        (257, 129, 264),
        (1, 1, 8),
        (300, 513, 8),
        (1000, 1000, 1000),
        (512, 768, 4096),
        (2048, 2048, 2048),
    ];
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let rel = run_case::<T>(&gpu, &dense, m, n, k, 17 + i as u64);
        println!("{name} {m}x{n}x{k}: relative error {rel:.2e}");
        assert!(rel < 1e-2, "{name} {m}x{n}x{k}: relative error {rel:.3e}");
    }
}

#[test]
fn gemm_wgmma_bf16_matches_reference() {
    check_shapes::<bf16>("gemm_wgmma_bf16_matches_reference", "bf16");
}

#[test]
fn gemm_wgmma_f16_matches_reference() {
    check_shapes::<f16>("gemm_wgmma_f16_matches_reference", "f16");
}

#[test]
fn gemm_wgmma_is_repeatable() {
    // A race would show as a result that changes between runs on the same inputs.
    let Some((gpu, dense)) = hopper_or_skip("gemm_wgmma_is_repeatable") else {
        return;
    };
    let (m, n, k) = (777, 1031, 520);
    let a: Vec<bf16> = random(m * k, 5).into_iter().map(bf16::from_f32).collect();
    let b: Vec<bf16> = random(n * k, 6).into_iter().map(bf16::from_f32).collect();
    let s = gpu.default_stream();
    let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
    let mut first = None;
    for _ in 0..3 {
        let mut dc = s.to_device(&vec![bf16::NAN; m * n]).unwrap();
        dense.gemm_wgmma(s, &da, &db, &mut dc, m, n, k).unwrap();
        let c: Vec<u16> = dc.to_vec().unwrap().iter().map(|x| x.to_bits()).collect();
        match &first {
            None => first = Some(c),
            Some(f) => assert!(f == &c, "results differ between runs"),
        }
    }
}

#[test]
fn gemm_wgmma_rejects_bad_input() {
    // Shape errors come before the device check, so this runs on the simulator too.
    let Some(gpu) = gpu_tests::gpu_or_skip("gemm_wgmma_rejects_bad_input") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let s = gpu.default_stream();
    let buf = |len: usize| s.to_device(&vec![bf16::ONE; len]).unwrap();
    let (a, b) = (buf(64 * 60), buf(32 * 60));
    let mut c = buf(64 * 32);
    // K not a multiple of 8.
    let err = dense.gemm_wgmma(s, &a, &b, &mut c, 64, 32, 60).unwrap_err();
    assert!(
        matches!(&err, Error::Argument { argument, .. } if argument == "k"),
        "{err}"
    );
    assert!(err.to_string().contains("gemm_bf16_wgmma"), "{err}");
    // Buffers shorter than their matrices (longer ones are fine: the extra is not touched).
    let (a, b) = (buf(64 * 64), buf(32 * 64));
    let err = dense.gemm_wgmma(s, &a, &b, &mut c, 64, 32, 72).unwrap_err();
    assert!(
        matches!(&err, Error::Argument { argument, .. } if argument == "a"),
        "{err}"
    );
    let mut small = buf(10);
    let err = dense
        .gemm_wgmma(s, &a, &b, &mut small, 64, 32, 64)
        .unwrap_err();
    assert!(
        matches!(&err, Error::Argument { argument, .. } if argument == "c"),
        "{err}"
    );
    if !dense.has_hopper() || gpu.is_simulator() {
        return;
    }
    // Empty shapes are no-ops; k = 0 writes zeros.
    let mut c0 = buf(64 * 32);
    dense
        .gemm_wgmma(s, &buf(0), &buf(0), &mut c0, 64, 32, 0)
        .unwrap();
    assert!(c0.to_vec().unwrap().iter().all(|x| x.to_f32() == 0.0));
    dense
        .gemm_wgmma(s, &buf(0), &b, &mut buf(0), 0, 32, 64)
        .unwrap();
}

#[test]
fn gemm_wgmma_errors_without_hopper() {
    // On the simulator (and on non-Hopper GPUs) the call fails with an error naming the need.
    let gpu = Gpu::simulator().unwrap();
    let dense = Dense::load(&gpu).unwrap();
    let s = gpu.default_stream();
    let a = s.to_device(&[bf16::ONE; 64]).unwrap();
    let mut c = s.to_device(&[bf16::ONE; 64]).unwrap();
    let err = dense.gemm_wgmma(s, &a, &a, &mut c, 8, 8, 8).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("gemm_bf16_wgmma") && msg.contains("9.0"),
        "{msg}"
    );
}
