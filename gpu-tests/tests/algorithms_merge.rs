//! Merge of sorted runs and vectorized lower bound (`gpu_algorithms::Algorithms::merge` /
//! `lower_bound`) against CPU references: run lengths from empty to many tiles, uneven splits,
//! long runs of ties (stability: equal elements of `a` first), runs inside larger buffers,
//! every key type, and bad ranges refused before launch. On the simulator (small sizes) without
//! a GPU.

use gpu_algorithms::{Algorithms, MergeKey};
use gpu_host::Gpu;
use gpu_host::gpu::device::merge_tile;
use gpu_test_kit::XorShift64Star;
use gpu_tests::{assert_argument_error, sizes_for, with_algorithms};

trait Key: MergeKey + Ord + Copy + std::fmt::Debug {
    fn from_u64(v: u64) -> Self;
}
macro_rules! key {
    ($($t:ty),*) => { $( impl Key for $t { fn from_u64(v: u64) -> Self { v as $t } } )* };
}
key!(u32, i32, u64, i64);

/// `n` ascending keys below `distinct` (ties when `distinct` is small), tagged for stability.
fn run<K: Key>(n: usize, distinct: u64, rng: &mut XorShift64Star) -> Vec<K> {
    let mut v: Vec<K> = (0..n)
        .map(|_| K::from_u64(rng.next_u64() % distinct))
        .collect();
    v.sort();
    v
}

/// The merge on the CPU.
fn reference<K: Key>(a: &[K], b: &[K]) -> Vec<K> {
    let mut all = [a, b].concat();
    all.sort();
    all
}

fn merge_and_check<K: Key>(gpu: &Gpu, algos: &Algorithms, na: usize, nb: usize, distinct: u64) {
    let mut rng = XorShift64Star::new((na * 31 + nb) as u64 | 1);
    // Each run sits inside a larger buffer, with guard elements around it.
    let (pad_a, pad_b, pad_out) = (3, 5, 7);
    let a: Vec<K> = run(na, distinct, &mut rng);
    let b: Vec<K> = run(nb, distinct, &mut rng);
    let guard = K::from_u64(0x5a);
    let mut host_a = vec![guard; pad_a];
    host_a.extend(&a);
    host_a.extend(vec![guard; 2]);
    let mut host_b = vec![guard; pad_b];
    host_b.extend(&b);
    let da = gpu.to_device(&host_a).unwrap();
    let db = gpu.to_device(&host_b).unwrap();
    let mut out = gpu.to_device(&vec![guard; pad_out + na + nb + 4]).unwrap();
    let stream = gpu.default_stream();
    algos
        .merge(
            stream,
            &da,
            pad_a..pad_a + na,
            &db,
            pad_b..pad_b + nb,
            &mut out,
            pad_out,
        )
        .unwrap();
    let got = out.to_vec().unwrap();
    let want = reference(&a, &b);
    let what = format!("merge {na} + {nb} keys ({} distinct)", distinct);
    assert!(
        got[..pad_out].iter().all(|&g| g == guard),
        "{what}: wrote before the output range"
    );
    assert!(
        got[pad_out + na + nb..].iter().all(|&g| g == guard),
        "{what}: wrote past the output range"
    );
    for (i, &k) in want.iter().enumerate() {
        assert_eq!(got[pad_out + i], k, "{what}: element {i}");
    }
}

#[test]
fn merge_runs_of_every_length_split() {
    with_algorithms("merge_runs_of_every_length_split", |gpu, algos| {
        let tile = merge_tile::<u32>();
        let sizes = sizes_for(
            gpu,
            &[
                0,
                1,
                2,
                31,
                tile - 1,
                tile,
                tile + 1,
                3 * tile + 17,
                1 << 20,
            ],
        );
        for &na in &sizes {
            for &nb in &sizes {
                merge_and_check::<u32>(gpu, algos, na, nb, u64::MAX);
            }
        }
        // All of `a` below all of `b` and the reverse: the path runs along an edge.
        let n = sizes_for(gpu, &[5 * tile + 3])[0];
        merge_and_check::<u32>(gpu, algos, n, n, 1);
    });
}

#[test]
fn merge_handles_ties_and_every_key_type() {
    with_algorithms(
        "merge_is_stable_and_works_for_every_key_type",
        |gpu, algos| {
            let n = sizes_for(gpu, &[50_000])[0];
            // 7 distinct values: long runs of ties that cross tiles and both runs.
            merge_and_check::<u32>(gpu, algos, n, n / 3, 7);
            merge_and_check::<i32>(gpu, algos, n / 2, n, 1 << 40);
            merge_and_check::<u64>(gpu, algos, n, n + 1, u64::MAX);
            merge_and_check::<i64>(gpu, algos, n + 3, n, 1000);
        },
    );
}

#[test]
fn lower_bound_finds_every_insertion_point() {
    with_algorithms("lower_bound_finds_every_insertion_point", |gpu, algos| {
        let mut rng = XorShift64Star::new(99);
        for &n in &sizes_for(gpu, &[0, 1, 1000, 1 << 20]) {
            let sorted: Vec<u32> = run(n, 5000, &mut rng);
            let mut queries: Vec<u32> = (0..1000).map(|_| (rng.next_u64() % 5200) as u32).collect();
            queries.extend([0, u32::MAX]);
            queries.extend(sorted.iter().take(10).copied());
            // The run sits at offset 4 of a larger buffer.
            let mut host = vec![7u32; 4];
            host.extend(&sorted);
            let ds = gpu.to_device(&host).unwrap();
            let dq = gpu.to_device(&queries).unwrap();
            let mut out = gpu.alloc_zeroed::<u64>(queries.len()).unwrap();
            algos
                .lower_bound(gpu.default_stream(), &ds, 4..4 + n, &dq, &mut out)
                .unwrap();
            let got = out.to_vec().unwrap();
            for (q, g) in queries.iter().zip(got) {
                assert_eq!(
                    g as usize,
                    sorted.partition_point(|x| x < q),
                    "n {n}, query {q}"
                );
            }
        }
    });
}

#[test]
fn merge_and_lower_bound_refuse_bad_ranges() {
    with_algorithms("merge_and_lower_bound_refuse_bad_ranges", |gpu, algos| {
        let s = gpu.default_stream();
        let a = gpu.to_device(&[1u32, 2, 3]).unwrap();
        let b = gpu.to_device(&[1u32, 2]).unwrap();
        let mut out = gpu.alloc_zeroed::<u32>(5).unwrap();
        assert_argument_error(
            "a past end",
            "a",
            algos.merge(s, &a, 0..4, &b, 0..2, &mut out, 0),
        );
        assert_argument_error(
            "b past end",
            "b",
            algos.merge(s, &a, 0..3, &b, 1..3, &mut out, 0),
        );
        assert_argument_error(
            "out short",
            "out",
            algos.merge(s, &a, 0..3, &b, 0..2, &mut out, 1),
        );
        let mut pos = gpu.alloc_zeroed::<u64>(1).unwrap();
        assert_argument_error(
            "sorted past end",
            "sorted",
            algos.lower_bound(s, &a, 2..4, &b, &mut pos),
        );
        assert_argument_error(
            "out short",
            "out",
            algos.lower_bound(s, &a, 0..3, &b, &mut pos),
        );
        // Nothing was written by the refused calls.
        assert_eq!(out.to_vec().unwrap(), vec![0; 5]);
    });
}
