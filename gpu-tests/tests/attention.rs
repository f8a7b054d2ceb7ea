//! Flash-attention forward (`Dense::attention`) against a CPU reference computed in f64 from the
//! same bf16 inputs: head dims 64 and 128, causal and not, batch and heads > 1, sequence lengths
//! that are not multiples of the 64-row tiles (1, 77, 200, ...), seq_q != seq_k, grouped- and
//! multi-query attention, the logsumexp output, and the errors for bad shapes. Small shapes on the CPU simulator, larger ones on a GPU.
//! On a compute capability 9.0 GPU `Dense::attention` runs the Hopper kernel (wgmma + TMA): the
//! default-kernel tests check it there, `attention_wgmma_matches_reference` checks it through
//! its forced entry point (SKIPPED elsewhere), and the tiling-variant test keeps the `mma.sync`
//! kernels checked on every GPU.

use gpu_dense::{AttentionShape, Dense, WgmmaSchedule, attention_kernel_names};
use gpu_host::{Error, Gpu};
use gpu_test_kit::{RelNormError, XorShift64Star, hopper_gpu_or_skip};
use gpu_tests::gpu_or_skip;
use half::{bf16, f16};

/// `n` values uniform in [-a, 3a), never exactly 0 after rounding to bf16 (zeros hide indexing
/// bugs).
fn bf16s(rng: &mut XorShift64Star, n: usize, a: f64) -> Vec<bf16> {
    (0..n)
        .map(|_| {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 52) as f64 * 2.0 - 1.0;
            let x = bf16::from_f64(u * a);
            if x.to_f64() == 0.0 {
                bf16::from_f64(a / 64.0)
            } else {
                x
            }
        })
        .collect()
}

/// softmax(q·kᵀ/sqrt(d) [causal, key j > query i masked]) · v in f64, per (batch, head), and
/// each row's logsumexp of the scaled scores. Query head `h` uses K/V head `h / group`.
fn reference(
    q: &[bf16],
    k: &[bf16],
    v: &[bf16],
    s: AttentionShape,
    causal: bool,
) -> (Vec<f64>, Vec<f64>) {
    let d = s.head_dim;
    let scale = 1.0 / (d as f64).sqrt();
    let (qf, kf, vf): (Vec<f64>, Vec<f64>, Vec<f64>) = (
        q.iter().map(|x| x.to_f64()).collect(),
        k.iter().map(|x| x.to_f64()).collect(),
        v.iter().map(|x| x.to_f64()).collect(),
    );
    let mut out = vec![0.0; s.q_len()];
    let mut lse = vec![0.0; s.lse_len()];
    let mut scores = vec![0.0; s.seq_k];
    let group = s.heads / s.kv_heads;
    for bh in 0..s.batch * s.heads {
        let kv = (bh / s.heads) * s.kv_heads + (bh % s.heads) / group;
        let (qh, kh, vh) = (
            &qf[bh * s.seq_q * d..],
            &kf[kv * s.seq_k * d..],
            &vf[kv * s.seq_k * d..],
        );
        for i in 0..s.seq_q {
            let keys = if causal {
                (i + 1).min(s.seq_k)
            } else {
                s.seq_k
            };
            let qi = &qh[i * d..(i + 1) * d];
            let mut max = f64::NEG_INFINITY;
            for (j, sc) in scores[..keys].iter_mut().enumerate() {
                let kj = &kh[j * d..(j + 1) * d];
                *sc = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale;
                max = max.max(*sc);
            }
            let mut sum = 0.0;
            for sc in &mut scores[..keys] {
                *sc = (*sc - max).exp();
                sum += *sc;
            }
            lse[bh * s.seq_q + i] = max + sum.ln();
            let oi = &mut out[(bh * s.seq_q + i) * d..(bh * s.seq_q + i + 1) * d];
            for (j, p) in scores[..keys].iter().enumerate() {
                let vj = &vh[j * d..(j + 1) * d];
                for (o, x) in oi.iter_mut().zip(vj) {
                    *o += p / sum * x;
                }
            }
        }
    }
    (out, lse)
}

/// Runs one shape on `gpu` and checks ‖out − ref‖ / ‖ref‖ < 2e-2, every output written.
fn check(gpu: &Gpu, dense: &Dense, shape: AttentionShape, causal: bool, seed: u64) {
    check_kernel(gpu, dense, None, shape, causal, seed)
}

/// [`check`] through the named kernel (a tuning variant), the Hopper kernel with
/// `Some(WGMMA)`, or the default with `None`.
fn check_kernel(
    gpu: &Gpu,
    dense: &Dense,
    kernel: Option<&str>,
    shape: AttentionShape,
    causal: bool,
    seed: u64,
) {
    let mut rng = XorShift64Star::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    // |q|, |k| < 2 gives softmaxes from flat to peaked (score std about 1.3).
    let q = bf16s(&mut rng, shape.q_len(), 2.0);
    let k = bf16s(&mut rng, shape.kv_len(), 2.0);
    let v = bf16s(&mut rng, shape.kv_len(), 1.0);
    let (dq, dk, dv) = (
        gpu.to_device(&q).unwrap(),
        gpu.to_device(&k).unwrap(),
        gpu.to_device(&v).unwrap(),
    );
    // Poison: NaN everywhere, so an unwritten element fails the check.
    let mut o = gpu.to_device(&vec![bf16::NAN; shape.q_len()]).unwrap();
    let mut lse = gpu.to_device(&vec![f32::NAN; shape.lse_len()]).unwrap();
    let s = gpu.default_stream();
    // f16 names: the same bf16 values (exact in f16 at these magnitudes) as f16 tensors, the
    // output read back as f64 through f16.
    let mut got_f16 = None;
    match (kernel, kernel.and_then(wgmma_schedule)) {
        (Some(name), Some(schedule)) if name.contains("f16") => {
            let to_f16 = |x: &[bf16]| {
                let x: Vec<f16> = x.iter().map(|v| f16::from_f64(v.to_f64())).collect();
                gpu.to_device(&x).unwrap()
            };
            let mut o16 = gpu.to_device(&vec![f16::NAN; shape.q_len()]).unwrap();
            let result = dense.attention_wgmma_with(
                schedule,
                s,
                &to_f16(&q),
                &to_f16(&k),
                &to_f16(&v),
                &mut o16,
                Some(&mut lse),
                shape,
                causal,
            );
            got_f16 = Some(o16.to_vec().unwrap());
            result
        }
        (None, _) => {
            dense.attention_with_lse(s, &dq, &dk, &dv, &mut o, Some(&mut lse), shape, causal)
        }
        (_, Some(schedule)) => dense.attention_wgmma_with(
            schedule,
            s,
            &dq,
            &dk,
            &dv,
            &mut o,
            Some(&mut lse),
            shape,
            causal,
        ),
        (Some(name), None) => dense.attention_kernel(name, s, &dq, &dk, &dv, &mut o, shape, causal),
    }
    .unwrap_or_else(|e| panic!("{kernel:?} {shape:?} causal={causal}: {e}"));
    let got: Vec<f64> = match got_f16 {
        Some(x) => x.iter().map(|v| v.to_f64()).collect(),
        None => o.to_vec().unwrap().iter().map(|v| v.to_f64()).collect(),
    };
    let (want, want_lse) = reference(&q, &k, &v, shape, causal);
    if kernel.is_none() || kernel.and_then(wgmma_schedule).is_some() {
        // The logsumexp: f32 from bf16 products and ex2/lg2.approx, absolute error.
        for (i, (g, w)) in lse.to_vec().unwrap().iter().zip(&want_lse).enumerate() {
            assert!(
                (*g as f64 - w).abs() < 2e-2 * w.abs().max(1.0),
                "{shape:?} causal={causal}: logsumexp of row {i} is {g}, want {w}"
            );
        }
    }
    let mut rel = RelNormError::new();
    for (i, (&g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g.is_finite(),
            "{kernel:?} {shape:?} causal={causal}: element {i} is {g} (unwritten or NaN)"
        );
        rel.add(g, *w);
    }
    let rel = rel.value();
    assert!(
        rel < 2e-2,
        "{kernel:?} {shape:?} causal={causal}: relative error {rel:.3e} >= 2e-2"
    );
}

/// `check_kernel`'s names for the Hopper kernel (`Dense::attention_wgmma_with`): the default
/// schedule, and each part of it switched off or changed.
const WGMMA: &str = "wgmma";
const WGMMA_NO_PING_PONG: &str = "wgmma-no-ping-pong";
const WGMMA_ONE_TILE_PER_BLOCK: &str = "wgmma-one-tile-per-block";
/// A 4-stage K/V ring (head dimension 64 only).
const WGMMA_4_STAGES: &str = "wgmma-4-stages";
/// Causal tiles ordered within groups of a few heads.
const WGMMA_HEAD_GROUPS: &str = "wgmma-head-groups";
/// Three consumer warpgroups, 192-row query tiles (head dimension 64 only); with no ping-pong,
/// with 4 K/V stages.
const WGMMA_M192: &str = "wgmma-m192";
const WGMMA_M192_NO_PING_PONG: &str = "wgmma-m192-no-ping-pong";
const WGMMA_M192_4_STAGES: &str = "wgmma-m192-4-stages";
/// f16 tensors (the default schedule, and 192-row tiles).
const WGMMA_F16: &str = "wgmma-f16";
const WGMMA_F16_M192: &str = "wgmma-f16-m192";
/// O stored through shared memory by TMA (the default schedule, 192-row tiles, f16).
const WGMMA_TMA_STORE: &str = "wgmma-tma-store";
const WGMMA_M192_TMA_STORE: &str = "wgmma-m192-tma-store";
const WGMMA_F16_TMA_STORE: &str = "wgmma-f16-tma-store";
/// Persistent grids of 5 blocks (the default, 192-row tiles, TMA stores of O), so that every
/// shape with more than 5 work items reaches the item-to-item code: the next item's Q in the
/// other Q tile, its first scores beside the last `P·V`, the ring and the ping-pong running on
/// across items (with one block per SM the shapes here have fewer items than blocks).
const WGMMA_FEW_BLOCKS: &str = "wgmma-5-blocks";
const WGMMA_M192_FEW_BLOCKS: &str = "wgmma-m192-5-blocks";
const WGMMA_TMA_STORE_FEW_BLOCKS: &str = "wgmma-tma-store-5-blocks";

/// The schedule a `check_kernel` name stands for, if it names the Hopper kernel.
fn wgmma_schedule(name: &str) -> Option<WgmmaSchedule> {
    let default = WgmmaSchedule::default();
    Some(match name {
        WGMMA => default,
        WGMMA_NO_PING_PONG => WgmmaSchedule {
            ping_pong: false,
            ..default
        },
        WGMMA_ONE_TILE_PER_BLOCK => WgmmaSchedule {
            persistent: false,
            ..default
        },
        WGMMA_4_STAGES => WgmmaSchedule {
            stages: 4,
            ..default
        },
        WGMMA_HEAD_GROUPS => WgmmaSchedule {
            head_group: 3,
            ..default
        },
        WGMMA_M192 | WGMMA_F16_M192 => WgmmaSchedule {
            consumers: 3,
            ..default
        },
        WGMMA_M192_NO_PING_PONG => WgmmaSchedule {
            consumers: 3,
            ping_pong: false,
            ..default
        },
        WGMMA_M192_4_STAGES => WgmmaSchedule {
            consumers: 3,
            stages: 4,
            ..default
        },
        WGMMA_F16 => WgmmaSchedule {
            consumers: 2,
            ..default
        },
        WGMMA_TMA_STORE | WGMMA_F16_TMA_STORE => WgmmaSchedule {
            tma_store: true,
            ..default
        },
        WGMMA_M192_TMA_STORE => WgmmaSchedule {
            consumers: 3,
            tma_store: true,
            ..default
        },
        WGMMA_FEW_BLOCKS => WgmmaSchedule {
            max_blocks: 5,
            ..default
        },
        WGMMA_M192_FEW_BLOCKS => WgmmaSchedule {
            consumers: 3,
            max_blocks: 5,
            ..default
        },
        WGMMA_TMA_STORE_FEW_BLOCKS => WgmmaSchedule {
            tma_store: true,
            max_blocks: 5,
            ..default
        },
        _ => return None,
    })
}

fn shape(
    batch: usize,
    heads: usize,
    seq_q: usize,
    seq_k: usize,
    head_dim: usize,
) -> AttentionShape {
    AttentionShape::new(batch, heads, seq_q, seq_k, head_dim)
}

/// Grouped- and multi-query attention: query heads share K/V heads (`kv_heads` divides
/// `heads`), with the logsumexp checked too (in `check`).
#[test]
fn attention_grouped_query_matches_reference() {
    let Some(gpu) = gpu_or_skip("attention_grouped_query_matches_reference") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    // (batch, heads, kv_heads, seq_q, seq_k)
    let shapes: &[(usize, usize, usize, usize, usize)] = if gpu.is_simulator() {
        &[(2, 4, 2, 70, 70), (1, 3, 1, 20, 90)]
    } else {
        &[(2, 8, 2, 300, 300), (1, 6, 1, 129, 500), (3, 4, 4, 77, 77)]
    };
    let mut seed = 500;
    for d in [64, 128] {
        for &(b, h, kvh, sq, sk) in shapes {
            for causal in [false, true] {
                seed += 1;
                let shape = shape(b, h, sq, sk, d).with_kv_heads(kvh);
                check(&gpu, &dense, shape, causal, seed);
            }
        }
    }
}

#[test]
fn attention_matches_reference() {
    let Some(gpu) = gpu_or_skip("attention_matches_reference") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    // (batch, heads, seq_q, seq_k): tails, one row, several tiles, seq_q != seq_k both ways.
    let shapes: &[(usize, usize, usize, usize)] = if gpu.is_simulator() {
        &[
            (1, 1, 1, 1),
            (2, 2, 77, 77),
            (1, 1, 70, 130),
            (1, 2, 130, 20),
        ]
    } else {
        &[
            (1, 1, 1, 1),
            (2, 3, 77, 77),
            (2, 2, 200, 200),
            (1, 2, 64, 64),
            (1, 3, 128, 300),
            (2, 1, 300, 100),
            (1, 2, 1000, 1000),
        ]
    };
    let mut seed = 1;
    for &d in &[64, 128] {
        for &(b, h, sq, sk) in shapes {
            for causal in [false, true] {
                seed += 1;
                check(&gpu, &dense, shape(b, h, sq, sk, d), causal, seed);
            }
        }
    }
}

/// The Hopper kernel (`Dense::attention_wgmma`) against the f64 reference, output and
/// logsumexp: ragged lengths that are not multiples of its 128-row/128-key tiles, one row,
/// seq_q != seq_k both ways, causal and not, grouped- and multi-query heads, several batches
/// and heads (a tile must not read the next head's rows); every schedule (ping-pong or not,
/// persistent or one block per tile, 2 or 4 K/V stages, causal tiles ordered over all heads or
/// within groups of 3), 192-row tiles (three consumer warpgroups, d64), f16 tensors and O
/// stored by TMA (d64, d128) on every shape too, and persistent grids of 5 blocks (several
/// work items per block); head dimension 256 (one K/V stage, no intra-warpgroup overlap)
/// with the same schedules and f16. Every failing case is reported, not only the first.
/// SKIPPED without a compute capability 9.0 GPU (the simulator has no wgmma).
#[test]
fn attention_wgmma_matches_reference() {
    let Some(gpu) = hopper_gpu_or_skip("attention_wgmma_matches_reference") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    // (batch, heads, kv_heads, seq_q, seq_k)
    let shapes: &[(usize, usize, usize, usize, usize)] = &[
        (1, 1, 1, 1, 1),
        (2, 3, 3, 77, 77),
        (2, 2, 2, 200, 200),
        (1, 2, 2, 128, 128),
        (1, 3, 3, 128, 300),
        (2, 1, 1, 300, 100),
        (1, 2, 2, 1000, 1000),
        (2, 8, 2, 300, 300),
        (1, 6, 1, 129, 500),
        (1, 2, 2, 513, 700),
    ];
    let mut seed = 900;
    let mut failures = Vec::new();
    for d in [64, 128, 256] {
        for (i, &(b, h, kvh, sq, sk)) in shapes.iter().enumerate() {
            for causal in [false, true] {
                seed += 1;
                let shape = shape(b, h, sq, sk, d).with_kv_heads(kvh);
                // The other schedules on every few shapes each.
                // Head groups on (2, 8, 2, 300, 300) too: 16 heads in groups of 3.
                let kernel = match (if i == 7 { 4 } else { i % 5 }, d) {
                    (1, _) => WGMMA_NO_PING_PONG,
                    (2, _) => WGMMA_ONE_TILE_PER_BLOCK,
                    (3, 64) => WGMMA_4_STAGES,
                    (4, _) => WGMMA_HEAD_GROUPS,
                    _ => WGMMA,
                };
                // 192-row tiles (d64), f16 and TMA stores of O on every shape, their
                // schedules alternating.
                let m192 = [WGMMA_M192, WGMMA_M192_NO_PING_PONG, WGMMA_M192_4_STAGES][i % 3];
                let f16 = [WGMMA_F16, WGMMA_F16_M192][i % 2];
                let tma_store = match d {
                    64 => [WGMMA_TMA_STORE, WGMMA_M192_TMA_STORE, WGMMA_F16_TMA_STORE][i % 3],
                    _ => [WGMMA_TMA_STORE, WGMMA_F16_TMA_STORE][i % 2],
                };
                let extra: &[&str] = match d {
                    64 => &[
                        m192,
                        f16,
                        tma_store,
                        WGMMA_FEW_BLOCKS,
                        WGMMA_M192_FEW_BLOCKS,
                    ],
                    128 => &[
                        WGMMA_F16,
                        tma_store,
                        WGMMA_FEW_BLOCKS,
                        WGMMA_TMA_STORE_FEW_BLOCKS,
                    ],
                    _ => &[WGMMA_F16, WGMMA_FEW_BLOCKS],
                };
                for kernel in std::iter::once(kernel).chain(extra.iter().copied()) {
                    let run = std::panic::AssertUnwindSafe(|| {
                        check_kernel(&gpu, &dense, Some(kernel), shape, causal, seed)
                    });
                    if let Err(e) = std::panic::catch_unwind(run) {
                        let message = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        failures.push(format!(
                            "{kernel} d{d} {shape:?} causal={causal}: {message}"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Head dimension 256 through `Dense::attention`: the Hopper kernel on compute capability 9.0
/// (checked against the reference, grouped-query and causal included); elsewhere (the
/// simulator, other GPUs) an error naming head_dim 256 and the device, nothing launched (the
/// output keeps its poison). The backward pass refuses it on every device.
#[test]
fn attention_d256_runs_on_hopper_and_is_refused_elsewhere() {
    let Some(gpu) = gpu_or_skip("attention_d256_runs_on_hopper_and_is_refused_elsewhere") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let hopper = !gpu.is_simulator() && gpu.properties().compute_capability == (9, 0);
    let s = gpu.default_stream();
    if hopper {
        let mut seed = 4000;
        for (b, h, kvh, sq, sk) in [(2, 4, 1, 333, 333), (1, 2, 2, 1, 1), (1, 3, 3, 200, 500)] {
            for causal in [false, true] {
                seed += 1;
                let shape = shape(b, h, sq, sk, 256).with_kv_heads(kvh);
                check(&gpu, &dense, shape, causal, seed);
            }
        }
    } else {
        let sh = shape(1, 2, 10, 12, 256);
        let buf = |n: usize| gpu.to_device(&vec![bf16::ONE; n]).unwrap();
        let (q, k) = (buf(sh.q_len()), buf(sh.kv_len()));
        let mut o = gpu.to_device(&vec![bf16::NAN; sh.q_len()]).unwrap();
        match dense.attention(s, &q, &k, &k, &mut o, sh, true) {
            Err(Error::LaunchConfig { kernel, message }) => {
                assert_eq!(kernel, "attention_fwd_bf16_d256");
                assert!(message.contains("head_dim 256"), "{message}");
                assert!(message.contains(&gpu.properties().name), "{message}");
            }
            other => panic!("head_dim 256 off Hopper: expected a launch error, got {other:?}"),
        }
        assert!(o.to_vec().unwrap().iter().all(|x| x.is_nan()));
        // A bad shape is still a shape error first.
        let mut short = buf(sh.q_len() - 1);
        match dense.attention(s, &q, &k, &k, &mut short, sh, false) {
            Err(Error::Argument { argument, .. }) => assert_eq!(argument, "o"),
            other => panic!("short o at head_dim 256: expected an argument error, got {other:?}"),
        }
    }
    // No backward pass at head dimension 256.
    let sh = shape(1, 1, 4, 4, 256);
    let buf = |n: usize| gpu.to_device(&vec![bf16::ONE; n]).unwrap();
    let (q, o) = (buf(sh.q_len()), buf(sh.q_len()));
    let lse = gpu.to_device(&vec![0f32; sh.lse_len()]).unwrap();
    let (mut dq, mut dk, mut dv) = (buf(sh.q_len()), buf(sh.kv_len()), buf(sh.kv_len()));
    match dense.attention_backward(
        s,
        (&q, &q, &q),
        &o,
        &lse,
        &o,
        (&mut dq, &mut dk, &mut dv),
        sh,
        false,
    ) {
        Err(Error::Argument { argument, .. }) => assert_eq!(argument, "shape.head_dim"),
        other => panic!("backward at head_dim 256: expected an argument error, got {other:?}"),
    }
}

/// Without a Hopper GPU (the simulator included) the forced Hopper entry point is an error
/// before anything runs, and bad shapes are refused the same way on every device.
#[test]
fn attention_wgmma_refuses_other_devices() {
    let Some(gpu) = gpu_or_skip("attention_wgmma_refuses_other_devices") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let s = gpu.default_stream();
    let good = shape(1, 2, 10, 12, 64);
    let buf = |n: usize| gpu.to_device(&vec![bf16::ONE; n]).unwrap();
    let (q, k) = (buf(good.q_len()), buf(good.kv_len()));
    let mut o = buf(good.q_len());
    let bad = shape(1, 2, 10, 12, 96);
    match dense.attention_wgmma(s, &q, &k, &k, &mut o, None, bad, false) {
        Err(Error::Argument { argument, .. }) => assert_eq!(argument, "shape.head_dim"),
        other => panic!("head_dim 96: expected an argument error, got {other:?}"),
    }
    // A 4-stage K/V ring does not fit beside head dimension 128's tiles.
    let schedule = WgmmaSchedule {
        stages: 4,
        ..WgmmaSchedule::default()
    };
    let (q128, k128) = (buf(good.q_len() * 2), buf(good.kv_len() * 2));
    let mut o128 = buf(good.q_len() * 2);
    let d128 = shape(1, 2, 10, 12, 128);
    match dense.attention_wgmma_with(
        schedule, s, &q128, &k128, &k128, &mut o128, None, d128, false,
    ) {
        Err(Error::Argument { argument, .. }) => assert_eq!(argument, "schedule.stages"),
        other => panic!("4 stages at head_dim 128: expected an argument error, got {other:?}"),
    }
    // Three consumer warpgroups exist for head dimension 64 only.
    let schedule = WgmmaSchedule {
        consumers: 3,
        ..WgmmaSchedule::default()
    };
    match dense.attention_wgmma_with(
        schedule, s, &q128, &k128, &k128, &mut o128, None, d128, false,
    ) {
        Err(Error::Argument { argument, .. }) => assert_eq!(argument, "schedule.consumers"),
        other => panic!("3 consumers at head_dim 128: expected an argument error, got {other:?}"),
    }
    // Head dimension 256: one K/V stage and no O staging tile fit.
    let d256 = shape(1, 2, 10, 12, 256);
    let (q256, k256) = (buf(d256.q_len()), buf(d256.kv_len()));
    let mut o256 = buf(d256.q_len());
    for (schedule, want) in [
        (
            WgmmaSchedule {
                stages: 2,
                ..WgmmaSchedule::default()
            },
            "schedule.stages",
        ),
        (
            WgmmaSchedule {
                tma_store: true,
                ..WgmmaSchedule::default()
            },
            "schedule.tma_store",
        ),
    ] {
        match dense.attention_wgmma_with(
            schedule, s, &q256, &k256, &k256, &mut o256, None, d256, false,
        ) {
            Err(Error::Argument { argument, .. }) => assert_eq!(argument, want),
            other => {
                panic!("{schedule:?} at head_dim 256: expected an argument error, got {other:?}")
            }
        }
    }
    let hopper = !gpu.is_simulator() && gpu.properties().compute_capability == (9, 0);
    let result = dense.attention_wgmma(s, &q, &k, &k, &mut o, None, good, false);
    // f16 through `Dense::attention`: the Hopper kernel there, an error elsewhere (the mma.sync
    // kernel is bf16 only); a bad shape is a shape error everywhere.
    let buf16 = |n: usize| gpu.to_device(&vec![f16::ONE; n]).unwrap();
    let (q16, k16) = (buf16(good.q_len()), buf16(good.kv_len()));
    let mut o16 = buf16(good.q_len());
    let result16 = dense.attention(s, &q16, &k16, &k16, &mut o16, good, false);
    match dense.attention(s, &q16, &k16, &k16, &mut o16, bad, false) {
        Err(Error::Argument { argument, .. }) => assert_eq!(argument, "shape.head_dim"),
        other => panic!("f16 head_dim 96: expected an argument error, got {other:?}"),
    }
    if hopper {
        result.unwrap();
        result16.unwrap();
    } else {
        assert!(
            matches!(result, Err(Error::LaunchConfig { .. })),
            "expected a launch-configuration error off Hopper, got {result:?}"
        );
        assert!(
            matches!(result16, Err(Error::LaunchConfig { .. })),
            "f16 off Hopper: expected a launch-configuration error, got {result16:?}"
        );
    }
}

/// Every tiling the benchmark compares computes the same function (ragged shapes, causal).
#[test]
fn attention_variants_match_reference() {
    let Some(gpu) = gpu_or_skip("attention_variants_match_reference") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let shapes: &[(usize, usize, usize, usize)] = if gpu.is_simulator() {
        &[(1, 2, 140, 70)]
    } else {
        &[(2, 3, 200, 200), (1, 2, 77, 300), (1, 1, 333, 129)]
    };
    let mut seed = 100;
    for d in [64, 128] {
        for name in attention_kernel_names(d) {
            for &(b, h, sq, sk) in shapes {
                for causal in [false, true] {
                    seed += 1;
                    check_kernel(
                        &gpu,
                        &dense,
                        Some(name),
                        shape(b, h, sq, sk, d),
                        causal,
                        seed,
                    );
                }
            }
        }
    }
}

#[test]
fn attention_rejects_bad_input() {
    let Some(gpu) = gpu_or_skip("attention_rejects_bad_input") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let s = gpu.default_stream();
    let buf = |n: usize| gpu.to_device(&vec![bf16::ONE; n]).unwrap();
    let good = shape(1, 2, 10, 12, 64);
    let (q, k, v) = (buf(good.q_len()), buf(good.kv_len()), buf(good.kv_len()));
    let mut o = buf(good.q_len());
    let argument_of = |r: gpu_host::Result<()>| match r {
        Err(Error::Argument {
            kernel, argument, ..
        }) => (kernel, argument),
        other => panic!("expected an argument error, got {other:?}"),
    };

    let bad_dim = shape(1, 2, 10, 12, 96);
    let (kernel, argument) = argument_of(dense.attention(s, &q, &k, &v, &mut o, bad_dim, false));
    assert!(kernel.starts_with("attention_fwd_bf16"), "{kernel}");
    assert_eq!(argument, "shape.head_dim");

    let (_, argument) = argument_of(dense.attention(s, &k, &k, &v, &mut o, good, false));
    assert_eq!(argument, "q");
    let (_, argument) = argument_of(dense.attention(s, &q, &q, &v, &mut o, good, true));
    assert_eq!(argument, "k");
    let (_, argument) = argument_of(dense.attention(s, &q, &k, &q, &mut o, good, false));
    assert_eq!(argument, "v");
    let mut short = buf(good.q_len() - 1);
    let (kernel, argument) = argument_of(dense.attention(s, &q, &k, &v, &mut short, good, false));
    // The kernel `Dense::attention` picks: the Hopper one on compute capability 9.0.
    let hopper = !gpu.is_simulator() && gpu.properties().compute_capability == (9, 0);
    let want = if hopper {
        "attention_fwd_bf16_d64_wgmma"
    } else {
        "attention_fwd_bf16_d64"
    };
    assert_eq!((kernel.as_str(), argument.as_str()), (want, "o"));

    // K/V heads that do not divide the query heads.
    let (_, argument) = argument_of(dense.attention(
        s,
        &q,
        &k,
        &v,
        &mut o,
        shape(1, 3, 10, 12, 64).with_kv_heads(2),
        false,
    ));
    assert_eq!(argument, "shape.kv_heads");
    // A logsumexp buffer of the wrong length.
    let mut lse = gpu.to_device(&vec![0f32; good.lse_len() + 1]).unwrap();
    let (_, argument) =
        argument_of(dense.attention_with_lse(s, &q, &k, &v, &mut o, Some(&mut lse), good, false));
    assert_eq!(argument, "lse");
    assert!(lse.to_vec().unwrap().iter().all(|&x| x == 0.0));

    let no_keys = shape(1, 2, 10, 0, 64);
    let empty = buf(0);
    let (_, argument) = argument_of(dense.attention(s, &q, &empty, &empty, &mut o, no_keys, false));
    assert_eq!(argument, "shape.seq_k");

    // No queries: nothing to do, not an error.
    let no_queries = shape(1, 2, 0, 12, 128);
    let mut none = buf(0);
    let (k128, v128) = (buf(no_queries.kv_len()), buf(no_queries.kv_len()));
    dense
        .attention(s, &empty, &k128, &v128, &mut none, no_queries, true)
        .unwrap();
}

/// The gradients of attention in f64 from the same bf16 inputs: `(dq, dk, dv)` for the output
/// gradient `d_o` (softmax recomputed exactly; Δ from the exact output).
fn reference_backward(
    (q, k, v): (&[bf16], &[bf16], &[bf16]),
    d_o: &[bf16],
    s: AttentionShape,
    causal: bool,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let d = s.head_dim;
    let scale = 1.0 / (d as f64).sqrt();
    let f = |x: &[bf16]| x.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let (qf, kf, vf, gf) = (f(q), f(k), f(v), f(d_o));
    let (mut dq, mut dk, mut dv) = (
        vec![0.0; s.q_len()],
        vec![0.0; s.kv_len()],
        vec![0.0; s.kv_len()],
    );
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let group = s.heads / s.kv_heads;
    for bh in 0..s.batch * s.heads {
        let kv = (bh / s.heads) * s.kv_heads + (bh % s.heads) / group;
        let (qo, ko) = (bh * s.seq_q * d, kv * s.seq_k * d);
        for i in 0..s.seq_q {
            let keys = if causal {
                (i + 1).min(s.seq_k)
            } else {
                s.seq_k
            };
            let qi = &qf[qo + i * d..qo + (i + 1) * d];
            let gi = &gf[qo + i * d..qo + (i + 1) * d];
            let scores: Vec<f64> = (0..keys)
                .map(|j| dot(qi, &kf[ko + j * d..ko + (j + 1) * d]) * scale)
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            let p: Vec<f64> = e.iter().map(|x| x / sum).collect();
            // O_i, dP_ij = dO_i · v_j, Δ_i = dO_i · O_i.
            let mut oi = vec![0.0; d];
            for (j, pj) in p.iter().enumerate() {
                for (o, x) in oi.iter_mut().zip(&vf[ko + j * d..ko + (j + 1) * d]) {
                    *o += pj * x;
                }
            }
            let delta = dot(gi, &oi);
            for (j, pj) in p.iter().enumerate() {
                let (kj, vj) = (ko + j * d, ko + j * d);
                let dp = dot(gi, &vf[vj..vj + d]);
                let ds = pj * (dp - delta);
                for c in 0..d {
                    dq[qo + i * d + c] += scale * ds * kf[kj + c];
                    dk[kj + c] += scale * ds * qi[c];
                    dv[vj + c] += pj * gi[c];
                }
            }
        }
    }
    (dq, dk, dv)
}

/// The backward pass (`Dense::attention_backward_deterministic`, rerun and compared bit for
/// bit, `attention_backward_atomic_dq` and the default `attention_backward`, in turn) from our
/// forward's output and logsumexp,
/// against the f64 gradients: relative-norm error of dK and dV under 3e-2 and of dQ under 5e-2
/// (bf16 inputs; P and dS rounded to bf16 for the tensor cores; dQ = Σ_j dS_ij·k_j sums terms
/// that cancel, Σ_j dS_ij = 0, so its relative error is the largest), every element written.
#[test]
fn attention_backward_matches_reference() {
    let Some(gpu) = gpu_or_skip("attention_backward_matches_reference") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    // (batch, heads, kv_heads, seq_q, seq_k): tails on both sides, one key block, several query
    // tiles, grouped- and multi-query heads.
    let shapes: &[(usize, usize, usize, usize, usize)] = if gpu.is_simulator() {
        &[(1, 2, 2, 70, 90), (1, 1, 1, 20, 64), (1, 4, 2, 40, 70)]
    } else {
        &[
            (2, 3, 3, 200, 300),
            (1, 2, 2, 513, 513),
            (1, 1, 1, 1, 77),
            (2, 2, 2, 128, 64),
            (2, 8, 2, 150, 260),
            (1, 4, 1, 100, 100),
        ]
    };
    let mut seed = 900;
    for d in [64, 128] {
        for &(b, h, kvh, sq, sk) in shapes {
            for causal in [false, true] {
                seed += 1;
                let shape = shape(b, h, sq, sk, d).with_kv_heads(kvh);
                let mut rng = XorShift64Star::new(seed);
                let q = bf16s(&mut rng, shape.q_len(), 2.0);
                let k = bf16s(&mut rng, shape.kv_len(), 2.0);
                let v = bf16s(&mut rng, shape.kv_len(), 1.0);
                let g = bf16s(&mut rng, shape.q_len(), 1.0);
                let dev = |x: &[bf16]| gpu.to_device(x).unwrap();
                let (dq_, dk_, dv_, dg) = (dev(&q), dev(&k), dev(&v), dev(&g));
                let s = gpu.default_stream();
                let mut o = gpu.alloc_zeroed::<bf16>(shape.q_len()).unwrap();
                let mut lse = gpu.alloc_zeroed::<f32>(shape.lse_len()).unwrap();
                dense
                    .attention_with_lse(s, &dq_, &dk_, &dv_, &mut o, Some(&mut lse), shape, causal)
                    .unwrap();
                let nan = |n: usize| gpu.to_device(&vec![bf16::NAN; n]).unwrap();
                let (mut gq, mut gk, mut gv) =
                    (nan(shape.q_len()), nan(shape.kv_len()), nan(shape.kv_len()));
                // The cases rotate through the deterministic dQ (rerun and compared bit for bit),
                // the atomic dQ and the default (the fastest the device has).
                let deterministic = seed % 3 == 0;
                let backward = match seed % 3 {
                    0 => Dense::attention_backward_deterministic,
                    1 => Dense::attention_backward_atomic_dq,
                    _ => Dense::attention_backward,
                };
                let run = |gq: &mut _, gk: &mut _, gv: &mut _| {
                    backward(
                        &dense,
                        s,
                        (&dq_, &dk_, &dv_),
                        &o,
                        &lse,
                        &dg,
                        (gq, gk, gv),
                        shape,
                        causal,
                    )
                    .unwrap_or_else(|e| panic!("{shape:?} causal={causal}: {e}"))
                };
                run(&mut gq, &mut gk, &mut gv);
                if deterministic {
                    let first = gq.to_vec().unwrap();
                    run(&mut gq, &mut gk, &mut gv);
                    let bits = |x: Vec<bf16>| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    assert_eq!(
                        bits(first),
                        bits(gq.to_vec().unwrap()),
                        "{shape:?}: dQ changed"
                    );
                }
                check_grads((&q, &k, &v), &g, (&gq, &gk, &gv), shape, causal);
            }
        }
    }
}

/// The gradients `(gq, gk, gv)` against [`reference_backward`]: relative-norm error of dK and
/// dV under 3e-2 and of dQ under 5e-2, every element finite (written).
fn check_grads(
    (q, k, v): (&[bf16], &[bf16], &[bf16]),
    g: &[bf16],
    (gq, gk, gv): (
        &gpu_host::DeviceBuffer<bf16>,
        &gpu_host::DeviceBuffer<bf16>,
        &gpu_host::DeviceBuffer<bf16>,
    ),
    shape: AttentionShape,
    causal: bool,
) {
    let (wq, wk, wv) = reference_backward((q, k, v), g, shape, causal);
    for (name, got, want) in [("dq", gq, &wq), ("dk", gk, &wk), ("dv", gv, &wv)] {
        let got = got.to_vec().unwrap();
        let mut rel = RelNormError::new();
        for (i, (x, w)) in got.iter().zip(want).enumerate() {
            let x = x.to_f64();
            assert!(
                x.is_finite(),
                "{shape:?} causal={causal}: {name}[{i}] = {x}"
            );
            rel.add(x, *w);
        }
        // A gradient that is exactly zero (one query seeing one key: P = 1, so
        // dS = dP − Δ = 0) has no relative error: check the absolute one.
        if want.iter().all(|w| w.abs() < 1e-12) {
            let max = got.iter().map(|x| x.to_f64().abs()).fold(0.0, f64::max);
            assert!(
                max < 1e-2,
                "{shape:?} causal={causal}: {name} should be 0: {max}"
            );
            continue;
        }
        let rel = rel.value();
        println!("backward {shape:?} causal={causal} {name}: relative error {rel:.2e}");
        let bound = if name == "dq" { 5e-2 } else { 3e-2 };
        assert!(
            rel < bound,
            "{shape:?} causal={causal}: {name} relative error {rel:.3e}"
        );
    }
}

/// The Hopper backward (`Dense::attention_backward_wgmma`, dQ by atomics and deterministic,
/// the latter rerun and compared bit for bit) against the f64 gradients: ragged lengths that
/// are not multiples of its 128-key blocks and 64/128-row query tiles, one query, seq_q !=
/// seq_k both ways, causal and not, grouped- and multi-query heads, several batches and heads.
/// Every failing case is reported. SKIPPED without a compute capability 9.0 GPU (the
/// simulator has no wgmma); off Hopper the forced entry is an error before launch.
#[test]
fn attention_backward_wgmma_matches_reference() {
    let Some(gpu) = gpu_or_skip("attention_backward_wgmma_matches_reference") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let hopper = !gpu.is_simulator() && gpu.properties().compute_capability == (9, 0);
    if !hopper {
        let shape = shape(1, 1, 10, 10, 64);
        let buf = |n: usize| gpu.to_device(&vec![bf16::ONE; n]).unwrap();
        let (q, k) = (buf(shape.q_len()), buf(shape.kv_len()));
        let (mut gq, mut gk, mut gv) =
            (buf(shape.q_len()), buf(shape.kv_len()), buf(shape.kv_len()));
        let lse = gpu.to_device(&vec![0f32; shape.lse_len()]).unwrap();
        let s = gpu.default_stream();
        let result = dense.attention_backward_wgmma(
            s,
            (&q, &k, &k),
            &q,
            &lse,
            &q,
            (&mut gq, &mut gk, &mut gv),
            shape,
            false,
            false,
        );
        assert!(
            matches!(result, Err(Error::LaunchConfig { .. })),
            "expected a launch-configuration error off Hopper, got {result:?}"
        );
        // Bad shapes are argument errors first, on every device.
        let bad = AttentionShape::new(1, 1, 10, 10, 96);
        let result = dense.attention_backward_wgmma(
            s,
            (&q, &k, &k),
            &q,
            &lse,
            &q,
            (&mut gq, &mut gk, &mut gv),
            bad,
            false,
            true,
        );
        match result {
            Err(Error::Argument { argument, .. }) => assert_eq!(argument, "shape.head_dim"),
            other => panic!("head_dim 96: expected an argument error, got {other:?}"),
        }
        gpu_test_kit::backend::skipped(
            "attention_backward_wgmma_matches_reference",
            "needs a compute capability 9.0 GPU (checked: the forced entry is an error here)",
        );
        return;
    }
    // (batch, heads, kv_heads, seq_q, seq_k)
    let shapes: &[(usize, usize, usize, usize, usize)] = &[
        (1, 1, 1, 1, 77),
        (2, 3, 3, 200, 300),
        (1, 2, 2, 513, 513),
        (2, 2, 2, 128, 64),
        (2, 8, 2, 150, 260),
        (1, 4, 1, 100, 100),
        (1, 2, 2, 300, 129),
        (1, 1, 1, 1000, 1000),
    ];
    let mut seed = 1900;
    let mut failures = Vec::new();
    for d in [64, 128] {
        for &(b, h, kvh, sq, sk) in shapes {
            for causal in [false, true] {
                for deterministic in [false, true] {
                    seed += 1;
                    let shape = shape(b, h, sq, sk, d).with_kv_heads(kvh);
                    let run = std::panic::AssertUnwindSafe(|| {
                        let mut rng = XorShift64Star::new(seed);
                        let q = bf16s(&mut rng, shape.q_len(), 2.0);
                        let k = bf16s(&mut rng, shape.kv_len(), 2.0);
                        let v = bf16s(&mut rng, shape.kv_len(), 1.0);
                        let g = bf16s(&mut rng, shape.q_len(), 1.0);
                        let dev = |x: &[bf16]| gpu.to_device(x).unwrap();
                        let (dq_, dk_, dv_, dg) = (dev(&q), dev(&k), dev(&v), dev(&g));
                        let s = gpu.default_stream();
                        let mut o = gpu.alloc_zeroed::<bf16>(shape.q_len()).unwrap();
                        let mut lse = gpu.alloc_zeroed::<f32>(shape.lse_len()).unwrap();
                        dense
                            .attention_with_lse(
                                s,
                                &dq_,
                                &dk_,
                                &dv_,
                                &mut o,
                                Some(&mut lse),
                                shape,
                                causal,
                            )
                            .unwrap();
                        let nan = |n: usize| gpu.to_device(&vec![bf16::NAN; n]).unwrap();
                        let (mut gq, mut gk, mut gv) =
                            (nan(shape.q_len()), nan(shape.kv_len()), nan(shape.kv_len()));
                        let run = |gq: &mut _, gk: &mut _, gv: &mut _| {
                            dense
                                .attention_backward_wgmma(
                                    s,
                                    (&dq_, &dk_, &dv_),
                                    &o,
                                    &lse,
                                    &dg,
                                    (gq, gk, gv),
                                    shape,
                                    causal,
                                    deterministic,
                                )
                                .unwrap_or_else(|e| panic!("{e}"))
                        };
                        run(&mut gq, &mut gk, &mut gv);
                        if deterministic {
                            let first = gq.to_vec().unwrap();
                            run(&mut gq, &mut gk, &mut gv);
                            let bits =
                                |x: Vec<bf16>| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                            assert_eq!(bits(first), bits(gq.to_vec().unwrap()), "dQ changed");
                        }
                        check_grads((&q, &k, &v), &g, (&gq, &gk, &gv), shape, causal);
                    });
                    if let Err(e) = std::panic::catch_unwind(run) {
                        let message = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        failures.push(format!(
                            "d{d} {shape:?} causal={causal} deterministic={deterministic}: {message}"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The Hopper backward's deterministic dQ at sizes where the key blocks' bulk reductions
/// really race (2048 rows, 16 key blocks per tile, GQA; one head of 32768 rows, 256 key blocks,
/// more than are resident at once): three runs give the same bits,
/// and the gradients agree with the unordered run's within one bf16 step (the f32 sums' order
/// shows only in the rounding). SKIPPED without a compute capability 9.0 GPU.
#[test]
fn attention_backward_wgmma_deterministic_dq_repeats() {
    let Some(gpu) = gpu_or_skip("attention_backward_wgmma_deterministic_dq_repeats") else {
        return;
    };
    if gpu.is_simulator() || gpu.properties().compute_capability != (9, 0) {
        gpu_test_kit::backend::skipped(
            "attention_backward_wgmma_deterministic_dq_repeats",
            "needs a compute capability 9.0 GPU (the wgmma backward is not simulated)",
        );
        return;
    }
    let dense = Dense::load(&gpu).unwrap();
    let s = gpu.default_stream();
    // (batch, heads, kv_heads, seq): key blocks of a head all resident at once (the shifted
    // order when not causal), and 256 key blocks, more than any GPU holds (the plain order).
    for (b, h, kvh, seq) in [(2, 4, 2, 2048), (1, 1, 1, 32768)] {
        for d in [64, 128] {
            for causal in [false, true] {
                let shape = shape(b, h, seq, seq, d).with_kv_heads(kvh);
                let mut rng = XorShift64Star::new(7700 + d as u64 + causal as u64 + seq as u64);
                let dev = |x: Vec<bf16>| gpu.to_device(&x).unwrap();
                let q = dev(bf16s(&mut rng, shape.q_len(), 2.0));
                let k = dev(bf16s(&mut rng, shape.kv_len(), 2.0));
                let v = dev(bf16s(&mut rng, shape.kv_len(), 1.0));
                let g = dev(bf16s(&mut rng, shape.q_len(), 1.0));
                let mut o = gpu.alloc_zeroed::<bf16>(shape.q_len()).unwrap();
                let mut lse = gpu.alloc_zeroed::<f32>(shape.lse_len()).unwrap();
                dense
                    .attention_with_lse(s, &q, &k, &v, &mut o, Some(&mut lse), shape, causal)
                    .unwrap();
                let run = |deterministic: bool| {
                    let mut gq = gpu.alloc_zeroed::<bf16>(shape.q_len()).unwrap();
                    let mut gk = gpu.alloc_zeroed::<bf16>(shape.kv_len()).unwrap();
                    let mut gv = gpu.alloc_zeroed::<bf16>(shape.kv_len()).unwrap();
                    dense
                        .attention_backward_wgmma(
                            s,
                            (&q, &k, &v),
                            &o,
                            &lse,
                            &g,
                            (&mut gq, &mut gk, &mut gv),
                            shape,
                            causal,
                            deterministic,
                        )
                        .unwrap_or_else(|e| panic!("d{d} causal={causal}: {e}"));
                    let bits = |x: Vec<bf16>| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    (
                        bits(gq.to_vec().unwrap()),
                        bits(gk.to_vec().unwrap()),
                        bits(gv.to_vec().unwrap()),
                    )
                };
                let first = run(true);
                for _ in 0..2 {
                    assert!(
                        first == run(true),
                        "d{d} seq {seq} causal={causal}: the deterministic gradients changed between runs"
                    );
                }
                // Shifted (not causal), the key blocks also walk the query tiles in another order,
                // so dK and dV sum in another order too.
                let unordered = run(false);
                let grads = [
                    ("dQ", &first.0, &unordered.0),
                    ("dK", &first.1, &unordered.1),
                    ("dV", &first.2, &unordered.2),
                ];
                for (name, a, b) in grads {
                    let far = a
                        .iter()
                        .zip(b)
                        .map(|(a, b)| (bf16::from_bits(*a).to_f32(), bf16::from_bits(*b).to_f32()))
                        .filter(|&(a, b)| !within_bf16_step(a, b))
                        .count();
                    assert_eq!(
                        far, 0,
                        "d{d} causal={causal}: {far} {name} elements differ from the unordered \
                     run's by more than one bf16 step"
                    );
                }
            }
        }
    }
}

/// Whether `a` and `b` are at most about one bf16 step apart (1/128 relative, 1e-4 absolute
/// near zero); false for NaN.
fn within_bf16_step(a: f32, b: f32) -> bool {
    (a - b).abs() <= a.abs().max(b.abs()) / 128.0 + 1e-4
}

/// Cumulative starts of `lens` (from 0).
fn cu_of(lens: impl Iterator<Item = usize>) -> Vec<u32> {
    std::iter::once(0)
        .chain(lens.scan(0, |acc, n| {
            *acc += n;
            Some(*acc as u32)
        }))
        .collect()
}

/// Which kernel `check_varlen` runs: `Dense::attention_varlen`'s default, the `mma.sync`
/// kernel, or the Hopper kernel with a schedule (`Dense::attention_varlen_with`).
#[derive(Debug, Clone, Copy)]
enum VarlenKernel {
    Default,
    Mma,
    Wgmma(WgmmaSchedule),
}

/// One variable-length batch (`seqs`: per sequence (queries, keys)) through `kernel`, bf16 or
/// (`f16`, Hopper kernel only)
/// f16 tensors, against the f64 reference of each sequence alone: every written element
/// finite, relative error < 2e-2 per sequence, logsumexp (`[heads, total_q]`) within 2e-2.
/// Errors describe the first failing sequence.
#[allow(clippy::too_many_arguments)]
fn check_varlen(
    gpu: &Gpu,
    dense: &Dense,
    seqs: &[(usize, usize)],
    (d, heads, kv_heads): (usize, usize, usize),
    causal: bool,
    kernel: VarlenKernel,
    f16: bool,
    seed: u64,
) -> Result<(), String> {
    let (cu_q, cu_k) = (
        cu_of(seqs.iter().map(|s| s.0)),
        cu_of(seqs.iter().map(|s| s.1)),
    );
    let (total_q, total_k) = (cu_q[seqs.len()] as usize, cu_k[seqs.len()] as usize);
    let mut rng = XorShift64Star::new(seed);
    // Token-major: [total, heads, d].
    let q = bf16s(&mut rng, total_q * heads * d, 2.0);
    let k = bf16s(&mut rng, total_k * kv_heads * d, 2.0);
    let v = bf16s(&mut rng, total_k * kv_heads * d, 1.0);
    let mut lse = gpu.to_device(&vec![f32::NAN; total_q * heads]).unwrap();
    let s = gpu.default_stream();
    let what = format!("varlen d{d} heads {heads}/{kv_heads} causal={causal} {kernel:?} f16={f16}");
    let o: Vec<f64> = if f16 {
        let dev = |x: &[bf16]| {
            let x: Vec<f16> = x.iter().map(|v| f16::from_f64(v.to_f64())).collect();
            gpu.to_device(&x).unwrap()
        };
        let mut o = gpu.to_device(&vec![f16::NAN; q.len()]).unwrap();
        let VarlenKernel::Wgmma(schedule) = kernel else {
            panic!("f16 runs on the Hopper kernel only");
        };
        dense
            .attention_varlen_with(
                Some(schedule),
                s,
                (&dev(&q), &dev(&k), &dev(&v)),
                &mut o,
                Some(&mut lse),
                (&cu_q, &cu_k),
                (heads, kv_heads, d),
                causal,
            )
            .map_err(|e| format!("{what}: {e}"))?;
        o.to_vec().unwrap().iter().map(|x| x.to_f64()).collect()
    } else {
        let dev = |x: &[bf16]| gpu.to_device(x).unwrap();
        let mut o = gpu.to_device(&vec![bf16::NAN; q.len()]).unwrap();
        let (q, k, v) = (dev(&q), dev(&k), dev(&v));
        let (qkv, cu, heads) = ((&q, &k, &v), (&cu_q[..], &cu_k[..]), (heads, kv_heads, d));
        let lse = Some(&mut lse);
        match kernel {
            VarlenKernel::Default => dense.attention_varlen(s, qkv, &mut o, lse, cu, heads, causal),
            VarlenKernel::Mma => {
                dense.attention_varlen_with(None, s, qkv, &mut o, lse, cu, heads, causal)
            }
            VarlenKernel::Wgmma(schedule) => {
                dense.attention_varlen_with(Some(schedule), s, qkv, &mut o, lse, cu, heads, causal)
            }
        }
        .map_err(|e| format!("{what}: {e}"))?;
        o.to_vec().unwrap().iter().map(|x| x.to_f64()).collect()
    };
    let lse = lse.to_vec().unwrap();
    for (b, &(sq, sk)) in seqs.iter().enumerate() {
        if sq == 0 {
            continue;
        }
        let (q0, k0) = (cu_q[b] as usize, cu_k[b] as usize);
        // Sequence b alone, head-major: [1, heads, seq, d].
        fn gather<T: Copy>(x: &[T], d: usize, start: usize, n: usize, hs: usize) -> Vec<T> {
            (0..hs)
                .flat_map(|h| {
                    (0..n).flat_map(move |t| {
                        let row = ((start + t) * hs + h) * d;
                        x[row..row + d].iter().copied()
                    })
                })
                .collect()
        }
        let shape = shape(1, heads, sq, sk, d).with_kv_heads(kv_heads);
        let (want, want_lse) = reference(
            &gather(&q, d, q0, sq, heads),
            &gather(&k, d, k0, sk, kv_heads),
            &gather(&v, d, k0, sk, kv_heads),
            shape,
            causal,
        );
        let got = gather(&o, d, q0, sq, heads);
        let mut rel = RelNormError::new();
        for (i, (&g, w)) in got.iter().zip(&want).enumerate() {
            if !g.is_finite() {
                return Err(format!("{what} seq {b} ({sq}, {sk}): element {i} is {g}"));
            }
            rel.add(g, *w);
        }
        let rel = rel.value();
        if rel >= 2e-2 {
            return Err(format!("{what} seq {b} ({sq}, {sk}): error {rel:.3e}"));
        }
        for h in 0..heads {
            for t in 0..sq {
                let (g, w) = (lse[h * total_q + q0 + t] as f64, want_lse[h * sq + t]);
                if (g - w).abs() >= 2e-2 * w.abs().max(1.0) || g.is_nan() {
                    return Err(format!(
                        "{what} seq {b} head {h} row {t}: logsumexp {g}, want {w}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A variable-length batch packed without padding (`Dense::attention_varlen`, `[total, heads,
/// dim]` with cumulative sequence starts) through the default kernel (the Hopper kernel on
/// compute capability 9.0, head dimension 256 included; there the `mma.sync` kernel other
/// GPUs run is checked too) against the reference of each sequence alone: ragged lengths (one query, no queries, more keys than queries and fewer),
/// grouped-query heads, causal and not, the logsumexp (`[heads, total_q]`), and the
/// sequence-start errors.
#[test]
fn attention_varlen_matches_each_sequence() {
    let Some(gpu) = gpu_or_skip("attention_varlen_matches_each_sequence") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let hopper = !gpu.is_simulator() && gpu.properties().compute_capability == (9, 0);
    // Per sequence (queries, keys).
    let seqs: &[(usize, usize)] = if gpu.is_simulator() {
        &[(37, 50), (1, 64), (0, 5), (70, 20)]
    } else {
        &[(37, 50), (1, 64), (0, 5), (300, 129), (513, 700), (64, 64)]
    };
    let mut seed = 700;
    let mut configs = vec![(64, 4, 2), (128, 2, 2)];
    if hopper {
        configs.push((256, 4, 2));
    }
    for config in configs {
        for causal in [false, true] {
            seed += 1;
            let mut kernels = vec![VarlenKernel::Default];
            if hopper && config.0 != 256 {
                kernels.push(VarlenKernel::Mma);
            }
            for kernel in kernels {
                check_varlen(&gpu, &dense, seqs, config, causal, kernel, false, seed)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
    // Bad sequence starts are refused before anything runs.
    let s = gpu.default_stream();
    let buf = |n: usize| gpu.to_device(&vec![bf16::ONE; n]).unwrap();
    let (q, k) = (buf(10 * 64), buf(10 * 64));
    let mut o = buf(10 * 64);
    let argument_of = |r: gpu_host::Result<()>| match r {
        Err(Error::Argument { argument, .. }) => argument,
        other => panic!("expected an argument error, got {other:?}"),
    };
    let mut run = |cq: &[u32], ck: &[u32]| {
        argument_of(dense.attention_varlen(
            s,
            (&q, &k, &k),
            &mut o,
            None,
            (cq, ck),
            (1, 1, 64),
            false,
        ))
    };
    assert_eq!(run(&[1, 10], &[0, 10]), "cu_seqlens_q");
    assert_eq!(run(&[0, 6, 4, 10], &[0, 3, 6, 10]), "cu_seqlens_q");
    assert_eq!(run(&[0, 10], &[0, 3, 10]), "cu_seqlens");
    assert_eq!(run(&[0, 5, 10], &[0, 0, 10]), "cu_seqlens_k");
    assert_eq!(run(&[0, 10], &[0, 9]), "k");
    // The last query start is not the number of rows of q (and o).
    assert_eq!(run(&[0, 9], &[0, 10]), "q");
    // Head dimensions other than 64, 128, 256.
    let (q96, k96) = (buf(10 * 96), buf(10 * 96));
    let mut o96 = buf(10 * 96);
    let r = dense.attention_varlen(
        s,
        (&q96, &k96, &k96),
        &mut o96,
        None,
        (&[0, 10], &[0, 10]),
        (1, 1, 96),
        false,
    );
    assert_eq!(argument_of(r), "shape.head_dim");
    // No queries in any sequence: nothing to do.
    let empty = buf(0);
    let mut none = buf(0);
    dense
        .attention_varlen(
            s,
            (&empty, &k, &k),
            &mut none,
            None,
            (&[0, 0, 0], &[0, 4, 10]),
            (1, 1, 64),
            true,
        )
        .unwrap();
}

/// The Hopper kernel on variable-length batches (`Dense::attention_varlen_with`) against the
/// reference of each sequence: lengths 1, around and past the 128-row/128-key tiles, no
/// queries, no keys and queries, a batch of single tokens; grouped- and multi-query heads;
/// causal and not; head dimensions 64, 128 and 256; every schedule (ping-pong or not,
/// persistent or one block per tile, causal tiles within head groups, 192-row tiles at d64,
/// f16). Every failing case is reported. SKIPPED without a compute capability 9.0 GPU.
#[test]
fn attention_varlen_wgmma_matches_each_sequence() {
    let Some(gpu) = hopper_gpu_or_skip("attention_varlen_wgmma_matches_each_sequence") else {
        return;
    };
    let dense = Dense::load(&gpu).unwrap();
    let batches: &[&[(usize, usize)]] = &[
        &[
            (1, 1),
            (127, 127),
            (129, 129),
            (0, 0),
            (256, 256),
            (383, 383),
            (1, 300),
        ],
        &[(200, 77), (0, 5), (1000, 1000), (77, 200), (128, 128)],
        &[(1, 1), (0, 0), (1, 1), (1, 2)],
    ];
    let default = WgmmaSchedule::default();
    let schedules = [
        ("wgmma", default, false),
        (
            "no-ping-pong",
            WgmmaSchedule {
                ping_pong: false,
                ..default
            },
            false,
        ),
        (
            "one-tile-per-block",
            WgmmaSchedule {
                persistent: false,
                ..default
            },
            false,
        ),
        (
            "head-groups",
            WgmmaSchedule {
                head_group: 3,
                ..default
            },
            false,
        ),
        (
            "m192",
            WgmmaSchedule {
                consumers: 3,
                ..default
            },
            false,
        ),
        ("f16", default, true),
        (
            "5-blocks",
            WgmmaSchedule {
                max_blocks: 5,
                ..default
            },
            false,
        ),
        (
            "m192-5-blocks",
            WgmmaSchedule {
                consumers: 3,
                max_blocks: 5,
                ..default
            },
            false,
        ),
    ];
    let mut failures = Vec::new();
    let mut seed = 3000;
    for (d, heads, kv_heads) in [(64, 4, 2), (128, 3, 1), (256, 2, 2)] {
        for (i, batch) in batches.iter().enumerate() {
            for causal in [false, true] {
                for (j, (name, schedule, f16)) in schedules.iter().enumerate() {
                    // Each schedule on some (batch, mask) pairs; the default on all.
                    if (name.starts_with("m192") && d != 64)
                        || (j > 0 && (i + j) % 2 == causal as usize)
                    {
                        continue;
                    }
                    seed += 1;
                    let config = (d, heads, kv_heads);
                    if let Err(e) = check_varlen(
                        &gpu,
                        &dense,
                        batch,
                        config,
                        causal,
                        VarlenKernel::Wgmma(*schedule),
                        *f16,
                        seed,
                    ) {
                        failures.push(format!("{name}: {e}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
