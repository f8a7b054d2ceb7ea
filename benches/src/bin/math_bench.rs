//! `math-bench [--peers peers.json] [CASE...]`: times `gpu::math`'s accurate functions as
//! element-wise maps over 2^26 elements (the `math_*` kernels of `algorithm-kernels`, four
//! elements per thread) and prints a table against the peers (torch / cupy, whose `sin`, `exp`,
//! ... are CUDA's math library, as libdevice) timed by `benches/peers/math.py` in the same
//! session:
//!
//! ```text
//! case                 size   ours GB/s   peer GB/s  peer            ratio
//! math_sin_f32     67108864      2950.1      2948.0  torch.sin       1.00x
//! ```
//! `ratio` = peer time / our time (> 1: we are faster). Bandwidth counts one read per input
//! and one write. Both sides draw inputs from the same ranges (uniform; the ranges are
//! `gpu_algorithms::math_maps`' `bench`, which the peer script repeats). Every unary function of
//! `gpu::math` has a row, f32 and f64, and `pow`; functions neither torch nor cupy has
//! (`exp10`, `sinpi`, `cospi`, f32 `tgamma`) print `-` for the peer.

use std::process::ExitCode;

use benches::time_us;
use gpu_algorithms::algorithm_kernels::Module;
use gpu_algorithms::math_maps;
use gpu_host::{Gpu, LaunchConfig};

/// Elements per map.
const N: usize = 1 << 26;

/// `n` values uniform over [lo, hi) from a fixed seed.
fn uniform(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("math-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut peers_path, mut only) = (None, Vec::new());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--peers" => peers_path = Some(args.next().ok_or("--peers needs a file")?),
            _ => only.push(a),
        }
    }
    let peers = benches::load_peers(peers_path.as_deref())?;
    let gpu = Gpu::first()?;
    let module = Module::load(&gpu)?;
    println!(
        "GPU: {} ({} SMs)",
        gpu.properties().name,
        gpu.properties().multiprocessor_count
    );
    println!(
        "{:<16}{:>10}{:>12}{:>12}  {:<14}{:>7}",
        "case", "size", "ours GB/s", "peer GB/s", "peer", "ratio"
    );
    let stream = gpu.default_stream();
    // One tile of 256 threads × 4 items per block (`algorithm_kernels::math`).
    let config = LaunchConfig::new(N.div_ceil(1024) as u32, 256);
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| name.contains(o.as_str()));
    let report = |name: &str, width: usize, inputs: usize, ours: f64| {
        let bytes = (width * (inputs + 1)) as f64 * N as f64;
        let gbs = |us: f64| bytes / (us * 1e-6) / 1e9;
        let best_peer = peers.get(name).and_then(|by_peer| {
            by_peer
                .iter()
                .filter_map(|(peer, t)| t.get(&N.to_string()).map(|&us| (peer, us)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
        });
        match best_peer {
            Some((peer, us)) => println!(
                "{:<16}{:>10}{:>12.1}{:>12.1}  {:<14}{:>6.2}x",
                name,
                N,
                gbs(ours),
                gbs(us),
                peer,
                us / ours
            ),
            None => println!(
                "{:<16}{:>10}{:>12.1}{:>12}  {:<14}{:>7}",
                name,
                N,
                gbs(ours),
                "-",
                "-",
                "-"
            ),
        }
    };
    for (k, map) in math_maps::F32.iter().enumerate() {
        if !wanted(map.kernel) {
            continue;
        }
        let (lo, hi) = map.bench;
        let x = gpu.to_device(&uniform(N, 1 + k as u64, lo, hi))?;
        let mut out = gpu.alloc_zeroed::<f32>(N)?;
        let ours = time_us(stream, &mut |s| {
            (map.launch)(&module, s, config, &x, &mut out)
        })?;
        report(map.kernel, 4, 1, ours);
    }
    if wanted("math_pow_f32") {
        let x = gpu.to_device(&uniform(N, 11, 0.0, 10.0))?;
        let y = gpu.to_device(&uniform(N, 12, -10.0, 10.0))?;
        let mut out = gpu.alloc_zeroed::<f32>(N)?;
        let ours = time_us(stream, &mut |s| {
            module.math_pow_f32(s, config, &x, &y, &mut out)
        })?;
        report("math_pow_f32", 4, 2, ours);
    }
    for (k, map) in math_maps::F64.iter().enumerate() {
        if !wanted(map.kernel) {
            continue;
        }
        let (lo, hi) = map.bench;
        let x: Vec<f64> = uniform(N, 101 + k as u64, lo, hi)
            .into_iter()
            .map(f64::from)
            .collect();
        let x = gpu.to_device(&x)?;
        let mut out = gpu.alloc_zeroed::<f64>(N)?;
        let ours = time_us(stream, &mut |s| {
            (map.launch)(&module, s, config, &x, &mut out)
        })?;
        report(map.kernel, 8, 1, ours);
    }
    if wanted("math_pow_f64") {
        let widen = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<f64>>();
        let x = gpu.to_device(&widen(uniform(N, 31, 0.0, 10.0)))?;
        let y = gpu.to_device(&widen(uniform(N, 32, -10.0, 10.0)))?;
        let mut out = gpu.alloc_zeroed::<f64>(N)?;
        let ours = time_us(stream, &mut |s| {
            module.math_pow_f64(s, config, &x, &y, &mut out)
        })?;
        report("math_pow_f64", 8, 2, ours);
    }
    Ok(())
}
