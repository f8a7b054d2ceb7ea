//! `rows-bench [--peers peers.json] [--threads 128,256,...]`: times `Dense::softmax` and
//! `Dense::layernorm` (f32, bf16) with CUDA events on row-major matrices and prints a table
//! against the torch peers timed by `benches/peers/rows.py` in the same session:
//!
//! ```text
//! case              shape        threads   ours GB/s   peer GB/s  peer           ratio
//! softmax_f32       16384x8192       256      2900.0      1867.0  torch.softmax  1.55x
//! ```
//! GB/s counts the bytes that must move: the matrix read once and written once. `ratio` = peer
//! time / our time (> 1: we are faster). `--threads` also times the listed block sizes (where
//! they are valid for the shape), for tuning.

use gpu_test_kit::XorShift64;
use std::process::ExitCode;

use benches::time_us;
use gpu_dense::{Dense, RowElement, row_block_size};
use gpu_host::{DeviceCopy, Gpu, Result, Stream};
use half::bf16;

use benches::Peers;

const SHAPES: &[(usize, usize)] = &[
    (16384, 8192),
    (4096, 4096),
    (16384, 1024),
    (1024, 32768),
    (256, 100_000),
];

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15u64 ^ seed);
    (0..n)
        .map(|_| {
            let state = rng.next_u64();
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0
        })
        .collect()
}

trait BenchElement: RowElement {
    const NAME: &'static str;
    fn from_f32(v: f32) -> Self;
}
impl BenchElement for f32 {
    const NAME: &'static str = "f32";
    fn from_f32(v: f32) -> f32 {
        v
    }
}
impl BenchElement for bf16 {
    const NAME: &'static str = "bf16";
    fn from_f32(v: f32) -> bf16 {
        bf16::from_f32(v)
    }
}

fn upload<T: BenchElement + DeviceCopy>(
    gpu: &Gpu,
    n: usize,
    seed: u64,
) -> Result<gpu_host::DeviceBuffer<T>> {
    let v: Vec<T> = random(n, seed).into_iter().map(T::from_f32).collect();
    gpu.to_device(&v)
}

fn row(case: &str, shape: &str, threads: u32, bytes: f64, ours: f64, peers: &Peers) {
    let gbs = |us: f64| bytes / (us * 1e-6) / 1e9;
    let best = peers.get(case).and_then(|p| {
        p.iter()
            .filter_map(|(peer, t)| t.get(shape).map(|&us| (peer.clone(), us)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    });
    match best {
        Some((peer, us)) => println!(
            "{case:<16}{shape:>14}{threads:>8}{:>12.1}{:>12.1}  {peer:<15}{:>6.2}x",
            gbs(ours),
            gbs(us),
            us / ours
        ),
        None => println!(
            "{case:<16}{shape:>14}{threads:>8}{:>12.1}{:>12}  {:<15}{:>7}",
            gbs(ours),
            "-",
            "-",
            "-"
        ),
    }
}

fn bench<T: BenchElement>(gpu: &Gpu, dense: &Dense, extra: &[u32], peers: &Peers) -> Result<()> {
    let s: &Stream = gpu.default_stream();
    for &(rows, cols) in SHAPES {
        let n = rows * cols;
        let shape = format!("{rows}x{cols}");
        let bytes = 2.0 * (n * size_of::<T>()) as f64;
        let x = upload::<T>(gpu, n, 1)?;
        let g = upload::<T>(gpu, cols, 2)?;
        let b = upload::<T>(gpu, cols, 3)?;
        let mut y = gpu.alloc_zeroed::<T>(n)?;
        let default = row_block_size::<T>(cols);
        let mut threads = vec![default];
        threads.extend(extra.iter().copied().filter(|&t| t > default));
        for &t in &threads {
            let ours = time_us(s, &mut |s| {
                dense.softmax_with_threads(s, &x, &mut y, rows, cols, t)
            })?;
            row(
                &format!("softmax_{}", T::NAME),
                &shape,
                t,
                bytes,
                ours,
                peers,
            );
        }
        for &t in &threads {
            let ours = time_us(s, &mut |s| {
                dense.layernorm_with_threads(s, &x, &g, &b, &mut y, rows, cols, 1e-5, t)
            })?;
            row(
                &format!("layernorm_{}", T::NAME),
                &shape,
                t,
                bytes,
                ours,
                peers,
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rows-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut peers_path, mut extra) = (None, Vec::new());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--peers" => peers_path = Some(args.next().ok_or("--peers needs a file")?),
            "--threads" => {
                let list = args.next().ok_or("--threads needs a list")?;
                for t in list.split(',') {
                    extra.push(t.parse::<u32>()?);
                }
            }
            other => return Err(format!("unknown argument {other}").into()),
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
        "{:<16}{:>14}{:>8}{:>12}{:>12}  {:<15}{:>7}",
        "case", "shape", "threads", "ours GB/s", "peer GB/s", "peer", "ratio"
    );
    bench::<f32>(&gpu, &dense, &extra, &peers)?;
    bench::<bf16>(&gpu, &dense, &extra, &peers)?;
    Ok(())
}
