//! `data-parallel [--rows M] [--inputs D] [--outputs O] [--steps S] [--ranks P]`: trains a
//! linear model by full-batch gradient descent with the M rows split over the ranks and the
//! D×O gradient all-reduced every step (see `distributed_examples::data_parallel`), then trains
//! the same model on rank 0's device alone and checks that the weights agree (relative
//! difference < 1e-4) and approach the true ones. Defaults: 16384 × 1024 → 1024 (a 4 MiB
//! gradient) on GPUs, 64 × 16 → 8 on simulated devices; S = 8.
//!
//! ```text
//! cargo xtask launch -n 2 data-parallel
//! ```

use std::process::ExitCode;
use std::time::Instant;

use distributed_examples::data_parallel::{
    Kernels, Problem, Shard, relative_error, train, train_distributed,
};
use distributed_examples::{args, world};
use gpu_dense::Dense;
use gpu_distributed::{Communicator, ReduceOp, Result};
use gpu_examples::ExampleKernels;

const LEARNING_RATE: f32 = 1.0;

struct Outcome {
    rank: usize,
    ranks: usize,
    backend: String,
    problem: Problem,
    steps: usize,
    distributed_ms: f64,
    single_ms: f64,
    versus_single: f64,
    versus_truth: f64,
    passed: bool,
}

fn main() -> ExitCode {
    let options = || {
        args::check(&["rows", "inputs", "outputs", "steps", "ranks"], &[])?;
        Ok((
            args::option::<usize>("rows")?,
            args::option::<usize>("inputs")?,
            args::option::<usize>("outputs")?,
            args::option::<usize>("steps")?.unwrap_or(8),
        ))
    };
    world::main(
        "data-parallel",
        options,
        |comm, &(rows, inputs, outputs, steps)| {
            let sim = comm.is_simulated();
            let problem = Problem {
                rows: rows.unwrap_or(if sim { 64 } else { 16384 }),
                inputs: inputs.unwrap_or(if sim { 16 } else { 1024 }),
                outputs: outputs.unwrap_or(if sim { 8 } else { 1024 }),
                seed: 7,
            };
            run_rank(comm, problem, steps)
        },
        report,
    )
}

fn run_rank(comm: &Communicator, problem: Problem, steps: usize) -> Result<Outcome> {
    let gpu = comm.gpu();
    let (dense, seed) = (Dense::load(gpu)?, ExampleKernels::load(gpu)?);
    let kernels = Kernels {
        dense: &dense,
        seed: &seed,
    };
    comm.barrier()?;
    let start = Instant::now();
    let w = train_distributed(comm, &kernels, &problem, steps, LEARNING_RATE)?;
    let distributed_ms = start.elapsed().as_secs_f64() * 1e3;
    // One device, the whole batch (rank 0; the others wait).
    let mut checks = [0.0f64; 3];
    if comm.rank() == 0 {
        let start = Instant::now();
        let shard = Shard::new(gpu, &dense, &problem, 0..problem.rows)?;
        let reference = train(
            gpu,
            &kernels,
            &problem,
            &shard,
            steps,
            LEARNING_RATE,
            |_| Ok(()),
        )?;
        checks = [
            start.elapsed().as_secs_f64() * 1e3,
            relative_error(&w, &reference),
            relative_error(&w, &problem.true_weights()),
        ];
    }
    // Rank 0's figures to every rank.
    let mut shared = gpu.to_device(&checks)?;
    comm.broadcast(&mut shared, 0)?;
    let mut slowest = gpu.to_device(&[distributed_ms])?;
    comm.all_reduce_in_place(&mut slowest, ReduceOp::Max)?;
    comm.synchronize()?;
    let [single_ms, versus_single, versus_truth] = shared.to_vec()?[..] else {
        unreachable!("three figures")
    };
    // From W = 0 the error starts at 1; with X uniform in [-1, 1) each step shrinks it by a
    // factor between 0.04 and 0.7 (the spread of XᵀX's eigenvalues), so 8 steps pass 0.1.
    let passed = versus_single < 1e-4 && versus_truth < 0.1;
    Ok(Outcome {
        rank: comm.rank(),
        ranks: comm.size(),
        backend: comm.backend_name(),
        problem,
        steps,
        distributed_ms: slowest.to_vec()?[0],
        single_ms,
        versus_single,
        versus_truth,
        passed,
    })
}

fn report(o: &Outcome) -> ExitCode {
    if o.rank == 0 {
        let p = &o.problem;
        println!(
            "data-parallel: {} rows x {} inputs -> {} outputs on {} ranks ({}), {} steps",
            p.rows, p.inputs, p.outputs, o.ranks, o.backend, o.steps
        );
        println!(
            "  distributed: {:.1} ms (data set-up included); one device: {:.1} ms",
            o.distributed_ms, o.single_ms
        );
        println!(
            "  weights vs one device: relative difference {:.2e} (limit 1e-4)",
            o.versus_single
        );
        println!(
            "  weights vs the true ones: relative error {:.2e}",
            o.versus_truth
        );
        println!("  check: {}", if o.passed { "ok" } else { "FAILED" });
    }
    if o.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
