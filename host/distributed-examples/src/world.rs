//! Where the ranks come from. Every example runs either way, unchanged:
//! - **launched** (`RANK` is set, as by `cargo xtask launch -n N PROGRAM` or torchrun): this
//!   process is one rank, on GPU `LOCAL_RANK` ([`Communicator::from_env`]);
//! - **alone**: this process drives every device it has, one thread per rank
//!   ([`run_ranks`]): all its GPUs, or simulated devices when there is no GPU (or
//!   `GPU_BACKEND=sim`), so the examples also run on a machine without a GPU.

use std::process::ExitCode;

use gpu_distributed::{Communicator, Error, Result, run_ranks};
use gpu_host::Gpu;

use crate::args;

/// An example program's `main`: parses its options with `options` (plus `--ranks P`, the
/// simulated ranks when alone without a GPU, default 2; a bad option prints the error and
/// exits with 2), runs `body` on every rank ([`run_world`]), and hands the first rank run here
/// (rank 0 when alone) to `report`. A failed rank prints the error and exits with 1.
pub fn main<O: Sync, R: Send>(
    program: &str,
    options: impl FnOnce() -> std::result::Result<O, String>,
    body: impl Fn(&Communicator, &O) -> Result<R> + Sync,
    report: impl FnOnce(&R) -> ExitCode,
) -> ExitCode {
    let parsed = options().and_then(|o| Ok((o, args::option::<usize>("ranks")?.unwrap_or(2))));
    let (options, sim_ranks) = match parsed {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{program}: {e}");
            return ExitCode::from(2);
        }
    };
    match run_world(sim_ranks, |comm| body(comm, &options)) {
        Ok(results) => report(&results[0]),
        Err(e) => {
            eprintln!("{program}: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether this process was started as one rank of a launched world.
pub fn is_launched() -> bool {
    std::env::var_os("RANK").is_some_and(|v| !v.is_empty())
}

/// The devices this process drives alone: every GPU, or `sim_ranks` simulated devices when
/// there is no GPU (or `GPU_BACKEND=sim`).
pub fn local_devices(sim_ranks: usize) -> Result<Vec<Gpu>> {
    let sim = matches!(
        std::env::var(gpu_host::BACKEND_ENV)
            .as_deref()
            .map(str::trim),
        Ok("sim" | "simulator" | "cpu")
    );
    match Gpu::count() {
        Ok(n) if n > 0 && !sim => Ok(Gpu::all()?),
        _ => (0..sim_ranks.max(1))
            .map(|i| Gpu::simulator_device(i).map_err(Error::from))
            .collect(),
    }
}

/// Runs `body` on every rank of the world (see the module docs) and returns the results of
/// the ranks that ran in this process, in rank order: one when launched, all of them alone.
/// When a rank fails, the error returned is the failing rank's own (not the others' reports
/// of it).
pub fn run_world<R: Send>(
    sim_ranks: usize,
    body: impl Fn(&Communicator) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    if is_launched() {
        let comm = Communicator::from_env()?;
        return Ok(vec![body(&comm)?]);
    }
    let gpus = local_devices(sim_ranks)?;
    let results = run_ranks(&gpus, body)?;
    let mut out = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(v) => out.push(v),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        return Ok(out);
    }
    // The root cause: a rank's own error, rather than another rank's report of it.
    let own = errors.iter().position(
        |e| !matches!(e, Error::RankFailed { rank, failed_rank, .. } if rank != failed_rank),
    );
    Err(errors.swap_remove(own.unwrap_or(0)))
}

/// The range of `n` items that rank `rank` of `size` owns: contiguous, in rank order, the
/// first `n % size` ranks one longer.
pub fn share(n: usize, rank: usize, size: usize) -> std::ops::Range<usize> {
    let (base, extra) = (n / size, n % size);
    let start = rank * base + rank.min(extra);
    start..start + base + usize::from(rank < extra)
}
