//! `graph-bench [--peers peers.json]`: what CUDA graphs (`Stream::capture`, `Graph::launch`)
//! save on launch-bound work, timed with CUDA events (`benches::time_us`):
//!
//! - `launch_1000`: 1000 launches of a tiny kernel (`saxpy` on 256 floats, one block), as a
//!   replayed 1000-kernel graph and as 1000 plain launches through the generated launcher;
//!   microseconds per kernel.
//! - `heat_step`: the 1-D heat equation (`heat_step_1d` twin) for 100 small steps, ping-pong
//!   between two buffers, as a replayed graph and as plain launches; microseconds per step.
//!
//! `ratio` = plain / graph (> 1: the graph is faster). With `--peers` (from
//! `benches/peers/graphs.py`, same session) torch's figures for the same work, eager and as a
//! `torch.cuda.CUDAGraph`, are printed beside ours.

use std::process::ExitCode;

use benches::time_us;
use gpu_examples::ExampleKernels;
use gpu_host::{Gpu, LaunchConfig};
use gpu_twins::TwinKernels;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("graph-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

const KERNELS: usize = 1000;
const STEPS: usize = 100;

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut peers_path = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--peers" => peers_path = Some(args.next().ok_or("--peers needs a file")?),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let peers = benches::load_peers(peers_path.as_deref())?;
    let peer = |case: &str, name: &str, size: usize| {
        peers
            .get(case)
            .and_then(|p| p.get(name))
            .and_then(|t| t.get(&size.to_string()))
            .map_or("-".to_string(), |us| format!("{us:.2}"))
    };
    let gpu = Gpu::first()?;
    println!(
        "GPU: {} ({} SMs)",
        gpu.properties().name,
        gpu.properties().multiprocessor_count
    );
    println!(
        "{:<12}{:>8}{:>8}{:>12}{:>12}{:>8}{:>14}{:>14}",
        "case", "size", "unit", "graph us", "plain us", "ratio", "torch graph", "torch eager"
    );
    let stream = gpu.new_stream()?;

    // (a) 1000 tiny kernels.
    let seed = ExampleKernels::load(&gpu)?;
    seed.raw().load_all()?;
    let n = 256;
    let x = gpu.to_device(&vec![1.0f32; n])?;
    let y = gpu.to_device(&vec![2.0f32; n])?;
    let mut out = gpu.alloc_zeroed::<f32>(n)?;
    let cfg = LaunchConfig::for_elements(n, 256);
    let plain = time_us(&stream, &mut |s| {
        (0..KERNELS).try_for_each(|_| seed.saxpy(s, cfg, 2.0, &x, &y, &mut out))
    })? / KERNELS as f64;
    let graphed = {
        let graph = stream.capture(|s| {
            (0..KERNELS).try_for_each(|_| seed.saxpy(s, cfg, 2.0, &x, &y, &mut out))
        })?;
        assert_eq!(graph.kernel_count(), KERNELS);
        time_us(&stream, &mut |_| graph.launch())? / KERNELS as f64
    };
    if out.to_vec()?.iter().any(|&v| v != 4.0) {
        return Err("saxpy through the graph computed wrong values".into());
    }
    println!(
        "{:<12}{n:>8}{:>8}{graphed:>12.3}{plain:>12.3}{:>7.2}x{:>14}{:>14}",
        "launch_1000",
        "kernel",
        plain / graphed,
        peer("launch_1000", "torch_graph", n),
        peer("launch_1000", "torch_eager", n),
    );

    // (b) the heat loop of small steps.
    let twins = TwinKernels::load(&gpu)?;
    twins.raw().load_all()?;
    for n in [1usize << 12, 1 << 16, 1 << 20] {
        let init: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
        let cfg = LaunchConfig::for_elements(n, 256);
        let mut u = gpu.to_device(&init)?;
        let mut v = gpu.alloc_zeroed::<f32>(n)?;
        let plain = time_us(&stream, &mut |s| {
            (0..STEPS / 2).try_for_each(|_| {
                twins.heat_step_1d(s, cfg, &u, 0.25, &mut v)?;
                twins.heat_step_1d(s, cfg, &v, 0.25, &mut u)
            })
        })? / STEPS as f64;
        let graphed = {
            let graph = stream.capture(|s| {
                (0..STEPS / 2).try_for_each(|_| {
                    twins.heat_step_1d(s, cfg, &u, 0.25, &mut v)?;
                    twins.heat_step_1d(s, cfg, &v, 0.25, &mut u)
                })
            })?;
            time_us(&stream, &mut |_| graph.launch())? / STEPS as f64
        };
        println!(
            "{:<12}{n:>8}{:>8}{graphed:>12.3}{plain:>12.3}{:>7.2}x{:>14}{:>14}",
            "heat_step",
            "step",
            plain / graphed,
            peer("heat_step", "torch_graph", n),
            peer("heat_step", "torch_eager", n),
        );
    }
    Ok(())
}
