//! `gemm-bench [--peers peers.json] [--sizes 4096,8192] [VARIANT...]`: times the tensor-core
//! GEMM `C = A · Bᵀ` (A M×K, B N×K, row-major; torch's `a @ b.T`) in bf16 and f16 at square
//! sizes with CUDA events, against the peer (`torch.matmul(a, b.T)`, i.e. cuBLAS) timed by
//! `benches/peers/gemm.py` in the same session:
//!
//! ```text
//! variant    type       size   ours TFLOP/s   peer TFLOP/s  peer            ratio
//! mma_sync   bf16       8192          412.0          790.0  torch.matmul    0.52x
//! ```
//! TFLOP/s = 2·M·N·K / t. `ratio` = peer time / our time (> 1: we are faster). Add a kernel
//! path as one more entry of [`variants`].

use gpu_test_kit::XorShift64;
use std::process::ExitCode;

use benches::time_us;
use gpu_dense::{Dense, GEMM_POLICY_99K, GEMM_POLICY_163K};
use gpu_host::{DeviceBuffer, Gpu, Result, Stream};
use half::{bf16, f16};

/// One GEMM call: `(dense, stream, a, b, c, m, n, k)`.
type GemmFn<T> = fn(
    &Dense,
    &Stream,
    &DeviceBuffer<T>,
    &DeviceBuffer<T>,
    &mut DeviceBuffer<T>,
    usize,
    usize,
    usize,
) -> Result<()>;

/// A kernel path to time, per element type (`None`: not available for that type).
struct Variant {
    name: &'static str,
    /// Whether this device has the path (e.g. wgmma needs sm_90a).
    available: fn(&Dense) -> bool,
    bf16: Option<GemmFn<bf16>>,
    f16: Option<GemmFn<f16>>,
}

fn variants() -> Vec<Variant> {
    vec![
        Variant {
            name: "mma_sync",
            // The device's policy (216K on an H100).
            available: |_| true,
            bf16: Some(|d, s, a, b, c, m, n, k| d.gemm_mma_sync(s, a, b, c, m, n, k)),
            f16: Some(|d, s, a, b, c, m, n, k| d.gemm_mma_sync(s, a, b, c, m, n, k)),
        },
        // The A100-class and RTX-class policies of the same kernel, forced (where they fit).
        Variant {
            name: "mma_sync_163k",
            available: |d| {
                d.gemm_policy()
                    .is_some_and(|p| p.shared_bytes() >= GEMM_POLICY_163K.shared_bytes())
            },
            bf16: Some(|d, s, a, b, c, m, n, k| {
                d.gemm_mma_sync_with(GEMM_POLICY_163K, s, a, b, c, m, n, k)
            }),
            f16: Some(|d, s, a, b, c, m, n, k| {
                d.gemm_mma_sync_with(GEMM_POLICY_163K, s, a, b, c, m, n, k)
            }),
        },
        Variant {
            name: "mma_sync_99k",
            available: |d| d.gemm_policy().is_some(),
            bf16: Some(|d, s, a, b, c, m, n, k| {
                d.gemm_mma_sync_with(GEMM_POLICY_99K, s, a, b, c, m, n, k)
            }),
            f16: Some(|d, s, a, b, c, m, n, k| {
                d.gemm_mma_sync_with(GEMM_POLICY_99K, s, a, b, c, m, n, k)
            }),
        },
        // Ladder step 2 (sm_90a only): what `Dense::gemm` runs on an H100/H200.
        Variant {
            name: "wgmma+tma",
            available: |d| d.has_hopper(),
            bf16: Some(|d, s, a, b, c, m, n, k| d.gemm_wgmma(s, a, b, c, m, n, k)),
            f16: Some(|d, s, a, b, c, m, n, k| d.gemm_wgmma(s, a, b, c, m, n, k)),
        },
    ]
}

/// Uniform values in [-1, 1), never 0 (zeros can run faster than real data).
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = XorShift64::new(seed | 1);
    (0..n)
        .map(|_| {
            let state = rng.next_u64();
            let x = (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
            if x == 0.0 { 0.25 } else { x }
        })
        .collect()
}

/// Times `f` on fresh random `size`³ inputs of type `T`; microseconds.
fn time_gemm<T: gpu_host::DeviceCopy>(
    gpu: &Gpu,
    dense: &Dense,
    size: usize,
    convert: fn(f32) -> T,
    f: GemmFn<T>,
) -> Result<f64> {
    let a: Vec<T> = random(size * size, 1).into_iter().map(convert).collect();
    let b: Vec<T> = random(size * size, 2).into_iter().map(convert).collect();
    let (da, db) = (gpu.to_device(&a)?, gpu.to_device(&b)?);
    let mut dc = gpu.to_device(&a)?;
    time_us(gpu.default_stream(), &mut |s| {
        f(dense, s, &da, &db, &mut dc, size, size, size)
    })
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gemm-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut peers_path, mut sizes, mut only) = (None, vec![4096usize, 8192], Vec::new());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--peers" => peers_path = Some(args.next().ok_or("--peers needs a file")?),
            "--sizes" => {
                sizes = args
                    .next()
                    .ok_or("--sizes needs a list")?
                    .split(',')
                    .map(str::parse)
                    .collect::<std::result::Result<_, _>>()?
            }
            _ => only.push(a),
        }
    }
    let peers = benches::load_peers(peers_path.as_deref())?;
    let gpu = Gpu::first()?;
    let dense = Dense::load(&gpu)?;
    println!(
        "GPU: {} ({} SMs)",
        gpu.properties().name,
        gpu.properties().multiprocessor_count
    );
    println!(
        "{:<10} {:<6}{:>8}{:>15}{:>15}  {:<14}{:>7}",
        "variant", "type", "size", "ours TFLOP/s", "peer TFLOP/s", "peer", "ratio"
    );
    for v in variants() {
        if (!only.is_empty() && !only.iter().any(|o| v.name.contains(o.as_str())))
            || !(v.available)(&dense)
        {
            continue;
        }
        for &size in &sizes {
            for ty in ["bf16", "f16"] {
                let ours = match ty {
                    "bf16" => match v.bf16 {
                        Some(f) => time_gemm(&gpu, &dense, size, bf16::from_f32, f)?,
                        None => continue,
                    },
                    _ => match v.f16 {
                        Some(f) => time_gemm(&gpu, &dense, size, f16::from_f32, f)?,
                        None => continue,
                    },
                };
                let tflops = |us: f64| 2.0 * (size as f64).powi(3) / (us * 1e-6) / 1e12;
                let peer = peers.get(&format!("gemm_{ty}")).and_then(|by_peer| {
                    by_peer
                        .iter()
                        .filter_map(|(p, t)| t.get(&size.to_string()).map(|&us| (p, us)))
                        .min_by(|a, b| a.1.total_cmp(&b.1))
                });
                match peer {
                    Some((p, us)) => println!(
                        "{:<10} {:<6}{:>8}{:>15.1}{:>15.1}  {:<14}{:>6.2}x",
                        v.name,
                        ty,
                        size,
                        tflops(ours),
                        tflops(us),
                        p,
                        us / ours
                    ),
                    None => println!(
                        "{:<10} {:<6}{:>8}{:>15.1}{:>15}  {:<14}{:>7}",
                        v.name,
                        ty,
                        size,
                        tflops(ours),
                        "-",
                        "-",
                        "-"
                    ),
                }
            }
        }
    }
    Ok(())
}
