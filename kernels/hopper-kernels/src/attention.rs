//! Flash-attention forward on Hopper tensor cores (wgmma + TMA), FlashAttention-3's design
//! (Shah et al. 2024) in our device library. bf16 or f16 in and out, f32 scores and
//! accumulators; head dimension 64, 128 or 256; causal or not; grouped-query attention;
//! logsumexp output; fixed lengths or variable-length batches.
//!
//! `O = softmax(Q·Kᵀ·scale [causal]) · V` per (batch, head), Q and O `[batch, heads, seq_q, D]`,
//! K and V `[batch, kv_heads, seq_k, D]`, contiguous. Query head `h` reads K/V head `h / group`.
//! Variable lengths (flash-attention's "varlen", `cu_q`/`cu_k` non-empty): Q and O `[total_q,
//! heads, D]`, K and V `[total_k, kv_heads, D]`, sequence `b` rows `cu[b] .. cu[b + 1]`; the
//! tensor maps are then `[D, total, heads]` (a token's heads side by side), a tile of sequence
//! `b` starts at row `cu[b] + q0`, and what it reads past the sequence's end (the next
//! sequence's rows) is masked (keys) or never stored (query rows), so tiles stop at each
//! sequence's end without a map per sequence. The host lists the query tiles that exist
//! (`order`: heaviest first), which the persistent blocks take in snake order: computed orders
//! over the longest sequence would leave most items empty and, causal, hand some blocks only
//! the long sequences' tiles. Variable lengths are a compile-time property of a kernel (the
//! `_varlen` kernels; the head dimension 256 ones run both): the fixed-length kernels compile
//! without those paths, to the same code as before they existed (sharing one body made them
//! slower: the variable-length values and the head dimension 256 branch changed how their key
//! loop optimizes).
//!
//! Design:
//! - a block owns 128 query rows ([`BM`]) of one (batch, head) and has 3 warpgroups:
//!   warpgroup 0 is the producer (one thread issues TMA copies), warpgroups 1 and 2 are
//!   consumers, each owning 64 of the rows (one `wgmma` M of 64); `setmaxnreg` gives the
//!   producer's registers to the consumers. The `_m192` kernels (head dimension 64) have three
//!   consumers and 192 rows, FlashAttention-3's tile for d64: there the exponentials, not the
//!   products, bound the speed, and a third warpgroup's softmax hides behind two others'
//!   products (160 registers per consumer thread are enough at d64);
//! - TMA loads Q once and streams K and V in [`BN`] = 128-key tiles through a ring of
//!   `stages` (2 or 4, [`FlashParams::stages`]) shared-memory stages,
//!   ring, K and V with separate "full" (copies landed) and "empty" (consumers done) mbarriers,
//!   so a K stage is refilled as soon as its scores are computed while its V is still in use;
//!   the copies use 3-D tensor maps `[D, seq, batch·heads]` with a one-head-deep box, so rows
//!   past a head's sequence arrive as zeros, and the 128-byte swizzle (64-column sub-tiles);
//! - `S = Q·Kᵀ`: `wgmma.m64n128k16` with both operands K-major in shared memory;
//! - online softmax in registers (each row's values live in the 4 threads of a quad: two
//!   shuffles reduce its max), exponentials by `ex2.approx` on scores prescaled by
//!   `scale·log2 e`;
//! - `O += P·V`: P rounded to bf16 in registers is the A operand of `wgmma` directly (the
//!   accumulator layout is the A-fragment layout, see `gpu::hopper::wgmma`), and V is read
//!   from shared memory as an MN-major (transposed) B operand: no transpose pass;
//! - intra-warpgroup overlap (FA3 §3.2): the scores of tile `j` are issued before `P·V` of tile
//!   `j - 1`, so the tensor cores work on both while the warpgroup waits only for the scores,
//!   and the softmax of tile `j` runs while `P·V` of tile `j - 1` is still in flight;
//! - ping-pong between the consumer warpgroups (FA3 §3.1): they take turns issuing their
//!   products, round robin (one named barrier per consumer), so one's softmax runs while the
//!   others' products keep the tensor cores busy, instead of all computing exponentials at
//!   the same time;
//! - persistent blocks (one per SM) walk the query tiles, the producer loading the next tile's
//!   Q (into a second Q tile, [`q_tiles`]) and K/V while the consumers finish and store the
//!   current one; items overlap inside a warpgroup as tiles do: the next item's first scores
//!   are issued with the current item's last `P·V`, and its first softmax runs while that
//!   product does, before the current item is stored;
//! - O leaves as each thread's 4-byte column pairs or, with [`FlashParams::tma_store`], through
//!   a 128-byte-swizzled staging tile in shared memory and one 3-D TMA store per warpgroup and
//!   64 columns (rows past the head's end clipped by the tensor map);
//! - causal: key tiles entirely above the diagonal are not loaded, only tiles crossing it are
//!   masked, and the persistent blocks take the query tiles heaviest first, in a snake order
//!   that evens out their work;
//! - head dimension 256 (the `_d256` kernels): the 64 × 256 O accumulator takes 128 registers
//!   per thread, so the scores of the next tile are not issued before `P·V` of this one (no
//!   intra-warpgroup overlap: S, P and O together would not fit in 240 registers), the
//!   warpgroups still ping-pong; the 64 KiB Q tile and 64 KiB K and V tiles leave room for one
//!   ring stage (193 KiB), K refilled while the softmax and `P·V` run, V while the next scores
//!   run.

use gpu::hopper::tma::{self, TensorMap};
use gpu::hopper::{mbarrier, wgmma};
use gpu::prelude::*;
use gpu::unroll;
use half::{bf16, f16};

/// Query rows per consumer warpgroup (one `wgmma` M).
const WG_ROWS: u32 = 64;
/// Query rows per block of the kernels with `consumers` consumer warpgroups (2, or 3 for the
/// `_m192` kernels).
pub const fn block_rows(consumers: u32) -> u32 {
    WG_ROWS * consumers
}
/// Query rows per block of the two-consumer kernels.
pub const BM: u32 = block_rows(2);
/// Keys per K/V tile.
pub const BN: u32 = 128;
/// The deepest K/V ring: 4 stages (fits beside the two Q tiles for head dimension 64 only:
/// 161 KiB, 177 KiB with 192 rows; head dimension 128 has room for 2, 193 KiB, 256 beside its
/// one Q tile for 1, 193 KiB; the O staging tile adds 16, 24 or 32 KiB).
pub const MAX_STAGES: u32 = 4;
/// Threads per block: a producer warpgroup and `consumers` consumer warpgroups.
pub const fn threads(consumers: u32) -> u32 {
    128 * (consumers + 1)
}
/// Threads per block of the two-consumer kernels.
pub const THREADS: u32 = threads(2);
/// Bytes of one swizzled row: 64 two-byte elements. Tiles are stored as 64-column sub-tiles.
const ROW: u32 = 128;
/// Q tiles in shared memory at head dimension `head_dim`: two, so that the producer loads the
/// next work item's Q while the current item runs and the consumers issue the next item's
/// first scores beside the current one's last `P·V` (see `attention`); at head dimension 256,
/// which does not overlap items, a second 64 KiB tile would not fit.
pub const fn q_tiles(head_dim: u32) -> u32 {
    if head_dim == 256 { 1 } else { 2 }
}

/// mbarriers: Q full, then Q empty, per Q tile, then K full, V full, K empty, V empty per
/// stage.
const fn barriers(head_dim: u32, stages: u32) -> u32 {
    2 * q_tiles(head_dim) + 4 * stages
}

/// Dynamic shared memory for head dimension `head_dim`, a ring of `stages` (a power of two up
/// to [`MAX_STAGES`]), `consumers` consumer warpgroups and, with `tma_store`, the O staging
/// tile: 1 KiB of alignment slack (the 128-byte swizzle needs 1024-byte aligned tiles), the Q
/// tiles ([`q_tiles`]), the K and V stages, the O tile, the barriers.
pub const fn shared_bytes(head_dim: u32, stages: u32, consumers: u32, tma_store: bool) -> u32 {
    1024 + q_tiles(head_dim) * block_rows(consumers) * head_dim * 2
        + 2 * stages * BN * head_dim * 2
        + o_staging_bytes(head_dim, consumers, tma_store)
        + 8 * barriers(head_dim, stages)
}

/// Bytes of the O staging tile (the block's rows of O for the TMA store), 0 without it.
const fn o_staging_bytes(head_dim: u32, consumers: u32, tma_store: bool) -> u32 {
    if tma_store {
        block_rows(consumers) * head_dim * 2
    } else {
        0
    }
}

/// Sizes and flags of one launch; the grid is 1-D, at most [`work_items`] blocks.
#[derive(Debug, Clone, Copy, PartialEq, DeviceCopy)]
#[repr(C)]
pub struct FlashParams {
    pub seq_q: u32,
    pub seq_k: u32,
    /// `scale · log2 e`: scores times it are the softmax's exponent in base 2.
    pub scale_log2: f32,
    /// 1: key `j` is masked for query `i` when `j > i`.
    pub causal: u32,
    /// Query heads per batch entry.
    pub heads: u32,
    /// `batch · heads`.
    pub batch_heads: u32,
    /// Causal: heads per ordering group of the work items (1 ..= `batch_heads`, see
    /// `work_item`).
    pub head_group: u32,
    /// Stages of the K/V ring: a power of two (1 at head dimension 256), at most
    /// [`MAX_STAGES`], that fits ([`shared_bytes`]).
    pub stages: u32,
    /// Query heads per K/V head.
    pub group: u32,
    /// 1: the consumer warpgroups take turns issuing their products (ping-pong, see the
    /// module docs); 0: they issue as they are ready.
    pub ping_pong: u32,
    /// 1: O goes out through shared memory with one TMA store per warpgroup and 64-column
    /// sub-tile (the fourth tensor map; [`shared_bytes`] with `tma_store`); 0: each thread
    /// stores its 4-byte column pairs from the accumulator layout. Fixed lengths only.
    pub tma_store: u32,
    /// Variable lengths: the query rows of all sequences (`cu_q`'s last entry), for the
    /// logsumexp's `[heads, total_q]` layout, and the work items come from `order`; 0 for
    /// fixed lengths.
    pub total_q: u32,
    /// Work items of the launch: `order.len() / 2` with variable lengths, else
    /// [`work_items`]`(seq_q, batch_heads, consumers)`. Read by the `_varlen` and head
    /// dimension 256 kernels only (the fixed-length ones compute it).
    pub items: u32,
    /// 1: the blocks take the items in snake order (reversed on odd rounds): causal, or variable
    /// lengths (the host sorts the list by cost). Read as `items`.
    pub snake: u32,
}

/// A consumer's view of one work item: its (batch·head), key tiles, keys, the first query row
/// of the consumer's warpgroup and this thread's first row (the other is `row + 8`).
#[derive(Clone, Copy)]
struct Item {
    bh: u32,
    n_tiles: u32,
    len_k: u32,
    wg_row0: u32,
    row: u32,
}

/// Where one (sequence, head)'s rows are, for fixed lengths or a variable-length batch (see
/// the module docs): its lengths, its first rows and depth (third coordinate) in the Q and K/V
/// tensor maps, and its O and logsumexp offsets.
#[derive(Clone, Copy)]
struct Seq {
    len_q: u32,
    len_k: u32,
    /// Map coordinates of row 0: (row, depth) in Q's map and in K's and V's.
    q_row: u32,
    q_z: u32,
    k_row: u32,
    k_z: u32,
    /// Element offset of row 0 in O and elements from one row to the next.
    o_base: usize,
    o_stride: usize,
    /// Logsumexp index of row 0 (rows are consecutive).
    lse_base: usize,
}

/// The rows of (batch·head) `bh` for head dimension `d` in a variable-length instance: fixed
/// lengths when `cu_q` is empty (head dimension 256), else sequence `bh / heads` of the
/// variable-length batch. The fixed-length instances do not use it (their code stays as it was
/// before variable lengths).
#[inline(always)]
fn seq_of(bh: u32, d: u32, p: &FlashParams, cu_q: &[u32], cu_k: &[u32]) -> Seq {
    let (b, h) = (bh / p.heads, bh % p.heads);
    let kv_heads = p.heads / p.group;
    if cu_q.is_empty() {
        Seq {
            len_q: p.seq_q,
            len_k: p.seq_k,
            q_row: 0,
            q_z: bh,
            k_row: 0,
            k_z: b * kv_heads + h / p.group,
            o_base: (bh as usize * p.seq_q as usize) * d as usize,
            o_stride: d as usize,
            lse_base: bh as usize * p.seq_q as usize,
        }
    } else {
        let (b, qs, ks) = (b as usize, cu_q[b as usize], cu_k[b as usize]);
        Seq {
            len_q: cu_q[b + 1] - qs,
            len_k: cu_k[b + 1] - ks,
            q_row: qs,
            q_z: h,
            k_row: ks,
            k_z: h / p.group,
            o_base: (qs as usize * p.heads as usize + h as usize) * d as usize,
            o_stride: p.heads as usize * d as usize,
            lse_base: h as usize * p.total_q as usize + qs as usize,
        }
    }
}

/// Masks the scores of tile `j` that a row may not see: keys past `seq_k` (the sequence's:
/// with variable lengths the tile's rows past it are the next sequence's), and with `causal`
/// keys after the row. Only tiles at the sequence end or crossing the diagonal for this
/// warpgroup's rows pay for it.
#[inline(always)]
fn mask(s: &mut [f32; 64], j: u32, seq_k: u32, causal: bool, wg_row0: u32, row: u32, l: u32) {
    let key0 = j * BN;
    if key0 + BN > seq_k || (causal && key0 + BN - 1 > wg_row0) {
        // Opaque (`fresh`): else the thread's 32 key offsets are hoisted out of the loops
        // (the mask is inlined three times) and spill.
        let lane_key = fresh(key0 + 2 * (l % 4));
        unroll!(16, |jj| {
            unroll!(4, |r| {
                let key = lane_key + 8 * jj as u32 + (r as u32 & 1);
                let row = row + 8 * (r as u32 >> 1);
                if key >= seq_k || (causal && key > row) {
                    s[4 * jj + r] = f32::NEG_INFINITY;
                }
            });
        });
    }
}

/// One tile of the online softmax for this thread's two rows: updates the running maxima `m`
/// (base-2 units of the scaled scores), overwrites the scores with `2^(s·scale − m)`, and
/// returns each row's correction `2^(m_old − m_new)` for the earlier sums and outputs and this
/// thread's part of the tile's row sums. Every row sees key 0 in its first tile, so the maxima
/// are finite from then on (a later tile wholly masked for a row leaves them unchanged).
#[inline(always)]
fn softmax(s: &mut [f32; 64], m: &mut [f32; 2], scale: f32) -> ([f32; 2], [f32; 2]) {
    let mut corr = [0f32; 2];
    let mut sum = [0f32; 2];
    unroll!(2, |h| {
        let mut mx = f32::NEG_INFINITY;
        unroll!(16, |j| {
            mx = mx.max(s[4 * j + 2 * h]).max(s[4 * j + 2 * h + 1]);
        });
        mx = mx.max(warp::shuffle_xor(mx, 1));
        mx = mx.max(warp::shuffle_xor(mx, 2));
        let m_new = m[h].max(mx * scale);
        corr[h] = math::exp2_approx(m[h] - m_new);
        m[h] = m_new;
        let mut acc = 0f32;
        unroll!(16, |j| {
            unroll!(2, |e| {
                let x = math::exp2_approx(math::fma(s[4 * j + 2 * h + e], scale, -m_new));
                s[4 * j + 2 * h + e] = x;
                acc += x;
            });
        });
        sum[h] = acc;
    });
    (corr, sum)
}

/// Two f32 rounded to the kernel's element (f16 or bf16) as one word, `lo` first.
#[inline(always)]
fn pack2<const F16: bool>(lo: f32, hi: f32) -> u32 {
    if F16 {
        wgmma::pack_f16x2(lo, hi)
    } else {
        wgmma::pack_bf16x2(lo, hi)
    }
}

/// P (the softmax numerators, f32 in the accumulator layout) as the bf16 or f16 A fragments of
/// the 8 k-steps of `P·V` (see `gpu::hopper::wgmma`'s module docs).
#[inline(always)]
fn pack<const F16: bool>(s: &[f32; 64], pf: &mut [[u32; 4]; 8]) {
    unroll!(8, |kk| {
        unroll!(4, |r| {
            pf[kk][r] = pack2::<F16>(s[8 * kk + 2 * r], s[8 * kk + 2 * r + 1]);
        });
    });
}

/// `x`, opaque to the optimizer where it is called (an asm with effects): values computed from
/// it are recomputed at each call instead of being hoisted out of the key loop and held in
/// registers for its whole length (with 160 registers per thread the 192-row kernel spilled
/// the hoisted Q descriptors).
#[inline(always)]
fn fresh(x: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let mut x = x;
        // SAFETY: a register move; no memory access.
        unsafe {
            core::arch::asm!("mov.b32 {0}, {0};", inout(reg32) x, options(nomem, nostack, preserves_flags))
        };
        x
    }
    #[cfg(not(target_arch = "nvptx64"))]
    x
}

/// Which query tile work item `t` is, as (query block, batch·head). Not causal: the query
/// blocks of one head are consecutive, so the blocks running together share that head's K and
/// V in L2. Causal: the heads in groups of `head_group` (the last group may be smaller), and
/// each group's items sorted by cost, heaviest (last query block of each head) first, so that
/// [`item_of`]'s snake order balances the persistent blocks' work; `head_group` =
/// `batch_heads` sorts all items (the default), a smaller group keeps the blocks that run
/// together on fewer heads' K and V.
#[inline(always)]
pub fn work_item(
    t: u32,
    blocks_m: u32,
    batch_heads: u32,
    head_group: u32,
    causal: bool,
) -> (u32, u32) {
    if causal {
        let per_group = head_group * blocks_m;
        let (g, within) = (t / per_group, t % per_group);
        let heads = head_group.min(batch_heads - g * head_group);
        (
            blocks_m - 1 - within / heads,
            g * head_group + within % heads,
        )
    } else {
        (t % blocks_m, t / blocks_m)
    }
}

/// The work item block `block` of `grid` takes in its round `round`: round `r` hands items
/// `r·grid .. (r+1)·grid` to the blocks, in reverse block order on odd rounds when `snake`
/// (causal, or a host-sorted `order`: items sorted by decreasing cost: a block with a heavy item in one round gets a light one
/// in the next). May be past the last item in the last round.
#[inline(always)]
pub fn item_of(round: u32, block: u32, grid: u32, snake: bool) -> u32 {
    let position = if snake && round % 2 == 1 {
        grid - 1 - block
    } else {
        block
    };
    round * grid + position
}

/// Key tiles a query block of `bm` rows starting at row `q0` of a sequence of `len_q`
/// queries and `len_k` keys reads: all, or with `causal`
/// those up to the block's last row (keys 0 ..= last row). With 192 rows the last tile may lie
/// wholly above the first consumer's rows: they mask all of it (their running maxima are
/// finite from tile 0, so the tile adds nothing).
#[inline(always)]
fn key_tiles(q0: u32, bm: u32, (len_q, len_k): (u32, u32), causal: bool) -> u32 {
    let all = len_k.div_ceil(BN);
    if causal {
        let q_rows = len_q.min(q0 + bm);
        all.min((q_rows - 1) / BN + 1)
    } else {
        all
    }
}

/// The kernel body for head dimension `D` (`KD = D / 16` k-steps of `Q·Kᵀ`, `OJ = D / 8`
/// column groups and `ON = D / 2` registers of the O accumulator, separate parameters because
/// stable Rust has no generic const expressions), `NC` consumer warpgroups (2, or 3 at
/// `D` = 64) and f16 (`F16`) or bf16 elements. Head dimension 256 runs without the
/// intra-warpgroup overlap and with a one-stage ring (see the module docs).
///
/// Persistent: block `b` computes one work item per round (see [`item_of`] and
/// [`work_item`]); the producer runs ahead into the next item (its Q into the other Q tile,
/// its K/V as stages free up), so a block's next item loads while its consumers finish the
/// current one, and the consumers start the next item's scores before they store the current
/// one (head dimensions 64 and 128). With a grid of one block per item it is the plain
/// one-tile-per-block kernel.
///
/// # Safety
/// `maps` holds the 3-D tensor maps of Q, K, V and O (`[D, seq, batch·heads]`, box `[64, 128,
/// 1]` for K and V, `[64, block_rows(NC), 1]` for Q, `[64, 64, 1]` for O, 128-byte swizzle); `o` addresses `batch · heads · seq_q · D` elements; `lse` is empty or
/// holds `batch · heads · seq_q` values; launched with `threads(NC)` threads, a 1-D grid of
/// at most `work_items(seq_q, batch_heads, NC)` blocks, `shared_bytes(D, p.stages, NC)` of
/// dynamic shared memory, the Q map's box `block_rows(NC)` rows, and
/// `seq_q, seq_k >= 1`, `group` dividing `heads`, `batch_heads = batch · heads`. Variable
/// lengths: `cu_q` and `cu_k` hold `batch + 1` non-decreasing sequence starts from 0, every
/// sequence with queries has keys, `seq_q` is the longest sequence's queries, `total_q` =
/// `cu_q[batch]`, the maps are `[D, total, heads]` (strides `heads · D`, `D`), and `tma_store`
/// is 0. `order` is empty (items in [`work_item`]'s order) or lists the work items as
/// (query block, batch·head) pairs, each at most once, and the grid is at most that many;
/// `items` is that count (`order.len() / 2`, or `work_items(seq_q, batch_heads, NC)`).
#[inline(always)]
unsafe fn attention<
    const D: u32,
    const KD: usize,
    const OJ: usize,
    const ON: usize,
    const NC: u32,
    const F16: bool,
    const VARLEN: bool,
>(
    maps: &[TensorMap],
    out: *mut u32,
    lse: DisjointSlice<f32>,
    (cu_q, cu_k, order): (&[u32], &[u32], &[u32]),
    p: FlashParams,
) {
    const {
        assert!(KD as u32 * 16 == D && OJ as u32 * 8 == D && ON as u32 * 2 == D);
        assert!(D == 64 || D == 128 || D == 256);
        // Three consumers get 160 registers each: enough for d64's accumulators only.
        assert!(NC == 2 || (NC == 3 && D == 64));
    }
    let bm = block_rows(NC);
    let tid = thread::thread_idx_x();
    let base = (shared::dynamic::<u8>().addr() + 1023) & !1023;
    // Tiles: 64-column sub-tiles of `rows × 128` bytes, side by side.
    let tile_kv = BN * D * 2;
    // Q tile, mbarrier slot and phase parity of the block's `round`-th item (a power of two
    // of tiles).
    let qt = const { q_tiles(D) };
    let q_slot = move |round: u32| (round & (qt - 1), (round / qt) & 1);
    let q_smem = |slot: u32| base + slot * bm * D * 2;
    let kv0 = base + qt * bm * D * 2;
    let k_smem = |s: u32| kv0 + s * tile_kv;
    let stages = p.stages;
    let v_smem = |s: u32| kv0 + (stages + s) * tile_kv;
    let tma_store = p.tma_store != 0;
    // O staging: per consumer, D / 64 sub-tiles of 64 rows × 128 bytes, 128-byte swizzled.
    let o_smem = kv0 + 2 * stages * tile_kv;
    let bars = o_smem + o_staging_bytes(D, NC, tma_store);
    let full_q = |slot: u32| bars + 8 * slot;
    let empty_q = |slot: u32| bars + 8 * (qt + slot);
    let full_k = |s: u32| bars + 8 * (2 * qt + s);
    let full_v = |s: u32| bars + 8 * (2 * qt + stages + s);
    let empty_k = |s: u32| bars + 8 * (2 * qt + 2 * stages + s);
    let empty_v = |s: u32| bars + 8 * (2 * qt + 3 * stages + s);
    // Ring stage and phase parity of K/V tile number `i` (stages is a power of two).
    let shift = stages.trailing_zeros();
    let ring = move |i: u32| (i & (stages - 1), (i >> shift) & 1);

    let causal = p.causal != 0;
    let blocks_m = p.seq_q.div_ceil(bm);
    // Fixed-length instances: all items in computed order, snake when causal. Variable-length
    // ones: a host-made list of (query block, batch·head) pairs (or, with empty `cu_q` at head
    // dimension 256, the computed order), decided by parameters rather than values derived
    // in the kernel (those stay in registers through the key loops).
    let (items, snake) = if VARLEN {
        (p.items, p.snake != 0)
    } else {
        (blocks_m * p.batch_heads, causal)
    };
    let item = move |t: u32| {
        if VARLEN && p.total_q != 0 {
            (order[2 * t as usize], order[2 * t as usize + 1])
        } else {
            work_item(t, blocks_m, p.batch_heads, p.head_group, causal)
        }
    };
    let (first, step) = (thread::block_idx_x(), thread::grid_dim_x());
    let kv_head = |bh: u32| {
        let (b, h) = (bh / p.heads, bh % p.heads);
        b * (p.heads / p.group) + h / p.group
    };

    if tid == 0 {
        // SAFETY: one thread initialises each barrier before the block barrier below.
        unsafe {
            for slot in 0..qt {
                mbarrier::init(full_q(slot), 1);
                // One arrival per consumer warp.
                mbarrier::init(empty_q(slot), 4 * NC);
            }
            for s in 0..stages {
                mbarrier::init(full_k(s), 1);
                mbarrier::init(full_v(s), 1);
                mbarrier::init(empty_k(s), 4 * NC);
                mbarrier::init(empty_v(s), 4 * NC);
            }
        }
        mbarrier::fence_init();
    }
    sync::sync_threads();

    // Broadcast from lane 0 (`wgmma::warpgroup_index`): ptxas then knows the role branches and
    // everything derived from the warpgroup index are warp-uniform and builds the wgmma
    // descriptors in uniform registers (with the stages broadcast too, below), not in vector
    // registers moved over one `R2UR` at a time. Not at head dimension 64 with two consumers,
    // whose products time 2-4% slower so (the other instances 1-7% faster).
    let uniform_roles = const { !(D == 64 && NC == 2) };
    let warpgroup = if uniform_roles {
        wgmma::warpgroup_index()
    } else {
        tid / 128
    };
    if warpgroup == 0 {
        // SAFETY: the whole producer warpgroup; it needs few registers. FlashAttention-3's
        // split: 24 beside two consumers at 240, 32 beside three at 160.
        unsafe {
            if NC == 2 {
                wgmma::set_max_registers_dec::<24>()
            } else {
                wgmma::set_max_registers_dec::<32>()
            }
        };
        if tid == 0 {
            let map_q = maps.as_ptr();
            // SAFETY: the host passes three maps.
            let (map_k, map_v) = unsafe { (map_q.add(1), map_q.add(2)) };
            // SAFETY: valid tensor maps in global memory (host contract).
            unsafe {
                tma::prefetch_map(map_q);
                tma::prefetch_map(map_k);
                tma::prefetch_map(map_v);
            }
            // `it` counts K/V tiles over all of this block's items (the ring runs on across
            // them), `round` the items.
            let (mut it, mut round) = (0u32, 0u32);
            for r in 0..items.div_ceil(step) {
                let t = item_of(r, first, step, snake);
                if t >= items {
                    break;
                }
                let (mb, bh) = item(t);
                let q0 = mb * bm;
                // Map coordinates (row, depth) of the Q tile and of K/V row 0, the lengths.
                let ((q_row, q_z), (k_row, k_z), lens) = if VARLEN {
                    let seq = seq_of(bh, D, &p, cu_q, cu_k);
                    (
                        (seq.q_row + q0, seq.q_z),
                        (seq.k_row, seq.k_z),
                        (seq.len_q, seq.len_k),
                    )
                } else {
                    ((q0, bh), (0, kv_head(bh)), (p.seq_q, p.seq_k))
                };
                if VARLEN && q0 >= lens.0 {
                    // A shorter sequence of a variable-length batch: no tile here (the
                    // consumers skip it too).
                    continue;
                }
                let (q_row, q_z) = (q_row as i32, q_z as i32);
                let (k_row, k_z) = (k_row as i32, k_z as i32);
                // SAFETY: each phase expects exactly the bytes of its copies (whole boxes,
                // out-of-bounds parts included); tiles are 1024-byte aligned; Q and each stage
                // are refilled only after all consumer warps released them (the first round
                // passes by the parity rule).
                unsafe {
                    let (slot, phase) = q_slot(round);
                    mbarrier::wait_parity(empty_q(slot), phase ^ 1);
                    mbarrier::arrive_expect_tx(full_q(slot), bm * D * 2);
                    for c in 0..D / 64 {
                        let dst = q_smem(slot) + c * bm * ROW;
                        tma::load_3d(dst, map_q, full_q(slot), (64 * c) as i32, q_row, q_z);
                    }
                    for j in 0..key_tiles(q0, bm, lens, causal) {
                        let (s, phase) = ring(it);
                        let y = k_row + (j * BN) as i32;
                        mbarrier::wait_parity(empty_k(s), phase ^ 1);
                        mbarrier::arrive_expect_tx(full_k(s), tile_kv);
                        for c in 0..D / 64 {
                            let (dst, x) = (k_smem(s) + c * BN * ROW, (64 * c) as i32);
                            tma::load_3d(dst, map_k, full_k(s), x, y, k_z);
                        }
                        mbarrier::wait_parity(empty_v(s), phase ^ 1);
                        mbarrier::arrive_expect_tx(full_v(s), tile_kv);
                        for c in 0..D / 64 {
                            let (dst, x) = (v_smem(s) + c * BN * ROW, (64 * c) as i32);
                            tma::load_3d(dst, map_v, full_v(s), x, y, k_z);
                        }
                        it += 1;
                    }
                }
                round += 1;
            }
        }
        return;
    }

    // SAFETY: the whole consumer warpgroup; 128 * 24 + 256 * 240 <= 65536 and
    // 128 * 32 + 384 * 160 <= 65536.
    unsafe {
        if NC == 2 {
            wgmma::set_max_registers_inc::<240>()
        } else {
            wgmma::set_max_registers_inc::<160>()
        }
    };
    let consumer = warpgroup - 1;
    let t = tid - 128 * warpgroup;
    let (w, l) = (t / 32, t % 32);
    let scale = p.scale_log2;
    let q_desc = |slot: u32, kk: u32| {
        let q = fresh(q_smem(slot) + consumer * 64 * ROW);
        wgmma::shared_desc_sw128(q + (kk / 4) * bm * ROW + (kk % 4) * 32)
    };
    let k_desc =
        |s: u32, kk: u32| wgmma::shared_desc_sw128(k_smem(s) + (kk / 4) * BN * ROW + (kk % 4) * 32);
    // V as the MN-major B of `P·V`: k-step kk is keys 16 kk .. 16 kk + 16; the second 64
    // columns (D = 128) are the next sub-tile, BN rows on; D = 256 takes two n128 products,
    // the second from sub-tile 2.
    let v_desc = |s: u32, kk: u32| wgmma::shared_desc_sw128_mn(v_smem(s) + kk * 2048, BN * ROW);

    // Issues S = Q · K_sᵀ (one batch), Q from tile `q`.
    let issue_qk = |s_acc: &mut [f32; 64], q: u32, s: u32| {
        unroll!(KD, |kk| {
            // SAFETY: the whole warpgroup, after `fence`; Q and K_s have landed (waited on their
            // full barriers) and are not refilled before the batch is waited for.
            unsafe {
                let (a, b) = (q_desc(q, kk as u32), k_desc(s, kk as u32));
                if F16 {
                    wgmma::mma_m64n128k16_f16(s_acc, a, b, kk > 0)
                } else {
                    wgmma::mma_m64n128k16_bf16(s_acc, a, b, kk > 0)
                }
            };
        });
        // SAFETY: the whole warpgroup, after its products.
        unsafe { wgmma::commit_group() };
    };
    // Issues O += P · V_s (one batch).
    let issue_pv = |o_acc: &mut [f32; ON], pf: &mut [[u32; 4]; 8], s: u32| {
        unroll!(8, |kk| {
            let desc = v_desc(s, kk as u32);
            // SAFETY: as `issue_qk`, for V_s; `o_acc` and `pf` are pinned after the wait.
            unsafe {
                let a = &mut pf[kk];
                if let Ok(o) = <&mut [f32; 32]>::try_from(&mut o_acc[..]) {
                    if F16 {
                        wgmma::mma_rs_m64n64k16_f16(o, a, desc, true);
                    } else {
                        wgmma::mma_rs_m64n64k16_bf16(o, a, desc, true);
                    }
                } else if let Ok(o) = <&mut [f32; 64]>::try_from(&mut o_acc[..]) {
                    if F16 {
                        wgmma::mma_rs_m64n128k16_f16(o, a, desc, true);
                    } else {
                        wgmma::mma_rs_m64n128k16_bf16(o, a, desc, true);
                    }
                } else if let Ok(o) = <&mut [f32; 128]>::try_from(&mut o_acc[..]) {
                    let (lo, hi) = o.split_at_mut(64);
                    let hi_v = v_smem(s) + 2 * BN * ROW + kk as u32 * 2048;
                    let hi_desc = wgmma::shared_desc_sw128_mn(hi_v, BN * ROW);
                    if let (Ok(lo), Ok(hi)) = (
                        <&mut [f32; 64]>::try_from(lo),
                        <&mut [f32; 64]>::try_from(hi),
                    ) {
                        if F16 {
                            wgmma::mma_rs_m64n128k16_f16(lo, a, desc, true);
                            wgmma::mma_rs_m64n128k16_f16(hi, a, hi_desc, true);
                        } else {
                            wgmma::mma_rs_m64n128k16_bf16(lo, a, desc, true);
                            wgmma::mma_rs_m64n128k16_bf16(hi, a, hi_desc, true);
                        }
                    }
                }
            }
        });
        // SAFETY: the whole warpgroup, after its products.
        unsafe { wgmma::commit_group() };
    };
    let pin_o = |o_acc: &mut [f32; ON], pf: &mut [[u32; 4]; 8]| {
        if let Ok(o) = <&mut [f32; 32]>::try_from(&mut o_acc[..]) {
            wgmma::fence_accumulators_32(o);
        } else if let Ok(o) = <&mut [f32; 64]>::try_from(&mut o_acc[..]) {
            wgmma::fence_accumulators_64(o);
        } else if let Ok(o) = <&mut [f32; 128]>::try_from(&mut o_acc[..]) {
            wgmma::fence_accumulators_128(o);
        }
        unroll!(8, |kk| {
            wgmma::fence_fragment(&mut pf[kk]);
        });
    };
    // Releases a stage to the producer: one arrival per warp, after the warp's wait_group.
    let release = |bar: u32| {
        if l == 0 {
            // SAFETY: an initialised barrier whose phase expects this warp's arrival.
            unsafe { mbarrier::arrive(bar) };
        }
    };
    // Ping-pong: consumer c waits on named barrier 1 + c for its turn to issue products, and
    // hands the turn over to the next consumer (round robin) by arriving on its barrier; each
    // barrier has one waiting and one arriving warpgroup. Every consumer issues the same
    // batches: one for the first item's first scores, then n per item of n key tiles (the last
    // one pairs the item's last `P·V` with the next item's first scores), 2 n at head
    // dimension 256. The round robin runs on across items rather than all consumers meeting at
    // each item's start (where consumer 0 waited for the last one's epilogue, the tensor
    // cores idle). Consumer 0 goes first (the last consumer arrives on its barrier once, before the
    // first item) and takes the last consumer's final hand-over after the last item, so the
    // arrivals match the waits exactly.
    let ping_pong = p.ping_pong != 0;
    let last_consumer = NC - 1;
    let turn = || {
        if ping_pong {
            // SAFETY: whole warpgroups on both sides; the counts balance (above).
            unsafe { sync::named_barrier_sync(1 + consumer, 256) };
        }
    };
    let hand_over = || {
        if ping_pong {
            // SAFETY: as `turn`.
            unsafe { sync::named_barrier_arrive(1 + (consumer + 1) % NC, 256) };
        }
    };

    // With TMA stores of O, thread 0 waits for a store's reads of the staging tile at the next
    // item's epilogue rather than right after issuing it, where the whole warpgroup waited for
    // it at its next turn (head dimension 128, whose default the TMA store is; the same code
    // cost head dimension 64, which stores from the threads by default, 1-2%).
    let deferred_store_wait = const { D == 128 };
    if ping_pong && consumer == last_consumer {
        // SAFETY: as `turn`.
        unsafe { sync::named_barrier_arrive(1, 256) };
    }
    // The first work item with a tile from the block's round `r` on: its round, whether there
    // is one, and what a consumer needs of it. Skipped: the shorter sequences of a
    // variable-length batch with no tile there (the producer skips them too). Plain values
    // rather than an `Option`, which LLVM kept in local memory across the item loop.
    let next_item = |mut r: u32| loop {
        let index = item_of(r, first, step, snake);
        let (mb, bh) = item(index.min(items - 1));
        let q0 = mb * bm;
        let (len_q, len_k) = if VARLEN {
            let seq = seq_of(bh, D, &p, cu_q, cu_k);
            (seq.len_q, seq.len_k)
        } else {
            (p.seq_q, p.seq_k)
        };
        let wg_row0 = q0 + 64 * consumer;
        let found = Item {
            bh,
            n_tiles: key_tiles(q0, bm, (len_q, len_k), causal),
            len_k,
            wg_row0,
            // This thread's rows: `row` and `row + 8`.
            row: wg_row0 + 16 * w + l / 4,
        };
        if index >= items || !(VARLEN && q0 >= len_q) {
            break (r, index < items, found);
        }
        r += 1;
    };
    // Ring stage and phase of K/V tile number `i` of the block. The stage broadcast from lane
    // 0, as the warpgroup index: the K/V descriptors built from it then stay in uniform
    // registers.
    let stage = |i: u32| {
        let (s, phase) = ring(i);
        (
            if uniform_roles {
                warp::broadcast(s, 0)
            } else {
                s
            },
            phase,
        )
    };

    // O / l of an item, rounded to the element. With `tma_store`: into this warpgroup's staging
    // tile (swizzled as the TMA expects: 16-byte chunk c of row r at chunk c ^ (r % 8), which
    // also spreads a warp's writes over all banks), then one thread stores it with TMA (rows
    // past seq_q are clipped by the 3-D map). Else straight from the accumulator layout: each
    // thread writes column pairs of its two rows. And the logsumexp.
    // A macro rather than a closure: LLVM did not inline the closure at head dimension 128 and
    // kept the accumulators in local memory.
    macro_rules! store_item {
        ($item:expr, $o_acc:expr, $m:expr, $l_sum:expr) => {
            // Expanded inside the consumers' `unsafe` block, where its own are redundant.
            #[allow(unused_unsafe)]
            let () = {
                let (bh, row, wg_row0) = ($item.bh, $item.row, $item.wg_row0);
                let (o_acc, m, l_sum): (&[f32; ON], [f32; 2], [f32; 2]) = (&$o_acc, $m, $l_sum);
                // Recomputed per item (`fresh`), not held through the key loop.
                let words = shared::dynamic::<u32>();
                let o_tile = fresh(o_smem + consumer * 64 * D * 2);
                let o_word0 = o_tile - fresh(words.addr());
                let store_bar = 1 + NC + consumer;
                // Variable lengths: where this item's rows go (first O element, O row stride, first
                // logsumexp index), recomputed (`fresh`) rather than held through the loop.
                let (len_q, o_base, o_stride, lse_base) = if VARLEN {
                    let seq = seq_of(fresh(bh), D, &p, cu_q, cu_k);
                    (seq.len_q, seq.o_base, seq.o_stride, seq.lse_base)
                } else {
                    (p.seq_q, 0, 0, 0)
                };
                if tma_store {
                    // The previous item's store (thread 0's bulk group, below) has read the staging
                    // tile, and that is over for the whole warpgroup before anyone writes the tile
                    // again. Every thread waits: those with no bulk group (all but thread 0) pass
                    // at once.
                    if deferred_store_wait {
                        tma::store_wait_read();
                    }
                    // SAFETY: the whole warpgroup.
                    unsafe { sync::named_barrier_sync(store_bar, 128) };
                }
                unroll!(2, |h| {
                    let mut sum = l_sum[h];
                    sum += warp::shuffle_xor(sum, 1);
                    sum += warp::shuffle_xor(sum, 2);
                    let inv = 1.0 / sum;
                    let r = row + 8 * h as u32;
                    if r < len_q {
                        let row_index = bh as usize * p.seq_q as usize + r as usize;
                        if !lse.is_empty() && l % 4 == 0 {
                            // Natural-log logsumexp of the scaled scores (m is in base-2 units of
                            // them).
                            let value = (m[h] + math::log2_approx(sum)) * core::f32::consts::LN_2;
                            let index = if VARLEN {
                                lse_base + r as usize
                            } else {
                                row_index
                            };
                            // SAFETY: one lane per (batch·head, row); the host checked `lse`'s
                            // length.
                            unsafe { lse.write_unchecked_race(index, value) };
                        }
                        if !tma_store {
                            let first = if VARLEN {
                                (o_base + r as usize * o_stride) / 2 + (l % 4) as usize
                            } else {
                                row_index * D as usize / 2 + (l % 4) as usize
                            };
                            unroll!(OJ, |jj| {
                                let word = pack2::<F16>(
                                    o_acc[4 * jj + 2 * h] * inv,
                                    o_acc[4 * jj + 2 * h + 1] * inv,
                                );
                                // SAFETY: (row, column pair 8 jj + 2 (l % 4)) is inside O (row
                                // inside its sequence, host-checked length) and belongs to this
                                // thread alone.
                                unsafe { out.add(first + 4 * jj).write(word) };
                            });
                        }
                    }
                    if tma_store {
                        // Opaque: else the 2·OJ swizzled offsets, which depend on the thread only,
                        // are hoisted out of the loops and spill.
                        let r = fresh(16 * w + l / 4 + 8 * h as u32);
                        let lane_byte = fresh(4 * (l % 4));
                        unroll!(OJ, |jj| {
                            let word = pack2::<F16>(
                                o_acc[4 * jj + 2 * h] * inv,
                                o_acc[4 * jj + 2 * h + 1] * inv,
                            );
                            let (sub, chunk) = (jj as u32 / 8, jj as u32 % 8);
                            let byte =
                                sub * 64 * ROW + r * ROW + ((chunk ^ (r % 8)) * 16) + lane_byte;
                            // SAFETY: inside the dynamic shared memory (the host sized it with
                            // `tma_store`); this thread's own word of the staging tile, which no
                            // store reads any more (the last one was waited for, then a named
                            // barrier of the warpgroup's epilogue passed).
                            unsafe { words.write_unchecked(((o_word0 + byte) / 4) as usize, word) };
                        });
                    }
                });
                if tma_store {
                    mbarrier::fence_proxy_async_shared();
                    // SAFETY: the whole warpgroup.
                    unsafe { sync::named_barrier_sync(store_bar, 128) };
                    if t == 0 && wg_row0 < p.seq_q {
                        // SAFETY: the staging tile is written and fenced (above); the map is O's
                        // (host contract), the box in bounds or clipped.
                        unsafe {
                            let map_o = maps.as_ptr().add(3);
                            for c in 0..D / 64 {
                                let src = o_tile + c * 64 * ROW;
                                let (x, y) = ((64 * c) as i32, wg_row0 as i32);
                                tma::store_3d(src, map_o, x, y, bh as i32);
                            }
                        }
                        tma::store_commit();
                        if !deferred_store_wait {
                            // The staging tile is read before the warpgroup writes it again (the
                            // shared memory also outlives the reads).
                            tma::store_wait_read();
                        }
                    }
                }
            };
        };
    }
    // The consumer's end: the block's shared memory outlives the last store's reads (a no-op
    // without stores), and consumer 0 takes the last consumer's last hand-over (see `turn`).
    let finish = || {
        if deferred_store_wait {
            tma::store_wait_read();
        }
        if consumer == 0 {
            turn();
        }
    };

    let mut s_acc = [0f32; 64];
    let mut pf = [[0u32; 4]; 8];
    let mut o_acc = [0f32; ON];
    // `it` counts K/V tiles over the block's items (the ring runs on across them), `round`
    // the items with a tile.
    let (mut it, mut round) = (0u32, 0u32);
    let (mut r, any, mut cur) = next_item(0);
    if !any {
        finish();
        return;
    }

    // SAFETY (the waits, fences and products below): every consumer thread runs them in the
    // same order (warpgroup-converged: the items and their tile counts are the same for the
    // whole block); each product's operands landed (full barrier waited) and stay until the
    // wait_group covering it; stages and Q are released only after that wait.
    unsafe {
        // No intra-warpgroup overlap at head dimension 256 (registers, see the module docs).
        // A constant block: the other instances never see the branch.
        if const { D != 256 } {
            // Overlapped across items too: the first scores of an item are issued with the last
            // `P·V` of the one before, in one batch as inside the key loop, and its first
            // softmax runs while that `P·V` does; then the finished item is stored. Without it
            // every item began and ended with a batch of one product (nothing to hide the
            // softmax and epilogue behind): about 1.7 key-loop iterations per item at seq 1k.
            // The next item's Q is in the other Q tile ([`q_tiles`]).
            let mut m = [f32::NEG_INFINITY; 2];
            let mut l_sum;
            // The first item's key tile 0: scores, softmax, P.
            {
                let (q, q_phase) = q_slot(round);
                mbarrier::wait_parity(full_q(q), q_phase);
                let (s, phase) = stage(it);
                mbarrier::wait_parity(full_k(s), phase);
                turn();
                wgmma::fence();
                issue_qk(&mut s_acc, q, s);
                hand_over();
                wgmma::wait_group::<0>();
                wgmma::fence_accumulators_64(&mut s_acc);
                release(empty_k(s));
                mask(&mut s_acc, 0, cur.len_k, causal, cur.wg_row0, cur.row, l);
                let (_, sum) = softmax(&mut s_acc, &mut m, scale);
                l_sum = sum;
                pack::<F16>(&s_acc, &mut pf);
            }
            loop {
                let (q, _) = q_slot(round);
                let n_tiles = cur.n_tiles;
                for j in 1..n_tiles {
                    let (s, phase) = stage(it + j);
                    let (sp, phase_p) = stage(it + j - 1);
                    // Both operands first: one fence then covers both batches.
                    mbarrier::wait_parity(full_k(s), phase);
                    mbarrier::wait_parity(full_v(sp), phase_p);
                    turn();
                    wgmma::fence();
                    issue_qk(&mut s_acc, q, s);
                    issue_pv(&mut o_acc, &mut pf, sp);
                    hand_over();
                    // The scores of tile j are done (P·V of tile j - 1 may still run).
                    wgmma::wait_group::<1>();
                    wgmma::fence_accumulators_64(&mut s_acc);
                    release(empty_k(s));
                    mask(&mut s_acc, j, cur.len_k, causal, cur.wg_row0, cur.row, l);
                    let (corr, sum) = softmax(&mut s_acc, &mut m, scale);
                    wgmma::wait_group::<0>();
                    pin_o(&mut o_acc, &mut pf);
                    release(empty_v(sp));
                    unroll!(2, |h| {
                        l_sum[h] = l_sum[h] * corr[h] + sum[h];
                        unroll!(OJ, |jj| {
                            o_acc[4 * jj + 2 * h] *= corr[h];
                            o_acc[4 * jj + 2 * h + 1] *= corr[h];
                        });
                    });
                    pack::<F16>(&s_acc, &mut pf);
                }
                // Every score of this item is done (the last was waited for above) and the
                // last `P·V` reads no Q: the producer may refill it (FA3 releases Q here too).
                // After the loop rather than on its last iteration: a condition in the loop
                // changed the loop's code.
                release(empty_q(q));
                let (r_next, has_next, next) = next_item(r + 1);
                let (s, phase) = stage(it + n_tiles - 1);
                // The next item's Q tile and key tile 0 (the ring's next tile).
                let (qn, qn_phase) = q_slot(round + 1);
                let (s0, phase0) = stage(it + n_tiles);
                if has_next {
                    mbarrier::wait_parity(full_q(qn), qn_phase);
                    mbarrier::wait_parity(full_k(s0), phase0);
                }
                mbarrier::wait_parity(full_v(s), phase);
                turn();
                wgmma::fence();
                // Unconditional: ptxas serializes every product of the kernel when paths that
                // meet hold different products in flight. After the last item these scores
                // read whatever Q tile and stage hold (no copy is in flight any more) and are
                // dropped.
                issue_qk(&mut s_acc, qn, s0);
                issue_pv(&mut o_acc, &mut pf, s);
                hand_over();
                // The next item's first scores are done; its softmax runs beside the last
                // `P·V`.
                wgmma::wait_group::<1>();
                wgmma::fence_accumulators_64(&mut s_acc);
                let mut m_next = [f32::NEG_INFINITY; 2];
                let mut l_next = [0f32; 2];
                if has_next {
                    release(empty_k(s0));
                    mask(&mut s_acc, 0, next.len_k, causal, next.wg_row0, next.row, l);
                    let (_, sum) = softmax(&mut s_acc, &mut m_next, scale);
                    l_next = sum;
                }
                wgmma::wait_group::<0>();
                pin_o(&mut o_acc, &mut pf);
                release(empty_v(s));
                if has_next {
                    // P of the next item's tile 0, now that the last `P·V` has read `pf`.
                    pack::<F16>(&s_acc, &mut pf);
                }
                store_item!(cur, o_acc, m, l_sum);
                if !has_next {
                    finish();
                    break;
                }
                o_acc = [0f32; ON];
                (m, l_sum) = (m_next, l_next);
                it += n_tiles;
                round += 1;
                (cur, r) = (next, r_next);
            }
        } else {
            // Head dimension 256: per key tile the scores, their softmax, then `P·V`, each
            // product waited for before the next is issued (2 n batches per item).
            loop {
                let (q, q_phase) = q_slot(round);
                let n_tiles = cur.n_tiles;
                let mut m = [f32::NEG_INFINITY; 2];
                let mut l_sum = [0f32; 2];
                mbarrier::wait_parity(full_q(q), q_phase);
                for j in 0..n_tiles {
                    let (s, phase) = stage(it + j);
                    mbarrier::wait_parity(full_k(s), phase);
                    turn();
                    wgmma::fence();
                    issue_qk(&mut s_acc, q, s);
                    hand_over();
                    wgmma::wait_group::<0>();
                    wgmma::fence_accumulators_64(&mut s_acc);
                    release(empty_k(s));
                    mask(&mut s_acc, j, cur.len_k, causal, cur.wg_row0, cur.row, l);
                    let (corr, sum) = softmax(&mut s_acc, &mut m, scale);
                    // Tile 0: the maxima were -inf, `corr` is 0 and so are O and the sums. One
                    // flat `unroll!`: nested ones here (written out in the generic body before
                    // the branch folds away) changed the other head dimensions' optimized code.
                    for h in 0..2 {
                        l_sum[h] = l_sum[h] * corr[h] + sum[h];
                    }
                    unroll!(OJ, |jj| {
                        o_acc[4 * jj] *= corr[0];
                        o_acc[4 * jj + 1] *= corr[0];
                        o_acc[4 * jj + 2] *= corr[1];
                        o_acc[4 * jj + 3] *= corr[1];
                    });
                    pack::<F16>(&s_acc, &mut pf);
                    mbarrier::wait_parity(full_v(s), phase);
                    turn();
                    wgmma::fence();
                    issue_pv(&mut o_acc, &mut pf, s);
                    hand_over();
                    wgmma::wait_group::<0>();
                    pin_o(&mut o_acc, &mut pf);
                    release(empty_v(s));
                }
                // Every product of this item is done: Q may be refilled for the next one.
                release(empty_q(q));
                store_item!(cur, o_acc, m, l_sum);
                let (r_next, has_next, next) = next_item(r + 1);
                if !has_next {
                    finish();
                    break;
                }
                o_acc = [0f32; ON];
                it += n_tiles;
                round += 1;
                (cur, r) = (next, r_next);
            }
        }
    }
}

/// Work items (query tiles) of a launch with `consumers` consumer warpgroups: launch at most
/// this many blocks.
pub const fn work_items(seq_q: u32, batch_heads: u32, consumers: u32) -> u32 {
    seq_q.div_ceil(block_rows(consumers)) * batch_heads
}

/// Declares fixed-length forward kernels: `name(elem, D, KD, OJ, ON, NC, F16, threads)`, each
/// launched as [`attention_fwd_bf16_d64_wgmma`] describes (with its head dimension `D` and `NC`
/// consumer warpgroups). No sequence starts: the body compiles without the variable-length
/// paths, to the same code as before they existed.
macro_rules! fixed_kernels {
    ($($(#[$doc:meta])* $name:ident($t:ty, $d:literal, $kd:literal, $oj:literal, $on:literal,
       $nc:literal, $f16:literal, $threads:tt);)*) => { $(
        $(#[$doc])*
        #[kernel(launch_bounds($threads, 1))]
        pub fn $name(
            q: &[$t],
            k: &[$t],
            v: &[$t],
            maps: &[TensorMap],
            o: DisjointSlice<$t>,
            lse: DisjointSlice<f32>,
            p: FlashParams,
        ) {
            let _ = (q, k, v);
            // SAFETY: the host launcher (`Dense::attention_wgmma`) upholds the launch contract.
            unsafe {
                attention::<$d, $kd, $oj, $on, $nc, $f16, false>(
                    maps,
                    o.as_mut_ptr().cast(),
                    lse,
                    (&[], &[], &[]),
                    p,
                )
            }
        }
    )* };
}

/// Declares variable-length forward kernels (`_varlen` in the name; the head dimension 256 ones
/// also run fixed lengths, with empty `cu_q`): as [`fixed_kernels`] plus `cu_q`, `cu_k` and
/// `order` (see `attention`'s contract) and `p.total_q`, `p.items`, `p.snake`.
macro_rules! varlen_kernels {
    ($($(#[$doc:meta])* $name:ident($t:ty, $d:literal, $kd:literal, $oj:literal, $on:literal,
       $nc:literal, $f16:literal, $threads:tt);)*) => { $(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        #[kernel(launch_bounds($threads, 1))]
        pub fn $name(
            q: &[$t],
            k: &[$t],
            v: &[$t],
            maps: &[TensorMap],
            o: DisjointSlice<$t>,
            lse: DisjointSlice<f32>,
            cu_q: &[u32],
            cu_k: &[u32],
            order: &[u32],
            p: FlashParams,
        ) {
            let _ = (q, k, v);
            // SAFETY: the host launcher (`Dense::attention_varlen`, or `Dense::attention_wgmma`
            // at head dimension 256) upholds the launch contract.
            unsafe {
                attention::<$d, $kd, $oj, $on, $nc, $f16, true>(
                    maps,
                    o.as_mut_ptr().cast(),
                    lse,
                    (cu_q, cu_k, order),
                    p,
                )
            }
        }
    )* };
}

fixed_kernels! {
    /// Flash-attention forward, bf16, head dimension 64, on Hopper (see the module docs), fixed
    /// lengths. Launch with [`THREADS`] threads, a 1-D grid of at most `work_items(seq_q,
    /// batch_heads, 2)` blocks (persistent: one per SM), `shared_bytes(64, p.stages, 2,
    /// tma_store)` bytes of dynamic shared memory; `maps` holds the TMA descriptors of Q, K, V
    /// (and O) encoded by `gpu-dense`.
    ///
    /// `q`, `k` and `v` are read only through the tensor maps; they are parameters so that the
    /// host runtime orders the launch after their writers and keeps them alive.
    attention_fwd_bf16_d64_wgmma(bf16, 64, 4, 8, 32, 2, false, 384);
    /// As [`attention_fwd_bf16_d64_wgmma`] with three consumer warpgroups and 192-row query
    /// tiles: `threads(3)` = 512 threads, `work_items(seq_q, batch_heads, 3)`,
    /// `shared_bytes(64, p.stages, 3, tma_store)`, a Q map with 192-row boxes.
    attention_fwd_bf16_d64_m192_wgmma(bf16, 64, 4, 8, 32, 3, false, 512);
    /// Head dimension 128; as [`attention_fwd_bf16_d64_wgmma`] with `shared_bytes(128,
    /// p.stages, 2, tma_store)`.
    attention_fwd_bf16_d128_wgmma(bf16, 128, 8, 16, 64, 2, false, 384);
    /// f16 in and out; as [`attention_fwd_bf16_d64_wgmma`].
    attention_fwd_f16_d64_wgmma(f16, 64, 4, 8, 32, 2, true, 384);
    /// f16 in and out; as [`attention_fwd_bf16_d64_m192_wgmma`].
    attention_fwd_f16_d64_m192_wgmma(f16, 64, 4, 8, 32, 3, true, 512);
    /// f16 in and out; as [`attention_fwd_bf16_d128_wgmma`].
    attention_fwd_f16_d128_wgmma(f16, 128, 8, 16, 64, 2, true, 384);
}

varlen_kernels! {
    /// [`attention_fwd_bf16_d64_wgmma`] for a variable-length batch: `cu_q` and `cu_k` hold its
    /// sequence starts, `order` the work items to compute, heaviest first, and the grid is at
    /// most `p.items` = `order.len() / 2` blocks (see `attention`'s contract); no TMA store.
    attention_fwd_bf16_d64_varlen_wgmma(bf16, 64, 4, 8, 32, 2, false, 384);
    /// [`attention_fwd_bf16_d64_m192_wgmma`] for a variable-length batch; as
    /// [`attention_fwd_bf16_d64_varlen_wgmma`].
    attention_fwd_bf16_d64_m192_varlen_wgmma(bf16, 64, 4, 8, 32, 3, false, 512);
    /// [`attention_fwd_bf16_d128_wgmma`] for a variable-length batch; as
    /// [`attention_fwd_bf16_d64_varlen_wgmma`].
    attention_fwd_bf16_d128_varlen_wgmma(bf16, 128, 8, 16, 64, 2, false, 384);
    /// f16 in and out; as [`attention_fwd_bf16_d64_varlen_wgmma`].
    attention_fwd_f16_d64_varlen_wgmma(f16, 64, 4, 8, 32, 2, true, 384);
    /// f16 in and out; as [`attention_fwd_bf16_d64_m192_varlen_wgmma`].
    attention_fwd_f16_d64_m192_varlen_wgmma(f16, 64, 4, 8, 32, 3, true, 512);
    /// f16 in and out; as [`attention_fwd_bf16_d128_varlen_wgmma`].
    attention_fwd_f16_d128_varlen_wgmma(f16, 128, 8, 16, 64, 2, true, 384);
    /// Flash-attention forward, bf16, head dimension 256 (no intra-warpgroup overlap, one K/V
    /// stage: see the module docs), fixed lengths (empty `cu_q`, `cu_k`, `order`; `p.items` =
    /// `work_items(seq_q, batch_heads, 2)`, `p.snake` = `p.causal`) or a variable-length batch
    /// (as [`attention_fwd_bf16_d64_varlen_wgmma`]): one kernel for both, as it has no
    /// fixed-length predecessor to keep; `shared_bytes(256, 1, 2, false)`.
    attention_fwd_bf16_d256_wgmma(bf16, 256, 16, 32, 128, 2, false, 384);
    /// f16 in and out; as [`attention_fwd_bf16_d256_wgmma`].
    attention_fwd_f16_d256_wgmma(f16, 256, 16, 32, 128, 2, true, 384);
}
