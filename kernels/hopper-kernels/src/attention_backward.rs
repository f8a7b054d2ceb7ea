//! Flash-attention backward on Hopper tensor cores (wgmma + TMA), FlashAttention-3's design
//! (Shah et al. 2024): bf16 in and out, f32 products; head dimension 64 or 128; causal or
//! not; grouped-query attention. Given Q, K, V, the forward's logsumexp L and the output
//! gradient dO, it writes dK and dV and adds dQ into an f32 accumulator.
//!
//! - [`attention_bwd_prep_bf16`]: per query row `Δ = rowsum(dO ∘ O)` and `L·log2 e`, into
//!   buffers padded to [`PAD`] rows per head (padding rows: Δ = 0, L = +∞, so their P is 0
//!   and they need no mask), so one 1-D bulk copy loads a tile's values;
//! - the main kernel: a block owns [`BN`] = 128 keys of one K/V head, K and V loaded once by
//!   TMA, and walks the query tiles (`BM` = 128 rows for head dimension 64, 64 for 128) of
//!   every query head of its group; warpgroup 0 is the producer (one thread issues the TMA
//!   copies of Q, dO and the bulk copies of L and Δ into a 2-stage ring with full/empty
//!   mbarriers; `setmaxnreg` gives its registers away), warpgroups 1 and 2 each own 64 of the
//!   keys;
//! - per tile, each consumer warpgroup computes `Sᵀ = K·Qᵀ` and `dPᵀ = V·dOᵀ` (wgmma, both
//!   operands K-major from shared memory), `Pᵀ = 2^(Sᵀ·scale·log2 e − L)` (no softmax to redo;
//!   while `dPᵀ` is still in flight),
//!   `dSᵀ = Pᵀ ∘ (dPᵀ − Δ)`, then `dV += Pᵀ·dO` and `dK += dSᵀ·Q` with Pᵀ and dSᵀ as register
//!   A operands (the accumulator layout is the A-fragment layout) and dO and Q as MN-major B
//!   operands straight from the TMA tiles; dK and dV stay in registers for the whole walk;
//! - dQ: both warpgroups store dSᵀ (bf16, 128-byte swizzle) to shared memory, then each
//!   computes a 64×64 part of `dQ = dS·K` over all 128 keys with both operands MN-major
//!   (head dimension 64: its 64 query rows; 128: its 64 columns), one tile late: tile i's
//!   dQ is issued in tile i + 1 beside its dV and dK, and the hand-over is a split arrive/wait
//!   pair of named barriers, so the two warpgroups need not meet at every tile (one's
//!   exponentials can run beside the other's products); two dS buffers. The parts go
//!   to a shared f32 tile (register-major: thread `t`'s register `r` at `r·128 + t`, no bank
//!   conflicts), and one producer thread adds the whole tile to the f32 accumulator with a
//!   single bulk reduction (`cp.reduce.async.bulk .add.f32`, FlashAttention-3's way: the
//!   consumers issue no atomics). The accumulator holds each tile in that order
//!   ([`dq_index`]); [`attention_bwd_dq_convert_bf16`] turns it into dQ. For a deterministic
//!   dQ (`BwdParams::dq_order`) the key blocks add each tile in a fixed order, taking turns on
//!   a counter per query tile (FlashAttention-3's semaphore; [`dq_turn`] gives the order),
//!   so every run sums the same f32 values in the same order. With an empty accumulator the
//!   dQ part is skipped;
//! - `dK = scale · Σ dSᵀ·Q` is scaled once at the end. Causal: query tiles entirely before the
//!   block's first key are not loaded, and only tiles crossing the diagonal are masked.
//!   Keys past `seq_k` arrive as zero rows: their gradients are not stored and they add
//!   nothing to dQ (`dS·0`).

use gpu::hopper::tma::{self, TensorMap};
use gpu::hopper::{mbarrier, wgmma};
use gpu::prelude::*;
use gpu::unroll;
use half::bf16;

/// Keys per block (two consumer warpgroups × 64).
pub const BN: u32 = 128;
/// Threads per block: a producer warpgroup and two consumer warpgroups.
pub const THREADS: u32 = 384;
/// Stages of the Q/dO ring.
pub const STAGES: u32 = 2;
/// The padded L and Δ buffers hold `seq_q` rounded up to a multiple of this many rows per
/// query head (a multiple of both query tiles).
pub const PAD: u32 = 128;
/// Threads per block of [`attention_bwd_prep_bf16`] (`dim / 8` threads per row).
pub const PREP_THREADS: u32 = 256;
/// Bytes of one swizzled row: 64 two-byte elements.
const ROW: u32 = 128;
/// f32 values of one dQ tile (`BM × D` is 8192 for both head dimensions).
const DQ_TILE: u32 = 8192;

/// Query rows per tile for head dimension `head_dim` (64 or 128).
pub const fn block_m(head_dim: u32) -> u32 {
    if head_dim == 64 { 128 } else { 64 }
}

/// Rows per query head of the padded L and Δ buffers.
pub const fn padded_rows(seq_q: u32) -> u32 {
    seq_q.div_ceil(PAD) * PAD
}

/// Dynamic shared memory for head dimension `head_dim`: 1 KiB of alignment slack, K and V,
/// the Q and dO stages, two dS tiles, the dQ tile, the L and Δ stages, the barriers.
pub const fn shared_bytes(head_dim: u32) -> u32 {
    let bm = block_m(head_dim);
    1024 + 2 * BN * head_dim * 2
        + STAGES * 2 * bm * head_dim * 2
        + 2 * BN * bm * 2
        + DQ_TILE * 4
        + STAGES * 2 * bm * 4
        + 8 * (3 + 2 * STAGES)
}

/// Where element (`row`, `col`) of query head `bh`'s dQ lives in the accumulator
/// (`batch · heads · seq_pad · head_dim` f32): query tile `row / BM` of the head is the
/// contiguous 8192 values at `(bh · seq_pad + BM · tile) · head_dim`, in the order the
/// kernel's threads hold them: two 64×64 parts (head dimension 64: rows 0-63 and 64-127;
/// 128: columns 0-63 and 64-127), each with register `r` of warpgroup thread `t` at
/// `128 r + t` (the wgmma accumulator layout, see `gpu::hopper::wgmma`).
#[inline(always)]
pub const fn dq_index(bh: u32, row: u32, col: u32, seq_pad: u32, head_dim: u32) -> usize {
    let bm = block_m(head_dim);
    let (tile, rr) = (row / bm, row % bm);
    let (part, pr, pc) = if head_dim == 64 {
        (rr / 64, rr % 64, col)
    } else {
        (col / 64, rr, col % 64)
    };
    let t = 32 * (pr / 16) + 4 * (pr % 8) + (pc % 8) / 2;
    let r = 4 * (pc / 8) + 2 * ((pr % 16) / 8) + pc % 2;
    (bh as usize * seq_pad as usize + (bm * tile) as usize) * head_dim as usize
        + (part * 4096 + 128 * r + t) as usize
}

/// Four words of packed bf16 pairs (the low half first) as the eight values they hold, for a
/// 16-byte `store_run`.
#[inline(always)]
fn bf16x8(words: [u32; 4]) -> [bf16; 8] {
    core::array::from_fn(|e| bf16::from_bits((words[e / 2] >> (16 * (e % 2))) as u16))
}

/// Threads per block of [`attention_bwd_dq_convert_bf16`]: a warpgroup per 64×64 part.
pub const CONVERT_THREADS: u32 = 128;

/// `dq = bf16(scale · acc)` for the `batch · heads · seq_q · dim` elements of dQ from the
/// kernel's accumulator order ([`dq_index`]): a block per 64×64 part (4096 values; grid
/// `acc.len() / 4096` of [`CONVERT_THREADS`]), no shared memory. In a part, register `r` of
/// accumulator thread `t'` sits at `128 r + t'`; the four threads `4 g .. 4 g + 4` hold one row's
/// columns `8 (r / 4) + 2 k + r % 2`, so the 16-byte run at `128 r + 4 g` and the one at
/// `128 (r + 1) + 4 g` (r even) are that row's eight consecutive columns `8 (r / 4) ..`: one
/// 16-byte store. Each thread converts four such runs; a warp's loads are eight 64-byte
/// pieces and its stores four whole 128-byte rows, every sector used both ways. (Staged
/// through shared memory with a bf16 pair stored per thread, and before that read element by
/// element in dQ's order, it took longer: docs/gemm-tuning.md has the timings.)
#[kernel(block(128))]
pub fn attention_bwd_dq_convert_bf16(
    acc: &[f32],
    dq: DisjointSlice<bf16>,
    seq_q: u32,
    seq_pad: u32,
    dim: u32,
    scale: f32,
) {
    let t = thread::thread_idx_x();
    let part = thread::block_idx_x();
    let base = part as usize * 4096;
    if base + 4096 > acc.len() {
        return;
    }
    // Two parts per query tile: head dimension 64, rows 0-63 and 64-127 of a 128-row tile;
    // 128, columns 0-63 and 64-127 of a 64-row tile.
    let bm = block_m(dim);
    let (tile_all, sub) = (part / 2, part % 2);
    let padded = tile_all * bm;
    let (bh, row0) = (padded / seq_pad, padded % seq_pad);
    let (row0, col0) = if dim == 64 {
        (row0 + 64 * sub, 0)
    } else {
        (row0, 64 * sub)
    };
    // Run i of this thread: column group j (columns 8 j ..), row group g = 4 (w % 8) + lane / 8
    // of warp-step w = warp + 4 i, register pair r = 4 j + 2 (w / 8).
    let (lane, warp) = (t % 32, t / 32);
    let j = lane % 8;
    let run = |i: u32| {
        let w = warp + 4 * i;
        let g = 4 * (w % 8) + lane / 8;
        (g, 4 * j + 2 * (w / 8), 16 * (g / 8) + 8 * (w / 8) + g % 8)
    };
    // All eight loads first, then the stores.
    let mut lo = [[0f32; 4]; 4];
    let mut hi = [[0f32; 4]; 4];
    unroll!(4, |i| {
        let (g, r, _) = run(i as u32);
        lo[i] = gpu::block::load_run(acc, base + (128 * r + 4 * g) as usize);
        hi[i] = gpu::block::load_run(acc, base + (128 * (r + 1) + 4 * g) as usize);
    });
    unroll!(4, |i| {
        let (_, _, pr) = run(i as u32);
        let row = row0 + pr;
        if row < seq_q {
            let words: [u32; 4] =
                core::array::from_fn(|k| wgmma::pack_bf16x2(lo[i][k] * scale, hi[i][k] * scale));
            let out = bf16x8(words);
            let at = (bh * seq_q + row) as usize * dim as usize + (col0 + 8 * j) as usize;
            // SAFETY: (row, columns col0 + 8 j .. + 8) of query head bh are written by this
            // thread alone; `store_run` checks the bounds.
            unsafe { gpu::block::store_run(&dq, at, out) };
        }
    });
}

/// Sizes and flags of one launch; grid `(ceil(seq_k / BN), batch · kv_heads)`.
#[derive(Debug, Clone, Copy, PartialEq, DeviceCopy)]
#[repr(C)]
pub struct BwdParams {
    pub seq_q: u32,
    pub seq_k: u32,
    /// [`padded_rows`]`(seq_q)`.
    pub seq_pad: u32,
    /// `scale · log2 e`.
    pub scale_log2: f32,
    /// The softmax scale (dK's factor).
    pub scale: f32,
    /// 1: key `j` is masked for query `i` when `j > i`.
    pub causal: u32,
    /// Query heads per batch entry.
    pub heads: u32,
    /// Query heads per K/V head.
    pub group: u32,
    /// 0: the key blocks add the dQ tiles in the order they get there; 1: in a fixed order,
    /// taking turns on `dq_turns` (deterministic dQ, see [`dq_turn`]); 2: the same, and all
    /// key blocks of a K/V head fit on the device at once, so that (not causal, at most as
    /// many key blocks as query tiles) they start at query tiles spread over the head
    /// ([`DqOrder::Shifted`]).
    pub dq_order: u32,
}

/// The order in which the key blocks add a query tile's dQ: the values 1 and 2 of
/// [`BwdParams::dq_order`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DqOrder {
    /// Not causal: key block order, every block walking the tiles from the first. Causal:
    /// from the diagonal down. Key block `n` waits only for blocks dispatched before it.
    Plain = 1,
    /// Not causal, `blocks_n <= blocks_m`: key block `n` walks each head's tiles from tile
    /// `s·n` (`s = blocks_m / blocks_n`, the starts spread evenly), wrapping around, and a
    /// tile's blocks add in the order they reach it, so no block waits at the start (in key
    /// block order block `n` is behind `n` others on the first tile) and each waits for one
    /// that reached the tile `s` tiles earlier. A block may wait for one dispatched after it:
    /// the host asks for this only when every key block of a K/V head is resident at once.
    Shifted = 2,
}

/// The spacing `s` of the shifted starts ([`DqOrder::Shifted`]), or 0 when the order is not
/// shifted.
#[inline(always)]
pub const fn dq_shift(blocks_n: u32, blocks_m: u32, order: u32, causal: bool) -> u32 {
    if order == DqOrder::Shifted as u32 && !causal && blocks_n <= blocks_m {
        blocks_m / blocks_n
    } else {
        0
    }
}

/// The turn of key block `n` at query tile `m` when the dQ tiles are added in a fixed order
/// (`dq_order` 1 or 2, [`DqOrder`]), for `blocks_n` key blocks and `blocks_m` query tiles of
/// `bm` rows per head.
///
/// Not causal, every key block adds to every tile: in key block order, or shifted, in the
/// order the blocks reach the tile: block `n` starts at tile `s·n` and reaches tile `m` at
/// step `(m − s·n) mod blocks_m`, so the blocks starting at or before `m` come first (the
/// nearest first), then the others from the last down. Causal, tile `m` has the key blocks
/// `0 .. n_max` (those starting before its last row), and they add from the diagonal down,
/// `n_max − 1` first, so a block's first tile never waits and each later one waits for a
/// block one tile ahead of it; launches in that order dispatch the causal key blocks
/// last-first (see the kernels' grid), so every block waits only for blocks dispatched
/// before it.
#[inline(always)]
pub const fn dq_turn(
    n: u32,
    m: u32,
    bm: u32,
    blocks_n: u32,
    blocks_m: u32,
    order: u32,
    causal: bool,
) -> u32 {
    let shift = dq_shift(blocks_n, blocks_m, order, causal);
    if causal {
        let n_max = ((m + 1) * bm).div_ceil(BN);
        let n_max = if n_max < blocks_n { n_max } else { blocks_n };
        n_max - 1 - n
    } else if let Some(last) = m.checked_div(shift) {
        // Shifted: the blocks starting at or before m are 0 ..= last (shift · n < blocks_m
        // for all).
        let last = if last < blocks_n - 1 {
            last
        } else {
            blocks_n - 1
        };
        if n <= last {
            last - n
        } else {
            last + 1 + (blocks_n - 1 - n)
        }
    } else {
        n
    }
}

/// `delta[r] = Σ_d o·d_o` and `lse2[r] = lse·log2 e` for the padded rows `r` of every query
/// head (`rows` = `batch · heads · seq_pad`, a multiple of [`PAD`]); padding rows get 0 and
/// +∞. `dim / 8` threads per row (`rows · dim / 8` threads in [`PREP_THREADS`] blocks), each
/// reading 8 elements of O and dO with 16-byte loads and summing with the row's other threads
/// by shuffles (with a warp per row and 2-byte loads, as before, a warp had only its row's bytes
/// in flight; docs/gemm-tuning.md has the timings). When `dq_acc` is not empty (`rows · dim`
/// values), each thread also zeroes its 8 values of the row there (the main kernel's dQ
/// accumulator: one launch instead of a memset beside this one).
#[kernel(block(256))]
#[allow(clippy::too_many_arguments)]
pub fn attention_bwd_prep_bf16(
    o: &[bf16],
    d_o: &[bf16],
    lse: &[f32],
    delta: DisjointSlice<f32>,
    lse2: DisjointSlice<f32>,
    dq_acc: DisjointSlice<f32>,
    seq_q: u32,
    seq_pad: u32,
    dim: u32,
) {
    let per_row = dim / 8;
    let tid = thread::block_idx_x() * PREP_THREADS + thread::thread_idx_x();
    let (r, part) = ((tid / per_row) as usize, tid % per_row);
    // A warp's rows (32 / per_row of them, dim 64 or 128) are all inside or all outside: the
    // row count is a multiple of PAD.
    if r >= delta.len() {
        return;
    }
    let (bh, i) = (r / seq_pad as usize, r % seq_pad as usize);
    let dim = dim as usize;
    let at = r * dim + 8 * part as usize;
    if !dq_acc.is_empty() {
        // SAFETY: values at .. at + 8 of row r belong to this thread (bounds-checked by
        // `store_run`; 16-byte stores: the accumulator is an allocation of its own and `at` a
        // multiple of 8).
        unsafe { gpu::block::store_run(&dq_acc, at, [0f32; 8]) };
    }
    let mut sum = 0f32;
    let valid = i < seq_q as usize;
    let src = bh * seq_q as usize + i;
    if valid {
        let at = src * dim + 8 * part as usize;
        // 16-byte loads (rows of O and dO are 16-byte aligned: `dim` is 64 or 128).
        let (a, b) = (
            gpu::block::load_run::<bf16, 8>(o, at),
            gpu::block::load_run::<bf16, 8>(d_o, at),
        );
        unroll!(8, |k| {
            sum = math::fma(
                gpu::packed::bf16_to_f32(a[k]),
                gpu::packed::bf16_to_f32(b[k]),
                sum,
            );
        });
    }
    let mut lanes = 1;
    while lanes < per_row {
        sum += warp::shuffle_xor(sum, lanes);
        lanes *= 2;
    }
    if part == 0 {
        let l = if valid {
            lse[src] * core::f32::consts::LOG2_E
        } else {
            f32::INFINITY
        };
        // SAFETY: one thread per row; `r < delta.len()`, and the host sizes `lse2` as `delta`.
        unsafe {
            delta.write_unchecked_race(r, sum);
            lse2.write_unchecked_race(r, l);
        }
    }
}

/// The kernel body for head dimension `D` and query tile `BM` (`KD = D / 16` k-steps of the
/// score products, `SN = BM / 2` registers of a 64×BM score accumulator, `QK = BM / 16`
/// k-steps of dV and dK, `ON = D / 2` registers of a 64×D gradient accumulator, `SJ = SN / 4`,
/// `OJ = ON / 4` their column groups).
///
/// # Safety
/// `maps` holds the 3-D tensor maps of Q, K, V, dO (`[D, seq, batch·heads]`, boxes
/// `[64, BM, 1]` for Q and dO, `[64, BN, 1]` for K and V, 128-byte swizzle); `lse2` and
/// `delta` hold `batch · heads · seq_pad` values from [`attention_bwd_prep_bf16`]; `dq` is
/// empty or `batch · heads · seq_q · D` f32 values; `dk`, `dv` address `batch · kv_heads ·
/// seq_k · D` bf16; the launch is the documented one.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn backward<
    const D: u32,
    const BM: u32,
    const KD: usize,
    const SN: usize,
    const QK: usize,
    const ON: usize,
    const SJ: usize,
    const OJ: usize,
    const UNIFORM_CONSUMERS: bool,
>(
    maps: &[TensorMap],
    lse2: &[f32],
    delta: &[f32],
    dq: DisjointSlice<f32>,
    dq_turns: DisjointSlice<u32>,
    dk: DisjointSlice<bf16>,
    dv: DisjointSlice<bf16>,
    p: BwdParams,
) {
    const {
        assert!(KD as u32 * 16 == D && SN as u32 * 2 == BM && QK as u32 * 16 == BM);
        assert!(SJ * 4 == SN && OJ * 4 == ON);
        assert!(ON as u32 * 2 == D && (D == 64 || D == 128) && BM == block_m(D));
    }
    let tid = thread::thread_idx_x();
    let dyn_base = shared::dynamic::<u8>().addr();
    let base = (dyn_base + 1023) & !1023;
    let tile_kv = BN * D * 2;
    let tile_q = BM * D * 2;
    let k_smem = base;
    let v_smem = base + tile_kv;
    let q_smem = |s: u32| base + 2 * tile_kv + s * 2 * tile_q;
    let do_smem = |s: u32| q_smem(s) + tile_q;
    let ds_smem = |b: u32| base + 2 * tile_kv + STAGES * 2 * tile_q + b * BN * BM * 2;
    let dq_smem = base + 2 * tile_kv + STAGES * 2 * tile_q + 2 * BN * BM * 2;
    let rows_base = dq_smem + DQ_TILE * 4;
    let lse_smem = |s: u32| rows_base + s * 2 * BM * 4;
    let delta_smem = |s: u32| lse_smem(s) + BM * 4;
    let bars = rows_base + STAGES * 2 * BM * 4;
    let full_kv = bars;
    let full = |s: u32| bars + 8 * (1 + s);
    let empty = |s: u32| bars + 8 * (1 + STAGES + s);
    // The dQ tile: written by the consumers (full), read by the bulk reduction (empty).
    let dq_full = bars + 8 * (1 + 2 * STAGES);
    let dq_empty = dq_full + 8;
    let with_dq = !dq.is_empty();
    let ring = |i: u32| (i % STAGES, (i / STAGES) & 1);

    let causal = p.causal != 0;
    let ordered = with_dq && p.dq_order != 0;
    let blocks_n = thread::grid_dim_x();
    // Ordered and causal, the grid runs the key blocks last-first (see `dq_turn`).
    let n_block = if ordered && causal {
        blocks_n - 1 - thread::block_idx_x()
    } else {
        thread::block_idx_x()
    };
    let n0 = n_block * BN;
    let kv_bh = thread::block_idx_y();
    let kv_heads = p.heads / p.group;
    let first_q_bh = (kv_bh / kv_heads) * p.heads + (kv_bh % kv_heads) * p.group;
    let blocks_m = p.seq_q.div_ceil(BM);
    // Causal: query tiles ending before this block's first key see none of its keys.
    let m_start = if causal { (n0 / BM).min(blocks_m) } else { 0 };
    let per_head = blocks_m - m_start;
    let n_iter = per_head * p.group;
    // Iteration i: query head first_q_bh + i / per_head, tile m_start + (first + i) % per_head.
    let first = if ordered {
        dq_shift(blocks_n, blocks_m, p.dq_order, causal) * n_block
    } else {
        0
    };
    let tile_of = |i: u32| {
        let t = i % per_head + first;
        let t = if t >= per_head { t - per_head } else { t };
        (first_q_bh + i / per_head, m_start + t)
    };

    if tid == 0 {
        // SAFETY: one thread initialises each barrier before the block barrier below.
        unsafe {
            mbarrier::init(full_kv, 1);
            for s in 0..STAGES {
                mbarrier::init(full(s), 1);
                // One arrival per consumer warp.
                mbarrier::init(empty(s), 8);
            }
            // Every consumer thread arrives after its stores; the reducing thread once.
            mbarrier::init(dq_full, 256);
            mbarrier::init(dq_empty, 1);
        }
        mbarrier::fence_init();
    }
    sync::sync_threads();

    let warpgroup = tid / 128;
    if warpgroup == 0 {
        // SAFETY: the whole producer warpgroup; it needs few registers.
        unsafe { wgmma::set_max_registers_dec::<24>() };
        if tid == 0 && n_iter > 0 {
            let map_q = maps.as_ptr();
            // SAFETY: the host passes four maps.
            let (map_k, map_v, map_do) = unsafe { (map_q.add(1), map_q.add(2), map_q.add(3)) };
            // SAFETY: each phase expects exactly the bytes of its copies (whole boxes); tiles
            // are 1024-byte aligned, the L/Δ rows 16-byte aligned (seq_pad and BM are
            // multiples of 4); a stage is refilled only after all 8 consumer warps released it
            // (the first round passes by the parity rule); the rows read are inside the padded
            // buffers (tile m < blocks_m, BM · blocks_m <= seq_pad).
            unsafe {
                mbarrier::arrive_expect_tx(full_kv, 2 * tile_kv);
                for c in 0..D / 64 {
                    let x = (64 * c) as i32;
                    tma::load_3d(
                        k_smem + c * BN * ROW,
                        map_k,
                        full_kv,
                        x,
                        n0 as i32,
                        kv_bh as i32,
                    );
                    tma::load_3d(
                        v_smem + c * BN * ROW,
                        map_v,
                        full_kv,
                        x,
                        n0 as i32,
                        kv_bh as i32,
                    );
                }
                for i in 0..n_iter {
                    let (s, phase) = ring(i);
                    let (bh, m) = tile_of(i);
                    let q0 = (m * BM) as i32;
                    mbarrier::wait_parity(empty(s), phase ^ 1);
                    mbarrier::arrive_expect_tx(full(s), 2 * tile_q + 2 * BM * 4);
                    for c in 0..D / 64 {
                        let x = (64 * c) as i32;
                        tma::load_3d(q_smem(s) + c * BM * ROW, map_q, full(s), x, q0, bh as i32);
                        tma::load_3d(do_smem(s) + c * BM * ROW, map_do, full(s), x, q0, bh as i32);
                    }
                    let row = (bh * p.seq_pad + m * BM) as usize;
                    wgmma::bulk_load(lse_smem(s), lse2.as_ptr().add(row), BM * 4, full(s));
                    wgmma::bulk_load(delta_smem(s), delta.as_ptr().add(row), BM * 4, full(s));
                }
            }
        } else if tid == 32 && with_dq {
            // The dQ reducer (another warp than the loads): each tile's dQ, once the consumers
            // stored it, added to the accumulator in one bulk reduction; ordered, in this key
            // block's turn on the tile's counter, passed on once the reduction is complete.
            for i in 0..n_iter {
                let (bh, m) = tile_of(i);
                let at = (bh * p.seq_pad + m * BM) as usize * D as usize;
                let turns = (bh * blocks_m + m) as usize;
                // SAFETY: the tile was stored and proxy-fenced by all 256 consumer threads
                // before their arrivals; `at .. at + DQ_TILE` is inside the padded accumulator
                // and `turns` inside the counters when ordered (host-checked lengths); other
                // blocks add to it only by reductions and touch the counters only by turns;
                // the tile is handed back only after the reduction read it.
                unsafe {
                    if ordered {
                        let turn = dq_turn(n_block, m, BM, blocks_n, blocks_m, p.dq_order, causal);
                        gpu::grid::wait_turn(dq_turns.as_mut_ptr().add(turns), turn);
                        mbarrier::fence_proxy_async_global();
                    }
                    mbarrier::wait_parity(dq_full, i & 1);
                    wgmma::bulk_reduce_add_f32(dq.as_mut_ptr().add(at), dq_smem, DQ_TILE * 4);
                    tma::store_commit();
                    tma::store_wait_read();
                    mbarrier::arrive(dq_empty);
                    if ordered {
                        tma::store_wait();
                        mbarrier::fence_proxy_async_global();
                        gpu::grid::end_turn(dq_turns.as_mut_ptr().add(turns));
                    }
                }
            }
            // The last reduction has finished before the block exits.
            tma::store_wait();
        }
        return;
    }

    // SAFETY: the whole consumer warpgroup; 128 * 24 + 256 * 240 <= 65536.
    unsafe { wgmma::set_max_registers_inc::<240>() };
    // With `UNIFORM_CONSUMERS`, the warpgroup index broadcast from lane 0
    // (`wgmma::warpgroup_index`): ptxas then knows everything derived from it is warp-uniform
    // and builds the consumers' wgmma descriptors in uniform registers, not in vector
    // registers moved over one `R2UR` a product (the producer's and reducer's code, taken on
    // `tid / 128` above, stays as it is). Not for the deterministic dQ at head dimension 128,
    // which ran slower so (see `attention_bwd_bf16_d128_ordered_wgmma`).
    let warpgroup = if UNIFORM_CONSUMERS {
        wgmma::warpgroup_index()
    } else {
        warpgroup
    };
    let consumer = warpgroup - 1;
    let t = tid - 128 * warpgroup;
    let (w, l) = (t / 32, t % 32);
    // This thread's keys (rows of the Sᵀ and gradient accumulators): key_row and key_row + 8.
    let wg_key0 = n0 + 64 * consumer;
    let key_row = wg_key0 + 16 * w + l / 4;

    // K-major operands along D: K and V rows of this warpgroup (A), Q and dO rows (B).
    let kv_desc = |tile: u32, kk: u32| {
        wgmma::shared_desc_sw128(tile + (kk / 4) * BN * ROW + consumer * 64 * ROW + (kk % 4) * 32)
    };
    let qd_desc =
        |tile: u32, kk: u32| wgmma::shared_desc_sw128(tile + (kk / 4) * BM * ROW + (kk % 4) * 32);
    // MN-major B operands along the query rows: k-step kk is rows 16 kk .. 16 kk + 16.
    let rows_desc = |tile: u32, kk: u32| wgmma::shared_desc_sw128_mn(tile + kk * 2048, BM * ROW);
    // dQ's 64×64 part: A = dS (MN-major: dSᵀ's 64-query sub-tile a_sub), B = K (MN-major:
    // its 64-column sub-tile b_sub), k-step kk = keys 16 kk .. 16 kk + 16.
    let (a_sub, b_sub) = if D == 64 {
        (consumer, 0)
    } else {
        (0, consumer)
    };

    let issue_scores = |acc: &mut [f32; SN], a_tile: u32, b_tile: u32| {
        unroll!(KD, |kk| {
            let (a, b) = (kv_desc(a_tile, kk as u32), qd_desc(b_tile, kk as u32));
            // SAFETY: the whole warpgroup after `fence`; the tiles have landed and are not
            // refilled before the wait covering this batch.
            unsafe {
                if let Ok(d) = <&mut [f32; 64]>::try_from(&mut acc[..]) {
                    wgmma::mma_m64n128k16_bf16(d, a, b, kk > 0);
                } else if let Ok(d) = <&mut [f32; 32]>::try_from(&mut acc[..]) {
                    wgmma::mma_m64n64k16_bf16(d, a, b, kk > 0);
                }
            }
        });
    };
    let issue_grad = |acc: &mut [f32; ON], frags: &mut [[u32; 4]; QK], tile: u32| {
        unroll!(QK, |kk| {
            let b = rows_desc(tile, kk as u32);
            // SAFETY: as `issue_scores`; `acc` and `frags` are pinned after the wait.
            unsafe {
                if let Ok(d) = <&mut [f32; 32]>::try_from(&mut acc[..]) {
                    wgmma::mma_rs_m64n64k16_bf16(d, &mut frags[kk], b, true);
                } else if let Ok(d) = <&mut [f32; 64]>::try_from(&mut acc[..]) {
                    wgmma::mma_rs_m64n128k16_bf16(d, &mut frags[kk], b, true);
                }
            }
        });
    };
    let pin = |acc: &mut [f32; ON]| {
        if let Ok(d) = <&mut [f32; 32]>::try_from(&mut acc[..]) {
            wgmma::fence_accumulators_32(d);
        } else if let Ok(d) = <&mut [f32; 64]>::try_from(&mut acc[..]) {
            wgmma::fence_accumulators_64(d);
        }
    };
    let pin_scores = |acc: &mut [f32; SN]| {
        if let Ok(d) = <&mut [f32; 32]>::try_from(&mut acc[..]) {
            wgmma::fence_accumulators_32(d);
        } else if let Ok(d) = <&mut [f32; 64]>::try_from(&mut acc[..]) {
            wgmma::fence_accumulators_64(d);
        }
    };

    let mut dk_acc = [0f32; ON];
    let mut dv_acc = [0f32; ON];
    // The dS tiles as words: element (key r, query c) of buffer b is at byte
    // b·BN·BM·2 + (c / 64)·BN·128 + r·128 + (((c % 64) / 8) ^ (r % 8))·16 + (c % 8)·2.
    let ds_words = shared::dynamic_at::<u32>((ds_smem(0) - dyn_base) as usize, (BN * BM) as usize);
    let rows_f32 =
        shared::dynamic_at::<f32>((rows_base - dyn_base) as usize, (STAGES * 2 * BM) as usize);
    let dq_tile = shared::dynamic_at::<f32>((dq_smem - dyn_base) as usize, DQ_TILE as usize);

    // The dSᵀ hand-over, split into arrive and wait (named barriers of 256 threads: 128
    // arriving threads of one warpgroup, 128 waiting of the other). Tile i's dQ is issued at
    // tile i + 1, beside that tile's dV and dK: warpgroup c arrives on `ds_bar(c, i)` in tile i
    // once its dSᵀ of tile i is stored and its dQ products of tile i − 1 are done, and waits
    // on the other's arrival of tile i − 1 only before storing its dSᵀ of tile i. So a
    // warpgroup may run half a tile ahead, its scores and exponentials beside the other's
    // gradient products, instead of both meeting at every dS hand-over. Two ids per
    // warpgroup by tile parity: a warpgroup arrives on an id again (tile i + 2) only after it
    // waited on the other's tile i + 1, which the other arrives on after waiting on this id's
    // tile i.
    let ds_bar = |c: u32, i: u32| 2 + 2 * c + (i & 1);
    let other = 1 - consumer;
    // Tile `j`'s dQ part (dS buffer j & 1) into `dq_acc`, as one committed group.
    let issue_dq = |dq_acc: &mut [f32; 32], j: u32| {
        unroll!(8, |kk| {
            let a = wgmma::shared_desc_sw128_mn(
                ds_smem(j & 1) + a_sub * BN * ROW + kk as u32 * 2048,
                BN * ROW,
            );
            let b =
                wgmma::shared_desc_sw128_mn(k_smem + b_sub * BN * ROW + kk as u32 * 2048, BN * ROW);
            // SAFETY: the whole warpgroup after `fence`; both warpgroups' dSᵀ of tile j are
            // stored, proxy-fenced and handed over (the other's arrival of tile j waited,
            // this warpgroup's own stores ordered by that same barrier), and buffer j & 1 is
            // rewritten only after both warpgroups waited for these products.
            unsafe { wgmma::mma_tt_m64n64k16_bf16(dq_acc, a, b, kk > 0) };
        });
        // SAFETY: the whole warpgroup.
        unsafe { wgmma::commit_group() };
    };
    // This warpgroup's 64×64 part of tile `j`'s dQ, register-major (see `dq_index`), to the
    // shared dQ tile once the reduction of tile j − 1 has read it; then hands it over.
    let store_dq = |dq_acc: &[f32; 32], j: u32| {
        // SAFETY: an initialised barrier; its phases complete as the reducer goes.
        unsafe { mbarrier::wait_parity(dq_empty, (j & 1) ^ 1) };
        unroll!(32, |r| {
            // SAFETY: inside the tile; each element belongs to this thread.
            unsafe {
                dq_tile.write_unchecked((consumer * 4096 + 128 * r as u32 + t) as usize, dq_acc[r])
            };
        });
        mbarrier::fence_proxy_async_shared();
        // SAFETY: the phase expects all 256 consumer threads, once per tile.
        unsafe { mbarrier::arrive(dq_full) };
    };

    for i in 0..n_iter {
        let (s, phase) = ring(i);
        let q0 = tile_of(i).1 * BM;
        let buf = i & 1;
        // Fresh per tile (the first products overwrite them): nothing of the last tile's
        // scores stays live across the gradient products.
        let mut s_acc = [0f32; SN];
        let mut dp_acc = [0f32; SN];
        let mut dq_acc = [0f32; 32];
        let mut pf = [[0u32; 4]; QK];
        let mut dsf = [[0u32; 4]; QK];
        // SAFETY (the waits, fences and products below): every consumer thread runs them in
        // the same order; each product's operands landed (full barriers waited, dS stored,
        // proxy-fenced and handed over by the named barrier) and stay until the wait covering
        // it; a stage is released only after that wait.
        unsafe {
            if i == 0 {
                mbarrier::wait_parity(full_kv, 0);
            }
            mbarrier::wait_parity(full(s), phase);
            wgmma::fence();
            issue_scores(&mut s_acc, k_smem, q_smem(s));
            wgmma::commit_group();
            issue_scores(&mut dp_acc, v_smem, do_smem(s));
            wgmma::commit_group();
            // The scores are done (dPᵀ may still run while Pᵀ is computed).
            wgmma::wait_group::<1>();
            pin_scores(&mut s_acc);
        }

        // Pᵀ in place; this thread's queries are columns 8 j + 2 (l % 4) + e.
        let need_mask = causal && wg_key0 + 63 > q0;
        // The mask `key_row + 8 h > q0 + c` as one register against constants:
        // `diag + 8 h − e > 8 j` (so no per-element column index stays live).
        let diag = key_row as i32 - q0 as i32 - 2 * (l % 4) as i32;
        let stage_rows = (s * 2 * BM) as usize;
        unroll!(SJ, |j| {
            unroll!(2, |e| {
                let c = 8 * j as u32 + 2 * (l % 4) + e as u32;
                // SAFETY: c < BM: inside this stage's L rows.
                let lv = unsafe { rows_f32.read_unchecked(stage_rows + c as usize) };
                unroll!(2, |h| {
                    let r = 4 * j + 2 * h + e;
                    let mut x = math::exp2_approx(math::fma(s_acc[r], p.scale_log2, -lv));
                    if need_mask && diag + 8 * h as i32 - e as i32 > 8 * j as i32 {
                        x = 0.0;
                    }
                    s_acc[r] = x;
                });
            });
        });
        // SAFETY: as above.
        unsafe {
            wgmma::wait_group::<0>();
            pin_scores(&mut dp_acc);
        }
        // dSᵀ in place.
        unroll!(SJ, |j| {
            unroll!(2, |e| {
                let c = 8 * j as u32 + 2 * (l % 4) + e as u32;
                // SAFETY: c < BM: inside this stage's Δ rows.
                let dl = unsafe { rows_f32.read_unchecked(stage_rows + (BM + c) as usize) };
                unroll!(2, |h| {
                    let r = 4 * j + 2 * h + e;
                    dp_acc[r] = s_acc[r] * (dp_acc[r] - dl);
                });
            });
        });
        // bf16 A fragments (k-step kk = queries 16 kk .. 16 kk + 16) and dSᵀ to shared memory.
        unroll!(QK, |kk| {
            unroll!(4, |r| {
                pf[kk][r] = wgmma::pack_bf16x2(s_acc[8 * kk + 2 * r], s_acc[8 * kk + 2 * r + 1]);
                dsf[kk][r] = wgmma::pack_bf16x2(dp_acc[8 * kk + 2 * r], dp_acc[8 * kk + 2 * r + 1]);
            });
        });
        if with_dq {
            if i > 0 {
                // The other warpgroup's tile i − 1 is done (see `ds_bar`).
                // SAFETY: both consumer warpgroups use the ids as described at `ds_bar`.
                unsafe { sync::named_barrier_sync(ds_bar(other, i - 1), 256) };
            }
            // The byte offsets (see `ds_words`) of this thread's words: with r = r0 + 8 h and
            // c = 8 j, the swizzle term `((j % 8) ^ (r0 % 8)) · 16` shares no bits with the
            // rest, so each offset is `y ^ 16 (j % 8)` plus constants, with one `y` per tile
            // (the old per-word sums were hoisted out of the loop: 32 live registers).
            let r0 = key_row - n0;
            let y = buf * BN * BM * 2 + r0 * ROW + (r0 % 8) * 16 + 4 * (l % 4);
            unroll!(SJ, |j| {
                unroll!(2, |h| {
                    let byte = (j as u32 / 8) * BN * ROW
                        + 8 * h as u32 * ROW
                        + (y ^ (16 * (j as u32 % 8)));
                    // dSᵀ[4 j + 2 h ..] is packed already: fragment j / 2, register 2 (j % 2) + h.
                    let word = dsf[j / 2][2 * (j % 2) + h];
                    // SAFETY: inside dS buffer `buf`; each word belongs to this thread. Its last
                    // readers, both warpgroups' dQ products of tile i − 2, are done: this
                    // warpgroup waited for its own in tile i − 1, the other for its own before
                    // its arrival of tile i − 1, waited for just above.
                    unsafe { ds_words.write_unchecked((byte / 4) as usize, word) };
                });
            });
            mbarrier::fence_proxy_async_shared();
        }

        // SAFETY: as above.
        unsafe {
            wgmma::fence();
            issue_grad(&mut dv_acc, &mut pf, do_smem(s));
            wgmma::commit_group();
            if with_dq && i > 0 {
                issue_dq(&mut dq_acc, i - 1);
            }
            issue_grad(&mut dk_acc, &mut dsf, q_smem(s));
            wgmma::commit_group();
            // dV (and dQ) done; dK may still run while dQ goes out.
            wgmma::wait_group::<1>();
            wgmma::fence_accumulators_32(&mut dq_acc);
            pin(&mut dv_acc);
            if with_dq {
                // This tile's dSᵀ is stored, the dQ products of the last tile are done.
                sync::named_barrier_arrive(ds_bar(consumer, i), 256);
            }
        }
        if with_dq && i > 0 {
            store_dq(&dq_acc, i - 1);
        }
        // SAFETY: as above.
        unsafe {
            wgmma::wait_group::<0>();
            pin(&mut dk_acc);
            unroll!(QK, |kk| {
                wgmma::fence_fragment(&mut pf[kk]);
                wgmma::fence_fragment(&mut dsf[kk]);
            });
            if l == 0 {
                // Q, dO, L, Δ of this stage are no longer read by this warp.
                mbarrier::arrive(empty(s));
            }
        }
    }
    if with_dq && n_iter > 0 {
        // The last tile's dQ.
        let mut dq_acc = [0f32; 32];
        // SAFETY: as in the loop.
        unsafe {
            sync::named_barrier_sync(ds_bar(other, n_iter - 1), 256);
            wgmma::fence();
        }
        issue_dq(&mut dq_acc, n_iter - 1);
        // SAFETY: the whole warpgroup.
        unsafe { wgmma::wait_group::<0>() };
        wgmma::fence_accumulators_32(&mut dq_acc);
        store_dq(&dq_acc, n_iter - 1);
    }

    // dK (scaled) and dV, rounded to bf16, staged in shared memory and copied out in 16-byte
    // pieces: straight from the accumulator layout, a warp's 4-byte stores covered eight rows'
    // 16 bytes each, half of every 32-byte sector (docs/gemm-tuning.md, "Short rows"), and
    // with one block per SM nothing else runs beside this epilogue. dV goes to this
    // warpgroup's rows of the V tile, which only its own dPᵀ products read; dK to its rows of
    // the K tile once both warpgroups' last dQ products, which read every K row, are done.
    // Staged swizzled as the tiles are (16-byte chunk u of row r at u ^ (r % 8)), which
    // spreads a warp's writes, eight rows' same chunk, over all banks.
    let words = shared::dynamic::<u32>();
    let (k_word0, v_word0) = ((k_smem - dyn_base) / 4, (v_smem - dyn_base) / 4);
    if with_dq {
        // SAFETY: both consumer warpgroups reach this barrier once (id 6 is used nowhere
        // else): every dQ product of both is waited for before it.
        unsafe { sync::named_barrier_sync(6, 256) };
    }
    let r_local = key_row - n0;
    unroll!(2, |h| {
        let r = r_local + 8 * h as u32;
        unroll!(OJ, |j| {
            let (sub, chunk) = (j as u32 / 8, j as u32 % 8);
            let byte = sub * BN * ROW + r * ROW + ((chunk ^ (r % 8)) * 16) + 4 * (l % 4);
            let c = 4 * j + 2 * h;
            let kw = wgmma::pack_bf16x2(dk_acc[c] * p.scale, dk_acc[c + 1] * p.scale);
            let vw = wgmma::pack_bf16x2(dv_acc[c], dv_acc[c + 1]);
            // SAFETY: inside the K and V tiles (r < BN); this thread's own words of its
            // warpgroup's rows, which no product reads any more (see above).
            unsafe {
                words.write_unchecked((k_word0 + byte / 4) as usize, kw);
                words.write_unchecked((v_word0 + byte / 4) as usize, vw);
            }
        });
    });
    // SAFETY: the whole warpgroup (ids 7 and 8 are this epilogue's alone).
    unsafe { sync::named_barrier_sync(7 + consumer, 128) };
    // This warpgroup's 64 rows of D / 8 pieces each, consecutive threads on consecutive
    // pieces: a warp stores whole rows.
    let pieces = shared::dynamic::<[u32; 4]>();
    // 64 · D / 8 pieces over 128 threads: D / 16 = KD each.
    unroll!(KD, |i| {
        let idx = t + 128 * i as u32;
        let (row, within) = (64 * consumer + idx / (D / 8), idx % (D / 8));
        let (sub, u) = (within / 8, within % 8);
        let byte = sub * BN * ROW + row * ROW + ((u ^ (row % 8)) * 16);
        let key = n0 + row;
        if key < p.seq_k {
            let at = (kv_bh as usize * p.seq_k as usize + key as usize) * D as usize
                + 8 * within as usize;
            // SAFETY: inside the staged tiles, written by this warpgroup before the barrier
            // above; (key, columns 8 within ..) of this K/V head belongs to this thread alone,
            // and `store_run` checks the bounds.
            unsafe {
                let kp = pieces.read_unchecked(((k_smem - dyn_base + byte) / 16) as usize);
                let vp = pieces.read_unchecked(((v_smem - dyn_base + byte) / 16) as usize);
                gpu::block::store_run(&dk, at, bf16x8(kp));
                gpu::block::store_run(&dv, at, bf16x8(vp));
            }
        }
    });
}

/// Declares the main backward kernels: `name(D, BM, KD, SN, QK, ON, SJ, OJ, UNIFORM_CONSUMERS)`
/// (see `backward`), each launched as [`attention_bwd_bf16_d64_wgmma`] describes.
macro_rules! backward_kernels {
    ($($(#[$doc:meta])* $name:ident($($c:literal),*);)*) => { $(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        #[kernel(launch_bounds(384, 1))]
        pub fn $name(
            q: &[bf16],
            k: &[bf16],
            v: &[bf16],
            d_o: &[bf16],
            maps: &[TensorMap],
            lse2: &[f32],
            delta: &[f32],
            dq: DisjointSlice<f32>,
            dq_turns: DisjointSlice<u32>,
            dk: DisjointSlice<bf16>,
            dv: DisjointSlice<bf16>,
            p: BwdParams,
        ) {
            let _ = (q, k, v, d_o);
            // SAFETY: the host launcher (`Dense::attention_backward_wgmma`) upholds the contract.
            unsafe {
                backward::<$($c),*>(
                    maps,
                    lse2,
                    delta,
                    dq,
                    dq_turns,
                    dk,
                    dv,
                    p,
                )
            }
        }
    )* };
}

backward_kernels! {
    /// Flash-attention backward, head dimension 64, on Hopper (see the module docs). Grid
    /// `(ceil(seq_k / BN), batch · kv_heads)` of [`THREADS`] threads, `shared_bytes(64)` bytes of
    /// dynamic shared memory; `maps` holds the TMA descriptors of Q, K, V, dO encoded by
    /// `gpu-dense`; `dq` is empty (no dQ) or a zeroed f32 accumulator of Q's shape; `dq_turns`
    /// is empty or, with `p.dq_order`, `batch · heads · ceil(seq_q / BM)` zeroed counters (one per
    /// query tile), and then the grid's x runs the key blocks last-first when causal
    /// ([`dq_turn`]).
    ///
    /// `q`, `k`, `v` and `d_o` are read only through the tensor maps; they are parameters so that
    /// the host runtime orders the launch after their writers and keeps them alive.
    attention_bwd_bf16_d64_wgmma(64, 128, 4, 64, 8, 32, 16, 8, true);
    /// Flash-attention backward, head dimension 128; as [`attention_bwd_bf16_d64_wgmma`] with
    /// `shared_bytes(128)`.
    attention_bwd_bf16_d128_wgmma(128, 64, 8, 32, 4, 64, 8, 16, true);
    /// Flash-attention backward, head dimension 128, for the deterministic dQ (`p.dq_order` ≠ 0);
    /// as [`attention_bwd_bf16_d128_wgmma`] but with the consumers' warpgroup index left
    /// per-thread (`tid / 128`), their wgmma descriptors moved to uniform registers per product:
    /// built in uniform registers, this mode ran slower at head dimension 128 while the default
    /// one ran faster (docs/gemm-tuning.md, "Short rows"), so it keeps the code it had.
    attention_bwd_bf16_d128_ordered_wgmma(128, 64, 8, 32, 4, 64, 8, 16, false);
}
