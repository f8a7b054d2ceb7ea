//! SGEMM on CUDA cores: `C = alpha·A·B + beta·C` for row-major f32 matrices, A m×k, B k×n,
//! C m×n.
//!
//! # Design
//! Each block of [`SGEMM_THREADS`] threads computes a [`SGEMM_BM`]×[`SGEMM_BN`] tile of C,
//! walking K in steps of [`SGEMM_BK`]:
//!
//! - **Shared tiles, double-buffered.** The A tile is stored *transposed* (`As[k][m]`) so that a
//!   thread's 4 consecutive rows of A for one `k` are one 16-byte `ld.shared.v4`, like its 4
//!   consecutive columns of B. Two buffers per operand: while the block multiplies from one, the
//!   next K-slab is written into the other, so one barrier per K-slab suffices.
//! - **Register prefetch in parts.** The next slab's global loads (one 16-byte vector of A and
//!   one of B per thread) are issued during the multiply of the current slab, in parts: part
//!   `p` is loaded at k-step `4p` and stored to the other shared buffer (free since the last
//!   barrier) four k-steps later. Only 4 prefetch registers are live at a time; with both
//!   vectors in flight for the whole slab the kernel spilled under the 128-register cap.
//! - **8×8 outputs per thread as 2×2 sub-blocks of 4×4.** Thread `(r, c)` of a 16×16 grid owns
//!   rows `4r..4r+4` and `64+4r..64+4r+4`, columns `4c..4c+4` and `64+4c..64+4c+4`: per `k` it
//!   reads 4 `ld.shared.v4` and does 64 FMAs. A warp is 4 rows × 8 columns of threads, so its
//!   A reads cover 64 contiguous bytes and its B reads 128: no bank conflicts.
//! - **Padding.** `As` rows are 132 floats (not 128), so the transposed scalar stores of a warp
//!   (16 rows × 2 k-groups of 4) land in 32 different banks.
//! - **Edges.** A block whose tile lies inside C, with `k % 8 == 0` and `n % 4 == 0` (so every
//!   16-byte load is aligned and in bounds), runs the unchecked fast path; other blocks run the
//!   same code with bounds-checked scalar loads (zeros outside) and guarded stores. The choice
//!   is uniform per block, so it is a single branch at the top. (With `k % 8 != 0` or
//!   `n % 4 != 0` every block takes the checked path.)
//! - **Scheduling.** The k-steps are unrolled in the source (`unroll!`), so shared addresses
//!   are a base register plus immediates; an empty-asm fence between k-steps stops LLVM from
//!   hoisting all 32 shared loads of a slab to its top (which spilled); ptxas still overlaps
//!   each step's loads with the previous step's FMAs. Inner loop on sm_90: 512 FFMA, 32
//!   LDS.128, about 80 other instructions per slab; no local memory.
//! - `launch_bounds(256, 2)`: at most 128 registers, two blocks (16 warps) per SM.

use gpu::math::fma;
use gpu::prelude::*;
use gpu::{shared_array, sync, thread};

/// Rows of C per block.
pub const SGEMM_BM: u32 = 128;
/// Columns of C per block.
pub const SGEMM_BN: u32 = 128;
/// K-slab depth staged in shared memory per step.
pub const SGEMM_BK: u32 = 8;
/// Threads per block (launch with exactly this many along x).
pub const SGEMM_THREADS: u32 = 256;

const BM: usize = SGEMM_BM as usize;
const BN: usize = SGEMM_BN as usize;
const BK: usize = SGEMM_BK as usize;
const THREADS: usize = SGEMM_THREADS as usize;
// The main loop unrolls up to 16 k-steps by hand; slabs split into quarter-slab parts.
const _: () = assert!(BK == 8 || BK == 16);
/// 16-byte vectors per row of the A tile (k direction).
const A_KV: usize = BK / 4;
/// Global-load parts per slab, one 16-byte vector per thread each: `BK / 8` of A (128 rows ×
/// 8 k), then `BK / 8` of B (8 k × 128 columns).
const PARTS: usize = BK / 4;
/// Rows of A one part covers.
const A_PART_ROWS: usize = THREADS / A_KV;
/// Row stride of the transposed A tile, in 16-byte vectors (132 floats: see "Padding").
const AS_V4: usize = BM / 4 + 1;
/// Row stride of the B tile, in 16-byte vectors.
const BS_V4: usize = BN / 4;

/// Repeats `$body` with `$i` bound to each listed constant: a loop unrolled in the source, so
/// that register arrays (the accumulators) are only ever indexed by constants and stay in
/// registers, and ptxas may hoist the next step's shared loads over this step's FMAs. (LLVM
/// unrolls the 64-FMA loop nest on its own but not the loops around it.)
macro_rules! unroll {
    ($i:ident in [$($v:literal),*] $body:block) => {
        $( { let $i: usize = $v; $body } )*
    };
}

/// A compile-time scheduling fence: empty inline asm, which LLVM must assume reads and writes
/// memory, so the shared-memory loads (pure, read-only asm) cannot move across it. It emits no
/// instruction (ptxas schedules freely across it). NVPTX has no single-thread `fence`, so
/// `core::sync::atomic::compiler_fence` does not compile there; on the host it is not needed.
#[inline(always)]
fn schedule_fence() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: an empty asm string: nothing executes, no register or memory is touched.
    unsafe {
        core::arch::asm!("", options(nostack, preserves_flags))
    };
}

/// Four floats with 16-byte alignment, so that a read or write through a pointer to it is one
/// vector access (`ld.global.v4.f32`, `st.global.v4.f32`).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct F4([f32; 4]);

/// The fixed per-thread and per-block quantities of one launch.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    a: &'a [f32],
    b: &'a [f32],
    m: usize,
    n: usize,
    k: usize,
    /// First row / column of C of this block.
    row0: usize,
    col0: usize,
    /// This thread's load position in part 0 of each operand: A row `a_row` (of the tile), k
    /// offset `a_k` (multiple of 4); B row `b_k` (0..8), column `b_col` (multiple of 4). Later
    /// parts are `A_PART_ROWS` rows / 8 k-rows further.
    a_row: usize,
    a_k: usize,
    b_k: usize,
    b_col: usize,
}

impl Ctx<'_> {
    /// Loads this thread's vector of part `part` of K-slab `slab`: 4 consecutive k of one row of
    /// A, or 4 consecutive columns of one k-row of B. `CHECKED`: element by element, zero
    /// outside the matrices; otherwise one 16-byte load (the caller proved it aligned and in
    /// bounds).
    #[inline(always)]
    fn load_part<const CHECKED: bool>(&self, slab: usize, part: usize) -> [f32; 4] {
        let k0 = slab * BK;
        let is_a = part < PARTS / 2;
        // (matrix, row, first column, rows, row length) of the run of 4.
        let (src, row, col, rows, cols) = if is_a {
            let row = self.row0 + self.a_row + part * A_PART_ROWS;
            (self.a, row, k0 + self.a_k, self.m, self.k)
        } else {
            let krow = k0 + self.b_k + (part - PARTS / 2) * 8;
            (self.b, krow, self.col0 + self.b_col, self.k, self.n)
        };
        if CHECKED {
            let mut v = [0.0; 4];
            unroll!(i in [0, 1, 2, 3] {
                if row < rows && col + i < cols {
                    // SAFETY: `row < rows` and `col + i < cols` give `row·cols + col + i <
                    // rows·cols <= src.len()` (lengths checked at entry).
                    v[i] = unsafe { *src.get_unchecked(row * cols + col + i) };
                }
            });
            v
        } else {
            // SAFETY: the fast path runs only when the block's tile lies inside C, k is a
            // multiple of BK and n of 4 (see `sgemm_f32`): `row < rows` and `col + 4 <= cols`,
            // so the run is inside the slice (length checked at entry), and its offset is a
            // multiple of 4 floats from a 16-byte aligned buffer start (device allocations are
            // at least 256-byte aligned).
            unsafe { src.as_ptr().add(row * cols + col).cast::<F4>().read().0 }
        }
    }
}

/// Shared-memory views of the two operand tiles, each double-buffered.
#[derive(Clone, Copy)]
struct Tiles {
    /// `As[buf][k][m]` in 16-byte vectors, rows of `AS_V4` vectors.
    a4: SharedArray<[f32; 4], { 2 * BK * AS_V4 }>,
    /// The same bytes as floats, for the transposed scalar stores.
    a1: SharedSlice<f32>,
    /// `Bs[buf][k][n]` in 16-byte vectors.
    b4: SharedArray<[f32; 4], { 2 * BK * BS_V4 }>,
}

impl Tiles {
    /// Stores a thread's vector of part `part` into buffer `buf` (0 or 1): A transposed, B as is.
    #[inline(always)]
    fn store_part(&self, ctx: &Ctx, buf: usize, part: usize, v: [f32; 4]) {
        let buf = buf & 1;
        if part < PARTS / 2 {
            let row = ctx.a_row + part * A_PART_ROWS;
            unroll!(i in [0, 1, 2, 3] {
                // SAFETY: `buf < 2`, `a_k + i < BK`, `row < 128`: the index is below
                // 2·BK·132 = a1.len().
                unsafe {
                    self.a1
                        .write_unchecked((buf * BK + ctx.a_k + i) * (AS_V4 * 4) + row, v[i])
                };
            });
        } else {
            let krow = ctx.b_k + (part - PARTS / 2) * 8;
            // SAFETY: `buf < 2`, `krow < BK`, `b_col / 4 < 32`: below 2·BK·32 = b4.len().
            unsafe {
                self.b4
                    .write_unchecked((buf * BK + krow) * BS_V4 + ctx.b_col / 4, v)
            };
        }
    }
}

/// `C = alpha·A·B + beta·C` (row-major; A is m×k, B k×n, C m×n). With `beta == 0` C is not
/// read (it may hold anything, NaN included).
///
/// Launch: blocks of [`SGEMM_THREADS`] threads along x, grid `(ceil(n / 128), ceil(m / 128))`.
/// A wrong block shape or slices shorter than the shapes say trap (a host error).
#[kernel(launch_bounds(256, 2))]
#[allow(clippy::too_many_arguments)]
pub fn sgemm_f32(
    a: &[f32],
    b: &[f32],
    c: DisjointSlice<f32>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    // One check per thread keeps the unchecked accesses below sound whatever the host passes.
    assert!(
        thread::block_dim_x() == SGEMM_THREADS
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && a.len() >= m * k
            && b.len() >= k * n
            && c.len() >= m * n
    );
    let row0 = thread::block_idx_y() as usize * BM;
    let col0 = thread::block_idx_x() as usize * BN;
    if row0 >= m || col0 >= n {
        // A whole block outside C (an oversized grid): leave before any barrier.
        return;
    }
    let tid = thread::thread_idx_x() as usize & (SGEMM_THREADS as usize - 1);
    let ctx = Ctx {
        a,
        b,
        m,
        n,
        k,
        row0,
        col0,
        a_row: tid / A_KV,
        a_k: (tid % A_KV) * 4,
        b_k: tid / 32,
        b_col: (tid % 32) * 4,
    };
    let a4 = shared_array!([f32; 4], 2 * BK * AS_V4);
    let b4 = shared_array!([f32; 4], 2 * BK * BS_V4);
    let tiles = Tiles {
        a4,
        a1: a4.as_slice().cast::<f32>(),
        b4,
    };
    let interior = row0 + BM <= m && col0 + BN <= n && k > 0 && k % BK == 0 && n % 4 == 0;
    if interior {
        block_tile::<false>(&ctx, &tiles, tid, &c, alpha, beta);
    } else {
        block_tile::<true>(&ctx, &tiles, tid, &c, alpha, beta);
    }
}

/// The main loop and epilogue of one block (see the module docs). `CHECKED` selects the
/// bounds-checked loads and stores for edge blocks.
#[inline(always)]
fn block_tile<const CHECKED: bool>(
    ctx: &Ctx,
    tiles: &Tiles,
    tid: usize,
    c: &DisjointSlice<f32>,
    alpha: f32,
    beta: f32,
) {
    // Thread (r, c) of the 16×16 compute grid; a warp is 4 rows × 8 columns of it.
    let (warp, lane) = (tid / 32, tid % 32);
    let tr = (warp / 2) * 4 + lane / 8;
    let tc = (warp % 2) * 8 + lane % 8;

    let mut acc = [[0.0f32; 8]; 8];
    let slabs = ctx.k.div_ceil(BK);
    if slabs > 0 {
        unroll!(p in [0, 1, 2, 3] {
            if p < PARTS {
                tiles.store_part(ctx, 0, p, ctx.load_part::<CHECKED>(0, p));
            }
        });
    }
    sync::sync_threads();
    for slab in 0..slabs {
        let buf = slab & 1;
        let next = slab + 1 < slabs;
        // The next slab's global loads go in quarter-slab parts: part p is loaded at k-step
        // 4p and stored to the other buffer (free since the last barrier) 4 k-steps later, so
        // only one vector of prefetch is live at a time. The last slab reloads itself (in
        // bounds, never stored): no predicated loads.
        let fetch = if next { slab + 1 } else { slab };
        let mut pending = [0.0f32; 4];
        // This thread's first vector of the buffer; the k-steps add constants, which ptxas
        // folds into the `LDS.128` offsets.
        let a_base = buf * BK * AS_V4 + tr;
        let b_base = buf * BK * BS_V4 + tc;
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if kk < BK {
                if kk.is_multiple_of(4) {
                    if kk > 0 && next {
                        // (`saturating_sub`: the kk = 0 copy of this line is dead code.)
                        tiles.store_part(ctx, buf ^ 1, kk.saturating_sub(4) / 4, pending);
                    }
                    pending = ctx.load_part::<CHECKED>(fetch, kk / 4);
                }
                // Keeps LLVM from hoisting every step's shared loads to the top of the slab
                // (it did: 32 vectors live at once, spills under the 128-register cap). It
                // emits nothing; ptxas still overlaps the next step's loads with this step's
                // FMAs.
                schedule_fence();
                // SAFETY: `buf < 2`, `kk < BK`, `tr, tc < 16`: `a_base + kk·33 + 16 <
                // 2·BK·33` and `b_base + kk·32 + 16 < 2·BK·32`, the arrays' lengths.
                let (a_lo, a_hi, b_lo, b_hi) = unsafe {
                    (
                        tiles.a4.read_unchecked(a_base + kk * AS_V4),
                        tiles.a4.read_unchecked(a_base + kk * AS_V4 + 16),
                        tiles.b4.read_unchecked(b_base + kk * BS_V4),
                        tiles.b4.read_unchecked(b_base + kk * BS_V4 + 16),
                    )
                };
                let av = [
                    a_lo[0], a_lo[1], a_lo[2], a_lo[3], a_hi[0], a_hi[1], a_hi[2], a_hi[3],
                ];
                let bv = [
                    b_lo[0], b_lo[1], b_lo[2], b_lo[3], b_hi[0], b_hi[1], b_hi[2], b_hi[3],
                ];
                for i in 0..8 {
                    for j in 0..8 {
                        acc[i][j] = fma(av[i], bv[j], acc[i][j]);
                    }
                }
            }
        });
        if next {
            tiles.store_part(ctx, buf ^ 1, PARTS - 1, pending);
        }
        sync::sync_threads();
    }

    // Epilogue: rows 4·tr + i (+64), columns 4·tc (+64), 4 at a time.
    let out = c.as_mut_ptr();
    unroll!(h in [0, 1] {
        unroll!(i in [0, 1, 2, 3] {
            let row = ctx.row0 + h * 64 + tr * 4 + i;
            unroll!(w in [0, 1] {
                let col = ctx.col0 + w * 64 + tc * 4;
                let v = &acc[h * 4 + i][w * 4..w * 4 + 4];
                if CHECKED {
                    if row < ctx.m {
                        unroll!(j in [0, 1, 2, 3] {
                            if col + j < ctx.n {
                                let idx = row * ctx.n + col + j;
                                // SAFETY: `row < m`, `col + j < n`: inside C (length checked
                                // at entry); each element of C belongs to exactly one thread of
                                // one block (block tiles and thread sub-tiles are disjoint).
                                unsafe {
                                    let p = out.add(idx);
                                    let old = if beta == 0.0 { 0.0 } else { beta * *p };
                                    *p = fma(alpha, v[j], old);
                                }
                            }
                        });
                    }
                } else {
                    // SAFETY: interior block: `row < m`, `col + 4 <= n`, `n % 4 == 0`, so the
                    // run is inside C and 16-byte aligned; owned by this thread alone (as above).
                    unsafe {
                        let p = out.add(row * ctx.n + col).cast::<F4>();
                        let old = if beta == 0.0 {
                            [0.0; 4]
                        } else {
                            let o = p.read().0;
                            [beta * o[0], beta * o[1], beta * o[2], beta * o[3]]
                        };
                        p.write(F4([
                            fma(alpha, v[0], old[0]),
                            fma(alpha, v[1], old[1]),
                            fma(alpha, v[2], old[2]),
                            fma(alpha, v[3], old[3]),
                        ]));
                    }
                }
            });
        });
    });
}
