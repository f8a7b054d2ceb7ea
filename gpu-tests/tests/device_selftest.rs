//! Every kernel of the `device-selftest` crate on a real GPU, with the outputs documented on each
//! kernel recomputed on the CPU from the formulas in those docs. Each test prints SKIPPED when
//! there is no GPU.

use std::fmt::Debug;

use device_selftest::atomics::{
    ADD, AND, CAS_LOOP, CAS_ONCE, CAS_WINNERS, EXCH, EXCH_OLD_SUM, GLOBAL_GROUPS, GLOBAL_LEN, MAX,
    MIN, OR, SHARED_GROUPS, SHARED_LEN, SLOTS, SUB, U32_EXTRA, XOR,
};
use device_selftest::barriers::BarrierRecord;
use device_selftest::indices::IndexRecord;
use device_selftest::math::{MathRecord, inputs};
use device_selftest::shared_dynamic::DynamicRecord;
use device_selftest::shared_static::SharedRecord;
use device_selftest::time::TimeRecord;
use device_selftest::warp::{ShuffleRecord, VoteRecord, values};
use gpu_host::{DeviceCopy, Gpu, LaunchConfig};
use gpu_tests::gpu_or_skip;
use gpu_tests::selftest::device_selftest::Module;
use half::{bf16, f16};

const WARP: u32 = 32;

fn load(gpu: &Gpu) -> Module {
    Module::load(gpu).expect("loading the device_selftest module")
}

/// A 1-D launch of `blocks` × `threads`.
fn launch_1d(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig::new(blocks, threads)
}

// ---------------------------------------------------------------------------------------------
// Indices
// ---------------------------------------------------------------------------------------------

#[test]
fn selftest_indices() {
    let Some(gpu) = gpu_or_skip("selftest_indices") else {
        return;
    };
    let module = load(&gpu);
    let (grid, block) = ((2u32, 3u32, 2u32), (4u32, 2u32, 2u32));
    let block_size = block.0 * block.1 * block.2;
    let num_blocks = grid.0 * grid.1 * grid.2;
    let total = (block_size * num_blocks) as usize;
    assert_eq!((block_size, num_blocks, total), (16, 12, 192));

    let mut records = gpu.alloc_zeroed::<IndexRecord>(total).unwrap();
    let mut grid2d = gpu.alloc_zeroed::<u32>(total).unwrap();
    module
        .selftest_indices(
            gpu.default_stream(),
            LaunchConfig::new(grid, block),
            &mut records,
            &mut grid2d,
        )
        .unwrap();
    let records = records.to_vec().unwrap();
    let grid2d = grid2d.to_vec().unwrap();

    let global_size = [grid.0 * block.0, grid.1 * block.1, grid.2 * block.2];
    let mut expected = vec![IndexRecord::default(); total];
    let mut expected_2d = vec![u32::MAX; total];
    for bz in 0..grid.2 {
        for by in 0..grid.1 {
            for bx in 0..grid.0 {
                for tz in 0..block.2 {
                    for ty in 0..block.1 {
                        for tx in 0..block.0 {
                            let local = (tz * block.1 + ty) * block.0 + tx;
                            let blk = (bz * grid.1 + by) * grid.0 + bx;
                            let g = blk * block_size + local;
                            let global_id =
                                [bx * block.0 + tx, by * block.1 + ty, bz * block.2 + tz];
                            let index_2d =
                                [global_id[0], global_id[2] * global_size[1] + global_id[1]];
                            let lane = local % WARP;
                            let lt = (1u32 << lane) - 1;
                            let le = (2u32 << lane).wrapping_sub(1);
                            expected[g as usize] = IndexRecord {
                                thread_idx: [tx, ty, tz],
                                block_idx: [bx, by, bz],
                                block_dim: [block.0, block.1, block.2],
                                grid_dim: [grid.0, grid.1, grid.2],
                                local_index: local,
                                block_index: blk,
                                block_size,
                                num_blocks,
                                grid_size: total as u32,
                                global_index: g,
                                global_id,
                                global_size,
                                index_2d,
                                lane_id: lane,
                                warp_id: local / WARP,
                                warps_per_block: block_size.div_ceil(WARP),
                                lane_mask_lt: lt,
                                lane_mask_le: le,
                                lane_mask_eq: 1 << lane,
                                lane_mask_ge: !lt,
                                lane_mask_gt: !le,
                            };
                            let cell = (index_2d[1] * global_size[0] + index_2d[0]) as usize;
                            assert_eq!(expected_2d[cell], u32::MAX, "CPU model: 2-D cell reused");
                            expected_2d[cell] = g;
                        }
                    }
                }
            }
        }
    }
    // The CPU model itself: one partial warp per block, and the 2-D cells a permutation.
    assert!(
        expected
            .iter()
            .all(|r| r.warp_id == 0 && r.warps_per_block == 1)
    );
    let mut sorted = expected_2d.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..total as u32).collect::<Vec<_>>());

    for (g, (got, want)) in records.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "record of thread {g}");
    }
    assert_eq!(grid2d, expected_2d, "grid2d");
}

#[test]
fn selftest_grid_stride() {
    let Some(gpu) = gpu_or_skip("selftest_grid_stride") else {
        return;
    };
    let module = load(&gpu);
    let len = 1000;
    let mut out = gpu.alloc_zeroed::<u32>(len).unwrap();
    module
        .selftest_grid_stride(gpu.default_stream(), launch_1d(2, 64), &mut out)
        .unwrap();
    let expected: Vec<u32> = (0..len as u32).map(|i| 3 * i + 1).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
}

#[test]
fn selftest_gather_unchecked() {
    let Some(gpu) = gpu_or_skip("selftest_gather_unchecked") else {
        return;
    };
    let module = load(&gpu);
    let len = 1000;
    let src: Vec<u32> = (0..97).map(|i| i * 7 + 3).collect();
    let idx: Vec<u32> = (0..len as u32).map(|i| (i * 31) % 97).collect();
    let (src_d, idx_d) = (gpu.to_device(&src).unwrap(), gpu.to_device(&idx).unwrap());
    let mut out = gpu.alloc_zeroed::<u32>(len).unwrap();
    // SAFETY: every index is below 97, the length of `src`.
    unsafe {
        module.selftest_gather_unchecked(
            gpu.default_stream(),
            launch_1d(2, 64),
            &src_d,
            &idx_d,
            &mut out,
        )
    }
    .unwrap();
    let expected: Vec<u32> = idx.iter().map(|&i| src[i as usize]).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
}

// ---------------------------------------------------------------------------------------------
// Barriers and shared memory
// ---------------------------------------------------------------------------------------------

#[test]
fn selftest_barriers() {
    let Some(gpu) = gpu_or_skip("selftest_barriers") else {
        return;
    };
    let module = load(&gpu);
    let (blocks, threads) = (2u32, 128u32);
    let mut records = gpu
        .alloc_zeroed::<BarrierRecord>((blocks * threads) as usize)
        .unwrap();
    module
        .selftest_barriers(
            gpu.default_stream(),
            launch_1d(blocks, threads),
            &mut records,
        )
        .unwrap();
    let records = records.to_vec().unwrap();

    let count = (0..threads).filter(|l| l % 3 == 0).count() as u32;
    assert_eq!(count, 43);
    for b in 0..blocks {
        for l in 0..threads {
            let want = BarrierRecord {
                count,
                and_all: (0..threads).all(|l| l < 128) as u32,
                and_one_false: (0..threads).all(|l| l != 5) as u32,
                or_one: (0..threads).any(|l| l == 77) as u32,
                or_none: 0,
                neighbor: ((l + 1) % threads) * 2 + b * 1000,
                warp_neighbor: (l ^ 1) + 7,
                message: 1234 + b,
            };
            let g = (b * threads + l) as usize;
            assert_eq!(records[g], want, "block {b}, thread {l}");
        }
    }
}

#[test]
fn selftest_shared_static() {
    let Some(gpu) = gpu_or_skip("selftest_shared_static") else {
        return;
    };
    let module = load(&gpu);
    let mut records = gpu.alloc_zeroed::<SharedRecord>(64).unwrap();
    module
        .selftest_shared_static(gpu.default_stream(), launch_1d(1, 64), &mut records)
        .unwrap();
    let records = records.to_vec().unwrap();
    for (l, got) in records.iter().enumerate() {
        let n = (l + 1) % 64;
        let n32 = n as u32;
        let (lo_len, hi_len) = (40, 64 - 40);
        let want = SharedRecord {
            u64_neighbor: ((n as u64) << 35) | n as u64,
            v4_neighbor: [n32, n32 + 1, n32 + 2, n32 + 3],
            f3_neighbor: [n as f32, -(n as f32), 0.25],
            f32_neighbor: n as f32 * 1.5,
            u16_neighbor: (n * 500) as u16 as u32,
            u8_neighbor: (n * 3) as u8 as u32,
            b6_first: n32,
            b6_last: n32 + 5,
            unchecked: n32 ^ 0xABCD,
            volatile: n32 + 99,
            via_ptr: n32 * 7,
            filled: 0xF00D,
            split: (lo_len as u32 + n32 % hi_len as u32) ^ 0xABCD,
            split_lens: (lo_len * 1000 + hi_len) as u32,
            helper_same: 1,
            aligned: 1,
        };
        assert_eq!(*got, want, "thread {l}");
    }
}

#[test]
fn selftest_shared_dynamic() {
    let Some(gpu) = gpu_or_skip("selftest_shared_dynamic") else {
        return;
    };
    let module = load(&gpu);
    let threads = 64u32;
    let dynamic_bytes = 1024u32;
    let mut records = gpu.alloc_zeroed::<DynamicRecord>(64).unwrap();
    module
        .selftest_shared_dynamic(
            gpu.default_stream(),
            launch_1d(1, threads).with_shared_mem(dynamic_bytes),
            &mut records,
        )
        .unwrap();
    let records = records.to_vec().unwrap();
    let len_f32 = dynamic_bytes / 4;
    for (l, got) in records.iter().enumerate() {
        let n = (l as u32 + 1) % threads;
        let want = DynamicRecord {
            c_neighbor: n as u64 * 1_000_000_007,
            size: dynamic_bytes,
            len_f32,
            len_a: 64,
            len_b: len_f32 - 64,
            // `dynamic_at::<u64>(512, 64)`: 64 u64s at byte 512.
            len_c: 64,
            a_neighbor: n as f32 + 0.5,
            alias_bits: (n as f32 + 0.5).to_bits(),
            // Every thread adds 1.0 once to a slot zeroed before.
            atomic_sum: threads as f32,
            static_neighbor: n * 11,
            aligned: 1,
        };
        assert_eq!(*got, want, "thread {l}");
    }
}

// ---------------------------------------------------------------------------------------------
// Warp intrinsics
// ---------------------------------------------------------------------------------------------

/// The source thread of a full-warp shuffle, per the PTX rules (out-of-range sources keep
/// the thread's own value).
struct Lane {
    t: u32,
    l: u32,
    w: u32,
}

impl Lane {
    fn new(t: u32) -> Lane {
        let l = t % WARP;
        Lane { t, l, w: t - l }
    }
    fn up(&self, d: u32, width: u32) -> u32 {
        if self.l % width >= d {
            self.t - d
        } else {
            self.t
        }
    }
    fn down(&self, d: u32, width: u32) -> u32 {
        if self.l % width + d < width {
            self.t + d
        } else {
            self.t
        }
    }
    fn xor(&self, m: u32) -> u32 {
        self.w + (self.l ^ m)
    }
    fn idx(&self, src: u32, width: u32) -> u32 {
        self.w + (self.l & !(width - 1)) + src
    }
}

/// `[up 3, down 5, xor 6, idx 7]` of `v`.
fn four<T>(s: &Lane, v: impl Fn(u32) -> T) -> [T; 4] {
    [
        v(s.up(3, WARP)),
        v(s.down(5, WARP)),
        v(s.xor(6)),
        v(s.idx(7, WARP)),
    ]
}

#[test]
fn selftest_shuffles() {
    let Some(gpu) = gpu_or_skip("selftest_shuffles") else {
        return;
    };
    let module = load(&gpu);
    let mut records = gpu.alloc_zeroed::<ShuffleRecord>(64).unwrap();
    module
        .selftest_shuffles(gpu.default_stream(), launch_1d(1, 64), &mut records)
        .unwrap();
    let records = records.to_vec().unwrap();
    for (t, got) in records.iter().enumerate() {
        let s = Lane::new(t as u32);
        let [u0, u1, u2, u3] = four(&s, values::vu32);
        let want = ShuffleRecord {
            u64s: four(&s, values::vu64),
            i64s: four(&s, values::vi64),
            f64s: four(&s, values::vf64),
            usize_xor16: s.xor(16) as u64 * 0x1_0000_0001,
            u32s: [
                u0,
                u1,
                u2,
                u3,
                values::vu32(s.down(1, 8)),
                values::vu32(s.up(2, 16)),
                values::vu32(s.xor(1)),
                values::vu32(s.idx(3, 8)),
            ],
            i32s: four(&s, values::vi32),
            f32s: four(&s, values::vf32),
            // Each half-warp shuffles with its own mask and width 16.
            masked_down: values::vu32(s.down(1, 16)),
            u8_xor1: (s.xor(1) * 3) as u8 as u32,
            i16_down1: (-(s.down(1, WARP) as i16) * 100) as i32 as u32,
            f16_xor2: f16::from_f32(s.xor(2) as f32).to_bits() as u32,
            bf16_idx31: bf16::from_f32(2.0 * s.idx(31, WARP) as f32).to_bits() as u32,
            reserved: 0,
        };
        assert_eq!(*got, want, "thread {t}");
    }
}

/// `ballot` over the lanes of `lanes` (bit `l` set where `pred(l)`).
fn ballot(lanes: impl Iterator<Item = u32>, pred: impl Fn(u32) -> bool) -> u32 {
    lanes.filter(|&l| pred(l)).fold(0, |m, l| m | 1 << l)
}

/// The `match_any` mask of lane `l` among `lanes` for the per-lane value `v`.
fn match_any<V: PartialEq>(lanes: impl Iterator<Item = u32>, l: u32, v: impl Fn(u32) -> V) -> u32 {
    let mine = v(l);
    ballot(lanes, |k| v(k) == mine)
}

#[test]
fn selftest_votes() {
    let Some(gpu) = gpu_or_skip("selftest_votes") else {
        return;
    };
    let module = load(&gpu);
    let mut records = gpu.alloc_zeroed::<VoteRecord>(64).unwrap();
    module
        .selftest_votes(gpu.default_stream(), launch_1d(1, 64), &mut records)
        .unwrap();
    let records = records.to_vec().unwrap();

    let full = || 0..WARP;
    let lo = || 0..16u32;
    let hi = || 16..WARP;
    let mask_of = |lanes: std::ops::Range<u32>| ballot(lanes, |_| true);
    for (t, got) in records.iter().enumerate() {
        let t = t as u32;
        let (l, w) = (t % WARP, t - t % WARP);
        let want = VoteRecord {
            all_reduce_max_u64: full().map(|k| ((w + k) as u64) << 33).max().unwrap(),
            all_true: 1,
            all_false: full().all(|k| k < 31) as u32,
            any_true: full().any(|k| k == 5) as u32,
            any_false: 0,
            ballot: ballot(full(), |k| k % 3 == 0),
            ballot_half: if l < 16 {
                ballot(lo(), |k| k % 2 == 0)
            } else {
                ballot(hi(), |k| k % 2 == 1)
            },
            all_sync_half: if l < 16 {
                lo().all(|k| k < 16)
            } else {
                hi().all(|k| k != 20)
            } as u32,
            any_sync_half: if l < 16 {
                lo().any(|k| k == 3)
            } else {
                hi().any(|k| k == 3)
            } as u32,
            active_full: mask_of(full()),
            // A snapshot inside `if l < 8`: the 8 lanes that took the branch (what current
            // GPUs report; not an architectural guarantee, see the kernel's docs). The
            // simulator does not track convergence: it reports the warp's live lanes.
            active_branch: match (l < 8, gpu.is_simulator()) {
                (false, _) => 0,
                (true, false) => mask_of(0..8),
                (true, true) => mask_of(full()),
            },
            match_any_u32: match_any(full(), l, |k| k / 4),
            match_any_u64: match_any(full(), l, |k| ((k % 2) as u64) << 40),
            match_all_same: mask_of(full()),
            match_all_diff: 0,
            match_all_u64: mask_of(full()),
            match_half: if l < 16 {
                match_any(lo(), l, |k| k % 2)
            } else {
                mask_of(hi())
            },
            reduce_add_u32: full().sum(),
            reduce_add_i32: full().map(|k| -(k as i32)).sum(),
            reduce_min_i32: full().map(|k| 10 - k as i32).min().unwrap(),
            reduce_max_i32: full().map(|k| k as i32 - 50).max().unwrap(),
            reduce_min_u32: full().map(|k| k + 100).min().unwrap(),
            reduce_max_u32: full().map(|k| k * 3).max().unwrap(),
            reduce_and: full().fold(!0, |a, k| a & !(1u32 << k)),
            reduce_or: full().fold(0, |a, k| a | 1u32 << k),
            reduce_xor: full().fold(0, |a, k| a ^ k),
            reduce_half: if l < 16 {
                lo().sum()
            } else {
                hi().max().unwrap()
            },
            all_reduce_sum_f32: full().map(|k| k as f32).sum(),
            compaction_rank: (0..l).filter(|k| k % 3 == 0).count() as u32,
        };
        assert_eq!(*got, want, "thread {t} (lane {l})");
    }
    // Spot checks of the CPU model against the constants in the kernel's docs.
    assert_eq!(ballot(full(), |k| k % 3 == 0), 0x4924_9249);
    assert_eq!(full().sum::<u32>(), 496);
}

// ---------------------------------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------------------------------

/// A slot type of the atomic tests, host side.
trait Slot: Copy + PartialEq + Debug + DeviceCopy {
    const NAME: &str;
    const UNSIGNED: bool;
    const FLOAT: bool;
    /// Type max (`f*::MAX` for floats): the initial value of `MIN`.
    const HIGHEST: Self;
    /// Type min (`-f*::MAX` for floats): the initial value of `MAX`.
    const LOWEST: Self;
    /// `v as Self`.
    fn of(v: i64) -> Self;
    /// The value as an integer, `None` for a float that is not one.
    fn int(self) -> Option<i64>;
}

macro_rules! slot_int {
    ($($t:ty, $unsigned:literal;)*) => { $(
        impl Slot for $t {
            const NAME: &str = stringify!($t);
            const UNSIGNED: bool = $unsigned;
            const FLOAT: bool = false;
            const HIGHEST: Self = <$t>::MAX;
            const LOWEST: Self = <$t>::MIN;
            fn of(v: i64) -> Self {
                v as $t
            }
            fn int(self) -> Option<i64> {
                Some(self as i64)
            }
        }
    )* };
}
slot_int!(u32, true; i32, false; u64, true; i64, false;);

macro_rules! slot_float {
    ($($t:ty;)*) => { $(
        impl Slot for $t {
            const NAME: &str = stringify!($t);
            const UNSIGNED: bool = false;
            const FLOAT: bool = true;
            const HIGHEST: Self = <$t>::MAX;
            const LOWEST: Self = -<$t>::MAX;
            fn of(v: i64) -> Self {
                v as $t
            }
            fn int(self) -> Option<i64> {
                (self.fract() == 0.0 && self.abs() < 1e15).then_some(self as i64)
            }
        }
    )* };
}
slot_float!(f32; f64;);

/// Initial value of slot `k` (the module table's "initial value" column).
fn initial<T: Slot>(k: usize) -> T {
    match k {
        SUB => T::of(10000),
        MIN => T::HIGHEST,
        MAX => T::LOWEST,
        AND if !T::FLOAT => T::of(-1), // all ones
        _ => T::of(0),
    }
}

fn is_64_bit<T>() -> bool {
    size_of::<T>() == 8
}

/// Checks one group of `SLOTS` slots after `n` participating threads ran the slot table.
fn check_group<T: Slot>(what: &str, group: &[T], n: i64) {
    assert_eq!(group.len(), SLOTS);
    let ctx = |k: usize| format!("{} {what}, slot {k}: {:?}", T::NAME, group);
    let triangle = n * (n + 1) / 2;
    let exact = |k: usize, want: T| assert_eq!(group[k], want, "{}", ctx(k));
    let in_1_to_n = |k: usize| -> i64 {
        let v = group[k].int();
        assert!(
            matches!(v, Some(1..)) && v.unwrap() <= n,
            "{}: not in 1..={n}",
            ctx(k)
        );
        v.unwrap()
    };

    exact(ADD, T::of(triangle));
    exact(SUB, T::of(10000 - triangle));
    // minmax(r, n) covers every residue of n: unsigned 5..n+5, signed/float -(n/2)..n-n/2.
    let (lowest, highest) = if T::UNSIGNED {
        (5, n - 1 + 5)
    } else {
        (-(n / 2), n - 1 - n / 2)
    };
    exact(MIN, T::of(lowest));
    exact(MAX, T::of(highest));
    if T::FLOAT {
        exact(AND, T::of(0));
        exact(OR, T::of(0));
        exact(XOR, T::of(0));
    } else {
        // n >= 32: every bit 0..32 is cleared by `and` and set by `or`.
        assert!(n >= 32);
        let and = if is_64_bit::<T>() {
            0xFFFF_FFFF_0000_0000u64 as i64
        } else {
            0
        };
        exact(AND, T::of(and));
        exact(OR, T::of(0xFFFF_FFFF));
        exact(XOR, T::of((1..=n).fold(0, |a, v| a ^ v)));
    }
    let exch = in_1_to_n(EXCH);
    exact(EXCH_OLD_SUM, T::of(triangle - exch));
    exact(CAS_LOOP, T::of(n));
    in_1_to_n(CAS_ONCE);
    exact(CAS_WINNERS, T::of(1));
}

/// `count` `atom.inc` (`wrap` true) or `atom.dec` with limit 9, from 0.
fn wrap_counter(count: u32, inc: bool) -> u32 {
    (0..count).fold(0, |old, _| {
        if inc {
            if old >= 9 { 0 } else { old + 1 }
        } else if old == 0 || old > 9 {
            9
        } else {
            old - 1
        }
    })
}

/// Checks a global buffer after `selftest_atomics_global` (2 blocks × 64 threads).
fn check_global<T: Slot>(buf: &[T]) {
    assert!(buf.len() >= GLOBAL_LEN);
    assert_eq!(GLOBAL_GROUPS, 9);
    for group in 0..GLOBAL_GROUPS {
        // Groups 3/4 and 7/8 are block-scoped: one block (64 threads) each.
        let n = if matches!(group, 3 | 4 | 7 | 8) {
            64
        } else {
            128
        };
        let slots = &buf[group * SLOTS..(group + 1) * SLOTS];
        check_group(&format!("global group {group} (n = {n})"), slots, n);
    }
}

#[test]
fn selftest_atomics_global() {
    let Some(gpu) = gpu_or_skip("selftest_atomics_global") else {
        return;
    };
    let module = load(&gpu);
    let stream = gpu.default_stream();
    let u32_len = GLOBAL_LEN + U32_EXTRA;
    assert_eq!((GLOBAL_LEN, u32_len), (108, 110));
    let mut u32s = gpu.alloc_zeroed::<u32>(u32_len).unwrap();
    let mut i32s = gpu.alloc_zeroed::<i32>(GLOBAL_LEN).unwrap();
    let mut u64s = gpu.alloc_zeroed::<u64>(GLOBAL_LEN).unwrap();
    let mut i64s = gpu.alloc_zeroed::<i64>(GLOBAL_LEN).unwrap();
    let mut f32s = gpu.alloc_zeroed::<f32>(GLOBAL_LEN).unwrap();
    let mut f64s = gpu.alloc_zeroed::<f64>(GLOBAL_LEN).unwrap();

    // Initialization: 1 block × 128 threads (at least 110).
    module
        .selftest_atomics_init(
            stream,
            launch_1d(1, 128),
            &mut u32s,
            &mut i32s,
            &mut u64s,
            &mut i64s,
            &mut f32s,
            &mut f64s,
        )
        .unwrap();
    fn initial_buffer<T: Slot>(len: usize) -> Vec<T> {
        (0..len)
            .map(|i| {
                if i < GLOBAL_LEN {
                    initial(i % SLOTS)
                } else {
                    T::of(0)
                }
            })
            .collect()
    }
    assert_eq!(u32s.to_vec().unwrap(), initial_buffer::<u32>(u32_len));
    assert_eq!(i32s.to_vec().unwrap(), initial_buffer::<i32>(GLOBAL_LEN));
    assert_eq!(u64s.to_vec().unwrap(), initial_buffer::<u64>(GLOBAL_LEN));
    assert_eq!(i64s.to_vec().unwrap(), initial_buffer::<i64>(GLOBAL_LEN));
    assert_eq!(f32s.to_vec().unwrap(), initial_buffer::<f32>(GLOBAL_LEN));
    assert_eq!(f64s.to_vec().unwrap(), initial_buffer::<f64>(GLOBAL_LEN));

    // The operations: 2 blocks × 64 threads.
    module
        .selftest_atomics_global(
            stream,
            launch_1d(2, 64),
            &mut u32s,
            &mut i32s,
            &mut u64s,
            &mut i64s,
            &mut f32s,
            &mut f64s,
        )
        .unwrap();
    let u32s = u32s.to_vec().unwrap();
    check_global(&u32s);
    check_global(&i32s.to_vec().unwrap());
    check_global(&u64s.to_vec().unwrap());
    check_global(&i64s.to_vec().unwrap());
    check_global(&f32s.to_vec().unwrap());
    check_global(&f64s.to_vec().unwrap());
    assert_eq!(
        u32s[GLOBAL_LEN],
        wrap_counter(128, true),
        "u32 inc_wrap(9) slot"
    );
    assert_eq!(
        u32s[GLOBAL_LEN + 1],
        wrap_counter(128, false),
        "u32 dec_wrap(9) slot"
    );
    assert_eq!((wrap_counter(128, true), wrap_counter(128, false)), (8, 2));
}

/// Checks a `selftest_atomics_shared` output (2 blocks × 64): per block, `SHARED_GROUPS`
/// groups with n = 64, then `extra` more slots (checked by the caller), then zeros.
fn check_shared<T: Slot>(out: &[T], extra: usize) {
    assert_eq!(out.len(), 128);
    assert_eq!(SHARED_GROUPS, 5);
    for b in 0..2 {
        let block = &out[b * 64..(b + 1) * 64];
        for group in 0..SHARED_GROUPS {
            let slots = &block[group * SLOTS..(group + 1) * SLOTS];
            check_group(&format!("block {b}, shared group {group}"), slots, 64);
        }
        for (l, v) in block.iter().enumerate().skip(SHARED_LEN + extra) {
            assert_eq!(
                *v,
                T::of(0),
                "{} block {b}, out[{l}] past the slots",
                T::NAME
            );
        }
    }
}

#[test]
fn selftest_atomics_shared() {
    let Some(gpu) = gpu_or_skip("selftest_atomics_shared") else {
        return;
    };
    let module = load(&gpu);
    let len = 128;
    let mut u32s = gpu.alloc_zeroed::<u32>(len).unwrap();
    let mut i32s = gpu.alloc_zeroed::<i32>(len).unwrap();
    let mut u64s = gpu.alloc_zeroed::<u64>(len).unwrap();
    let mut i64s = gpu.alloc_zeroed::<i64>(len).unwrap();
    let mut f32s = gpu.alloc_zeroed::<f32>(len).unwrap();
    let mut f64s = gpu.alloc_zeroed::<f64>(len).unwrap();
    module
        .selftest_atomics_shared(
            gpu.default_stream(),
            launch_1d(2, 64),
            &mut u32s,
            &mut i32s,
            &mut u64s,
            &mut i64s,
            &mut f32s,
            &mut f64s,
        )
        .unwrap();
    assert_eq!(SHARED_LEN, 60);
    let u32s = u32s.to_vec().unwrap();
    check_shared(&u32s, U32_EXTRA);
    check_shared(&i32s.to_vec().unwrap(), 0);
    check_shared(&u64s.to_vec().unwrap(), 0);
    check_shared(&i64s.to_vec().unwrap(), 0);
    check_shared(&f32s.to_vec().unwrap(), 0);
    check_shared(&f64s.to_vec().unwrap(), 0);
    for b in 0..2 {
        assert_eq!(
            u32s[b * 64 + SHARED_LEN],
            wrap_counter(64, true),
            "block {b}: u32 inc_wrap(9) slot"
        );
        assert_eq!(
            u32s[b * 64 + SHARED_LEN + 1],
            wrap_counter(64, false),
            "block {b}: u32 dec_wrap(9) slot"
        );
    }
    assert_eq!((wrap_counter(64, true), wrap_counter(64, false)), (4, 6));
}

// ---------------------------------------------------------------------------------------------
// Math
// ---------------------------------------------------------------------------------------------

/// `|got - want| <= max(abs, rel * |want|)`.
#[track_caller]
fn assert_close(what: &str, t: u32, got: f32, want: f64, rel: f64, abs: f64) {
    let err = (got as f64 - want).abs();
    let tol = abs.max(rel * want.abs());
    assert!(
        err <= tol,
        "thread {t}: {what} = {got}, expected {want} (error {err:e} > tolerance {tol:e})"
    );
}

fn ffs32(x: u32) -> u32 {
    if x == 0 { 0 } else { x.trailing_zeros() + 1 }
}

fn ffs64(x: u64) -> u32 {
    if x == 0 { 0 } else { x.trailing_zeros() + 1 }
}

/// `__byte_perm(x, y, s)`: result byte `i` is byte `(s >> 4i) & 7` of the 8-byte value `y:x`.
fn byte_perm(x: u32, y: u32, s: u32) -> u32 {
    let bytes = (((y as u64) << 32) | x as u64).to_le_bytes();
    (0..4).fold(0, |r, i| {
        r | (bytes[((s >> (4 * i)) & 7) as usize] as u32) << (8 * i)
    })
}

#[test]
fn selftest_math() {
    let Some(gpu) = gpu_or_skip("selftest_math") else {
        return;
    };
    let module = load(&gpu);
    let mut records = gpu.alloc_zeroed::<MathRecord>(32).unwrap();
    module
        .selftest_math(gpu.default_stream(), launch_1d(1, 32), &mut records)
        .unwrap();
    let records = records.to_vec().unwrap();
    // Relative error of the `.approx` instructions (the PTX ISA states 2^-22 or better for
    // those used here, 2 ulp for `div.approx`): 1e-5 is safe. `lg2.approx` has an absolute
    // error of 2^-22 on (0.5, 2), where log(1) = 0 makes a relative bound useless: 1e-6 there.
    const REL: f64 = 1e-5;
    const LOG_ABS: f64 = 1e-6;
    const TANH_REL: f64 = 1e-3; // tanh.approx: 2^-11 relative
    const TRIG_ABS: f64 = 1e-5; // sin/cos.approx: 2^-20.5 absolute on [-π, π]
    // tanh(0) = 0 (thread 15): an absolute floor for the relative tanh check.
    const TANH_ABS: f64 = 1e-6;
    for (t, r) in records.iter().enumerate() {
        let t = t as u32;
        let (x, xd, a32, a64) = (inputs::x(t), inputs::xd(t), inputs::a32(t), inputs::a64(t));
        let (b32, b64) = (inputs::B32, inputs::B64);
        let xf = x as f64;

        // Exact results.
        assert_eq!(r.sqrt_f64, xd.sqrt(), "thread {t}: sqrt_f64");
        assert_eq!(r.rcp_f64, 1.0 / xd, "thread {t}: rcp_f64");
        assert_eq!(r.fma_f64, xd.mul_add(3.0, -1.0), "thread {t}: fma_f64");
        assert_eq!(r.sqrt, x.sqrt(), "thread {t}: sqrt");
        assert_eq!(r.fma, x.mul_add(3.0, 1.0), "thread {t}: fma");
        assert_eq!(r.fmin, x.min(2.0), "thread {t}: fmin");
        assert_eq!(r.fmax, x.max(2.0), "thread {t}: fmax");
        assert_eq!(
            r.saturate,
            (x - 1.0).clamp(0.0, 1.0),
            "thread {t}: saturate"
        );

        // Integer operations.
        let want_ints = (
            ((a64 as u128 * b64 as u128) >> 64) as u64,
            ((a64 as i64 as i128 * b64 as i64 as i128) >> 64) as i64,
            a64.reverse_bits(),
            ((a32 as u64 * b32 as u64) >> 32) as u32,
            ((a32 as i32 as i64 * b32 as i32 as i64) >> 32) as i32,
        );
        assert_eq!(
            (
                r.mul_hi_u64,
                r.mul_hi_i64,
                r.brev64,
                r.mul_hi_u32,
                r.mul_hi_i32
            ),
            want_ints,
            "thread {t}: (mul_hi_u64, mul_hi_i64, brev64, mul_hi_u32, mul_hi_i32)"
        );
        let want_bits = [
            a32.count_ones(),
            a64.count_ones(),
            (a32 >> t).leading_zeros(),
            (a64 >> t).leading_zeros(),
            a32.reverse_bits(),
            ffs32(a32 << t),
            ffs64(a64 << t),
            byte_perm(a32, b32, 0x7531),
            ffs32(0),
        ];
        assert_eq!(
            [
                r.popc,
                r.popc64,
                r.clz,
                r.clz64,
                r.brev,
                r.ffs,
                r.ffs64,
                r.byte_perm,
                r.ffs_zero
            ],
            want_bits,
            "thread {t}: [popc, popc64, clz, clz64, brev, ffs, ffs64, byte_perm, ffs_zero]"
        );

        // Approximations.
        assert_close("rsqrt", t, r.rsqrt, 1.0 / xf.sqrt(), REL, 0.0);
        assert_close("sqrt_approx", t, r.sqrt_approx, xf.sqrt(), REL, 0.0);
        assert_close("rcp_approx", t, r.rcp_approx, 1.0 / xf, REL, 0.0);
        assert_close("exp2_approx", t, r.exp2_approx, xf.exp2(), REL, 0.0);
        assert_close("log2_approx", t, r.log2_approx, xf.log2(), REL, LOG_ABS);
        assert_close(
            "sin_approx",
            t,
            r.sin_approx,
            (xf - 4.0).sin(),
            0.0,
            TRIG_ABS,
        );
        assert_close(
            "cos_approx",
            t,
            r.cos_approx,
            (xf - 4.0).cos(),
            0.0,
            TRIG_ABS,
        );
        let tanh = (xf - 4.0).tanh();
        assert_close("tanh_approx", t, r.tanh_approx, tanh, TANH_REL, TANH_ABS);
        assert_close("exp_approx", t, r.exp_approx, (xf - 4.0).exp(), REL, 0.0);
        assert_close(
            "exp10_approx",
            t,
            r.exp10_approx,
            10f64.powf(xf / 4.0),
            REL,
            0.0,
        );
        assert_close("ln_approx", t, r.ln_approx, xf.ln(), REL, LOG_ABS);
        assert_close("log10_approx", t, r.log10_approx, xf.log10(), REL, LOG_ABS);
        assert_close("div_approx", t, r.div_approx, 1.0 / xf, REL, 0.0);
        assert_close("powf_approx", t, r.powf_approx, xf.powf(1.5), REL, 0.0);
    }
}

// ---------------------------------------------------------------------------------------------
// Time and printf
// ---------------------------------------------------------------------------------------------

#[test]
fn selftest_time() {
    let Some(gpu) = gpu_or_skip("selftest_time") else {
        return;
    };
    let module = load(&gpu);
    let mut records = gpu.alloc_zeroed::<TimeRecord>(64).unwrap();
    module
        .selftest_time(gpu.default_stream(), launch_1d(2, 32), &mut records)
        .unwrap();
    let records = records.to_vec().unwrap();
    let sms = gpu.properties().multiprocessor_count;
    for (t, r) in records.iter().enumerate() {
        assert!(r.clock64_delta > 0, "thread {t}: {r:?}");
        assert!(r.clock_delta > 0, "thread {t}: {r:?}");
        // Only `> 0` is guaranteed: `nanosleep` may sleep less than asked.
        assert!(r.globaltimer_delta > 0, "thread {t}: {r:?}");
        assert!(r.globaltimer_start > 0, "thread {t}: {r:?}");
        assert!(r.sm_id < sms, "thread {t}: sm_id {} of {sms} SMs", r.sm_id);
    }
}

#[test]
fn selftest_printf() {
    let Some(gpu) = gpu_or_skip("selftest_printf") else {
        return;
    };
    let module = load(&gpu);
    let mut results = gpu.alloc_zeroed::<[i32; 2]>(4).unwrap();
    module
        .selftest_printf(gpu.default_stream(), launch_1d(1, 4), &mut results)
        .unwrap();
    gpu.synchronize().unwrap();
    // `vprintf` returns the number of arguments: none for the plain line; for the full one
    // t, x, big, neg, hex, u8, the `*` width, its value, f64, p, s, c.
    let full_args = [
        "t", "x", "big", "neg", "hex", "u8", "width", "w", "f64", "p", "s", "c",
    ]
    .len() as i32;
    assert_eq!(results.to_vec().unwrap(), vec![[0, full_args]; 4]);
}
