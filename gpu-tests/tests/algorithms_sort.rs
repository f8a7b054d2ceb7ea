//! Radix sort (`gpu_algorithms::Algorithms::sort_keys` / `sort_pairs`) on a real GPU against a
//! stable CPU sort, across sizes (empty, one key, partial tiles, many tiles), key types and
//! distributions (random, all equal, sorted, reversed, few distinct values, negative floats,
//! ±0.0, NaNs), with the values checking stability. Each test prints SKIPPED without a GPU.

use std::cmp::Ordering;

use gpu_algorithms::{Algorithms, SortKey, SortPairs, SortTemp};
use gpu_host::{Error, Gpu};
use gpu_test_kit::XorShift64Star;
use gpu_tests::{SIMULATOR_MAX_ELEMENTS, gpu_or_skip, sizes_for};

/// Key types under test with the order CUB sorts them in, written independently of the
/// kernels' bit tricks: integers numerically; floats by `total_cmp` (NaNs by sign at the
/// ends) except that `-0.0 == +0.0`.
trait TestKey: SortKey + SortPairs<u32> + SortPairs<u64> + Copy + std::fmt::Debug {
    fn from_random(bits: u64) -> Self;
    fn from_i64(v: i64) -> Self;
    fn cub_cmp(&self, other: &Self) -> Ordering;
    /// The exact bits, so that -0.0 vs +0.0 and NaN payloads are compared too.
    fn bits(self) -> u64;
}

macro_rules! int_key {
    ($($t:ty),*) => { $(
        impl TestKey for $t {
            fn from_random(bits: u64) -> Self { bits as $t }
            fn from_i64(v: i64) -> Self { v as $t }
            fn cub_cmp(&self, other: &Self) -> Ordering { self.cmp(other) }
            fn bits(self) -> u64 { self as u64 }
        }
    )* };
}
int_key!(u32, i32, u64, i64);

macro_rules! float_key {
    ($($t:ty: $bits:ty),*) => { $(
        impl TestKey for $t {
            fn from_random(bits: u64) -> Self {
                // Mostly ordinary numbers of both signs, wide exponent range.
                let mantissa = (bits >> 11) as f64 / (1u64 << 53) as f64;
                let exponent = ((bits & 0x3f) as i32) - 32;
                let sign = if bits & 0x40 != 0 { -1.0 } else { 1.0 };
                (sign * mantissa * 2f64.powi(exponent)) as $t
            }
            fn from_i64(v: i64) -> Self { v as $t }
            fn cub_cmp(&self, other: &Self) -> Ordering {
                let zero = |x: $t| if x == 0.0 { 0.0 } else { x };
                zero(*self).total_cmp(&zero(*other))
            }
            fn bits(self) -> u64 { self.to_bits() as $bits as u64 }
        }
    )* };
}
float_key!(f32: u32, f64: u64);

#[derive(Clone, Copy, Debug)]
enum Dist {
    Random,
    AllEqual,
    Sorted,
    Reversed,
    /// 16 distinct values: long runs of ties, where stability shows.
    FewDistinct,
    /// Floats only: negative values, ±0.0, ±inf and NaNs of both signs mixed in.
    Specials,
}

fn keys<K: TestKey>(n: usize, dist: Dist, seed: u64) -> Vec<K> {
    let mut rng = XorShift64Star::new(seed | 1);
    (0..n)
        .map(|i| match dist {
            Dist::Random => K::from_random(rng.next_u64()),
            Dist::AllEqual => K::from_i64(-3),
            Dist::Sorted => K::from_i64(i as i64 - (n as i64) / 2),
            Dist::Reversed => K::from_i64((n as i64) / 2 - i as i64),
            Dist::FewDistinct => K::from_i64((rng.next_u64() % 16) as i64 - 8),
            Dist::Specials => K::from_random(rng.next_u64()),
        })
        .collect()
}

/// Float keys with specials: replaces a fraction of random keys by -0.0, +0.0, ±inf, ±NaN.
fn float_specials<F: Copy>(mut v: Vec<F>, specials: &[F], seed: u64) -> Vec<F> {
    let mut rng = XorShift64Star::new(seed | 1);
    for x in v.iter_mut() {
        let r = rng.next_u64();
        if r.is_multiple_of(4) {
            *x = specials[(r >> 8) as usize % specials.len()];
        }
    }
    v
}

/// The stable CPU reference: (key, original index) sorted by key.
fn reference<K: TestKey>(keys: &[K]) -> Vec<(K, usize)> {
    let mut pairs: Vec<(K, usize)> = keys.iter().copied().zip(0..).collect();
    pairs.sort_by(|a, b| a.0.cub_cmp(&b.0));
    pairs
}

fn check_keys<K: TestKey>(what: &str, got: &[K], want: &[(K, usize)]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, (w, _))) in got.iter().zip(want).enumerate() {
        assert!(
            g.bits() == w.bits(),
            "{what}: key {i} is {g:?}, expected {w:?} (stable order, exact bits)"
        );
    }
}

fn sort_and_check<K: TestKey>(gpu: &Gpu, algos: &Algorithms, what: &str, host_keys: &[K]) {
    let stream = gpu.default_stream();
    let n = host_keys.len();
    let want = reference(host_keys);
    let keys_in = gpu.to_device(host_keys).unwrap();

    // Keys only; an output longer than the input keeps its tail.
    let mut keys_out = gpu.to_device(&vec![K::from_i64(7); n + 3]).unwrap();
    algos.sort_keys(stream, &keys_in, &mut keys_out).unwrap();
    let got = keys_out.to_vec().unwrap();
    check_keys(&format!("{what} keys"), &got[..n], &want);
    assert!(
        got[n..].iter().all(|k| k.bits() == K::from_i64(7).bits()),
        "{what}: the output's tail was written"
    );
    assert_eq!(
        keys_in
            .to_vec()
            .unwrap()
            .iter()
            .map(|k| k.bits())
            .collect::<Vec<_>>(),
        host_keys.iter().map(|k| k.bits()).collect::<Vec<_>>(),
        "{what}: the input was modified"
    );

    // Pairs with u32 values = original index: the values must be exactly the stable order.
    let index: Vec<u32> = (0..n as u32).collect();
    let values_in = gpu.to_device(&index).unwrap();
    let mut keys_out = gpu.alloc_zeroed::<K>(n).unwrap();
    let mut values_out = gpu.alloc_zeroed::<u32>(n).unwrap();
    algos
        .sort_pairs(stream, &keys_in, &values_in, &mut keys_out, &mut values_out)
        .unwrap();
    check_keys(&format!("{what} pairs"), &keys_out.to_vec().unwrap(), &want);
    let values = values_out.to_vec().unwrap();
    for (i, (&v, &(_, w))) in values.iter().zip(&want).enumerate() {
        assert_eq!(v as usize, w, "{what} pairs: value {i} (stability)");
    }
}

fn with_gpu(test: &str, f: impl FnOnce(&Gpu, &Algorithms)) {
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    let algos = Algorithms::load(&gpu).expect("loading the algorithm kernels");
    f(&gpu, &algos);
}

/// `sizes` the simulator gets through in seconds: a sort is several passes of ranking with warp
/// collectives per key, so its simulator cap is lower than the other algorithms'. Inputs of
/// up to 20 000 keys still span several tiles and the look-back between them.
fn sort_sizes(gpu: &Gpu, sizes: &[usize]) -> Vec<usize> {
    const SORT_SIMULATOR_MAX: usize = 20_000;
    const { assert!(SORT_SIMULATOR_MAX <= SIMULATOR_MAX_ELEMENTS) };
    sizes_for(gpu, sizes)
        .into_iter()
        .filter(|&n| !gpu.is_simulator() || n <= SORT_SIMULATOR_MAX)
        .collect()
}

/// Up to 8192 keys (`sort_single_tile`) sort in one block and one launch; more go through the
/// onesweep passes.
const SIZES: &[usize] = &[
    0,
    1,
    31,
    4095,
    4096,
    4097,
    8191,
    8192,
    8193,
    15_000,
    (1 << 16) + 1,
    1 << 20,
];

#[test]
fn sort_u32_sizes_and_distributions() {
    with_gpu("sort_u32_sizes_and_distributions", |gpu, algos| {
        for n in sort_sizes(gpu, SIZES) {
            for dist in [
                Dist::Random,
                Dist::AllEqual,
                Dist::Sorted,
                Dist::Reversed,
                Dist::FewDistinct,
            ] {
                let k = keys::<u32>(n, dist, n as u64 + 1);
                sort_and_check(gpu, algos, &format!("u32 n={n} {dist:?}"), &k);
            }
        }
        // A large input only where it takes no time (not on the simulator).
        for n in sort_sizes(gpu, &[1 << 24]) {
            sort_and_check(
                gpu,
                algos,
                "u32 n=2^24 random",
                &keys::<u32>(n, Dist::Random, 5),
            );
        }
    });
}

#[test]
fn sort_signed_and_wide_keys() {
    with_gpu("sort_signed_and_wide_keys", |gpu, algos| {
        for n in sort_sizes(gpu, &[1usize, 4097, 8192, (1 << 16) + 1, (1 << 20) + 5]) {
            for dist in [Dist::Random, Dist::Reversed, Dist::FewDistinct] {
                let what = |t: &str| format!("{t} n={n} {dist:?}");
                sort_and_check(gpu, algos, &what("i32"), &keys::<i32>(n, dist, 11));
                sort_and_check(gpu, algos, &what("u64"), &keys::<u64>(n, dist, 12));
                sort_and_check(gpu, algos, &what("i64"), &keys::<i64>(n, dist, 13));
            }
        }
    });
}

#[test]
fn sort_floats_with_negatives_zeros_infinities_and_nans() {
    with_gpu(
        "sort_floats_with_negatives_zeros_infinities_and_nans",
        |gpu, algos| {
            let f32_specials = [
                -0.0f32,
                0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                -f32::NAN,
                f32::from_bits(0x7f80_0001), // signalling NaN payload
                -1.0,
            ];
            let f64_specials = [
                -0.0f64,
                0.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                -f64::NAN,
                -1.0,
            ];
            for n in sort_sizes(gpu, &[1usize, 31, 4097, 8191, (1 << 16) + 1, 1 << 20]) {
                for dist in [
                    Dist::Random,
                    Dist::Specials,
                    Dist::Reversed,
                    Dist::FewDistinct,
                ] {
                    let mut a = keys::<f32>(n, dist, 21);
                    let mut b = keys::<f64>(n, dist, 22);
                    if matches!(dist, Dist::Specials) {
                        a = float_specials(a, &f32_specials, 23);
                        b = float_specials(b, &f64_specials, 24);
                    }
                    sort_and_check(gpu, algos, &format!("f32 n={n} {dist:?}"), &a);
                    sort_and_check(gpu, algos, &format!("f64 n={n} {dist:?}"), &b);
                }
            }
            // Only zeros of both signs: one tie, so the output is the input order.
            let zeros: Vec<f32> = (0..10_000)
                .map(|i| if i % 3 == 0 { -0.0 } else { 0.0 })
                .collect();
            sort_and_check(gpu, algos, "f32 ±0.0 only", &zeros);
        },
    );
}

#[test]
fn sort_pairs_with_u64_values_and_partial_bit_ranges() {
    with_gpu(
        "sort_pairs_with_u64_values_and_partial_bit_ranges",
        |gpu, algos| {
            let stream = gpu.default_stream();
            let n = if gpu.is_simulator() {
                50_000 + 77
            } else {
                (1 << 20) + 77
            };
            let host_keys: Vec<u32> = keys::<u32>(n, Dist::Random, 31)
                .into_iter()
                .map(|k| k & 0xf_ffff)
                .collect();
            let want = reference(&host_keys);
            let keys_in = gpu.to_device(&host_keys).unwrap();
            let values: Vec<u64> = (0..n as u64).map(|i| i << 20 | 0xabc).collect();
            let values_in = gpu.to_device(&values).unwrap();
            let mut keys_out = gpu.alloc_zeroed::<u32>(n).unwrap();
            let mut values_out = gpu.alloc_zeroed::<u64>(n).unwrap();
            let mut temp = SortTemp::<u32, u64>::new();
            // 20 bits: three passes (8, 8, 4), so the last pass writes the output from the
            // alternate buffer after an odd number of ping-pongs.
            for bits in [0..20, 0..32] {
                algos
                    .sort_pairs_with_temp(
                        stream,
                        &keys_in,
                        &values_in,
                        &mut keys_out,
                        &mut values_out,
                        bits.clone(),
                        &mut temp,
                    )
                    .unwrap();
                check_keys(
                    &format!("bits {bits:?}"),
                    &keys_out.to_vec().unwrap(),
                    &want,
                );
                let got = values_out.to_vec().unwrap();
                for (i, (&v, &(_, w))) in got.iter().zip(&want).enumerate() {
                    assert_eq!(v, values[w], "bits {bits:?}: value {i}");
                }
            }
            // Bits 8..16 only: the order of the second byte, stable otherwise.
            let mut keys_out = gpu.alloc_zeroed::<u32>(n).unwrap();
            algos
                .sort_keys_with_temp(
                    stream,
                    &keys_in,
                    &mut keys_out,
                    8..16,
                    &mut SortTemp::<u32>::new(),
                )
                .unwrap();
            let mut want: Vec<u32> = host_keys.clone();
            want.sort_by_key(|k| (k >> 8) & 0xff);
            assert_eq!(keys_out.to_vec().unwrap(), want, "bits 8..16");
        },
    );
}

/// The single-block path (inputs of one tile): partial bit ranges, and keys whose radix image
/// is all ones (what the partial tile is padded with) must stay ahead of the padding.
#[test]
fn sort_single_block_bit_ranges_and_largest_keys() {
    with_gpu(
        "sort_single_block_bit_ranges_and_largest_keys",
        |gpu, algos| {
            let stream = gpu.default_stream();
            for n in [1usize, 100, 4097, 8000] {
                let host_keys: Vec<u32> = keys::<u32>(n, Dist::Random, n as u64 + 60)
                    .into_iter()
                    .enumerate()
                    .map(|(i, k)| if i % 5 == 0 { u32::MAX } else { k })
                    .collect();
                let keys_in = gpu.to_device(&host_keys).unwrap();
                let values: Vec<u64> = (0..n as u64).map(|i| i << 20 | 0xabc).collect();
                let values_in = gpu.to_device(&values).unwrap();
                let mut keys_out = gpu.alloc_zeroed::<u32>(n).unwrap();
                let mut values_out = gpu.alloc_zeroed::<u64>(n).unwrap();
                let mut temp = SortTemp::<u32, u64>::new();
                for bits in [0..32, 0..20, 8..16, 31..32] {
                    algos
                        .sort_pairs_with_temp(
                            stream,
                            &keys_in,
                            &values_in,
                            &mut keys_out,
                            &mut values_out,
                            bits.clone(),
                            &mut temp,
                        )
                        .unwrap();
                    let mask = ((1u64 << (bits.end - bits.start)) - 1) as u32;
                    let mut order: Vec<usize> = (0..n).collect();
                    order.sort_by_key(|&i| (host_keys[i] >> bits.start) & mask);
                    let want_keys: Vec<u32> = order.iter().map(|&i| host_keys[i]).collect();
                    let want_values: Vec<u64> = order.iter().map(|&i| values[i]).collect();
                    assert_eq!(keys_out.to_vec().unwrap(), want_keys, "n={n} bits {bits:?}");
                    assert_eq!(
                        values_out.to_vec().unwrap(),
                        want_values,
                        "n={n} bits {bits:?}: values (stability)"
                    );
                }
                // Floats: +NaN with every payload bit set has the all-ones image.
                let nan = f32::from_bits(u32::MAX >> 1);
                let floats: Vec<f32> = keys::<f32>(n, Dist::Random, n as u64 + 70)
                    .into_iter()
                    .enumerate()
                    .map(|(i, k)| if i % 7 == 3 { nan } else { k })
                    .collect();
                sort_and_check(
                    gpu,
                    algos,
                    &format!("f32 n={n} with +NaN(all ones)"),
                    &floats,
                );
                let wide: Vec<i64> = keys::<i64>(n, Dist::Random, n as u64 + 80)
                    .into_iter()
                    .enumerate()
                    .map(|(i, k)| if i % 3 == 1 { i64::MAX } else { k })
                    .collect();
                sort_and_check(gpu, algos, &format!("i64 n={n} with MAX"), &wide);
            }
        },
    );
}

#[test]
fn sort_reuses_its_state_across_sizes() {
    with_gpu("sort_reuses_its_state_across_sizes", |gpu, algos| {
        // The cached state (histogram, tickets, look-back words, epochs) must be clean after
        // every sort, whatever the size order.
        let sizes: &[usize] = if gpu.is_simulator() {
            &[12_000, 4097, 1, 9000, 12_000, 100]
        } else {
            &[1 << 20, 4097, 1, 3 << 18, 1 << 20, 100]
        };
        for (round, &n) in sizes.iter().enumerate() {
            let k = keys::<u32>(n, Dist::Random, round as u64 + 40);
            sort_and_check(gpu, algos, &format!("round {round} n={n}"), &k);
            let k = keys::<u64>(n, Dist::FewDistinct, round as u64 + 50);
            sort_and_check(gpu, algos, &format!("round {round} u64 n={n}"), &k);
        }
    });
}

fn assert_size_error<T>(what: &str, r: Result<T, Error>) {
    match r {
        Err(Error::SizeMismatch { .. }) | Err(Error::Argument { .. }) => {}
        Err(e) => panic!("{what}: expected a size/argument error, got {e}"),
        Ok(_) => panic!("{what}: expected an error"),
    }
}

#[test]
fn sort_rejects_bad_arguments_before_launching() {
    with_gpu(
        "sort_rejects_bad_arguments_before_launching",
        |gpu, algos| {
            let stream = gpu.default_stream();
            let keys = gpu.to_device(&[3u32, 1, 2]).unwrap();
            let mut short = gpu.alloc_zeroed::<u32>(2).unwrap();
            assert_size_error("short keys_out", algos.sort_keys(stream, &keys, &mut short));
            let values = gpu.to_device(&[1u32, 2]).unwrap();
            let mut keys_out = gpu.alloc_zeroed::<u32>(3).unwrap();
            let mut values_out = gpu.alloc_zeroed::<u32>(3).unwrap();
            assert_size_error(
                "values_in shorter than keys_in",
                algos.sort_pairs(stream, &keys, &values, &mut keys_out, &mut values_out),
            );
            let values = gpu.to_device(&[1u32, 2, 3]).unwrap();
            let mut short_values = gpu.alloc_zeroed::<u32>(2).unwrap();
            assert_size_error(
                "short values_out",
                algos.sort_pairs(stream, &keys, &values, &mut keys_out, &mut short_values),
            );
            assert_size_error(
                "empty bit range",
                algos.sort_keys_with_temp(
                    stream,
                    &keys,
                    &mut keys_out,
                    8..8,
                    &mut SortTemp::<u32>::new(),
                ),
            );
            assert_size_error(
                "bits past the key",
                algos.sort_keys_with_temp(
                    stream,
                    &keys,
                    &mut keys_out,
                    0..33,
                    &mut SortTemp::<u32>::new(),
                ),
            );
            // Nothing ran: the outputs are still zero, and a valid sort works afterwards.
            assert_eq!(keys_out.to_vec().unwrap(), vec![0, 0, 0]);
            algos.sort_keys(stream, &keys, &mut keys_out).unwrap();
            assert_eq!(keys_out.to_vec().unwrap(), vec![1, 2, 3]);
        },
    );
}
