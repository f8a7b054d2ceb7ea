//! `Dense::sgemm` (fp32 on CUDA cores) against an f64 CPU reference: ragged shapes (not
//! multiples of the 128×128×8 tile), the interior fast path, alpha/beta, k = 0, and bad inputs.
//! Small shapes on the CPU simulator, larger ones on a GPU.

use gpu_dense::Dense;
use gpu_host::{Error, Gpu};
use gpu_test_kit::{RelNormError, XorShift64Star};
use gpu_tests::gpu_or_skip;

/// `n` values uniform in [-1, 1), never exactly zero.
fn random(rng: &mut XorShift64Star, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            loop {
                let x = rng.signed_f64() as f32;
                if x != 0.0 {
                    break x;
                }
            }
        })
        .collect()
}

/// `alpha·A·B + beta·C` in f64 (C not read when beta is 0, as BLAS does).
#[allow(clippy::too_many_arguments)]
fn reference(
    alpha: f32,
    a: &[f32],
    b: &[f32],
    beta: f32,
    c: &[f32],
    m: usize,
    n: usize,
    k: usize,
) -> Vec<f64> {
    let mut out = vec![0.0f64; m * n];
    for i in 0..m {
        let row = &mut out[i * n..(i + 1) * n];
        for p in 0..k {
            let x = a[i * k + p] as f64;
            for (o, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *o += x * y as f64;
            }
        }
        for (j, o) in row.iter_mut().enumerate() {
            let old = if beta == 0.0 {
                0.0
            } else {
                beta as f64 * c[i * n + j] as f64
            };
            *o = alpha as f64 * *o + old;
        }
    }
    out
}

/// Runs one product on the device and checks it: every element written (finite) and the
/// relative norm error ‖C − ref‖ / ‖ref‖ below 1e-5.
fn check(
    gpu: &Gpu,
    dense: &Dense,
    rng: &mut XorShift64Star,
    (m, n, k): (usize, usize, usize),
    alpha: f32,
    beta: f32,
) {
    let (a, b) = (random(rng, m * k), random(rng, k * n));
    // beta == 0: poison C with NaN (it must not be read); otherwise random values to scale.
    let c0 = if beta == 0.0 {
        vec![f32::NAN; m * n]
    } else {
        random(rng, m * n)
    };
    let (da, db) = (gpu.to_device(&a).unwrap(), gpu.to_device(&b).unwrap());
    let mut dc = gpu.to_device(&c0).unwrap();
    dense
        .sgemm(
            gpu.default_stream(),
            alpha,
            &da,
            &db,
            beta,
            &mut dc,
            m,
            n,
            k,
        )
        .unwrap_or_else(|e| panic!("sgemm {m}x{n}x{k}: {e}"));
    let got = dc.to_vec().unwrap();
    let want = reference(alpha, &a, &b, beta, &c0, m, n, k);
    let mut rel = RelNormError::new();
    for (idx, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g.is_finite(),
            "sgemm {m}x{n}x{k}: C[{}][{}] = {g} (not written?)",
            idx / n,
            idx % n
        );
        rel.add(g as f64, w);
    }
    let rel = rel.value();
    assert!(
        rel < 1e-5,
        "sgemm {m}x{n}x{k} alpha {alpha} beta {beta}: relative error {rel:e}"
    );
}

#[test]
fn sgemm_matches_f64_reference() {
    let Some(gpu) = gpu_or_skip("sgemm_matches_f64_reference") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let mut rng = XorShift64Star::new(0x5eed_0123_4567_89ab);
    // (m, n, k): single elements, ragged in every dimension, exact tiles (the unchecked fast
    // path), k not a multiple of 8, n not a multiple of 4 (checked path in every block), and an
    // interior block next to edge blocks.
    let mut shapes = vec![
        (1, 1, 1),
        (3, 5, 7),
        (128, 128, 8),
        (128, 128, 24),
        (129, 130, 9),
        (200, 131, 33),
        (256, 256, 16),
        (130, 260, 16),
    ];
    if !gpu.is_simulator() {
        shapes.extend([
            (1000, 1100, 300),
            (1024, 1024, 1024),
            (2048, 512, 777),
            (513, 2049, 1031),
            (4096, 384, 256),
        ]);
    }
    for &shape in &shapes {
        check(&gpu, &dense, &mut rng, shape, 1.0, 0.0);
    }
    for &shape in &shapes[..4] {
        check(&gpu, &dense, &mut rng, shape, 1.5, -0.5);
    }
    check(&gpu, &dense, &mut rng, (256, 256, 16), -2.0, 0.25);
    check(&gpu, &dense, &mut rng, (130, 260, 16), 0.5, 1.0);
}

#[test]
fn sgemm_k_zero_scales_c_and_empty_shapes_launch_nothing() {
    let Some(gpu) = gpu_or_skip("sgemm_k_zero_scales_c_and_empty_shapes_launch_nothing") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let mut rng = XorShift64Star::new(7);
    // k = 0: C = beta·C (both paths: an exact tile and a ragged one).
    for (m, n) in [(128, 128), (5, 9)] {
        let c0 = random(&mut rng, m * n);
        let empty = gpu.alloc_zeroed::<f32>(0).unwrap();
        let mut dc = gpu.to_device(&c0).unwrap();
        dense
            .sgemm(
                gpu.default_stream(),
                3.0,
                &empty,
                &empty,
                2.0,
                &mut dc,
                m,
                n,
                0,
            )
            .unwrap();
        let got = dc.to_vec().unwrap();
        for (g, c) in got.iter().zip(&c0) {
            assert_eq!(*g, 2.0 * c);
        }
    }
    // m = 0 or n = 0: an empty product, nothing to do.
    let a = gpu.alloc_zeroed::<f32>(12).unwrap();
    let mut c = gpu.alloc_zeroed::<f32>(0).unwrap();
    let empty = gpu.alloc_zeroed::<f32>(0).unwrap();
    dense
        .sgemm(gpu.default_stream(), 1.0, &empty, &a, 0.0, &mut c, 0, 3, 4)
        .unwrap();
    dense
        .sgemm(gpu.default_stream(), 1.0, &a, &empty, 0.0, &mut c, 3, 0, 4)
        .unwrap();
}

#[test]
fn sgemm_rejects_bad_shapes_before_launch() {
    let Some(gpu) = gpu_or_skip("sgemm_rejects_bad_shapes_before_launch") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let (m, n, k) = (4, 5, 6);
    let a = gpu.alloc_zeroed::<f32>(m * k).unwrap();
    let b = gpu.alloc_zeroed::<f32>(k * n).unwrap();
    let short = gpu.alloc_zeroed::<f32>(7).unwrap();
    let mut c = gpu.alloc_zeroed::<f32>(m * n).unwrap();
    let s = gpu.default_stream();
    let argument_of = |r: gpu_host::Result<()>| match r {
        Err(Error::Argument {
            kernel, argument, ..
        }) => {
            assert_eq!(kernel, "sgemm_f32");
            argument
        }
        other => panic!("expected an argument error, got {other:?}"),
    };
    assert_eq!(
        argument_of(dense.sgemm(s, 1.0, &short, &b, 0.0, &mut c, m, n, k)),
        "a"
    );
    assert_eq!(
        argument_of(dense.sgemm(s, 1.0, &a, &short, 0.0, &mut c, m, n, k)),
        "b"
    );
    let mut c_short = gpu.alloc_zeroed::<f32>(m * n - 1).unwrap();
    assert_eq!(
        argument_of(dense.sgemm(s, 1.0, &a, &b, 0.0, &mut c_short, m, n, k)),
        "c"
    );
    // Swapped m and k: A (4·6) still has m·k elements, but B (6·5) is not k·n = 4·5.
    assert_eq!(
        argument_of(dense.sgemm(s, 1.0, &a, &b, 0.0, &mut c, k, n, m)),
        "b"
    );
    // A dimension above u32::MAX.
    assert_eq!(
        argument_of(dense.sgemm(s, 1.0, &a, &b, 0.0, &mut c, 1 << 33, 0, 0)),
        "m"
    );
    // The error message names the kernel and the argument.
    let msg = dense
        .sgemm(s, 1.0, &short, &b, 0.0, &mut c, m, n, k)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("sgemm_f32") && msg.contains('a'), "{msg}");
}
