//! The distributed examples against one device: on simulated devices (ranks as threads, and as
//! launched processes), and on GPUs with NCCL when the machine has two or more.

use std::time::Duration;

use distributed_examples::data_parallel::{self, Kernels, Problem, Shard};
use distributed_examples::nbody::DistributedSimulation;
use distributed_examples::{sort, world};
use gpu_algorithms::Algorithms;
use gpu_dense::Dense;
use gpu_distributed::launch::Launcher;
use gpu_distributed::run_ranks;
use gpu_examples::ExampleKernels;
use gpu_examples::nbody::{Simulation, plummer};
use gpu_host::Gpu;

fn sims(n: usize) -> Vec<Gpu> {
    (0..n).map(|i| Gpu::simulator_device(i).unwrap()).collect()
}

/// Two or more GPUs with NCCL, or `None` after a visible SKIPPED line.
fn gpus_or_skip(test: &str) -> Option<Vec<Gpu>> {
    match gpu_distributed::nccl_gpu_count() {
        Ok(_) => Some(Gpu::all().expect("opening the GPUs")),
        Err(why) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED {test} on GPUs with NCCL: {why}");
            None
        }
    }
}

/// Sorts `inputs[r]` on rank `r`, checks the parts against the CPU sort of everything, and
/// returns the part sizes.
fn check_sort(gpus: &[Gpu], inputs: &[Vec<u32>]) -> Vec<usize> {
    check_sort_in_chunks(gpus, inputs, None)
}

/// [`check_sort`] with the exchange in `chunks` chunks (twice, reusing the storage).
fn check_sort_in_chunks(gpus: &[Gpu], inputs: &[Vec<u32>], chunks: Option<usize>) -> Vec<usize> {
    let parts = run_ranks(gpus, |comm| {
        let algos = Algorithms::load(comm.gpu())?;
        let input = &inputs[comm.rank()];
        let keys = comm.gpu().to_device(input)?;
        let mut work = match chunks {
            Some(c) => sort::DistributedSort::new().with_chunks(c),
            None => sort::DistributedSort::new(),
        };
        work.sort(comm, &algos, &keys)?;
        let output = work.sort(comm, &algos, &keys)?.0.to_vec()?;
        let check = sort::check(comm, input, &output)?;
        assert!(check.passed(), "{check:?}");
        Ok(output)
    })
    .unwrap();
    let parts: Vec<Vec<u32>> = parts.into_iter().map(|p| p.unwrap()).collect();
    let sizes = parts.iter().map(Vec::len).collect();
    let mut want: Vec<u32> = inputs.concat();
    want.sort_unstable();
    assert_eq!(parts.concat(), want);
    sizes
}

#[test]
fn distributed_sort_matches_one_sort() {
    let shares = |n: u64, ranks: usize| -> Vec<Vec<u32>> {
        (0..ranks)
            .map(|r| {
                let s = world::share(n as usize, r, ranks);
                sort::keys(s.start as u64..s.end as u64, 1)
            })
            .collect()
    };
    // Uneven shares over 3 ranks.
    check_sort(&sims(3), &shares(5000, 3));
    // Few distinct values, a rank without keys, and the extremes of u32.
    let skewed: Vec<u32> = (0..3000u32)
        .map(|i| [0, 7, 7, 7, u32::MAX, 1 << 31][i as usize % 6])
        .collect();
    check_sort(
        &sims(3),
        &[skewed[..2000].to_vec(), Vec::new(), skewed[2000..].to_vec()],
    );
    // Keys in a narrow range (1000 values, 4 of each): the first level's bins put them all in
    // one bin; the next level's split them evenly.
    let narrow: Vec<u32> = (0..4000u32).map(|i| 5_000_000 + i * 7919 % 1000).collect();
    let sizes = check_sort(
        &sims(2),
        &[narrow[..1500].to_vec(), narrow[1500..].to_vec()],
    );
    assert!(sizes[0].abs_diff(2000) <= 8, "{sizes:?}");
    // All keys equal, and one rank alone.
    check_sort(&sims(2), &[vec![5; 100], vec![5; 50]]);
    check_sort(&sims(1), &shares(1000, 1));
    // A pipelined exchange: 2 ranks (one merge per chunk) and 4 and 5 ranks (merge trees,
    // with an odd run), in 3 chunks, one rank without keys.
    check_sort_in_chunks(&sims(2), &shares(6000, 2), Some(3));
    check_sort_in_chunks(&sims(4), &shares(6000, 4), Some(3));
    let mut five = shares(6000, 5);
    five[2].clear();
    check_sort_in_chunks(&sims(5), &five, Some(2));
    if let Some(gpus) = gpus_or_skip("distributed_sort_matches_one_sort") {
        check_sort(&gpus, &shares(1 << 22, gpus.len()));
    }
}

#[test]
fn distributed_sort_packs_dense_runs() {
    // Keys dense in their range (2^16 values, a few thousand taken): the runs travel packed, in
    // under 3/4 of their bytes, and the result equals the sort without packing.
    for (ranks, chunks) in [(2, 1), (3, 2), (4, 3)] {
        let inputs: Vec<Vec<u32>> = (0..ranks)
            .map(|r| {
                let s = world::share(2000 * ranks * chunks, r, ranks);
                sort::keys(s.start as u64..s.end as u64, 3)
                    .into_iter()
                    .map(|k| k % (1 << 16))
                    .collect()
            })
            .collect();
        let per_rank = run_ranks(&sims(ranks), |comm| {
            let algos = Algorithms::load(comm.gpu())?;
            let keys = comm.gpu().to_device(&inputs[comm.rank()])?;
            let mut packed = sort::DistributedSort::new().with_chunks(chunks);
            let (out, phases) = packed.sort(comm, &algos, &keys)?;
            let out = out.to_vec()?;
            let mut plain = sort::DistributedSort::new()
                .with_chunks(chunks)
                .without_packing();
            let (plain_out, plain_phases) = plain.sort(comm, &algos, &keys)?;
            Ok((out, phases, plain_out.to_vec()?, plain_phases))
        })
        .unwrap();
        let mut parts = Vec::new();
        for (rank, r) in per_rank.into_iter().enumerate() {
            let (out, phases, plain_out, plain_phases) = r.unwrap();
            let what = format!("{ranks} ranks, {chunks} chunks, rank {rank}");
            assert_eq!(out, plain_out, "{what}: packed and plain sorts differ");
            assert!(
                phases.raw_bytes > 0 && phases.sent_bytes * 4 < phases.raw_bytes * 3,
                "{what}: sent {} bytes for {}",
                phases.sent_bytes,
                phases.raw_bytes
            );
            assert_eq!(plain_phases.sent_bytes, plain_phases.raw_bytes, "{what}");
            parts.push(out);
        }
        let mut want: Vec<u32> = inputs.concat();
        want.sort_unstable();
        assert_eq!(parts.concat(), want, "{ranks} ranks, {chunks} chunks");
    }
}

#[test]
fn splitters_follow_the_histogram() {
    // 4 bins over [0, 400): 100 keys in each; the quartiles fall on the bin edges.
    assert_eq!(
        sort::splitters_from_histogram(&[100; 4], 0, 400, 4),
        [100, 200, 300]
    );
    // The median inside the last bin: the nearer edge (10 keys below it, 30 above).
    assert_eq!(
        sort::splitters_from_histogram(&[0, 0, 10, 30], 0, 400, 2),
        [300]
    );
    // Integer edges round up: with 3 bins over [0, 10) a key is in bin 1 from 4 on.
    assert_eq!(sort::splitters_from_histogram(&[5, 5, 5], 0, 10, 3), [4, 7]);
}

fn check_nbody(gpus: &[Gpu], n: usize, steps: usize) {
    let eps = 0.05;
    let bodies = plummer(n, 3);
    let one = {
        let kernels = ExampleKernels::load(&gpus[0]).unwrap();
        let mut sim = Simulation::new(&gpus[0], &kernels, &bodies, eps).unwrap();
        sim.run(steps, 1e-3).unwrap();
        sim.bodies().unwrap()
    };
    let results = run_ranks(gpus, |comm| {
        let kernels = ExampleKernels::load(comm.gpu())?;
        let mut sim = DistributedSimulation::new(comm, &kernels, &bodies, eps)?;
        sim.run(steps, 1e-3)?;
        sim.bodies()
    })
    .unwrap();
    for r in results {
        // The same sums in the same order: the single-device result exactly.
        assert_eq!(r.unwrap(), one);
    }
}

#[test]
fn distributed_nbody_equals_one_device() {
    // 100 bodies over 3 ranks: padded to 102.
    check_nbody(&sims(3), 100, 3);
    check_nbody(&sims(2), 64, 2);
    if let Some(gpus) = gpus_or_skip("distributed_nbody_equals_one_device") {
        check_nbody(&gpus, 20_000, 5);
    }
}

fn check_data_parallel(gpus: &[Gpu], problem: Problem) {
    let steps = 6;
    let one = {
        let gpu = &gpus[0];
        let (dense, seed) = (
            Dense::load(gpu).unwrap(),
            ExampleKernels::load(gpu).unwrap(),
        );
        let k = Kernels {
            dense: &dense,
            seed: &seed,
        };
        let shard = Shard::new(gpu, &dense, &problem, 0..problem.rows).unwrap();
        data_parallel::train(gpu, &k, &problem, &shard, steps, 1.0, |_| Ok(())).unwrap()
    };
    let results = run_ranks(gpus, |comm| {
        let (dense, seed) = (Dense::load(comm.gpu())?, ExampleKernels::load(comm.gpu())?);
        let k = Kernels {
            dense: &dense,
            seed: &seed,
        };
        data_parallel::train_distributed(comm, &k, &problem, steps, 1.0)
    })
    .unwrap();
    let truth = problem.true_weights();
    for r in results {
        let w = r.unwrap();
        let d = data_parallel::relative_error(&w, &one);
        assert!(d < 1e-5, "relative difference from one device {d:e}");
    }
    let e = data_parallel::relative_error(&one, &truth);
    assert!(e < 0.2, "{steps} steps leave a relative error of {e}");
}

#[test]
fn data_parallel_training_matches_one_device() {
    let problem = Problem {
        rows: 90,
        inputs: 12,
        outputs: 5,
        seed: 3,
    };
    check_data_parallel(&sims(3), problem);
    if let Some(gpus) = gpus_or_skip("data_parallel_training_matches_one_device") {
        let big = Problem {
            rows: 8192,
            inputs: 512,
            outputs: 256,
            seed: 3,
        };
        check_data_parallel(&gpus, big);
    }
}

/// The example programs as launched processes (2 ranks over the TCP rendezvous) on simulated
/// devices: each checks itself against one device and exits non-zero when a check fails.
#[test]
fn example_programs_pass_when_launched() {
    for (program, args) in [
        (env!("CARGO_BIN_EXE_distributed-sort"), vec!["--reps", "1"]),
        (
            env!("CARGO_BIN_EXE_distributed-nbody"),
            vec!["--steps", "2"],
        ),
        (env!("CARGO_BIN_EXE_data-parallel"), vec!["--steps", "8"]),
    ] {
        let mut l = Launcher::new(program, 2)
            .args(args)
            .env("GPU_BACKEND", "sim")
            .env("GPU_DIST_TIMEOUT_S", "60");
        l.timeout = Some(Duration::from_secs(300));
        l.echo = false;
        let report = l.run().expect("starting the ranks");
        let out = report.ranks[0].tail.join("\n");
        assert!(report.success(), "{program}: {}\n{out}", report.failure());
        assert!(out.contains("ok"), "{program}:\n{out}");
        assert!(!out.contains("FAILED"), "{program}:\n{out}");
    }
}
