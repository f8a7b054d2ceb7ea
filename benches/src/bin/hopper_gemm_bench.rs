//! `hopper-gemm-bench [--peers peers.json] [SIZE...]`: times `Dense::gemm_wgmma` (bf16 and
//! f16, `C = A · Bᵀ`, square sizes, 4096 and 8192 by default) and prints TFLOP/s next to
//! `torch.matmul(a, b.T)` timed by `benches/peers/hopper_gemm.py` in the same device session:
//!
//! ```sh
//! python3 benches/peers/hopper_gemm.py > peers.json
//! cargo run --release -p benches --bin hopper-gemm-bench -- --peers peers.json
//! ```
//!
//! ratio = peer time / our time (> 1: we are faster).

use gpu_test_kit::rng::signed_f32s;
use std::process::ExitCode;

use benches::time_us;
use gpu_dense::{Dense, WgmmaElement};
use gpu_host::{Gpu, Result, Stream};
use half::{bf16, f16};

fn time_case<T: WgmmaElement>(
    gpu: &Gpu,
    dense: &Dense,
    n: usize,
    convert: fn(f32) -> T,
) -> Result<f64> {
    let s: &Stream = gpu.default_stream();
    let a: Vec<T> = signed_f32s(n * n, 1).into_iter().map(convert).collect();
    let b: Vec<T> = signed_f32s(n * n, 2).into_iter().map(convert).collect();
    let (da, db) = (s.to_device(&a)?, s.to_device(&b)?);
    let mut dc = s.to_device(&a)?;
    time_us(s, &mut |s| dense.gemm_wgmma(s, &da, &db, &mut dc, n, n, n))
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hopper-gemm-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut peers_path, mut sizes) = (None, Vec::new());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--peers" => peers_path = Some(args.next().ok_or("--peers needs a file")?),
            _ => sizes.push(a.parse::<usize>()?),
        }
    }
    if sizes.is_empty() {
        sizes = vec![4096, 8192];
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
        "{:<16}{:>7}{:>11}{:>11}{:>11}{:>11}  {:<18}{:>7}",
        "case", "size", "ours us", "ours TF/s", "peer us", "peer TF/s", "peer", "ratio"
    );
    for case in ["gemm_bf16", "gemm_f16"] {
        for &n in &sizes {
            let ours = if case == "gemm_bf16" {
                time_case::<bf16>(&gpu, &dense, n, bf16::from_f32)?
            } else {
                time_case::<f16>(&gpu, &dense, n, f16::from_f32)?
            };
            let tflops = |us: f64| 2.0 * (n as f64).powi(3) / (us * 1e-6) / 1e12;
            let peer = peers.get(case).and_then(|by_peer| {
                by_peer
                    .iter()
                    .filter_map(|(p, t)| t.get(&n.to_string()).map(|&us| (p.clone(), us)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
            });
            match peer {
                Some((p, us)) => println!(
                    "{case:<16}{n:>7}{ours:>11.1}{:>11.1}{us:>11.1}{:>11.1}  {p:<18}{:>6.2}x",
                    tflops(ours),
                    tflops(us),
                    us / ours
                ),
                None => println!(
                    "{case:<16}{n:>7}{ours:>11.1}{:>11.1}{:>11}{:>11}  {:<18}{:>7}",
                    tflops(ours),
                    "-",
                    "-",
                    "-",
                    "-"
                ),
            }
        }
    }
    Ok(())
}
