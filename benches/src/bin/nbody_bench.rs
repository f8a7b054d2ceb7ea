//! `nbody-bench [--peers peers.json]`: times one N-body step (`gpu_examples::nbody`: leapfrog
//! with all-pairs softened gravity, two launches) for N = 16384 and 65536 with CUDA events and
//! prints a table against the torch step timed by `benches/peers/nbody.py` in the same session:
//!
//! ```text
//! case        n       ours ms   ours G int/s   peer ms   peer G int/s  peer        ratio
//! ```
//! Interactions per step: N². `ratio` = peer time / our time (> 1: we are faster).

use std::process::ExitCode;

use benches::time_us;
use gpu_examples::ExampleKernels;
use gpu_examples::nbody::{Simulation, plummer};
use gpu_host::Gpu;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nbody-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

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
    let gpu = Gpu::first()?;
    let kernels = ExampleKernels::load(&gpu)?;
    println!(
        "GPU: {} ({} SMs)",
        gpu.properties().name,
        gpu.properties().multiprocessor_count
    );
    println!(
        "{:<12}{:>8}{:>10}{:>14}{:>10}{:>14}  {:<12}{:>7}",
        "case", "n", "ours ms", "ours Gint/s", "peer ms", "peer Gint/s", "peer", "ratio"
    );
    for n in [16384usize, 65536] {
        let bodies = plummer(n, 3);
        let mut sim = Simulation::new(&gpu, &kernels, &bodies, 0.05)?;
        let ours = time_us(gpu.default_stream(), &mut |_| sim.run(1, 1e-4))?;
        let rate = |us: f64| (n * n) as f64 / (us * 1e-6) / 1e9;
        let peer = peers.get("nbody_step").and_then(|p| {
            p.iter()
                .filter_map(|(name, t)| t.get(&n.to_string()).map(|&us| (name.clone(), us)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
        });
        match peer {
            Some((name, us)) => println!(
                "{:<12}{n:>8}{:>10.3}{:>14.1}{:>10.3}{:>14.1}  {name:<12}{:>6.2}x",
                "nbody_step",
                ours / 1e3,
                rate(ours),
                us / 1e3,
                rate(us),
                us / ours
            ),
            None => println!(
                "{:<12}{n:>8}{:>10.3}{:>14.1}{:>10}{:>14}  {:<12}{:>7}",
                "nbody_step",
                ours / 1e3,
                rate(ours),
                "-",
                "-",
                "-",
                "-"
            ),
        }
    }
    Ok(())
}
