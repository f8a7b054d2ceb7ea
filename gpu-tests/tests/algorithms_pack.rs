//! Frame-of-reference packing of ascending `u32` runs (`gpu_algorithms::Algorithms::
//! pack_spread` / `pack` / `unpack`) against the CPU: the spread and width of runs from empty to
//! many groups, packed and unpacked back to the same keys at every width from 0 to 32, runs
//! inside larger buffers (nothing written outside their ranges), and bad arguments refused
//! before launch. On the simulator (small sizes) without a GPU.

use std::ops::Range;

use gpu_algorithms::Algorithms;
use gpu_host::Gpu;
use gpu_host::gpu::device::{PACK_GROUP, pack_width, packed_words};
use gpu_test_kit::XorShift64Star;
use gpu_tests::{assert_argument_error, sizes_for, with_algorithms};

/// `n` ascending keys from `start`, steps below `step` (0: all equal).
fn run(n: usize, start: u32, step: u64, rng: &mut XorShift64Star) -> Vec<u32> {
    let mut k = start;
    (0..n)
        .map(|_| {
            let v = k;
            if step > 0 {
                k = k.saturating_add((rng.next_u64() % step) as u32);
            }
            v
        })
        .collect()
}

/// The largest spread of a group, on the CPU.
fn spread(keys: &[u32]) -> u32 {
    keys.chunks(PACK_GROUP)
        .map(|g| g[g.len() - 1] - g[0])
        .max()
        .unwrap_or(0)
}

/// `all[range]`, after checking that everything around it still holds `guard` (nothing was
/// written outside the range).
fn guarded<'a>(all: &'a [u32], range: Range<usize>, guard: u32, what: &str) -> &'a [u32] {
    assert!(
        all[..range.start].iter().all(|&w| w == guard),
        "{what}: wrote before {range:?}"
    );
    assert!(
        all[range.end..].iter().all(|&w| w == guard),
        "{what}: wrote past {range:?}"
    );
    &all[range]
}

/// Measures, packs and unpacks `keys` (each sitting inside a larger buffer) and checks every
/// step; returns the width.
fn round_trip(gpu: &Gpu, algos: &Algorithms, keys: &[u32]) -> u32 {
    let n = keys.len();
    let s = gpu.default_stream();
    let (pad_in, pad_packed, pad_out) = (3, 5, 7);
    let mut host = vec![u32::MAX; pad_in];
    host.extend(keys);
    host.push(0);
    let input = gpu.to_device(&host).unwrap();
    let mut spreads = gpu.alloc_zeroed::<u32>(3).unwrap();
    algos
        .pack_spread(s, &input, pad_in..pad_in + n, &mut spreads, 1)
        .unwrap();
    let got = spreads.to_vec().unwrap();
    assert_eq!(got, vec![0, spread(keys), 0], "spread of {n} keys");
    let width = pack_width(got[1]);
    let words = packed_words(n, width);
    let guard = 0xdead_beef;
    let mut packed = gpu.to_device(&vec![guard; pad_packed + words + 2]).unwrap();
    algos
        .pack(
            s,
            &input,
            pad_in..pad_in + n,
            width,
            &mut packed,
            pad_packed,
        )
        .unwrap();
    let what = format!("{n} keys at {width} bits");
    guarded(
        &packed.to_vec().unwrap(),
        pad_packed..pad_packed + words,
        guard,
        &what,
    );
    let mut out = gpu.to_device(&vec![guard; pad_out + n + 2]).unwrap();
    algos
        .unpack(s, &packed, pad_packed, n, width, &mut out, pad_out)
        .unwrap();
    let o = out.to_vec().unwrap();
    let o = guarded(&o, pad_out..pad_out + n, guard, &what);
    for (i, (&g, &k)) in o.iter().zip(keys).enumerate() {
        assert_eq!(g, k, "{what}: key {i}");
    }
    width
}

#[test]
fn pack_round_trips_runs_of_every_length() {
    with_algorithms("pack_round_trips_runs_of_every_length", |gpu, algos| {
        let mut rng = XorShift64Star::new(7);
        let g = PACK_GROUP;
        for &n in &sizes_for(gpu, &[0, 1, 2, g - 1, g, g + 1, 7 * g + 33, 1 << 20]) {
            // Dense keys, as a sorted run of many random keys is: a few bits a key.
            let keys = run(n, 1000, 16, &mut rng);
            let width = round_trip(gpu, algos, &keys);
            assert!(width <= 11, "{n} dense keys packed at {width} bits");
        }
    });
}

#[test]
fn pack_round_trips_every_width() {
    with_algorithms("pack_round_trips_every_width", |gpu, algos| {
        let mut rng = XorShift64Star::new(11);
        let n = sizes_for(gpu, &[10_000])[0];
        // All equal: width 0, the bases alone.
        assert_eq!(round_trip(gpu, algos, &vec![42; n]), 0);
        // One group spanning all of u32: width 32.
        let mut wide = run(n, 0, 3, &mut rng);
        wide[PACK_GROUP - 1] = u32::MAX;
        wide[PACK_GROUP..].fill(u32::MAX);
        assert_eq!(round_trip(gpu, algos, &wide), 32);
        // Every width between: steps that make a group's spread cross 2^(w-1).
        for w in 1..32u32 {
            let step = (1u64 << w) / PACK_GROUP as u64 + 1;
            let mut keys = run(n, 5, step, &mut rng);
            // One group spreads exactly 2^w - 1.
            let top = keys[PACK_GROUP] + (1 << w) - 1;
            keys[PACK_GROUP + 1..2 * PACK_GROUP].fill(top);
            for k in keys[2 * PACK_GROUP..].iter_mut() {
                *k = (*k).max(top);
            }
            let width = round_trip(gpu, algos, &keys);
            assert!(width >= w, "width {width} for a spread of 2^{w} - 1");
        }
    });
}

#[test]
fn pack_refuses_bad_arguments() {
    with_algorithms("pack_refuses_bad_arguments", |gpu, algos| {
        let s = gpu.default_stream();
        let keys = gpu.to_device(&(0..300u32).collect::<Vec<_>>()).unwrap();
        let mut spread = gpu.alloc_zeroed::<u32>(2).unwrap();
        let mut packed = gpu.alloc_zeroed::<u32>(packed_words(300, 8)).unwrap();
        assert_argument_error(
            "keys past end",
            "keys",
            algos.pack_spread(s, &keys, 0..301, &mut spread, 0),
        );
        assert_argument_error(
            "slot past end",
            "slot",
            algos.pack_spread(s, &keys, 0..300, &mut spread, 2),
        );
        assert_argument_error(
            "width 33",
            "width",
            algos.pack(s, &keys, 0..300, 33, &mut packed, 0),
        );
        assert_argument_error(
            "packed short",
            "packed",
            algos.pack(s, &keys, 0..300, 9, &mut packed, 0),
        );
        let mut out = gpu.alloc_zeroed::<u32>(300).unwrap();
        assert_argument_error(
            "packed short for unpack",
            "packed",
            algos.unpack(s, &packed, 1, 300, 8, &mut out, 0),
        );
        assert_argument_error(
            "out short",
            "out",
            algos.unpack(s, &packed, 0, 300, 8, &mut out, 1),
        );
        // Nothing was written by the refused calls.
        assert_eq!(spread.to_vec().unwrap(), vec![0; 2]);
        assert_eq!(out.to_vec().unwrap(), vec![0; 300]);
    });
}
