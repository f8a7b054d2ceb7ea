//! `distributed-sort [--keys-log2 K] [--reps R] [--ranks P] [--chunks C] [--no-reference]
//! [--no-packing]`: sorts 2^K pseudo-random `u32` keys spread over the ranks (see
//! `distributed_examples::sort`), checks that the result is globally sorted and a permutation of
//! the input, and prints the time beside one GPU sorting all the keys with the same radix sort
//! (rank 0's device, while the others wait), and one rank's share alone; with rank 0's phases,
//! on the host clock and on the device (the local sort, packing, the transfers, unpacking and
//! the merges) and the bytes it sent. K defaults to 26 on GPUs and 12 on simulated devices; R
//! (best of) to 5; C (chunks of the exchange per rank, each merged while the next is in flight)
//! to 1. `--no-packing` sends every run as it is (by default runs that pack small travel
//! packed).
//!
//! ```text
//! cargo xtask launch -n 2 distributed-sort -- --keys-log2 30   # one process per GPU
//! cargo run --release -p distributed-examples --bin distributed-sort   # every local GPU
//! ```
//! Without a GPU (or with `GPU_BACKEND=sim`) it runs on `--ranks` (2) simulated devices.

use std::process::ExitCode;
use std::time::Instant;

use distributed_examples::sort::{self, DistributedSort, SortCheck, SortPhases};
use distributed_examples::{args, world};
use gpu_algorithms::Algorithms;
use gpu_distributed::{Communicator, ReduceOp, Result};
use gpu_host::DeviceBuffer;

const SEED: u64 = 2026;

struct Outcome {
    check: SortCheck,
    phases: SortPhases,
    distributed_ms: f64,
    single_ms: Option<f64>,
    /// One GPU sorting one rank's share alone (what the local sort costs with the GPU to itself).
    share_ms: Option<f64>,
    backend: String,
    rank: usize,
    ranks: usize,
}

fn main() -> ExitCode {
    let options = || {
        args::check(
            &["keys-log2", "reps", "ranks", "chunks"],
            &["no-reference", "no-packing"],
        )?;
        Ok((
            args::option::<u32>("keys-log2")?,
            args::option::<usize>("reps")?.unwrap_or(5).max(1),
            !args::flag("no-reference"),
            args::option::<usize>("chunks")?,
            !args::flag("no-packing"),
        ))
    };
    world::main(
        "distributed-sort",
        options,
        |comm, &(log2, reps, reference, chunks, packing)| {
            let log2 = log2.unwrap_or(if comm.is_simulated() { 12 } else { 26 });
            run_rank(comm, 1u64 << log2, reps, reference, chunks, packing)
        },
        report,
    )
}

/// Best of `reps` times of `f` (ms), each measured by the slowest rank.
fn best_of(comm: &Communicator, reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        comm.barrier()?;
        let start = Instant::now();
        f()?;
        comm.synchronize()?;
        let mut ms = comm
            .gpu()
            .to_device(&[start.elapsed().as_secs_f64() * 1e3])?;
        comm.all_reduce_in_place(&mut ms, ReduceOp::Max)?;
        comm.synchronize()?;
        best = best.min(ms.to_vec()?[0]);
    }
    Ok(best)
}

fn run_rank(
    comm: &Communicator,
    total: u64,
    reps: usize,
    reference: bool,
    chunks: Option<usize>,
    packing: bool,
) -> Result<Outcome> {
    let gpu = comm.gpu();
    let algos = Algorithms::load(gpu)?;
    // One GPU sorting everything, on rank 0 while the others wait.
    let (mut single_ms, mut share_ms) = (None, None);
    if reference && comm.rank() == 0 {
        let all = gpu.to_device(&sort::keys(0..total, SEED))?;
        let mut out = gpu.alloc_zeroed::<u32>(all.len())?;
        let best_of_sorts = |keys: &DeviceBuffer<u32>, out: &mut DeviceBuffer<u32>| {
            algos.sort_keys(comm.stream(), keys, out)?; // warm-up (temporary storage)
            let mut best = f64::INFINITY;
            for _ in 0..reps {
                let ((), ms) = comm.stream().time(|s| algos.sort_keys(s, keys, out))?;
                best = best.min(ms as f64);
            }
            Ok::<f64, gpu_distributed::Error>(best)
        };
        single_ms = Some(best_of_sorts(&all, &mut out)?);
        let share = world::share(total as usize, 0, comm.size()).len();
        let part = gpu.to_device(&sort::keys(0..share as u64, SEED))?;
        let mut part_out = gpu.alloc_zeroed::<u32>(share)?;
        share_ms = Some(best_of_sorts(&part, &mut part_out)?);
    }
    comm.barrier()?;
    let mine = world::share(total as usize, comm.rank(), comm.size());
    let input = sort::keys(mine.start as u64..mine.end as u64, SEED);
    let keys = gpu.to_device(&input)?;
    // Warm-up (connections, device memory kept in `work`), then the timed runs.
    let mut work = DistributedSort::new().with_chunks(chunks.unwrap_or(1));
    if !packing {
        work = work.without_packing();
    }
    let mut phases = work.sort(comm, &algos, &keys)?.1;
    let distributed_ms = best_of(comm, reps, || {
        phases = work.sort(comm, &algos, &keys)?.1;
        Ok(())
    })?;
    let output = work.output().expect("sorted above").to_vec()?;
    let check = sort::check(comm, &input, &output)?;
    Ok(Outcome {
        check,
        phases,
        distributed_ms,
        single_ms,
        share_ms,
        backend: comm.backend_name(),
        rank: comm.rank(),
        ranks: comm.size(),
    })
}

fn report(o: &Outcome) -> ExitCode {
    let c = &o.check;
    if o.rank != 0 {
        // Rank 0 prints; every rank has the same (global) verdict.
        return if c.passed() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let gkeys = |ms: f64| c.keys as f64 / (ms * 1e-3) / 1e9;
    println!(
        "distributed-sort: {} u32 keys on {} ranks ({})",
        c.keys, o.ranks, o.backend
    );
    println!("  keys per rank after the exchange: {:?}", c.part_sizes);
    let p = &o.phases;
    println!(
        "  phases (last run, rank 0): local sort, splitters and boundaries {:.2} ms (splitters \
         {:.2} ms of it, {} level(s)), exchange and merge {:.2} ms in {} chunk(s)",
        p.local_sort_ms, p.splitters_ms, p.splitter_levels, p.exchange_merge_ms, p.chunks
    );
    println!(
        "  on the device (rank 0): local sort {:.2} ms, packing {:.2} ms, transfers {:.2} ms, \
         unpacking {:.2} ms, merges {:.2} ms",
        p.sort_ms, p.pack_ms, p.transfer_ms, p.unpack_ms, p.merge_ms
    );
    println!(
        "  sent by rank 0: {:.1} MiB for {:.1} MiB of keys ({:.0}%)",
        p.sent_bytes as f64 / (1 << 20) as f64,
        p.raw_bytes as f64 / (1 << 20) as f64,
        100.0 * p.sent_bytes as f64 / p.raw_bytes.max(1) as f64
    );
    println!(
        "  distributed: {:.3} ms ({:.2} Gkeys/s)",
        o.distributed_ms,
        gkeys(o.distributed_ms)
    );
    if let Some(s) = o.single_ms {
        println!(
            "  one GPU, same sort of all keys: {s:.3} ms ({:.2} Gkeys/s); speed-up {:.2}x",
            gkeys(s),
            s / o.distributed_ms
        );
    }
    if let Some(s) = o.share_ms {
        println!("  one GPU sorting one rank's share alone: {s:.3} ms");
    }
    let verdict = |ok: bool| if ok { "ok" } else { "FAILED" };
    println!(
        "  check: parts sorted {}, boundaries ordered {}, permutation of the input {}",
        verdict(c.parts_sorted),
        verdict(c.boundaries_ordered),
        verdict(c.permutation)
    );
    if c.passed() {
        ExitCode::SUCCESS
    } else {
        println!("distributed-sort: FAILED");
        ExitCode::FAILURE
    }
}
