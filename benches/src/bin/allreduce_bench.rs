//! `allreduce-bench [--peers peers.json] [--max-log2-bytes 32]`: all_reduce bus bandwidth of
//! our communicator (NCCL underneath), f32 and bf16, 1 MiB … 4 GiB, one process per GPU:
//!
//! ```text
//! cargo xtask launch -n 2 allreduce-bench -- --peers peers.json
//! ```
//!
//! beside `torch.distributed` timed by `benches/peers/allreduce.py` (started by torchrun the
//! same way, in the same device call). Every rank runs the same calls; rank 0 prints:
//!
//! ```text
//! dtype   bytes      ours us  ours busbw GB/s  peer us  peer busbw GB/s  ratio
//! ```
//! Bus bandwidth = bytes / time · 2(P−1)/P (NCCL's convention). `ratio` = peer time / ours.
//! Timing: 5 warm-up calls, then the best of 5 trials of the mean over a repetition count that
//! depends on the size only (ranks must call the same number of collectives), bracketed by
//! events on the communicator's stream — the same procedure as the peer script.

use std::process::ExitCode;

use gpu_distributed::{CommElement, Communicator, ReduceOp};
use half::bf16;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("allreduce-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Repetitions per trial for a message of `bytes`: about 20 ms at 300 GB/s, 10 to 2000.
fn reps_for(bytes: usize) -> usize {
    let est_us = 30.0 + bytes as f64 / 300e3;
    (20_000.0 / est_us).clamp(10.0, 2000.0) as usize
}

fn time_all_reduce<T: CommElement>(
    comm: &Communicator,
    elems: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut buf = comm.gpu().alloc_zeroed::<T>(elems)?;
    let reps = reps_for(elems * size_of::<T>());
    for _ in 0..5 {
        comm.all_reduce_in_place(&mut buf, ReduceOp::Sum)?;
    }
    comm.synchronize()?;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = comm.stream().record_event()?;
        for _ in 0..reps {
            comm.all_reduce_in_place(&mut buf, ReduceOp::Sum)?;
        }
        let end = comm.stream().record_event()?;
        comm.synchronize()?;
        best = best.min(start.elapsed_ms(&end)? as f64 * 1000.0 / reps as f64);
    }
    Ok(best)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut peers_path = None;
    let mut max_log2 = 32u32;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--peers" => peers_path = Some(args.next().ok_or("--peers needs a file")?),
            "--max-log2-bytes" => {
                max_log2 = args
                    .next()
                    .ok_or("--max-log2-bytes needs a number")?
                    .parse()?
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let peers = benches::load_peers(peers_path.as_deref())?;
    let comm = Communicator::from_env()?;
    let p = comm.size() as f64;
    if comm.rank() == 0 {
        println!(
            "{} ranks, {} ({} communicators) on {} ({})",
            comm.size(),
            comm.backend_name(),
            if comm.options().non_blocking {
                "non-blocking"
            } else {
                "blocking"
            },
            comm.gpu().properties().name,
            gpu_distributed::nccl_info()
                .map(|i| i.1)
                .unwrap_or_default()
        );
        println!(
            "{:<6}{:>12}{:>11}{:>17}{:>11}{:>17}{:>8}",
            "dtype", "bytes", "ours us", "ours busbw GB/s", "peer us", "peer busbw GB/s", "ratio"
        );
    }
    for dtype in ["f32", "bf16"] {
        for log2 in (20..=max_log2).step_by(2) {
            let bytes = 1usize << log2;
            let us = match dtype {
                "f32" => time_all_reduce::<f32>(&comm, bytes / 4)?,
                _ => time_all_reduce::<bf16>(&comm, bytes / 2)?,
            };
            if comm.rank() != 0 {
                continue;
            }
            let busbw = |us: f64| bytes as f64 / (us * 1e-6) * 2.0 * (p - 1.0) / p / 1e9;
            let peer = peers
                .get(&format!("all_reduce_{dtype}"))
                .and_then(|m| m.get("torch.distributed"))
                .and_then(|m| m.get(&bytes.to_string()))
                .copied();
            match peer {
                Some(pu) => println!(
                    "{dtype:<6}{bytes:>12}{us:>11.1}{:>17.1}{pu:>11.1}{:>17.1}{:>7.2}x",
                    busbw(us),
                    busbw(pu),
                    pu / us
                ),
                None => println!(
                    "{dtype:<6}{bytes:>12}{us:>11.1}{:>17.1}{:>11}{:>17}{:>8}",
                    busbw(us),
                    "-",
                    "-",
                    "-"
                ),
            }
        }
    }
    comm.barrier()?;
    Ok(())
}
