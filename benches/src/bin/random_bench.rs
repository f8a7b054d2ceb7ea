//! `random-bench [--peers peers.json] [--quick] [--log2 K,...] [CASE...]`: times the random
//! fills of `gpu-algorithms` (Philox4x32-10) with CUDA events over sizes 2^16 … 2^28 elements and prints
//! them against a device-to-device copy of the same bytes and the best peer (torch / cupy,
//! timed by `benches/peers/random.py` in the same session):
//!
//! ```text
//! case                   size   ours GB/s   copy GB/s   vs copy   peer GB/s  peer                vs peer
//! ```
//! Bandwidths count bytes written for the fills, bytes read + written for the copy (a fill
//! at the copy's rate is as fast as memory allows); `vs peer` = peer time / our time.

use std::process::ExitCode;

use benches::time_us;
use gpu_algorithms::{Algorithms, NormalBuiltin, Philox, UniformBuiltin};
use gpu_host::{DeviceCopy, Gpu, Result, Stream};

struct Case {
    name: &'static str,
    elem_bytes: usize,
}

const CASES: &[Case] = &[
    Case {
        name: "fill_uniform_u32",
        elem_bytes: 4,
    },
    Case {
        name: "fill_uniform_f32",
        elem_bytes: 4,
    },
    Case {
        name: "fill_uniform_f64",
        elem_bytes: 8,
    },
    Case {
        name: "fill_normal_f32",
        elem_bytes: 4,
    },
    Case {
        name: "fill_normal_f64",
        elem_bytes: 8,
    },
];

fn time_uniform<T: UniformBuiltin>(gpu: &Gpu, algos: &Algorithms, n: usize) -> Result<f64> {
    let mut out = gpu.alloc_zeroed::<T>(n)?;
    let mut rng = Philox::new(1);
    time_us(gpu.default_stream(), &mut |s: &Stream| {
        algos.fill_uniform(s, &mut rng, &mut out)
    })
}

fn time_normal<T: NormalBuiltin + Default>(
    gpu: &Gpu,
    algos: &Algorithms,
    n: usize,
    one: T,
) -> Result<f64> {
    let mut out = gpu.alloc_zeroed::<T>(n)?;
    let mut rng = Philox::new(1);
    time_us(gpu.default_stream(), &mut |s: &Stream| {
        algos.fill_normal(s, &mut rng, T::default(), one, &mut out)
    })
}

fn time_copy<T: DeviceCopy>(gpu: &Gpu, n: usize) -> Result<f64> {
    let src = gpu.alloc_zeroed::<T>(n)?;
    let mut dst = gpu.alloc_zeroed::<T>(n)?;
    time_us(gpu.default_stream(), &mut |_: &Stream| {
        dst.copy_from_device(&src)
    })
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("random-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args = benches::TableArgs::parse()?;
    let sizes = args.pick_sizes(
        vec![1 << 20, 1 << 24, 1 << 26, 1 << 28],
        (16..=28).step_by(2).map(|k| 1usize << k).collect(),
    );
    let benches::TableArgs { peers, only, .. } = args;
    let gpu = Gpu::first()?;
    let algos = Algorithms::load(&gpu)?;
    println!(
        "GPU: {} ({} SMs)",
        gpu.properties().name,
        gpu.properties().multiprocessor_count
    );
    println!(
        "{:<18}{:>11}{:>12}{:>12}{:>9}{:>12}  {:<30}{:>8}",
        "case", "size", "ours GB/s", "copy GB/s", "vs copy", "peer GB/s", "peer", "vs peer"
    );
    for case in CASES {
        if !only.is_empty() && !only.iter().any(|o| case.name.contains(o.as_str())) {
            continue;
        }
        for &n in &sizes {
            let ours = match case.name {
                "fill_uniform_u32" => time_uniform::<u32>(&gpu, &algos, n)?,
                "fill_uniform_f32" => time_uniform::<f32>(&gpu, &algos, n)?,
                "fill_uniform_f64" => time_uniform::<f64>(&gpu, &algos, n)?,
                "fill_normal_f32" => time_normal::<f32>(&gpu, &algos, n, 1.0)?,
                _ => time_normal::<f64>(&gpu, &algos, n, 1.0)?,
            };
            let copy = if case.elem_bytes == 4 {
                time_copy::<u32>(&gpu, n)?
            } else {
                time_copy::<u64>(&gpu, n)?
            };
            let bytes = (case.elem_bytes * n) as f64;
            let gbs = |us: f64, b: f64| b / (us * 1e-6) / 1e9;
            let (ours_gbs, copy_gbs) = (gbs(ours, bytes), gbs(copy, 2.0 * bytes));
            let best_peer = peers.get(case.name).and_then(|by_peer| {
                by_peer
                    .iter()
                    .filter_map(|(peer, t)| t.get(&n.to_string()).map(|&us| (peer, us)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
            });
            let (peer_gbs, peer, vs_peer) = match best_peer {
                Some((peer, us)) => (
                    format!("{:.1}", gbs(us, bytes)),
                    peer.clone(),
                    format!("{:.2}x", us / ours),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            println!(
                "{:<18}{:>11}{:>12.1}{:>12.1}{:>8.2}x{:>12}  {:<30}{:>8}",
                case.name,
                n,
                ours_gbs,
                copy_gbs,
                ours_gbs / copy_gbs,
                peer_gbs,
                peer,
                vs_peer
            );
        }
    }
    Ok(())
}
