//! Tensor-core GEMM (`Dense::gemm_mma_sync`, bf16 and f16, `C = A · Bᵀ`) against a CPU
//! reference that accumulates the rounded inputs in f64: relative-norm error under 1e-2,
//! every element written (the output is poisoned with NaN first), ragged shapes that are not
//! multiples of the 128×256×32 tile, and the argument errors. Small shapes on the simulator,
//! larger ones on a GPU.

use gpu_dense::{
    Dense, GEMM_POLICIES, GEMM_POLICY_99K, GEMM_POLICY_163K, GEMM_POLICY_216K, GemmElement,
    GemmPolicy,
};
use gpu_host::{Error, Gpu};
use gpu_test_kit::devices::{a100, rtx4090};
use gpu_test_kit::{RelNormError, XorShift64Star};
use gpu_tests::gpu_or_skip;
use half::{bf16, f16};

/// Uniform in [-1, 1), never exactly 0.
fn unit(rng: &mut XorShift64Star) -> f32 {
    let x = rng.signed_f32();
    if x == 0.0 { 0.5 } else { x }
}

trait TestElement: GemmElement + Copy + Send {
    const NAN: Self;
    fn from_f32(x: f32) -> Self;
    fn to_f64(self) -> f64;
}
impl TestElement for bf16 {
    const NAN: Self = bf16::NAN;
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
}
impl TestElement for f16 {
    const NAN: Self = f16::NAN;
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
}

/// Which entry point a check calls.
#[derive(Clone, Copy)]
enum Path {
    /// `Dense::gemm_mma_sync` (the device's policy).
    MmaSync,
    /// `Dense::gemm` (wgmma on CC 9.0 GPUs).
    Dispatch,
    /// `Dense::gemm_mma_sync_with` a given policy.
    Policy(GemmPolicy),
}

/// Runs one GEMM and returns ‖C − ref‖ / ‖ref‖; panics on an unwritten (NaN) element.
fn check<T: TestElement>(
    gpu: &Gpu,
    dense: &Dense,
    (m, n, k): (usize, usize, usize),
    seed: u64,
    path: Path,
) -> f64 {
    let mut rng = XorShift64Star::new(seed);
    let a: Vec<T> = (0..m * k).map(|_| T::from_f32(unit(&mut rng))).collect();
    let b: Vec<T> = (0..n * k).map(|_| T::from_f32(unit(&mut rng))).collect();
    let da = gpu.to_device(&a).unwrap();
    let db = gpu.to_device(&b).unwrap();
    let mut dc = gpu.to_device(&vec![T::NAN; m * n]).unwrap();
    let s = gpu.default_stream();
    match path {
        Path::Dispatch => dense.gemm(s, &da, &db, &mut dc, m, n, k).unwrap(),
        Path::MmaSync => dense.gemm_mma_sync(s, &da, &db, &mut dc, m, n, k).unwrap(),
        Path::Policy(p) => dense
            .gemm_mma_sync_with(p, s, &da, &db, &mut dc, m, n, k)
            .unwrap(),
    }
    let c = dc.to_vec().unwrap();
    let af: Vec<f64> = a.iter().map(|x| x.to_f64()).collect();
    let bf: Vec<f64> = b.iter().map(|x| x.to_f64()).collect();
    let mut rel = RelNormError::new();
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k).map(|p| af[i * k + p] * bf[j * k + p]).sum();
            let got = c[i * n + j].to_f64();
            assert!(
                got.is_finite(),
                "{m}x{n}x{k}: C[{i}][{j}] = {got} (not written?)"
            );
            rel.add(got, want);
        }
    }
    rel.value()
}

fn shapes(gpu: &Gpu) -> Vec<(usize, usize, usize)> {
    let mut s = vec![(1, 8, 8), (130, 70, 40), (130, 71, 40), (257, 129, 264)];
    if !gpu.is_simulator() {
        s.extend([
            (128, 256, 32),
            (1000, 1000, 1000),
            (1024, 1536, 1032),
            (2051, 515, 776),
            (3, 2000, 2048),
        ]);
    }
    s
}

fn gemm_matches_reference<T: TestElement>(test: &str, path: Path) {
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    for (i, &shape) in shapes(&gpu).iter().enumerate() {
        let rel = check::<T>(&gpu, &dense, shape, 0x9e37_79b9 + i as u64, path);
        println!("{test} {shape:?}: relative error {rel:.2e}");
        assert!(rel < 1e-2, "{test} {shape:?}: relative error {rel:.3e}");
    }
}

#[test]
fn gemm_bf16_matches_reference() {
    gemm_matches_reference::<bf16>("gemm_bf16_matches_reference", Path::MmaSync);
}

/// `Dense::gemm` picks wgmma + TMA on compute capability 9.0 GPUs and mma.sync elsewhere (and
/// on the simulator): the same shapes must come out right through whichever path it takes.
#[test]
fn gemm_dispatch_matches_reference() {
    gemm_matches_reference::<bf16>("gemm_dispatch_matches_reference", Path::Dispatch);
}

#[test]
fn gemm_f16_matches_reference() {
    gemm_matches_reference::<f16>("gemm_f16_matches_reference", Path::MmaSync);
}

/// Every tuning policy, forced, on this device (on an H100 all three fit): the A100 and
/// RTX-class configurations compute the same products.
#[test]
fn gemm_every_policy_matches_reference() {
    for policy in GEMM_POLICIES {
        let test = format!("gemm_every_policy_matches_reference ({policy:?})");
        gemm_matches_reference::<bf16>(&test, Path::Policy(policy));
    }
    gemm_matches_reference::<f16>(
        "gemm_every_policy_matches_reference (f16, 99K)",
        Path::Policy(GEMM_POLICY_99K),
    );
}

/// On a simulated A100 (163 KiB per block) and RTX 4090 (99 KiB), `Dense` picks the policy
/// that fits, the launch validation (which checks the shared memory against the device's
/// limit) accepts it, and the result is right; a policy too big for the device is refused
/// before launch, naming the kernel and the sizes.
#[test]
fn gemm_picks_the_policy_the_device_fits() {
    for (props, want) in [(a100(), GEMM_POLICY_163K), (rtx4090(), GEMM_POLICY_99K)] {
        let name = props.name.clone();
        let gpu = Gpu::simulator_with_properties(props).unwrap();
        let dense = Dense::load(&gpu).unwrap();
        assert_eq!(dense.gemm_policy(), Some(want), "{name}");
        for (i, &shape) in shapes(&gpu).iter().enumerate() {
            let rel = check::<bf16>(&gpu, &dense, shape, 7 + i as u64, Path::Dispatch);
            assert!(rel < 1e-2, "{name} {shape:?}: relative error {rel:.3e}");
        }
        let s = gpu.default_stream();
        let a = gpu.to_device(&[bf16::ONE; 64]).unwrap();
        let mut c = gpu.to_device(&[bf16::NAN; 64]).unwrap();
        match dense.gemm_mma_sync_with(GEMM_POLICY_216K, s, &a, &a, &mut c, 8, 8, 8) {
            Err(Error::Argument {
                kernel,
                argument,
                message,
            }) => {
                assert_eq!(
                    (kernel.as_str(), argument.as_str()),
                    ("gemm_bf16", "policy")
                );
                assert!(message.contains("221184"), "{name}: {message}");
            }
            other => panic!("{name}: expected the 216K policy refused, got {other:?}"),
        }
        assert!(c.to_vec().unwrap().iter().all(|x| x.is_nan()), "{name}");
    }
}

#[test]
fn gemm_rejects_bad_arguments_before_launch() {
    let Some(gpu) = gpu_or_skip("gemm_rejects_bad_arguments_before_launch") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let s = gpu.default_stream();
    let a = gpu.to_device(&vec![bf16::ONE; 16 * 16]).unwrap();
    let b = gpu.to_device(&vec![bf16::ONE; 16 * 16]).unwrap();
    let mut c = gpu.to_device(&vec![bf16::NAN; 16 * 16]).unwrap();
    let arg = |r: Result<(), Error>| match r {
        Err(Error::Argument {
            kernel, argument, ..
        }) => (kernel, argument),
        other => panic!("expected an argument error, got {other:?}"),
    };
    // K not a multiple of 8.
    let (kernel, argument) = arg(dense.gemm_mma_sync(s, &a, &b, &mut c, 16, 16, 12));
    assert_eq!((kernel.as_str(), argument.as_str()), ("gemm_bf16", "k"));
    // A too short for M×K.
    assert_eq!(
        arg(dense.gemm_mma_sync(s, &a, &b, &mut c, 17, 16, 16)).1,
        "a"
    );
    // B too short for N×K.
    assert_eq!(
        arg(dense.gemm_mma_sync(s, &a, &b, &mut c, 16, 16, 24)).1,
        "a"
    );
    let a_long = gpu.to_device(&vec![bf16::ONE; 16 * 24]).unwrap();
    assert_eq!(
        arg(dense.gemm_mma_sync(s, &a_long, &b, &mut c, 16, 16, 24)).1,
        "b"
    );
    // C too short for M×N.
    let b_long = gpu.to_device(&vec![bf16::ONE; 17 * 16]).unwrap();
    assert_eq!(
        arg(dense.gemm_mma_sync(s, &a, &b_long, &mut c, 16, 17, 16)).1,
        "c"
    );
    // Nothing was launched: C is untouched.
    assert!(c.to_vec().unwrap().iter().all(|x| x.is_nan()));
    // f16 names its own kernel.
    let af = gpu.to_device(&[f16::ONE; 64]).unwrap();
    let mut cf = gpu.to_device(&[f16::ONE; 64]).unwrap();
    assert_eq!(
        arg(dense.gemm_mma_sync(s, &af, &af, &mut cf, 8, 8, 4)).0,
        "gemm_f16"
    );
}
