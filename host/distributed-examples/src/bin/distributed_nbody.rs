//! `distributed-nbody [--bodies N | --bodies-log2 K] [--steps S] [--ranks P] [--no-reference]`:
//! a Plummer sphere of N bodies split over the ranks (see `distributed_examples::nbody`),
//! advanced 1 + S leapfrog steps of dt = 1e-3 (softening 0.05). Checks the result against the
//! single-device simulation on rank 0's device (the same steps, which it also times) and, up to
//! 16384 bodies, the energy drift (< 1e-3); prints ms per step on the ranks and on one GPU.
//! N defaults to 65536 on GPUs and 256 on simulated devices, S to 10.
//!
//! ```text
//! cargo xtask launch -n 2 distributed-nbody -- --bodies-log2 20 --steps 3
//! ```

use std::process::ExitCode;
use std::time::Instant;

use distributed_examples::nbody::DistributedSimulation;
use distributed_examples::{args, world};
use gpu_distributed::{Communicator, ReduceOp, Result};
use gpu_examples::ExampleKernels;
use gpu_examples::nbody::{Bodies, Simulation, energy, plummer};

const EPS: f32 = 0.05;
const DT: f32 = 1e-3;

struct Outcome {
    rank: usize,
    ranks: usize,
    backend: String,
    n: usize,
    steps: usize,
    distributed_ms: f64,
    single_ms: Option<f64>,
    /// Largest difference from the single-device result (position or velocity component).
    max_diff: Option<f64>,
    drift: Option<f64>,
    passed: bool,
}

fn main() -> ExitCode {
    let options = || {
        args::check(
            &["bodies", "bodies-log2", "steps", "ranks"],
            &["no-reference"],
        )?;
        let n = match (
            args::option::<usize>("bodies")?,
            args::option::<u32>("bodies-log2")?,
        ) {
            (Some(n), _) => Some(n),
            (None, Some(k)) => Some(1usize << k),
            (None, None) => None,
        };
        let steps = args::option::<usize>("steps")?.unwrap_or(10);
        Ok((n, steps, !args::flag("no-reference")))
    };
    world::main(
        "distributed-nbody",
        options,
        |comm, &(n, steps, reference)| {
            let n = n.unwrap_or(if comm.is_simulated() { 256 } else { 65536 });
            run_rank(comm, n, steps, reference)
        },
        report,
    )
}

fn max_diff(a: &Bodies, b: &Bodies) -> f64 {
    let pairs = a.pos.iter().zip(&b.pos).chain(a.vel.iter().zip(&b.vel));
    pairs
        .map(|(x, y)| (*x - *y).abs().max_element() as f64)
        .fold(0.0, f64::max)
}

fn run_rank(comm: &Communicator, n: usize, steps: usize, reference: bool) -> Result<Outcome> {
    let gpu = comm.gpu();
    let kernels = ExampleKernels::load(gpu)?;
    let bodies = plummer(n, 42);
    // One device: 1 + `steps` steps, the last `steps` timed (rank 0, the others wait).
    let mut single = None;
    if reference && comm.rank() == 0 {
        let mut sim = Simulation::new(gpu, &kernels, &bodies, EPS)?;
        sim.run(1, DT)?;
        let ((), ms) = comm.stream().time(|_| sim.run(steps, DT))?;
        single = Some((ms as f64 / steps as f64, sim.bodies()?));
    }
    comm.barrier()?;
    let mut sim = DistributedSimulation::new(comm, &kernels, &bodies, EPS)?;
    sim.run(1, DT)?;
    sim.synchronize()?;
    comm.barrier()?;
    let start = Instant::now();
    sim.run(steps, DT)?;
    sim.synchronize()?;
    let mut ms = gpu.to_device(&[start.elapsed().as_secs_f64() * 1e3 / steps as f64])?;
    comm.all_reduce_in_place(&mut ms, ReduceOp::Max)?;
    comm.synchronize()?;
    let distributed_ms = ms.to_vec()?[0];
    let after = sim.bodies()?;
    let eps2 = (EPS * EPS) as f64;
    let drift = (n <= 16384 && comm.rank() == 0).then(|| {
        let (k0, p0) = energy(&bodies, eps2);
        let (k1, p1) = energy(&after, eps2);
        ((k1 + p1 - k0 - p0) / (k0 + p0)).abs()
    });
    let max_diff = single.as_ref().map(|(_, b)| max_diff(&after, b));
    let finite = after.pos.iter().chain(&after.vel).all(|v| v.is_finite());
    let passed_here =
        finite && max_diff.is_none_or(|d| d <= 1e-5) && drift.is_none_or(|d| d < 1e-3);
    // Every rank returns rank 0's verdict (the checks run there).
    let mut verdict = gpu.to_device(&[u32::from(!passed_here)])?;
    comm.all_reduce_in_place(&mut verdict, ReduceOp::Max)?;
    comm.synchronize()?;
    Ok(Outcome {
        rank: comm.rank(),
        ranks: comm.size(),
        backend: comm.backend_name(),
        n,
        steps,
        distributed_ms,
        single_ms: single.map(|s| s.0),
        max_diff,
        drift,
        passed: verdict.to_vec()?[0] == 0,
    })
}

fn report(o: &Outcome) -> ExitCode {
    if o.rank == 0 {
        println!(
            "distributed-nbody: {} bodies on {} ranks ({}), {} timed steps of {DT}",
            o.n, o.ranks, o.backend, o.steps
        );
        let rate = |ms: f64| (o.n as f64).powi(2) / (ms * 1e-3) / 1e9;
        println!(
            "  distributed: {:.3} ms/step ({:.1} G interactions/s)",
            o.distributed_ms,
            rate(o.distributed_ms)
        );
        if let Some(s) = o.single_ms {
            println!(
                "  one GPU: {s:.3} ms/step ({:.1} G interactions/s); speed-up {:.2}x",
                rate(s),
                s / o.distributed_ms
            );
        }
        match o.max_diff {
            Some(d) => println!("  largest difference from one device: {d:.3e} (limit 1e-5)"),
            None => println!("  not compared with one device (--no-reference)"),
        }
        if let Some(d) = o.drift {
            println!("  relative energy drift {d:.2e} (limit 1e-3)");
        }
        println!("  check: {}", if o.passed { "ok" } else { "FAILED" });
    }
    if o.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
