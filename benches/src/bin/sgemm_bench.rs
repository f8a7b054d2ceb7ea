//! `sgemm-bench [--peers peers.json] [SIZE...]`: times `Dense::sgemm` (fp32 on CUDA cores) on
//! square n×n×n products (default 1024, 2048, 4096, 8192) with CUDA events and prints a table
//! against torch.matmul fp32 (TF32 off) timed by `benches/peers/sgemm.py` in the same session:
//!
//! ```text
//!  size   ours us   ours TFLOP/s   peer us   peer TFLOP/s  ratio   check
//! ```
//! `ratio` = peer time / our time (> 1: we are faster). Each size is also checked: 512 random
//! entries of C against an f64 dot product on the CPU (relative error of the samples' norm).

use gpu_test_kit::{RelNormError, XorShift64};
use std::process::ExitCode;

use benches::time_us;
use gpu_dense::Dense;
use gpu_host::Gpu;

/// Uniform in [-1, 1), never zero (xorshift), so the product is not trivially sparse.
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = XorShift64::new(seed | 1);
    (0..n)
        .map(|_| {
            let state = rng.next_u64();
            let x = ((state >> 40) as f32 + 0.5) / (1u64 << 24) as f32;
            2.0 * x - 1.0
        })
        .collect()
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sgemm-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut peers_path, mut sizes) = (None, Vec::new());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--peers" => peers_path = Some(args.next().ok_or("--peers needs a file")?),
            s => sizes.push(s.parse::<usize>()?),
        }
    }
    if sizes.is_empty() {
        sizes = vec![1024, 2048, 4096, 8192];
    }
    let peers = benches::load_peers(peers_path.as_deref())?;
    let gpu = Gpu::first()?;
    let dense = Dense::load(&gpu)?;
    let occupancy = dense.sgemm_occupancy()?;
    println!(
        "GPU: {} ({} SMs); sgemm_f32 occupancy: {} blocks of 256 threads per SM",
        gpu.properties().name,
        gpu.properties().multiprocessor_count,
        occupancy.active_blocks_per_sm
    );
    println!(
        "{:>6}{:>11}{:>10}{:>11}{:>10}  {:<14}{:>7}{:>11}",
        "size", "ours us", "TFLOP/s", "peer us", "TFLOP/s", "peer", "ratio", "check"
    );
    let stream = gpu.default_stream();
    for &n in &sizes {
        let (a, b) = (random(n * n, 1 + n as u64), random(n * n, 2 + n as u64));
        let (da, db) = (gpu.to_device(&a)?, gpu.to_device(&b)?);
        let mut dc = gpu.to_device(&vec![f32::NAN; n * n])?;
        let ours = time_us(stream, &mut |s| {
            dense.sgemm(s, 1.0, &da, &db, 0.0, &mut dc, n, n, n)
        })?;
        let c = dc.to_vec()?;
        // Sampled check against f64 dot products.
        let mut state = 0x1234_5678u64;
        let mut rel = RelNormError::new();
        for _ in 0..512 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (i, j) = ((state >> 33) as usize % n, (state >> 11) as usize % n);
            let want: f64 = (0..n)
                .map(|p| a[i * n + p] as f64 * b[p * n + j] as f64)
                .sum();
            rel.add(c[i * n + j] as f64, want);
        }
        let rel = rel.value();
        let check = if rel < 1e-5 {
            format!("ok {rel:.0e}")
        } else {
            format!("FAIL {rel:.1e}")
        };
        let tflops = |us: f64| 2.0 * (n as f64).powi(3) / (us * 1e-6) / 1e12;
        let peer = peers.get("sgemm_f32").and_then(|by_peer| {
            by_peer
                .iter()
                .filter_map(|(p, t)| t.get(&n.to_string()).map(|&us| (p.clone(), us)))
                .min_by(|x, y| x.1.total_cmp(&y.1))
        });
        match peer {
            Some((name, us)) => println!(
                "{:>6}{:>11.1}{:>10.1}{:>11.1}{:>10.1}  {:<14}{:>6.2}x{:>11}",
                n,
                ours,
                tflops(ours),
                us,
                tflops(us),
                name,
                us / ours,
                check
            ),
            None => println!(
                "{:>6}{:>11.1}{:>10.1}{:>11}{:>10}  {:<14}{:>7}{:>11}",
                n,
                ours,
                tflops(ours),
                "-",
                "-",
                "-",
                "-",
                check
            ),
        }
    }
    Ok(())
}
