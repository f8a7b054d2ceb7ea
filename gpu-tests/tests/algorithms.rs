//! The built-in device-wide algorithms of `gpu-algorithms` on a real GPU, against CPU
//! references, across sizes that hit every edge (empty, one element, partial tiles, 2^k ± 1,
//! many tiles) and several types and operators. Each test prints SKIPPED without a GPU.

use gpu_algorithms::{Algorithms, ReduceBuiltin, ScanBuiltin};
use gpu_host::gpu::ops::{Identity, Max, Min, ReduceOp, Sum};
use gpu_host::{DeviceCopy, Error, Gpu};
use gpu_test_kit::XorShift64Star as Rng;
use gpu_tests::{gpu_or_skip, sizes_for};
use half::{bf16, f16};

const SIZES: &[usize] = &[
    0,
    1,
    7,
    255,
    256,
    2047,
    2048,
    2049,
    4095,
    4096,
    4097,
    3 * 4096 + 1,
    65_537,
    (1 << 20) - 1,
    (1 << 22) + 3,
    (1 << 24) + 1,
];

/// Element types the tests generate, with a conversion to f64 for float error bounds.
trait TestValue: DeviceCopy + PartialEq + std::fmt::Debug + Send {
    const IS_FLOAT: bool;
    /// Machine epsilon for floats, 0 for integers (exact).
    const EPS: f64;
    fn random(rng: &mut Rng) -> Self;
    fn to_f64(self) -> f64;
}

macro_rules! int_value {
    ($($t:ty),*) => { $(
        impl TestValue for $t {
            const IS_FLOAT: bool = false;
            const EPS: f64 = 0.0;
            fn random(rng: &mut Rng) -> Self { rng.next_u64() as $t }
            fn to_f64(self) -> f64 { self as f64 }
        }
    )* };
}
int_value!(i32, u32, i64, u64);

impl TestValue for f32 {
    const IS_FLOAT: bool = true;
    const EPS: f64 = f32::EPSILON as f64;
    fn random(rng: &mut Rng) -> Self {
        rng.signed_f64() as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl TestValue for f64 {
    const IS_FLOAT: bool = true;
    const EPS: f64 = f64::EPSILON;
    fn random(rng: &mut Rng) -> Self {
        rng.signed_f64()
    }
    fn to_f64(self) -> f64 {
        self
    }
}
impl TestValue for f16 {
    const IS_FLOAT: bool = true;
    const EPS: f64 = 0.000_976_562_5;
    fn random(rng: &mut Rng) -> Self {
        f16::from_f64(rng.signed_f64())
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}
impl TestValue for bf16 {
    const IS_FLOAT: bool = true;
    const EPS: f64 = 0.007_812_5;
    fn random(rng: &mut Rng) -> Self {
        bf16::from_f64(rng.signed_f64())
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

fn random_vec<T: TestValue>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    (0..n).map(|_| T::random(&mut rng)).collect()
}

/// Checks one reduction result against the sequential CPU fold. Integers must match exactly
/// (wrapping); min/max exactly; float sums within `(n / 32768 + 64) · ε · Σ|x|` (the kernel's
/// bound is `(n / (blocks · 256) + 20) · ε · Σ|x|` with blocks ≥ 132 on the GPUs we run on; the
/// slack covers f16/bf16 accumulating in their own precision per step).
fn check_reduce<T: TestValue + ReduceBuiltin<O>, O: ReduceOp<T> + Identity<T>>(
    algos: &Algorithms,
    gpu: &Gpu,
    op: O,
    is_sum: bool,
    what: &str,
) {
    let stream = gpu.default_stream();
    for (k, &n) in sizes_for(gpu, SIZES).iter().enumerate() {
        let host: Vec<T> = random_vec(n, 100 + k as u64);
        let input = gpu.to_device(&host).unwrap();
        let init = op.identity();
        let got = algos.reduce(stream, &input, op, init).unwrap();
        let want = host.iter().fold(init, |a, &b| op.combine(a, b));
        if T::IS_FLOAT && is_sum {
            let abs: f64 = host.iter().map(|x| x.to_f64().abs()).sum();
            let exact: f64 = host.iter().map(|x| x.to_f64()).sum();
            let bound = ((n / 32768) as f64 + 64.0) * T::EPS * abs + T::EPS;
            let err = (got.to_f64() - exact).abs();
            assert!(
                err <= bound,
                "{what}, n = {n}: got {got:?}, exact {exact}, error {err:e} > bound {bound:e}"
            );
        } else {
            assert_eq!(got, want, "{what}, n = {n}");
        }
    }
}

#[test]
fn reduce_matches_cpu_for_every_builtin() {
    let Some(gpu) = gpu_or_skip("reduce_matches_cpu_for_every_builtin") else {
        return;
    };
    let algos = Algorithms::load(&gpu).unwrap();
    macro_rules! all_ops {
        ($($t:ty),*) => { $(
            check_reduce::<$t, _>(&algos, &gpu, Sum, true, concat!("sum ", stringify!($t)));
            check_reduce::<$t, _>(&algos, &gpu, Min, false, concat!("min ", stringify!($t)));
            check_reduce::<$t, _>(&algos, &gpu, Max, false, concat!("max ", stringify!($t)));
        )* };
    }
    all_ops!(f32, f64, i32, u32, i64, u64, f16, bf16);
}

#[test]
fn reduce_applies_init_and_reports_bad_output() {
    let Some(gpu) = gpu_or_skip("reduce_applies_init_and_reports_bad_output") else {
        return;
    };
    let algos = Algorithms::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let x = gpu.to_device(&[1u32, 2, 3]).unwrap();
    assert_eq!(algos.reduce(stream, &x, Sum, 100).unwrap(), 106);
    let empty = gpu.to_device::<u32>(&[]).unwrap();
    assert_eq!(algos.reduce(stream, &empty, Sum, 42).unwrap(), 42);
    let mut no_room = gpu.alloc_zeroed::<u32>(0).unwrap();
    let err = algos
        .reduce_into(stream, &x, Sum, 0, &mut no_room)
        .unwrap_err();
    assert!(matches!(err, Error::Argument { .. }), "{err}");
}

/// Checks inclusive and exclusive scans against sequential CPU scans.
fn check_scan<T: TestValue + ScanBuiltin<O>, O: ReduceOp<T> + Identity<T>>(
    algos: &Algorithms,
    gpu: &Gpu,
    op: O,
    is_sum: bool,
    what: &str,
) {
    let stream = gpu.default_stream();
    for (k, &n) in sizes_for(gpu, SIZES).iter().enumerate() {
        let host: Vec<T> = random_vec(n, 200 + k as u64);
        let input = gpu.to_device(&host).unwrap();
        let mut out = gpu.alloc_zeroed::<T>(n).unwrap();
        let init = if T::IS_FLOAT {
            op.identity()
        } else {
            host.first().copied().unwrap_or(op.identity())
        };
        for exclusive in [false, true] {
            if exclusive {
                algos
                    .exclusive_scan(stream, &input, &mut out, op, init)
                    .unwrap();
            } else {
                algos.inclusive_scan(stream, &input, &mut out, op).unwrap();
            }
            let got = out.to_vec().unwrap();
            let mut acc: Option<T> = exclusive.then_some(init);
            let mut abs = 0.0f64;
            let mut exact = 0.0f64;
            for i in 0..n {
                let (want, want_exact, want_abs) = if exclusive {
                    (acc.unwrap(), exact, abs)
                } else {
                    let a = acc.map_or(host[i], |a| op.combine(a, host[i]));
                    (a, exact + host[i].to_f64(), abs + host[i].to_f64().abs())
                };
                if T::IS_FLOAT && is_sum {
                    let bound = 64.0 * T::EPS * want_abs + T::EPS;
                    let err = (got[i].to_f64() - want_exact).abs();
                    assert!(
                        err <= bound,
                        "{what} (exclusive: {exclusive}), n = {n}, i = {i}: got {:?}, exact {want_exact}, error {err:e} > {bound:e}",
                        got[i]
                    );
                } else {
                    assert_eq!(
                        got[i], want,
                        "{what} (exclusive: {exclusive}), n = {n}, i = {i}"
                    );
                }
                acc = Some(acc.map_or(host[i], |a| op.combine(a, host[i])));
                exact += host[i].to_f64();
                abs += host[i].to_f64().abs();
            }
        }
    }
}

#[test]
fn scans_match_cpu_for_every_builtin() {
    let Some(gpu) = gpu_or_skip("scans_match_cpu_for_every_builtin") else {
        return;
    };
    let algos = Algorithms::load(&gpu).unwrap();
    check_scan::<f32, _>(&algos, &gpu, Sum, true, "sum f32");
    check_scan::<f64, _>(&algos, &gpu, Sum, true, "sum f64");
    check_scan::<i32, _>(&algos, &gpu, Sum, true, "sum i32");
    check_scan::<u32, _>(&algos, &gpu, Sum, true, "sum u32");
    check_scan::<i64, _>(&algos, &gpu, Sum, true, "sum i64");
    check_scan::<u64, _>(&algos, &gpu, Sum, true, "sum u64");
    check_scan::<f32, _>(&algos, &gpu, Max, false, "max f32");
    check_scan::<f32, _>(&algos, &gpu, Min, false, "min f32");
    check_scan::<i32, _>(&algos, &gpu, Max, false, "max i32");
    check_scan::<i32, _>(&algos, &gpu, Min, false, "min i32");
}

#[test]
fn scan_rejects_short_output_and_survives_many_calls() {
    let Some(gpu) = gpu_or_skip("scan_rejects_short_output_and_survives_many_calls") else {
        return;
    };
    let algos = Algorithms::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let x = gpu.to_device(&vec![1u32; 10_000]).unwrap();
    let mut short = gpu.alloc_zeroed::<u32>(9_999).unwrap();
    let err = algos
        .inclusive_scan(stream, &x, &mut short, Sum)
        .unwrap_err();
    assert!(matches!(err, Error::SizeMismatch { .. }), "{err}");
    assert!(
        short.to_vec().unwrap().iter().all(|&v| v == 0),
        "nothing was launched"
    );
    // Many calls over the same temporary storage (epochs), with sizes growing and shrinking.
    let mut out = gpu.alloc_zeroed::<u32>(10_000).unwrap();
    for round in 0..200u32 {
        let n = [10_000usize, 1, 4097, 8191][round as usize % 4];
        let input = gpu.to_device(&vec![round; n]).unwrap();
        algos.inclusive_scan(stream, &input, &mut out, Sum).unwrap();
        let got = out.to_vec().unwrap();
        assert_eq!(
            got[n - 1],
            round.wrapping_mul(n as u32),
            "round {round}, n {n}"
        );
    }
}

#[test]
fn select_and_partition_match_cpu() {
    use gpu_host::gpu::ops::CompareOp;
    let Some(gpu) = gpu_or_skip("select_and_partition_match_cpu") else {
        return;
    };
    let algos = Algorithms::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let ops = [
        (CompareOp::Less, 0.25f32),
        (CompareOp::GreaterEqual, 0.0),
        (CompareOp::Greater, 2.0),  // selects nothing
        (CompareOp::Less, 2.0),     // selects everything
        (CompareOp::NotEqual, 0.5), // almost everything
    ];
    for (k, &n) in sizes_for(&gpu, SIZES).iter().enumerate() {
        let host: Vec<f32> = random_vec(n, 300 + k as u64);
        let input = gpu.to_device(&host).unwrap();
        let mut selected = gpu.alloc_zeroed::<f32>(n).unwrap();
        let mut rejected = gpu.alloc_zeroed::<f32>(n).unwrap();
        let mut count = gpu.alloc_zeroed::<u32>(1).unwrap();
        for &(op, t) in &ops {
            let pred = |x: &f32| match op {
                CompareOp::Less => *x < t,
                CompareOp::GreaterEqual => *x >= t,
                CompareOp::Greater => *x > t,
                CompareOp::NotEqual => *x != t,
                _ => unreachable!(),
            };
            let want_sel: Vec<f32> = host.iter().copied().filter(pred).collect();
            let want_rej: Vec<f32> = host.iter().copied().filter(|x| !pred(x)).collect();
            algos
                .partition(
                    stream,
                    &input,
                    op,
                    t,
                    &mut selected,
                    &mut rejected,
                    &mut count,
                )
                .unwrap();
            let k = count.to_vec().unwrap()[0] as usize;
            assert_eq!(k, want_sel.len(), "{op:?} {t}, n = {n}: count");
            assert_eq!(
                &selected.to_vec().unwrap()[..k],
                &want_sel[..],
                "{op:?}, n = {n}"
            );
            assert_eq!(
                &rejected.to_vec().unwrap()[..n - k],
                &want_rej[..],
                "{op:?}, n = {n}"
            );
            algos
                .select_if(stream, &input, op, t, &mut selected, &mut count)
                .unwrap();
            assert_eq!(count.to_vec().unwrap()[0] as usize, want_sel.len());
            assert_eq!(&selected.to_vec().unwrap()[..k], &want_sel[..]);
        }
    }
    // Integers, and errors before launching.
    let ints: Vec<i64> = (0..100_000).map(|i| (i * 7919) % 1000 - 500).collect();
    let input = gpu.to_device(&ints).unwrap();
    let mut selected = gpu.alloc_zeroed::<i64>(ints.len()).unwrap();
    let mut count = gpu.alloc_zeroed::<u32>(1).unwrap();
    algos
        .select_if(
            stream,
            &input,
            CompareOp::Equal,
            7,
            &mut selected,
            &mut count,
        )
        .unwrap();
    let want: Vec<i64> = ints.iter().copied().filter(|&x| x == 7).collect();
    let k = count.to_vec().unwrap()[0] as usize;
    assert_eq!(&selected.to_vec().unwrap()[..k], &want[..]);
    // Partitions of 8-byte and 2-byte values: the other tile shapes of the shared-memory
    // compaction.
    let mut rejected = gpu.alloc_zeroed::<i64>(ints.len()).unwrap();
    algos
        .partition(
            stream,
            &input,
            CompareOp::Less,
            0,
            &mut selected,
            &mut rejected,
            &mut count,
        )
        .unwrap();
    let k = count.to_vec().unwrap()[0] as usize;
    let (want_sel, want_rej): (Vec<i64>, Vec<i64>) = ints.iter().partition(|&&x| x < 0);
    assert_eq!(
        &selected.to_vec().unwrap()[..k],
        &want_sel[..],
        "i64 partition"
    );
    assert_eq!(&rejected.to_vec().unwrap()[..ints.len() - k], &want_rej[..]);
    let halves: Vec<f16> = random_vec(70_001, 7);
    let input = gpu.to_device(&halves).unwrap();
    let mut selected = gpu.alloc_zeroed::<f16>(halves.len()).unwrap();
    let mut rejected = gpu.alloc_zeroed::<f16>(halves.len()).unwrap();
    let t = f16::from_f32(0.3);
    algos
        .partition(
            stream,
            &input,
            CompareOp::Greater,
            t,
            &mut selected,
            &mut rejected,
            &mut count,
        )
        .unwrap();
    let k = count.to_vec().unwrap()[0] as usize;
    let (want_sel, want_rej): (Vec<f16>, Vec<f16>) = halves.iter().partition(|&&x| x > t);
    assert_eq!(
        &selected.to_vec().unwrap()[..k],
        &want_sel[..],
        "f16 partition"
    );
    assert_eq!(
        &rejected.to_vec().unwrap()[..halves.len() - k],
        &want_rej[..]
    );
    let input = gpu.to_device(&ints).unwrap();
    let mut short = gpu.alloc_zeroed::<i64>(10).unwrap();
    let err = algos
        .select_if(stream, &input, CompareOp::Equal, 7, &mut short, &mut count)
        .unwrap_err();
    assert!(matches!(err, Error::SizeMismatch { .. }), "{err}");
}

#[test]
fn histogram_even_matches_cpu() {
    let Some(gpu) = gpu_or_skip("histogram_even_matches_cpu") else {
        return;
    };
    let algos = Algorithms::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    for (k, &n) in sizes_for(&gpu, SIZES).iter().enumerate() {
        let host: Vec<f32> = random_vec(n, 400 + k as u64);
        let input = gpu.to_device(&host).unwrap();
        // Few bins, many bins (global-atomic path beyond shared memory), a range that cuts
        // off part of the data.
        for &(bins, lower, upper) in &[
            (1usize, -1.0f32, 1.0f32),
            (256, -0.5, 0.5),
            (100_000, -1.0, 1.0),
        ] {
            let mut counts = gpu.alloc_zeroed::<u32>(bins).unwrap();
            algos
                .histogram_even(stream, &input, lower, upper, &mut counts)
                .unwrap();
            let mut want = vec![0u32; bins];
            let scale = bins as f32 / (upper - lower);
            for &x in &host {
                if x >= lower && x < upper {
                    want[(((x - lower) * scale) as usize).min(bins - 1)] += 1;
                }
            }
            assert_eq!(counts.to_vec().unwrap(), want, "n = {n}, {bins} bins");
        }
    }
    let bytes: Vec<u8> = (0..1_000_003u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let input = gpu.to_device(&bytes).unwrap();
    let mut counts = gpu.alloc_zeroed::<u32>(256).unwrap();
    algos
        .histogram_even(stream, &input, 0u8, 255u8, &mut counts)
        .unwrap();
    let mut want = vec![0u32; 256];
    for &b in &bytes {
        if b < 255 {
            want[b as usize * 256 / 255] += 1;
        }
    }
    assert_eq!(counts.to_vec().unwrap(), want, "u8 samples");
    let mut none = gpu.alloc_zeroed::<u32>(0).unwrap();
    let err = algos
        .histogram_even(stream, &input, 0u8, 255u8, &mut none)
        .unwrap_err();
    assert!(matches!(err, Error::Argument { .. }), "zero bins: {err}");
    let err = algos
        .histogram_even(stream, &input, 9u8, 9u8, &mut counts)
        .unwrap_err();
    assert!(matches!(err, Error::Argument { .. }), "empty range: {err}");
}

#[test]
fn segmented_reduce_matches_cpu() {
    let Some(gpu) = gpu_or_skip("segmented_reduce_matches_cpu") else {
        return;
    };
    let algos = Algorithms::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let n = 1_000_003;
    let host: Vec<i32> = random_vec(n, 500);
    let input = gpu.to_device(&host).unwrap();
    // Segment lengths 0, 1, 2, …, a long one, and the rest.
    let mut offsets = vec![0usize];
    let mut len = 0;
    while *offsets.last().unwrap() + len < n - 300_000 {
        offsets.push(offsets.last().unwrap() + len);
        len = (len * 3 + 1) % 5000;
    }
    offsets.push(n - 300_000);
    offsets.push(n);
    let segments = offsets.len() - 1;
    let mut out = gpu.alloc_zeroed::<i32>(segments).unwrap();
    algos
        .segmented_reduce(stream, &input, &offsets, Sum, 5, &mut out)
        .unwrap();
    let want: Vec<i32> = offsets
        .windows(2)
        .map(|w| {
            host[w[0]..w[1]]
                .iter()
                .fold(5i32, |a, &b| a.wrapping_add(b))
        })
        .collect();
    assert_eq!(out.to_vec().unwrap(), want);
    algos
        .segmented_reduce(stream, &input, &offsets, Max, i32::MIN, &mut out)
        .unwrap();
    let want: Vec<i32> = offsets
        .windows(2)
        .map(|w| host[w[0]..w[1]].iter().copied().fold(i32::MIN, i32::max))
        .collect();
    assert_eq!(out.to_vec().unwrap(), want);
    for bad in [vec![0usize, 5, 3], vec![0, n + 1], vec![]] {
        let err = algos
            .segmented_reduce(stream, &input, &bad, Sum, 0, &mut out)
            .unwrap_err();
        assert!(matches!(err, Error::Argument { .. }), "{bad:?}: {err}");
    }
}

#[test]
fn convert_rounds_like_half() {
    let Some(gpu) = gpu_or_skip("convert_rounds_like_half") else {
        return;
    };
    let algos = Algorithms::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    for n in sizes_for(&gpu, &[0usize, 1, 4095, 4097, 1 << 20]) {
        let host: Vec<f32> = random_vec::<f32>(n, 600)
            .iter()
            .map(|x| x * 1000.0)
            .collect();
        let input = gpu.to_device(&host).unwrap();
        let mut h = gpu.alloc_zeroed::<f16>(n).unwrap();
        let mut b = gpu.alloc_zeroed::<bf16>(n).unwrap();
        algos.convert(stream, &input, &mut h).unwrap();
        algos.convert(stream, &input, &mut b).unwrap();
        let want_h: Vec<f16> = host.iter().map(|&x| f16::from_f32(x)).collect();
        let want_b: Vec<bf16> = host.iter().map(|&x| bf16::from_f32(x)).collect();
        assert_eq!(h.to_vec().unwrap(), want_h, "f32 -> f16, n = {n}");
        assert_eq!(b.to_vec().unwrap(), want_b, "f32 -> bf16, n = {n}");
        let mut back = gpu.alloc_zeroed::<f32>(n).unwrap();
        algos.convert(stream, &b, &mut back).unwrap();
        let want: Vec<f32> = want_b.iter().map(|x| x.to_f32()).collect();
        assert_eq!(back.to_vec().unwrap(), want, "bf16 -> f32, n = {n}");
    }
}

mod collectives {
    use super::*;
    use device_selftest::collectives::{Affine, BLOCK_ITEMS, Compose};
    use gpu_algorithms::ScanTemp;
    use gpu_host::LaunchConfig;
    use gpu_tests::selftest::device_selftest::Module;

    const ID: Affine = Affine { a: 1, b: 0 };

    fn maps(n: usize, seed: u64) -> Vec<Affine> {
        let mut rng = Rng::new(seed | 1);
        (0..n)
            .map(|_| Affine {
                a: rng.next_u64() as u32 | 1,
                b: rng.next_u64() as u32,
            })
            .collect()
    }

    fn compose_all(xs: &[Affine]) -> Affine {
        xs.iter().fold(ID, |acc, &x| Compose.combine(acc, x))
    }

    #[test]
    fn warp_layer_keeps_lane_order() {
        let Some(gpu) = gpu_or_skip("warp_layer_keeps_lane_order") else {
            return;
        };
        let m = Module::load(&gpu).unwrap();
        let s = gpu.default_stream();
        let n = 32 * 64;
        let host = maps(n, 7);
        let input = gpu.to_device(&host).unwrap();
        let mut outs: Vec<_> = (0..3)
            .map(|_| gpu.alloc_zeroed::<Affine>(n).unwrap())
            .collect();
        let [r, i, e] = &mut outs[..] else {
            unreachable!()
        };
        m.selftest_warp_collectives(s, LaunchConfig::new(n as u32 / 128, 128), &input, r, i, e)
            .unwrap();
        let (r, i, e) = (
            r.to_vec().unwrap(),
            i.to_vec().unwrap(),
            e.to_vec().unwrap(),
        );
        for w in 0..n / 32 {
            let warp = &host[w * 32..w * 32 + 32];
            for l in 0..32 {
                let t = w * 32 + l;
                assert_eq!(r[t], compose_all(warp), "warp reduce, thread {t}");
                assert_eq!(i[t], compose_all(&warp[..=l]), "warp inclusive, thread {t}");
                assert_eq!(e[t], compose_all(&warp[..l]), "warp exclusive, thread {t}");
            }
        }
    }

    #[test]
    fn block_layer_keeps_order_for_every_block_size() {
        let Some(gpu) = gpu_or_skip("block_layer_keeps_order_for_every_block_size") else {
            return;
        };
        let m = Module::load(&gpu).unwrap();
        let s = gpu.default_stream();
        for &threads in &[32usize, 64, 256, 1024] {
            let tile = threads * BLOCK_ITEMS;
            let n = 5 * tile - 7; // the last tile is partial
            let blocks = n.div_ceil(tile);
            let host = maps(n, threads as u64);
            let input = gpu.to_device(&host).unwrap();
            let mut reduce = gpu.alloc_zeroed::<Affine>(blocks).unwrap();
            let mut o: Vec<_> = (0..4)
                .map(|_| gpu.alloc_zeroed::<Affine>(n).unwrap())
                .collect();
            let [inc, exc, pre, stri] = &mut o[..] else {
                unreachable!()
            };
            let cfg = LaunchConfig::new(blocks as u32, threads as u32);
            m.selftest_block_collectives(s, cfg, &input, &mut reduce, inc, exc, pre, stri)
                .unwrap();
            let (reduce, inc, exc, pre, stri) = (
                reduce.to_vec().unwrap(),
                inc.to_vec().unwrap(),
                exc.to_vec().unwrap(),
                pre.to_vec().unwrap(),
                stri.to_vec().unwrap(),
            );
            for k in 0..blocks {
                let mut t = host[k * tile..n.min((k + 1) * tile)].to_vec();
                t.resize(tile, ID);
                assert_eq!(reduce[k], compose_all(&t), "{threads} threads, block {k}");
                let seed = Affine { a: 3, b: k as u32 };
                for j in 0..tile.min(n - k * tile) {
                    let g = k * tile + j;
                    assert_eq!(inc[g], compose_all(&t[..=j]), "inclusive {threads}/{g}");
                    assert_eq!(exc[g], compose_all(&t[..j]), "exclusive {threads}/{g}");
                    let p = Compose.combine(seed, compose_all(&t[..j]));
                    assert_eq!(pre[g], p, "with prefix {threads}/{g}");
                    let (thread, item) = (j / BLOCK_ITEMS, j % BLOCK_ITEMS);
                    assert_eq!(stri[g], t[thread + item * threads], "striped {threads}/{g}");
                }
            }
        }
    }

    #[test]
    fn user_instantiated_scan_keeps_order_across_tiles() {
        let Some(gpu) = gpu_or_skip("user_instantiated_scan_keeps_order_across_tiles") else {
            return;
        };
        let m = Module::load(&gpu).unwrap();
        let s = gpu.default_stream();
        let mut temp = ScanTemp::new();
        for n in sizes_for(&gpu, &[1usize, 2047, 2048, 2049, 60_000, 1 << 21]) {
            let host = maps(n, n as u64);
            let input = gpu.to_device(&host).unwrap();
            let mut output = gpu.alloc_zeroed::<Affine>(n).unwrap();
            let (cfg, status, epoch) = temp.prepare::<Affine>(s, n).unwrap();
            m.selftest_compose_scan(s, cfg, &input, &mut output, status, epoch)
                .unwrap();
            let got = output.to_vec().unwrap();
            let mut acc = ID;
            for (i, &x) in host.iter().enumerate() {
                acc = Compose.combine(acc, x);
                assert_eq!(got[i], acc, "n = {n}, i = {i}");
            }
        }
    }

    #[test]
    fn readme_block_example() {
        let Some(gpu) = gpu_or_skip("readme_block_example") else {
            return;
        };
        let m = Module::load(&gpu).unwrap();
        let s = gpu.default_stream();
        let n: usize = 10_000;
        let host: Vec<u32> = (0..n as u32).map(|i| i % 7).collect();
        let x = gpu.to_device(&host).unwrap();
        let blocks = n.div_ceil(256 * 4);
        let mut sums = gpu.alloc_zeroed::<u32>(blocks).unwrap();
        let mut offsets = gpu.alloc_zeroed::<u32>(n).unwrap();
        m.block_sums(
            s,
            LaunchConfig::new(blocks as u32, 256),
            &x,
            &mut sums,
            &mut offsets,
        )
        .unwrap();
        let (sums, offsets) = (sums.to_vec().unwrap(), offsets.to_vec().unwrap());
        for k in 0..blocks {
            let t = &host[k * 1024..n.min(k * 1024 + 1024)];
            assert_eq!(sums[k], t.iter().sum::<u32>());
            let mut acc = 0;
            for (j, &v) in t.iter().enumerate() {
                assert_eq!(offsets[k * 1024 + j], acc);
                acc += v;
            }
        }
    }
}
