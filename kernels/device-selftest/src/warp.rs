//! Warp shuffles (every mode, width and value size), votes, match, reductions, active mask.

use gpu::prelude::*;
use half::{bf16, f16};

/// Shuffle results of one thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, DeviceCopy)]
pub struct ShuffleRecord {
    /// `[up 3, down 5, xor 6, idx 7]` of `vu64`.
    pub u64s: [u64; 4],
    /// Same for `vi64`.
    pub i64s: [i64; 4],
    /// Same for `vf64`.
    pub f64s: [f64; 4],
    pub usize_xor16: u64,
    /// `[up 3, down 5, xor 6, idx 7, down 1 width 8, up 2 width 16, xor 1 width 4, idx 3 width 8]`
    /// of `vu32`.
    pub u32s: [u32; 8],
    /// `[up 3, down 5, xor 6, idx 7]` of `vi32`.
    pub i32s: [i32; 4],
    /// Same for `vf32`.
    pub f32s: [f32; 4],
    pub masked_down: u32,
    pub u8_xor1: u32,
    pub i16_down1: u32,
    pub f16_xor2: u32,
    pub bf16_idx31: u32,
    pub reserved: u32,
}

/// The per-thread values shuffled by [`selftest_shuffles`], as functions of the global index.
pub mod values {
    pub fn vu32(t: u32) -> u32 {
        100 + t
    }
    pub fn vi32(t: u32) -> i32 {
        -(t as i32) - 1
    }
    pub fn vf32(t: u32) -> f32 {
        t as f32 * 0.5
    }
    pub fn vu64(t: u32) -> u64 {
        ((t as u64) << 40) | (t as u64 + 7)
    }
    pub fn vi64(t: u32) -> i64 {
        -(((t as i64) << 33) + 3)
    }
    pub fn vf64(t: u32) -> f64 {
        t as f64 * 1.25 + 1e10
    }
}

use values::*;

/// Launch: 1 block × 64 threads (two full warps); `records.len() == 64`.
///
/// For thread `t`, lane `l = t % 32`, warp base `w = t - l`, "v(s)" below is the value
/// function of the field (see [`values`]) at source thread `s`:
/// - `up 3`: `v(l >= 3 ? t - 3 : t)`; `down 5`: `v(l + 5 < 32 ? t + 5 : t)`;
///   `xor 6`: `v(w + (l ^ 6))`; `idx 7`: `v(w + 7)`.
/// - `down 1 width 8`: `v(l % 8 < 7 ? t + 1 : t)`; `up 2 width 16`: `v(l % 16 >= 2 ? t - 2 : t)`;
///   `xor 1 width 4`: `v(w + (l ^ 1))`; `idx 3 width 8`: `v(w + (l & !7) + 3)`.
/// - `usize_xor16 = s * 0x1_0000_0001` with `s = w + (l ^ 16)`.
/// - `masked_down` (each half-warp with its own mask, width 16): `vu32(l % 16 < 15 ? t + 1 : t)`.
/// - `u8_xor1 = ((s * 3) as u8)` with `s = w + (l ^ 1)`.
/// - `i16_down1 = (-(s as i16) * 100) as i32 as u32` with `s = l < 31 ? t + 1 : t`.
/// - `f16_xor2 = f16::from_f32(s as f32).to_bits()` with `s = w + (l ^ 2)`.
/// - `bf16_idx31 = bf16::from_f32(2 * s as f32).to_bits()` with `s = w + 31`.
/// - `reserved = 0`.
#[kernel]
pub fn selftest_shuffles(mut records: DisjointSlice<ShuffleRecord>) {
    let t = thread::global_index().get() as u32;
    let l = thread::lane_id();
    let masked_down = if l < 16 {
        warp::shfl_down_sync(0x0000_ffff, vu32(t), 1, 16)
    } else {
        warp::shfl_down_sync(0xffff_0000, vu32(t), 1, 16)
    };
    let record = ShuffleRecord {
        u64s: [
            warp::shfl_up(vu64(t), 3),
            warp::shfl_down(vu64(t), 5),
            warp::shfl_xor(vu64(t), 6),
            warp::shfl_idx(vu64(t), 7),
        ],
        i64s: [
            warp::shfl_up(vi64(t), 3),
            warp::shfl_down(vi64(t), 5),
            warp::shfl_xor(vi64(t), 6),
            warp::shfl_idx(vi64(t), 7),
        ],
        f64s: [
            warp::shfl_up(vf64(t), 3),
            warp::shfl_down(vf64(t), 5),
            warp::shfl_xor(vf64(t), 6),
            warp::shfl_idx(vf64(t), 7),
        ],
        usize_xor16: warp::shfl_xor(t as usize * 0x1_0000_0001, 16) as u64,
        u32s: [
            warp::shfl_up(vu32(t), 3),
            warp::shfl_down(vu32(t), 5),
            warp::shfl_xor(vu32(t), 6),
            warp::shfl_idx(vu32(t), 7),
            warp::shfl_down_sync(warp::FULL_MASK, vu32(t), 1, 8),
            warp::shfl_up_sync(warp::FULL_MASK, vu32(t), 2, 16),
            warp::shfl_xor_sync(warp::FULL_MASK, vu32(t), 1, 4),
            warp::shfl_idx_sync(warp::FULL_MASK, vu32(t), 3, 8),
        ],
        i32s: [
            warp::shfl_up(vi32(t), 3),
            warp::shfl_down(vi32(t), 5),
            warp::shfl_xor(vi32(t), 6),
            warp::shfl_idx(vi32(t), 7),
        ],
        f32s: [
            warp::shfl_up(vf32(t), 3),
            warp::shfl_down(vf32(t), 5),
            warp::shfl_xor(vf32(t), 6),
            warp::shfl_idx(vf32(t), 7),
        ],
        masked_down,
        u8_xor1: warp::shfl_xor((t * 3) as u8, 1) as u32,
        i16_down1: warp::shfl_down(-(t as i16) * 100, 1) as i32 as u32,
        f16_xor2: warp::shfl_xor(f16::from_f32(t as f32), 2).to_bits() as u32,
        bf16_idx31: warp::shfl_idx(bf16::from_f32(2.0 * t as f32), 31).to_bits() as u32,
        reserved: 0,
    };
    records.set(thread::global_index(), record);
}

/// Vote, match, reduction and mask results of one thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, DeviceCopy)]
pub struct VoteRecord {
    pub all_reduce_max_u64: u64,
    pub all_true: u32,
    pub all_false: u32,
    pub any_true: u32,
    pub any_false: u32,
    pub ballot: u32,
    pub ballot_half: u32,
    pub all_sync_half: u32,
    pub any_sync_half: u32,
    pub active_full: u32,
    pub active_branch: u32,
    pub match_any_u32: u32,
    pub match_any_u64: u32,
    pub match_all_same: u32,
    pub match_all_diff: u32,
    pub match_all_u64: u32,
    pub match_half: u32,
    pub reduce_add_u32: u32,
    pub reduce_add_i32: i32,
    pub reduce_min_i32: i32,
    pub reduce_max_i32: i32,
    pub reduce_min_u32: u32,
    pub reduce_max_u32: u32,
    pub reduce_and: u32,
    pub reduce_or: u32,
    pub reduce_xor: u32,
    pub reduce_half: u32,
    pub all_reduce_sum_f32: f32,
    pub compaction_rank: u32,
}

/// Launch: 1 block × 64 threads (two full warps); `records.len() == 64`.
///
/// Expected for lane `l` of warp base `w`:
/// `all_reduce_max_u64 = (w + 31) << 33`, `all_true = 1`, `all_false = 0`, `any_true = 1`,
/// `any_false = 0`, `ballot = 0x4924_9249`,
/// `ballot_half = l < 16 ? 0x5555 : 0xAAAA_0000`, `all_sync_half = l < 16 ? 1 : 0`,
/// `any_sync_half = l < 16 ? 1 : 0`, `active_full = 0xFFFF_FFFF`,
/// `active_branch = l < 8 ? 0xFF : 0` (what current GPUs report; `activemask` is a snapshot,
/// not an architectural guarantee), `match_any_u32 = 0xF << (l & !3)`,
/// `match_any_u64 = l even ? 0x5555_5555 : 0xAAAA_AAAA`, `match_all_same = 0xFFFF_FFFF`,
/// `match_all_diff = 0`, `match_all_u64 = 0xFFFF_FFFF`,
/// `match_half = l < 16 ? (l even ? 0x5555 : 0xAAAA) : 0xFFFF_0000`,
/// `reduce_add_u32 = 496`, `reduce_add_i32 = -496`, `reduce_min_i32 = -21`,
/// `reduce_max_i32 = -19`, `reduce_min_u32 = 100`, `reduce_max_u32 = 93`, `reduce_and = 0`,
/// `reduce_or = 0xFFFF_FFFF`, `reduce_xor = 0`, `reduce_half = l < 16 ? 120 : 31`,
/// `all_reduce_sum_f32 = 496.0`, `compaction_rank = (l + 2) / 3`.
#[kernel]
pub fn selftest_votes(mut records: DisjointSlice<VoteRecord>) {
    let t = thread::global_index().get() as u32;
    let l = thread::lane_id();

    let (ballot_half, all_sync_half, any_sync_half, match_half, reduce_half) = if l < 16 {
        (
            warp::ballot_sync(0x0000_ffff, l.is_multiple_of(2)),
            warp::all_sync(0x0000_ffff, l < 16),
            warp::any_sync(0x0000_ffff, l == 3),
            warp::match_any_sync(0x0000_ffff, l % 2),
            warp::reduce_add_sync(0x0000_ffff, l),
        )
    } else {
        (
            warp::ballot_sync(0xffff_0000, l % 2 == 1),
            warp::all_sync(0xffff_0000, l != 20),
            warp::any_sync(0xffff_0000, l == 3),
            warp::match_all_sync(0xffff_0000, 5u32),
            warp::reduce_max_sync(0xffff_0000, l),
        )
    };
    let active_branch = if l < 8 { warp::active_mask() } else { 0 };
    sync::sync_warp_all();

    let record = VoteRecord {
        all_reduce_max_u64: warp::all_reduce((t as u64) << 33, |a, b| a.max(b)),
        all_true: warp::all(true) as u32,
        all_false: warp::all(l < 31) as u32,
        any_true: warp::any(l == 5) as u32,
        any_false: warp::any(false) as u32,
        ballot: warp::ballot(l.is_multiple_of(3)),
        ballot_half,
        all_sync_half: all_sync_half as u32,
        any_sync_half: any_sync_half as u32,
        active_full: warp::active_mask(),
        active_branch,
        match_any_u32: warp::match_any(l / 4),
        match_any_u64: warp::match_any(((l % 2) as u64) << 40),
        match_all_same: warp::match_all(7u32),
        match_all_diff: warp::match_all(l),
        match_all_u64: warp::match_all(0x1234_5678_9abc_def0u64),
        match_half,
        reduce_add_u32: warp::reduce_add(l),
        reduce_add_i32: warp::reduce_add(-(l as i32)),
        reduce_min_i32: warp::reduce_min(10 - l as i32),
        reduce_max_i32: warp::reduce_max(l as i32 - 50),
        reduce_min_u32: warp::reduce_min(l + 100),
        reduce_max_u32: warp::reduce_max(l * 3),
        reduce_and: warp::reduce_and(!(1u32 << l)),
        reduce_or: warp::reduce_or(1u32 << l),
        reduce_xor: warp::reduce_xor(l),
        reduce_half,
        all_reduce_sum_f32: warp::all_reduce(l as f32, |a, b| a + b),
        compaction_rank: math::popc(warp::ballot(l.is_multiple_of(3)) & warp::lane_mask_lt()),
    };
    records.set(thread::global_index(), record);
}
