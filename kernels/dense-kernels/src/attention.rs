//! Flash-attention forward, bf16 in and out, on tensor cores with `mma.sync` (sm_80+).
//!
//! `O = softmax(Q·Kᵀ·scale [causal]) · V` per (batch, head); Q, K, V, O are `[batch, heads, seq,
//! head_dim]` contiguous bf16. FlashAttention-2 structure:
//!
//! - a block of `warps` warps owns `warps × 16 × m_tiles` query rows of one (batch, head)
//!   ([`Tiling`]; d64: 4 warps × 32 rows, d128: 8 warps × 16 rows); each warp keeps the Q
//!   fragments of its rows in registers for the whole kernel;
//! - K and V stream through shared memory in [`BLOCK_N`] = 64-key tiles, double-buffered with
//!   `cp.async` (the next K tile loads while this tile's scores are computed, the next V tile
//!   while this tile's `P·V` runs);
//! - `S = Q·Kᵀ` with `mma.sync.m16n8k16` (bf16 in, f32 accumulate), then an online softmax in
//!   f32: running row max `m` and row sum `l`, exponentials by `ex2.approx` on scores prescaled
//!   by `scale·log2 e`, the O accumulator rescaled by `2^(m_old − m_new)` when the max grows;
//! - P goes back into the tensor cores straight from registers: the m16n8 accumulator layout of
//!   two adjacent score tiles is exactly the m16k16 A-operand layout, so packing pairs to bf16
//!   gives the A fragments of `P·V` with no shared-memory round trip; V's B fragments come from
//!   `ldmatrix.trans`;
//! - at the end O / l is rounded to bf16 and stored, and, when asked for, each row's logsumexp
//!   `ln Σ_j e^(s_j·scale)` (what a backward pass needs to recompute P);
//! - grouped-query attention: query head `h` reads K/V head `h / group` (`group` = query heads
//!   per K/V head; 1 is multi-head attention, `heads` multi-query).
//!
//! Shared tiles are rows of `head_dim` bf16 in 16-byte chunks, chunk `c` of row `r` stored at
//! chunk `c ^ (r & 7)`: the 8 rows an `ldmatrix` phase reads then hit 8 different 16-byte bank
//! groups (no conflicts), and `cp.async` stores stay 16-byte aligned.
//!
//! Tails: rows past `seq_q` load as zeros and are not stored; keys past `seq_k` load as zeros
//! (so `0 · V` stays 0) and their scores are masked to −∞. With `causal`, key tiles entirely
//! above the diagonal are skipped, the masks run only on tiles that cross it, and blocks are
//! scheduled heaviest (last query rows) first.

use gpu::mma;
use gpu::packed::Bf16x2;
use gpu::prelude::*;
use half::bf16;

/// Keys per K/V tile.
pub const BLOCK_N: usize = 64;

/// One instantiation's block shape: `warps` warps, each owning `m_tiles` × 16 query rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiling {
    pub warps: usize,
    pub m_tiles: usize,
}

impl Tiling {
    /// Query rows per block.
    pub const fn block_m(self) -> usize {
        self.warps * 16 * self.m_tiles
    }

    /// Threads per block.
    pub const fn threads(self) -> u32 {
        (self.warps * 32) as u32
    }

    /// Dynamic shared memory for head dimension `head_dim`: the Q tile, two K and two V tiles.
    pub const fn shared_bytes(self, head_dim: usize) -> usize {
        (self.block_m() + 4 * BLOCK_N) * head_dim * 2
    }
}

/// The tiling of each kernel, by name (the host reads launch shapes from here).
pub const TILINGS: &[(&str, Tiling)] = &[
    ("attention_fwd_bf16_d64", D64),
    ("attention_fwd_bf16_d128", D128),
    ("attention_fwd_bf16_d64_w4m1", W4M1),
    ("attention_fwd_bf16_d128_w4m1", W4M1),
    ("attention_fwd_bf16_d64_w8m1", W8M1),
    ("attention_fwd_bf16_d128_w8m1", W8M1),
    ("attention_fwd_bf16_d64_w4m2", W4M2),
];

const W4M1: Tiling = Tiling {
    warps: 4,
    m_tiles: 1,
};
const W8M1: Tiling = Tiling {
    warps: 8,
    m_tiles: 1,
};
const W4M2: Tiling = Tiling {
    warps: 4,
    m_tiles: 2,
};
/// The default tilings, the fastest of the variants at seq 4096 and 8192 on an H100 (see
/// docs/gemm-tuning.md, "Flash attention"): d64 4 warps × 32 rows (each K/V fragment feeds two
/// m-tiles), d128 8 warps × 16 rows (its 255 registers leave no room for a second m-tile).
pub const D64: Tiling = W4M2;
pub const D128: Tiling = W8M1;

/// Sizes and flags of one launch (the tensors' batch and heads are the grid's y dimension).
#[derive(Debug, Clone, Copy, PartialEq, DeviceCopy)]
#[repr(C)]
pub struct AttentionParams {
    pub seq_q: u32,
    pub seq_k: u32,
    /// `scale · log2 e`: scores are multiplied by it so that `2^x` is the softmax's `e^(x·scale)`.
    pub scale_log2: f32,
    /// 1: key `j` is masked for query `i` when `j > i`.
    pub causal: u32,
    /// Query heads per batch entry (the grid's y dimension is `batch · heads`).
    pub heads: u32,
    /// Query heads per K/V head (grouped-query attention; 1: multi-head, `heads`: multi-query).
    /// Query head `h` reads K/V head `h / group`.
    pub group: u32,
}

/// Runs `body` with `i = 0, 1, …, n-1` (`n` a constant ≤ 16), fully unrolled: the fragment
/// and accumulator arrays must only be indexed by constants to stay in registers (an array
/// indexed by a loop variable lives in local memory), and LLVM's unroller gives up on loop
/// bodies with many asm statements (`mma`, `ldmatrix`).
macro_rules! unroll {
    ($n:expr, |$i:ident| $body:block) => {{
        const { assert!($n <= 16, "unroll!: at most 16 iterations") };
        unroll!(@steps $n, $i, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    }};
    (@steps $n:expr, $i:ident, $body:block, $($k:literal)*) => {
        { $( if $k < $n { let $i: usize = $k; $body } )* }
    };
}

/// [`unroll!`] for at most 8 iterations. Each `unroll!` copies its body once per possible
/// iteration before constant folding removes the excess, so nested 16-way expansions multiply
/// the compile time (four nested levels took rustc over 15 minutes); the small forms keep the
/// nests small.
macro_rules! unroll8 {
    ($n:expr, |$i:ident| $body:block) => {{
        const { assert!($n <= 8, "unroll8!: at most 8 iterations") };
        unroll!(@steps $n, $i, $body, 0 1 2 3 4 5 6 7)
    }};
}

/// [`unroll!`] for at most 4 iterations.
macro_rules! unroll4 {
    ($n:expr, |$i:ident| $body:block) => {{
        const { assert!($n <= 4, "unroll4!: at most 4 iterations") };
        unroll!(@steps $n, $i, $body, 0 1 2 3)
    }};
}

/// [`unroll!`] for at most 2 iterations.
macro_rules! unroll2 {
    ($n:expr, |$i:ident| $body:block) => {{
        const { assert!($n <= 2, "unroll2!: at most 2 iterations") };
        unroll!(@steps $n, $i, $body, 0 1)
    }};
}

pub mod backward;
pub use backward::{
    BWD_BLOCK_M, BWD_ROW_THREADS, BWD_THREADS, attention_bwd_bf16_d64, attention_bwd_bf16_d128,
    attention_bwd_delta_bf16, attention_bwd_dq_bf16, attention_bwd_dq_bf16_d64,
    attention_bwd_dq_bf16_d128, bwd_dq_shared_bytes, bwd_shared_bytes,
};

/// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile with `D`-element rows.
#[inline(always)]
fn swizzle<const D: usize>(row: usize, chunk: usize) -> u32 {
    (row * D * 2 + ((chunk ^ (row & 7)) << 4)) as u32
}

/// Two adjacent m16n8 accumulator tiles (`lo`: columns 0-7, `hi`: columns 8-15) as the bf16 A
/// fragment of an m16k16 `mma`: the accumulator layout of a 16×16 block is exactly the A
/// operand's, so packing pairs is all it takes (no shared-memory round trip).
#[inline(always)]
fn a_fragment(lo: [f32; 4], hi: [f32; 4]) -> [u32; 4] {
    [
        Bf16x2::from_f32(lo[0], lo[1]).0,
        Bf16x2::from_f32(lo[2], lo[3]).0,
        Bf16x2::from_f32(hi[0], hi[1]).0,
        Bf16x2::from_f32(hi[2], hi[3]).0,
    ]
}

/// Starts the copy (by `T` threads) of rows `row0 .. row0 + ROWS` of a `[seq, D]` matrix at `src` into the
/// swizzled tile at `tile`; rows at or past `rows` are zero-filled (read nothing).
///
/// # Safety
/// `src` must address `rows` readable rows of `D` elements, `stride` elements apart (`D` for a
/// contiguous matrix), `rows >= 1`, and `tile` 64 rows of shared memory that no thread reads
/// until the copy's group has been waited for and the block synced.
#[inline(always)]
unsafe fn load_tile<const D: usize, const ROWS: usize, const T: usize>(
    tile: u32,
    src: *const bf16,
    stride: usize,
    row0: usize,
    rows: usize,
) {
    let chunks = D / 8;
    let tid = thread::thread_idx_x() as usize;
    const { assert!((ROWS * (D / 8)).is_multiple_of(T)) };
    unroll!(ROWS * (D / 8) / T, |it| {
        let i = tid + it * T;
        let (r, c) = (i / chunks, i % chunks);
        let dst = tile + swizzle::<D>(r, c);
        if row0 + r < rows {
            // SAFETY: row `row0 + r` < `rows` exists (caller), 16 bytes at an 8-element offset.
            unsafe { mma::cp_async_cg16(dst, src.add((row0 + r) * stride + c * 8).cast()) };
        } else {
            // SAFETY: zero-fill form: nothing is read from `src` (the start of the matrix).
            unsafe { mma::cp_async_cg16_zfill(dst, src.cast(), 0) };
        }
    });
}

/// The kernel body for head dimension `D`, `WARPS` warps of `MT` m-tiles (16 query rows each);
/// `KD = D / 16` (k-steps of `Q·Kᵀ`) and `ND = D / 8` (n-tiles of O) are separate parameters
/// because array lengths cannot be computed from other const parameters on stable Rust.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attention_fwd<
    const D: usize,
    const KD: usize,
    const ND: usize,
    const WARPS: usize,
    const MT: usize,
    const BM: usize,
    const T: usize,
>(
    q: &[bf16],
    k: &[bf16],
    v: &[bf16],
    o: DisjointSlice<bf16>,
    lse: DisjointSlice<f32>,
    cu_q: &[u32],
    cu_k: &[u32],
    p: AttentionParams,
) {
    const {
        assert!(KD * 16 == D && ND * 8 == D && (D == 64 || D == 128));
        assert!(BM == WARPS * 16 * MT && T == WARPS * 32);
    };
    let block_m = BM;
    // The fragment indexing below assumes WARPS warps of 32 lanes.
    assert!(thread::block_dim_x() as usize == WARPS * 32);
    let tid = thread::thread_idx_x() as usize;
    let (lane, warp) = (tid % 32, tid / 32);

    let causal = p.causal != 0;
    let bh = thread::block_idx_y() as usize;
    let blocks_m = thread::grid_dim_x() as usize;
    let bx = thread::block_idx_x() as usize;
    // Causal blocks further down do more work: start them first.
    let mb = if causal { blocks_m - 1 - bx } else { bx };
    let q0 = mb * block_m;
    // Where this (batch, head)'s rows are. Fixed lengths: `[batch, heads, seq, D]`, rows `D`
    // apart. Variable lengths (`cu_q`/`cu_k`: cumulative sequence starts, flash-attention's
    // "varlen"): `[total, heads, D]`, a token's heads side by side, rows `heads · D` apart.
    let (heads, group) = (p.heads as usize, p.group as usize);
    let kv_heads = heads / group;
    let (b, h) = (bh / heads, bh % heads);
    let kv_bh = b * kv_heads + h / group;
    let (seq_q, seq_k, q_base, kv_base, q_stride, kv_stride, lse_base) = if cu_q.is_empty() {
        let (sq, sk) = (p.seq_q as usize, p.seq_k as usize);
        (sq, sk, bh * sq * D, kv_bh * sk * D, D, D, bh * sq)
    } else {
        let (qs, ks) = (cu_q[b] as usize, cu_k[b] as usize);
        let total_q = cu_q[cu_q.len() - 1] as usize;
        (
            cu_q[b + 1] as usize - qs,
            cu_k[b + 1] as usize - ks,
            (qs * heads + h) * D,
            (ks * kv_heads + h / group) * D,
            heads * D,
            kv_heads * D,
            h * total_q + qs,
        )
    };
    if q0 >= seq_q {
        // A shorter sequence of a variable-length batch: nothing for this block (the whole
        // block leaves before any barrier).
        return;
    }
    let q_rows = seq_q.min(q0 + block_m);
    let q_ptr = q[q_base..].as_ptr();
    let k_ptr = k[kv_base..].as_ptr();
    let v_ptr = v[kv_base..].as_ptr();

    let total_tiles = seq_k.div_ceil(BLOCK_N);
    let n_tiles = if causal {
        // The last row of this block sees keys 0 ..= q_rows - 1.
        total_tiles.min((q_rows - 1) / BLOCK_N + 1)
    } else {
        total_tiles
    };

    let tile_bytes = (BLOCK_N * D * 2) as u32;
    let sq = shared::dynamic::<u8>().addr();
    let skv = sq + (block_m * D * 2) as u32;
    // Buffers by arithmetic, not arrays: an array indexed by `j & 1` would live in local memory.
    let sk = |buf: usize| skv + buf as u32 * tile_bytes;
    let sv = |buf: usize| skv + (2 + buf as u32) * tile_bytes;

    // SAFETY (the three loads): q/k/v_ptr address this head's `seq * D` elements (host-checked
    // lengths; `seq >= 1`), and the tiles are read only after wait + barrier.
    unsafe { load_tile::<D, BM, T>(sq, q_ptr, q_stride, q0, seq_q) };
    mma::commit_group();
    unsafe { load_tile::<D, BLOCK_N, T>(sk(0), k_ptr, kv_stride, 0, seq_k) };
    mma::commit_group();
    unsafe { load_tile::<D, BLOCK_N, T>(sv(0), v_ptr, kv_stride, 0, seq_k) };
    mma::commit_group();

    // Q fragments (A operand, 16 rows × 16 columns per k-step) for this warp's rows: ldmatrix
    // x4 matrices are (rows 0-7, cols 0-7), (rows 8-15, 0-7), (0-7, 8-15), (8-15, 8-15).
    mma::wait_group::<2>();
    sync::sync_threads();
    let mut qf = [[[0u32; 4]; KD]; MT];
    let warp_row0 = warp * 16 * MT;
    let a_row = warp_row0 + (lane % 8) + 8 * ((lane / 8) % 2);
    unroll2!(MT, |mt| {
        unroll8!(KD, |kk| {
            // SAFETY: an in-tile, 16-byte aligned row of the Q tile; all lanes call together.
            qf[mt][kk] =
                unsafe { mma::ldmatrix_x4(sq + swizzle::<D>(a_row + 16 * mt, 2 * kk + lane / 16)) };
        });
    });
    let warp_row0 = q0 + warp_row0;

    let mut acc = [[[0f32; 4]; ND]; MT];
    // Row max (in log2 units) and this thread's part of the row sum, for rows lane/4 and +8 of
    // each m-tile.
    let mut m = [[f32::NEG_INFINITY; 2]; MT];
    let mut l = [[0f32; 2]; MT];
    let scale = p.scale_log2;
    // K fragments (B operand, "col": rows of K are the n index): x4 matrices (keys 0-7, d 0-7),
    // (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15) = two n-tiles of 8 keys.
    let k_row = (lane % 8) + 8 * (lane / 16);
    let k_chunk = (lane / 8) % 2;
    // V fragments (B operand from row-major V, transposed by ldmatrix.trans): matrices (keys 0-7,
    // d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 8-15) = two n-tiles of 8 d.
    let v_row = (lane % 8) + 8 * ((lane / 8) % 2);
    let v_chunk = lane / 16;

    for j in 0..n_tiles {
        let buf = j & 1;
        // K_j has landed (only V_j may still be in flight).
        mma::wait_group::<1>();
        sync::sync_threads();
        if j + 1 < n_tiles {
            // SAFETY: as above; buffer buf ^ 1 was last read in iteration j - 1, before the
            // barrier every thread just passed.
            unsafe {
                load_tile::<D, BLOCK_N, T>(sk(buf ^ 1), k_ptr, kv_stride, (j + 1) * BLOCK_N, seq_k)
            };
        }
        mma::commit_group();

        // S = Q · K_jᵀ for this warp's rows × 64 keys: per m-tile 8 n-tiles of m16n8. Each K
        // fragment feeds all MT m-tiles.
        let mut s = [[[0f32; 4]; BLOCK_N / 8]; MT];
        unroll8!(KD, |kk| {
            unroll4!(BLOCK_N / 16, |np| {
                // SAFETY: an in-tile, 16-byte aligned row of K_j; all lanes call together.
                let b = unsafe {
                    mma::ldmatrix_x4(sk(buf) + swizzle::<D>(np * 16 + k_row, 2 * kk + k_chunk))
                };
                unroll2!(MT, |mt| {
                    s[mt][2 * np] = mma::mma_bf16_m16n8k16(qf[mt][kk], [b[0], b[1]], s[mt][2 * np]);
                    s[mt][2 * np + 1] =
                        mma::mma_bf16_m16n8k16(qf[mt][kk], [b[2], b[3]], s[mt][2 * np + 1]);
                });
            });
        });

        // Masks: keys past seq_k, and keys above the diagonal; only on tiles that need them
        // (warp-uniform test).
        let key0 = j * BLOCK_N;
        if key0 + BLOCK_N > seq_k || (causal && key0 + BLOCK_N - 1 > warp_row0) {
            unroll2!(MT, |mt| {
                unroll8!(BLOCK_N / 8, |nt| {
                    unroll4!(4, |e| {
                        let key = key0 + nt * 8 + 2 * (lane % 4) + (e & 1);
                        let row = warp_row0 + 16 * mt + lane / 4 + 8 * (e >> 1);
                        if key >= seq_k || (causal && key > row) {
                            s[mt][nt][e] = f32::NEG_INFINITY;
                        }
                    });
                });
            });
        }

        // Online softmax. Tile 0 always holds key 0, which no row masks, so the max is finite
        // from the first tile on and 2^(−∞ − max) = 0 for masked scores.
        unroll2!(MT, |mt| {
            unroll2!(2, |r| {
                let mut mx = m[mt][r];
                unroll8!(BLOCK_N / 8, |nt| {
                    mx = mx
                        .max(s[mt][nt][2 * r] * scale)
                        .max(s[mt][nt][2 * r + 1] * scale);
                });
                // The 4 lanes of a quad share the row.
                mx = mx.max(warp::shuffle_xor(mx, 1));
                mx = mx.max(warp::shuffle_xor(mx, 2));
                let corr = math::exp2_approx(m[mt][r] - mx);
                m[mt][r] = mx;
                let mut sum = 0f32;
                unroll8!(BLOCK_N / 8, |nt| {
                    unroll2!(2, |e| {
                        let x = math::exp2_approx(math::fma(s[mt][nt][2 * r + e], scale, -mx));
                        s[mt][nt][2 * r + e] = x;
                        sum += x;
                    });
                });
                l[mt][r] = l[mt][r] * corr + sum;
                unroll!(ND, |dt| {
                    acc[mt][dt][2 * r] *= corr;
                    acc[mt][dt][2 * r + 1] *= corr;
                });
            });
        });

        // P as A fragments: k-step kk (keys 16kk .. 16kk+15) = score n-tiles 2kk and 2kk+1.
        let mut pf = [[[0u32; 4]; BLOCK_N / 16]; MT];
        unroll2!(MT, |mt| {
            unroll4!(BLOCK_N / 16, |kk| {
                pf[mt][kk] = a_fragment(s[mt][2 * kk], s[mt][2 * kk + 1]);
            });
        });

        // V_j has landed (K_{j+1} may still be in flight).
        mma::wait_group::<1>();
        sync::sync_threads();
        if j + 1 < n_tiles {
            // SAFETY: as above; buffer buf ^ 1 was last read in iteration j - 1.
            unsafe {
                load_tile::<D, BLOCK_N, T>(sv(buf ^ 1), v_ptr, kv_stride, (j + 1) * BLOCK_N, seq_k)
            };
        }
        mma::commit_group();

        // O += P · V_j; each V fragment feeds all MT m-tiles.
        unroll4!(BLOCK_N / 16, |kk| {
            unroll8!(ND / 2, |dp| {
                // SAFETY: an in-tile, 16-byte aligned row of V_j; all lanes call together.
                let b = unsafe {
                    mma::ldmatrix_x4_trans(
                        sv(buf) + swizzle::<D>(kk * 16 + v_row, 2 * dp + v_chunk),
                    )
                };
                unroll2!(MT, |mt| {
                    acc[mt][2 * dp] =
                        mma::mma_bf16_m16n8k16(pf[mt][kk], [b[0], b[1]], acc[mt][2 * dp]);
                    acc[mt][2 * dp + 1] =
                        mma::mma_bf16_m16n8k16(pf[mt][kk], [b[2], b[3]], acc[mt][2 * dp + 1]);
                });
            });
        });
    }
    // Nothing may be left in flight when the block exits (empty groups only, but be exact).
    mma::wait_all();

    // O / l, rounded to bf16; each thread stores pairs of columns of rows lane/4 and lane/4 + 8
    // of each m-tile.
    let out = o.as_mut_ptr().cast::<u32>();
    unroll2!(MT, |mt| {
        unroll2!(2, |r| {
            let mut sum = l[mt][r];
            sum += warp::shuffle_xor(sum, 1);
            sum += warp::shuffle_xor(sum, 2);
            let inv = 1.0 / sum;
            let row = warp_row0 + 16 * mt + lane / 4 + 8 * r;
            if row < seq_q && !lse.is_empty() && lane % 4 == 0 {
                // logsumexp of the scaled scores, natural log: m is in log2 units of them.
                let value = (m[mt][r] + math::log2_approx(sum)) * core::f32::consts::LN_2;
                // SAFETY: one lane per (batch·head, row); the host checked `lse` holds
                // `batch · heads · seq_q` values when it is not empty.
                unsafe { lse.write_unchecked_race(lse_base + row, value) };
            }
            if row < seq_q {
                let base = q_base + row * q_stride;
                unroll!(ND, |dt| {
                    let col = dt * 8 + 2 * (lane % 4);
                    let pair =
                        Bf16x2::from_f32(acc[mt][dt][2 * r] * inv, acc[mt][dt][2 * r + 1] * inv);
                    // SAFETY: (row, col) with row < seq_q and col + 1 < D is inside this head's
                    // O (host-checked length), the offset is even so the u32 store is aligned,
                    // and every (row, column pair) belongs to exactly one thread of the grid.
                    unsafe { out.add((base + col) / 2).write(pair.0) };
                });
            }
        });
    });
}

/// Declares a flash-attention kernel for head dimension `$d` with tiling `$t` (launch with
/// `(ceil(seq_q / block_m), batch·heads)` blocks of `$t.threads()` threads and
/// `$t.shared_bytes($d)` bytes of dynamic shared memory; the host does this from [`TILINGS`]).
/// `$bm` and `$threads` repeat `$t`'s block rows and threads as literals (checked).
macro_rules! attention_kernel {
    ($(#[$doc:meta])* $name:ident, $d:tt, $kd:tt, $nd:tt, $t:expr, $bm:tt, $threads:tt, $min_blocks:tt) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        #[kernel(launch_bounds($threads, $min_blocks))]
        pub fn $name(
            q: &[bf16],
            k: &[bf16],
            v: &[bf16],
            o: DisjointSlice<bf16>,
            lse: DisjointSlice<f32>,
            cu_q: &[u32],
            cu_k: &[u32],
            p: AttentionParams,
        ) {
            attention_fwd::<$d, $kd, $nd, { $t.warps }, { $t.m_tiles }, $bm, $threads>(
                q, k, v, o, lse, cu_q, cu_k, p,
            );
        }
    };
}

attention_kernel!(
    /// Flash-attention forward, head dimension 64, the default tiling [`D64`].
    attention_fwd_bf16_d64, 64, 4, 8, D64, 128, 128, 2
);
attention_kernel!(
    /// Flash-attention forward, head dimension 128, the default tiling [`D128`].
    attention_fwd_bf16_d128, 128, 8, 16, D128, 128, 256, 1
);
attention_kernel!(
    /// Tuning variant: 4 warps × 16 rows (the first version's tiling; 165 registers).
    attention_fwd_bf16_d64_w4m1, 64, 4, 8, W4M1, 64, 128, 3
);
attention_kernel!(
    /// Tuning variant: 4 warps × 16 rows (the first version's tiling).
    attention_fwd_bf16_d128_w4m1, 128, 8, 16, W4M1, 64, 128, 2
);
attention_kernel!(
    /// Tuning variant: 8 warps × 16 rows (128 query rows: half the K/V reads per query).
    attention_fwd_bf16_d64_w8m1, 64, 4, 8, W8M1, 128, 256, 1
);
attention_kernel!(
    /// Tuning variant: 8 warps × 16 rows.
    attention_fwd_bf16_d128_w8m1, 128, 8, 16, W8M1, 128, 256, 1
);
attention_kernel!(
    /// Tuning variant: 4 warps × 32 rows (each K/V fragment feeds two m-tiles: half the
    /// shared-memory reads per mma).
    attention_fwd_bf16_d64_w4m2, 64, 4, 8, W4M2, 128, 128, 2
);
