//! Cooperative launches (`LaunchConfig::cooperative()`) and the grid barrier
//! (`gpu::grid::sync`): a single-launch reduction checked against the CPU, the barrier word
//! reused across launches, and a grid too large to be co-resident refused before launching
//! (on a GPU, or on the CPU simulator without one). And turns on a global counter
//! (`gpu::grid::wait_turn` / `end_turn`) in an ordinary launch: in order, exclusive, and a turn
//! that never comes ending the launch with an error instead of a hang (on a GPU in a child
//! process: the trap poisons the context).

use gpu_host::isolate::{self, Isolated};
use gpu_host::{Error, Gpu, LaunchConfig};
use gpu_tests::gpu_or_skip;
use gpu_tests::selftest::device_selftest::Module as Selftest;

const BLOCK: u32 = 256;

/// The most blocks of `grid_reduce_sum` that fit on the device at once.
fn co_resident_limit(gpu: &Gpu, k: &Selftest) -> u32 {
    let occupancy = k
        .raw()
        .kernel("grid_reduce_sum")
        .unwrap()
        .occupancy(BLOCK, 0)
        .unwrap();
    occupancy.active_blocks_per_sm * gpu.properties().multiprocessor_count
}

#[test]
fn a_cooperative_launch_reduces_in_one_launch_with_a_grid_barrier() {
    let Some(gpu) = gpu_or_skip("a_cooperative_launch_reduces_in_one_launch_with_a_grid_barrier")
    else {
        return;
    };
    let k = Selftest::load(&gpu).unwrap();
    let limit = co_resident_limit(&gpu, &k);
    assert!(limit >= 1);
    let n = if gpu.is_simulator() { 5_000 } else { 1 << 22 };
    let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(7919) % 1000).collect();
    let want: u64 = values.iter().map(|&v| u64::from(v)).sum();
    let input = gpu.to_device(&values).unwrap();
    let stream = gpu.default_stream();
    // The barrier word is zeroed once and reused by every launch: a barrier leaves it ready.
    let mut barrier = gpu.alloc_zeroed::<u32>(1).unwrap();
    // Every grid size up to the limit, including exactly the limit (and 1 block).
    let mut grids = vec![1, limit.div_ceil(2), limit];
    grids.dedup();
    for grid in grids {
        let blocks = grid as usize;
        let mut partials = gpu.alloc_zeroed::<u64>(blocks).unwrap();
        let mut total = gpu.alloc_zeroed::<u64>(1).unwrap();
        let mut seen = gpu.alloc_zeroed::<u64>(blocks).unwrap();
        let cfg = LaunchConfig::new(grid, BLOCK).cooperative();
        for round in 0..2 {
            k.grid_reduce_sum(
                stream,
                cfg,
                &input,
                &mut partials,
                &mut barrier,
                &mut total,
                &mut seen,
            )
            .unwrap_or_else(|e| panic!("grid {grid}, round {round}: {e}"));
            assert_eq!(
                total.to_vec().unwrap(),
                [want],
                "grid {grid}, round {round}"
            );
            assert!(
                seen.to_vec().unwrap().iter().all(|&s| s == want),
                "grid {grid}, round {round}: a block read the total before the barrier"
            );
        }
    }
}

#[test]
fn a_cooperative_grid_that_cannot_be_co_resident_is_refused() {
    let Some(gpu) = gpu_or_skip("a_cooperative_grid_that_cannot_be_co_resident_is_refused") else {
        return;
    };
    let k = Selftest::load(&gpu).unwrap();
    let limit = co_resident_limit(&gpu, &k);
    let input = gpu.to_device(&[1u32; 100]).unwrap();
    let blocks = limit as usize + 1;
    let mut partials = gpu.alloc_zeroed::<u64>(blocks).unwrap();
    let mut barrier = gpu.alloc_zeroed::<u32>(1).unwrap();
    let mut total = gpu.alloc_zeroed::<u64>(1).unwrap();
    let mut seen = gpu.alloc_zeroed::<u64>(blocks).unwrap();
    let cfg = LaunchConfig::new(limit + 1, BLOCK).cooperative();
    let err = k
        .grid_reduce_sum(
            gpu.default_stream(),
            cfg,
            &input,
            &mut partials,
            &mut barrier,
            &mut total,
            &mut seen,
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::LaunchConfig { .. }), "{msg}");
    assert!(msg.contains("grid_reduce_sum"), "{msg}");
    assert!(msg.contains(&format!("at most {limit} fit")), "{msg}");
    assert!(msg.contains(&format!("{} blocks", limit + 1)), "{msg}");
    // Nothing ran.
    assert_eq!(total.to_vec().unwrap(), [0]);
}

/// Blocks taking turns in block order fold their indices into one word with plain reads and
/// writes: the result is the sequential fold (turns exclusive and ordered), for grids larger
/// than the device holds at once on a GPU.
#[test]
fn blocks_take_turns_in_order() {
    let Some(gpu) = gpu_or_skip("blocks_take_turns_in_order") else {
        return;
    };
    let k = Selftest::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let grids: &[u32] = if gpu.is_simulator() {
        &[1, 7, 40]
    } else {
        &[1, 100, 5000]
    };
    for &grid in grids {
        let mut turns = gpu.alloc_zeroed::<u32>(1).unwrap();
        let mut acc = gpu.to_device(&[5u32]).unwrap();
        k.selftest_turns_fold(
            stream,
            LaunchConfig::new(grid, 32),
            &mut turns,
            &mut acc,
            0,
            10_000_000_000,
        )
        .unwrap_or_else(|e| panic!("grid {grid}: {e}"));
        let want = (1..=grid).fold(5u32, |a, b| a.wrapping_mul(31).wrapping_add(b));
        assert_eq!(acc.to_vec().unwrap(), [want], "grid {grid}: fold");
        assert_eq!(turns.to_vec().unwrap(), [grid], "grid {grid}: turns passed");
    }
}

/// A turn that never comes (block `b` waits for turn `b + 1`; nobody holds turn 0): every block
/// gives up after the 2 ms timeout and the launch fails with an error naming the kernel, not a
/// hang. On a GPU the trap poisons the context, so the test runs itself in a child process.
#[test]
fn a_turn_that_never_comes_is_an_error() {
    const TEST: &str = "a_turn_that_never_comes_is_an_error";
    let Some(gpu) = gpu_or_skip(TEST) else {
        return;
    };
    if !gpu.is_simulator() && !isolate::is_job(TEST) {
        let report = Isolated::test(TEST)
            .run()
            .unwrap_or_else(|e| panic!("{TEST}: {e}"));
        assert!(
            report.success(),
            "{TEST} failed in its child process: {}",
            report.failure()
        );
        return;
    }
    let k = Selftest::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let mut turns = gpu.alloc_zeroed::<u32>(1).unwrap();
    let mut acc = gpu.alloc_zeroed::<u32>(1).unwrap();
    let result = k
        .selftest_turns_fold(
            stream,
            LaunchConfig::new(4, 32),
            &mut turns,
            &mut acc,
            1,
            2_000_000,
        )
        .and_then(|()| stream.synchronize());
    match result {
        Err(e @ (Error::KernelFault { .. } | Error::KernelPanic { .. })) => {
            assert!(e.to_string().contains("selftest_turns_fold"), "{e}");
        }
        other => panic!("a turn that never comes: expected a kernel fault, got {other:?}"),
    }
}
