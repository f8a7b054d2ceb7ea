//! The CPU simulator's semantics, through `gpu::sim::launch` directly (no host runtime):
//! indices, barriers, warp collectives with full and partial masks, shared memory, atomics,
//! cross-block progress, and the reports for panics, divergence and spin-waits.

use core::ffi::c_void;
use std::time::Duration;

use gpu::prelude::*;
use gpu::sim::{self, Fault, Launch, SimOptions};

/// Pointer/length pairs and values as `cuLaunchKernel` wants them: one pointer per PTX
/// parameter, each to that parameter's bytes.
#[derive(Default)]
struct Params {
    storage: Vec<[u64; 2]>,
}

impl Params {
    fn slice<T>(mut self, data: &[T]) -> Self {
        self.storage.push([data.as_ptr() as u64, 0]);
        self.storage.push([data.len() as u64, 0]);
        self
    }
    fn out<T>(mut self, data: &mut [T]) -> Self {
        self.storage.push([data.as_mut_ptr() as u64, 0]);
        self.storage.push([data.len() as u64, 0]);
        self
    }
    fn value<T: Copy>(mut self, v: T) -> Self {
        assert!(size_of::<T>() <= 16);
        let mut b = [0u64; 2];
        // SAFETY: `b` has 16 bytes; `T` fits.
        unsafe { (b.as_mut_ptr() as *mut T).write_unaligned(v) };
        self.storage.push(b);
        self
    }
    fn pointers(&mut self) -> Vec<*mut c_void> {
        self.storage
            .iter_mut()
            .map(|b| b.as_mut_ptr().cast())
            .collect()
    }
}

fn launch(
    kernel: &str,
    entry: sim::Entry,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    dynamic_shared_bytes: u32,
    mut params: Params,
    timeout: Option<Duration>,
) -> Result<(), Fault> {
    let p = params.pointers();
    let l = Launch {
        kernel,
        entry,
        grid: Dim3::new(grid.0, grid.1, grid.2),
        block: Dim3::new(block.0, block.1, block.2),
        dynamic_shared_bytes,
        params: &p,
    };
    let mut options = SimOptions::from_env();
    if let Some(t) = timeout {
        options.timeout = t;
    }
    // SAFETY: every test passes the parameters its kernel declares, over live buffers.
    unsafe { sim::launch_with(&l, &options) }
}

#[kernel]
pub fn saxpy(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    for i in thread::grid_stride(out.len()) {
        out.set(i, a * x[i.get()] + y[i.get()]);
    }
}

#[test]
fn grid_stride_saxpy_over_several_blocks() {
    let n = 10_000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let mut out = vec![0f32; n];
    let p = Params::default()
        .value(3.0f32)
        .slice(&x)
        .slice(&y)
        .out(&mut out);
    launch(
        "saxpy",
        __gpu_sim_entry_saxpy,
        (7, 1, 1),
        (128, 1, 1),
        0,
        p,
        None,
    )
    .unwrap();
    for i in 0..n {
        assert_eq!(out[i], 3.0 * x[i] + y[i], "element {i}");
    }
}

#[kernel]
pub fn coordinates(out: DisjointSlice<[u32; 6]>) {
    let t = thread::thread_idx();
    let b = thread::block_idx();
    let bd = thread::block_dim();
    let linear_block = thread::block_index();
    let index = linear_block * thread::block_size() as usize + thread::local_index() as usize;
    // SAFETY: `index` is unique per thread of the launch.
    unsafe { out.write_unchecked_race(index, [t.x, t.y, t.z, b.x, b.y, b.z + bd.z * 100]) };
}

#[test]
fn three_dimensional_indices() {
    let (grid, block) = ((2, 3, 2), (4, 2, 3));
    let n = 12 * 24;
    let mut out = vec![[0u32; 6]; n];
    let p = Params::default().out(&mut out);
    launch(
        "coordinates",
        __gpu_sim_entry_coordinates,
        grid,
        block,
        0,
        p,
        None,
    )
    .unwrap();
    let mut i = 0;
    for bz in 0..2 {
        for by in 0..3 {
            for bx in 0..2 {
                for tz in 0..3 {
                    for ty in 0..2 {
                        for tx in 0..4 {
                            assert_eq!(out[i], [tx, ty, tz, bx, by, bz + 300], "thread {i}");
                            i += 1;
                        }
                    }
                }
            }
        }
    }
}

#[kernel]
pub fn block_sums(x: &[u32], mut sums: DisjointSlice<u32>) {
    let i = thread::global_id_x();
    let v = if i < x.len() { x[i] } else { 0 };
    let total = block::reduce(v, Sum);
    if let Some(b) = thread::block_leader_index() {
        sums.set(b, total);
    }
}

#[test]
fn block_reduce_through_shared_memory_and_shuffles() {
    for threads in [32u32, 96, 256, 1024] {
        let n = 5000;
        let x: Vec<u32> = (0..n as u32).map(|i| i * 7 % 13).collect();
        let blocks = (n as u32).div_ceil(threads);
        let mut sums = vec![0u32; blocks as usize];
        let p = Params::default().slice(&x).out(&mut sums);
        launch(
            "block_sums",
            __gpu_sim_entry_block_sums,
            (blocks, 1, 1),
            (threads, 1, 1),
            0,
            p,
            None,
        )
        .unwrap();
        for (b, s) in sums.iter().enumerate() {
            let lo = b * threads as usize;
            let hi = (lo + threads as usize).min(n);
            assert_eq!(
                *s,
                x[lo..hi].iter().sum::<u32>(),
                "{threads} threads, block {b}"
            );
        }
    }
}

#[kernel]
pub fn split_warp_shuffles(mut out: DisjointSlice<u32>) {
    let lane = thread::lane_id();
    let v = lane * 10;
    // Two independent halves, each with its own mask: the lock-step result within each.
    let r = if lane < 16 {
        warp::shfl_down_sync(0x0000_ffff, v, 1, 32)
    } else {
        warp::shfl_up_sync(0xffff_0000, v, 2, 32)
    };
    let ballot = warp::ballot_sync(u32::MAX, lane.is_multiple_of(3));
    let same = warp::match_any_sync(u32::MAX, lane / 8);
    let i = thread::global_index();
    out.set(i, r ^ (ballot.count_ones() << 20) ^ (same << 8));
}

#[test]
fn warp_collectives_with_full_and_partial_masks() {
    let mut out = vec![0u32; 32];
    let p = Params::default().out(&mut out);
    launch(
        "split_warp_shuffles",
        __gpu_sim_entry_split_warp_shuffles,
        (1, 1, 1),
        (32, 1, 1),
        0,
        p,
        None,
    )
    .unwrap();
    let ballot = (0..32).filter(|l| l % 3 == 0).count() as u32;
    for lane in 0..32u32 {
        // shfl.down within lanes 0..16: lane 15 reads lane 16, which is outside the mask, so
        // it keeps its own value (the clamp is the warp's last lane).
        let r = if lane < 16 {
            if lane + 1 < 16 {
                (lane + 1) * 10
            } else {
                lane * 10
            }
        } else if lane >= 18 {
            (lane - 2) * 10
        } else {
            lane * 10
        };
        let same = 0xffu32 << (lane / 8 * 8);
        assert_eq!(
            out[lane as usize],
            r ^ (ballot << 20) ^ (same << 8),
            "lane {lane}"
        );
    }
}

/// Lane `l`'s label: a few distinct low bytes repeated across the warp, under high bits that
/// differ in every lane (which `match_any_bits::<8>` must ignore).
fn label(lane: u32) -> u32 {
    (lane.wrapping_mul(0x9E37_79B9) & 0xffff_ff00) | [3, 200, 3, 77, 200, 0][lane as usize % 6]
}

#[kernel]
pub fn match_low_bits(mut out: DisjointSlice<u32>) {
    let v = label(thread::lane_id());
    out.set(thread::global_index(), warp::match_any_bits::<8>(v));
}

#[test]
fn match_any_bits_groups_lanes_by_their_low_bits() {
    let mut out = vec![0u32; 32];
    let p = Params::default().out(&mut out);
    launch(
        "match_low_bits",
        __gpu_sim_entry_match_low_bits,
        (1, 1, 1),
        (32, 1, 1),
        0,
        p,
        None,
    )
    .unwrap();
    for lane in 0..32u32 {
        let peers = (0..32u32)
            .filter(|&l| label(l) & 0xff == label(lane) & 0xff)
            .fold(0, |m, l| m | 1 << l);
        assert_eq!(out[lane as usize], peers, "lane {lane}");
    }
}

#[kernel]
pub fn warp_scan(x: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    let v = x[i.get()];
    let s = warp::inclusive_scan(v, Sum);
    out.set(i, s);
}

#[test]
fn warp_inclusive_scan() {
    let x: Vec<u32> = (0..64).map(|i| i % 5 + 1).collect();
    let mut out = vec![0u32; 64];
    let p = Params::default().slice(&x).out(&mut out);
    launch(
        "warp_scan",
        __gpu_sim_entry_warp_scan,
        (1, 1, 1),
        (64, 1, 1),
        0,
        p,
        None,
    )
    .unwrap();
    for w in 0..2 {
        let mut acc = 0;
        for l in 0..32 {
            acc += x[w * 32 + l];
            assert_eq!(out[w * 32 + l], acc);
        }
    }
}

#[kernel]
pub fn histogram(x: &[u32], bins: DisjointSlice<u32>) {
    let counts = shared_array!(u32, 16);
    let t = thread::local_index() as usize;
    if t < 16 {
        counts.write(t, 0);
    }
    sync::sync_threads();
    for i in thread::grid_stride(x.len()) {
        counts.atomic_add(x[i.get()] as usize % 16, 1);
    }
    sync::sync_threads();
    if t < 16 {
        // SAFETY: `t < 16 <= bins.len()`; other threads update it atomically too.
        unsafe { atomic::add(bins.as_mut_ptr().add(t), counts.read(t)) };
    }
}

#[test]
fn shared_and_global_atomics_across_blocks() {
    let x: Vec<u32> = (0..20_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    let mut bins = vec![0u32; 16];
    let p = Params::default().slice(&x).out(&mut bins);
    launch(
        "histogram",
        __gpu_sim_entry_histogram,
        (9, 1, 1),
        (128, 1, 1),
        0,
        p,
        None,
    )
    .unwrap();
    let mut want = [0u32; 16];
    for v in &x {
        want[*v as usize % 16] += 1;
    }
    assert_eq!(bins, want);
}

#[kernel]
pub fn dynamic_reverse(x: &[f32], mut out: DisjointSlice<f32>) {
    let buf = shared::dynamic::<f32>();
    let t = thread::local_index() as usize;
    let n = buf.len();
    let i = thread::global_index();
    buf.write(t, x[i.get()]);
    sync::sync_threads();
    out.set(i, buf.read(n - 1 - t));
}

#[test]
fn dynamic_shared_memory() {
    let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let mut out = vec![0f32; 256];
    let p = Params::default().slice(&x).out(&mut out);
    launch(
        "dynamic_reverse",
        __gpu_sim_entry_dynamic_reverse,
        (2, 1, 1),
        (128, 1, 1),
        512,
        p,
        None,
    )
    .unwrap();
    for b in 0..2 {
        for t in 0..128 {
            assert_eq!(out[b * 128 + t], x[b * 128 + 127 - t]);
        }
    }
}

#[kernel]
pub fn chained_blocks(flags: DisjointSlice<u32>, mut order: DisjointSlice<u32>) {
    // Block b waits until block b-1 has published, then publishes b+1: only works if an
    // earlier block always makes progress while a later one spins.
    let b = thread::block_index();
    if thread::local_index() == 0 {
        let flags = flags.as_mut_ptr();
        if b > 0 {
            // SAFETY: `flags` has one word per block, accessed only atomically.
            while unsafe { atomic::add(flags.add(b - 1), 0) } == 0 {}
        }
        // SAFETY: as above.
        let prev = if b > 0 {
            unsafe { atomic::add(flags.add(b - 1), 0) }
        } else {
            0
        };
        // SAFETY: as above.
        unsafe { atomic::exch(flags.add(b), prev + 1) };
    }
    sync::sync_threads();
    if let Some(leader) = thread::block_leader_index() {
        order.set(leader, b as u32);
    }
}

#[test]
fn a_spinning_block_waits_for_an_earlier_one() {
    let mut flags = vec![0u32; 64];
    let mut order = vec![0u32; 64];
    let p = Params::default().out(&mut flags).out(&mut order);
    launch(
        "chained_blocks",
        __gpu_sim_entry_chained_blocks,
        (64, 1, 1),
        (64, 1, 1),
        0,
        p,
        None,
    )
    .unwrap();
    assert_eq!(flags, (1..=64).collect::<Vec<u32>>());
}

#[kernel]
pub fn barrier_in_branch(mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    if thread::local_index() < 16 {
        sync::sync_threads();
    }
    out.set(i, 1);
}

#[test]
fn a_barrier_skipped_by_some_threads_is_reported_not_hung() {
    let mut out = vec![0u32; 64];
    let p = Params::default().out(&mut out);
    let err = launch(
        "barrier_in_branch",
        __gpu_sim_entry_barrier_in_branch,
        (1, 1, 1),
        (64, 1, 1),
        0,
        p,
        None,
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Fault::Divergence { .. }), "{text}");
    assert!(text.contains("barrier_in_branch"), "{text}");
    assert!(
        text.contains("16 of 64 threads (0..=15) wait at the barrier"),
        "{text}"
    );
    assert!(text.contains("threads 16..=63 exited"), "{text}");
    assert!(text.contains("tests/sim.rs"), "{text}");
}

#[kernel]
pub fn two_barriers(mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    #[allow(clippy::if_same_then_else)] // two different barrier call sites, on purpose
    if thread::local_index().is_multiple_of(2) {
        sync::sync_threads();
    } else {
        sync::sync_threads();
    }
    out.set(i, 1);
}

#[test]
fn threads_at_different_barriers_are_reported() {
    let mut out = vec![0u32; 64];
    let p = Params::default().out(&mut out);
    let err = launch(
        "two_barriers",
        __gpu_sim_entry_two_barriers,
        (1, 1, 1),
        (64, 1, 1),
        0,
        p,
        None,
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("different barriers"), "{text}");
}

#[kernel]
pub fn shuffle_in_branch(mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    let lane = thread::lane_id();
    let v = if lane < 20 {
        warp::shfl_xor(lane, 1)
    } else {
        0
    };
    out.set(i, v);
}

#[test]
fn a_full_mask_collective_in_divergent_code_is_reported() {
    let mut out = vec![0u32; 32];
    let p = Params::default().out(&mut out);
    let err = launch(
        "shuffle_in_branch",
        __gpu_sim_entry_shuffle_in_branch,
        (1, 1, 1),
        (32, 1, 1),
        0,
        p,
        None,
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Fault::Divergence { .. }), "{text}");
    assert!(
        text.contains("lanes 0..=19 of warp 0 wait in a warp collective"),
        "{text}"
    );
    assert!(text.contains("lanes 20..=31 never join"), "{text}");
}

#[kernel]
pub fn out_of_bounds(x: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    // Reads one past the end in the last thread.
    let v = x[i.get() + 1];
    out.set(i, v);
}

#[test]
fn an_out_of_bounds_index_names_kernel_block_thread_and_index() {
    let x = vec![1u32; 100];
    let mut out = vec![0u32; 100];
    let p = Params::default().slice(&x).out(&mut out);
    let err = launch(
        "out_of_bounds",
        __gpu_sim_entry_out_of_bounds,
        (4, 1, 1),
        (25, 1, 1),
        0,
        p,
        None,
    )
    .unwrap_err();
    match &err {
        Fault::Panic {
            kernel,
            block,
            thread,
            location,
            message,
        } => {
            assert_eq!(kernel, "out_of_bounds");
            assert_eq!((block.x, thread.x), (3, 24));
            assert!(
                location.as_deref().unwrap().contains("tests/sim.rs"),
                "{err}"
            );
            assert!(
                message.contains("index out of bounds: the len is 100 but the index is 100"),
                "{err}"
            );
        }
        other => panic!("expected a panic fault, got {other}"),
    }
}

#[kernel]
pub fn shared_out_of_bounds(mut out: DisjointSlice<u32>) {
    let tile = shared_array!(u32, 32);
    let t = thread::local_index() as usize;
    tile.write(t, 1);
    let i = thread::global_index();
    out.set(i, tile.read(t));
}

#[test]
fn a_shared_array_index_past_the_end_is_caught() {
    let mut out = vec![0u32; 64];
    let p = Params::default().out(&mut out);
    let err = launch(
        "shared_out_of_bounds",
        __gpu_sim_entry_shared_out_of_bounds,
        (1, 1, 1),
        (64, 1, 1),
        0,
        p,
        None,
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, Fault::Panic { thread, .. } if thread.x == 32),
        "{text}"
    );
    assert!(
        text.contains("shared memory index 32 out of bounds"),
        "{text}"
    );
}

#[kernel]
pub fn spin_forever(flag: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    // SAFETY: `flag` has one word; read atomically.
    while unsafe { atomic::add(flag.as_ptr().cast_mut(), 0) } == 0 {}
    out.set(i, 1);
}

#[test]
fn a_spin_on_a_value_nobody_writes_times_out() {
    let flag = vec![0u32; 1];
    let mut out = vec![0u32; 32];
    let p = Params::default().slice(&flag).out(&mut out);
    let err = launch(
        "spin_forever",
        __gpu_sim_entry_spin_forever,
        (1, 1, 1),
        (32, 1, 1),
        0,
        p,
        Some(Duration::from_secs(1)),
    )
    .unwrap_err();
    assert!(matches!(err, Fault::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("spin_forever"), "{err}");
}

#[test]
fn an_invalid_configuration_is_refused() {
    let mut out = vec![0u32; 1];
    let p = Params::default().out(&mut out);
    let err = launch(
        "saxpy",
        __gpu_sim_entry_saxpy,
        (1, 1, 1),
        (2048, 1, 1),
        0,
        p,
        None,
    )
    .unwrap_err();
    assert!(matches!(err, Fault::InvalidLaunch { .. }), "{err}");
}
