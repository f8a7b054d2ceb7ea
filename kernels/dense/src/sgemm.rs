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
//! - **Register prefetch.** The next slab's global loads (one 16-byte load of A and one of B
//!   per thread) are issued before the multiply of the current slab and stored to shared memory
//!   after it, hiding global latency behind 512 FMAs.
//! - **8×8 outputs per thread as 2×2 sub-blocks of 4×4.** Thread `(r, c)` of a 16×16 grid owns
//!   rows `4r..4r+4` and `64+4r..64+4r+4`, columns `4c..4c+4` and `64+4c..64+4c+4`: per `k` it
//!   reads 4 `ld.shared.v4` and does 64 FMAs. A warp is 4 rows × 8 columns of threads, so its
//!   A reads cover 64 contiguous bytes and its B reads 128: no bank conflicts.
//! - **Padding.** `As` rows are 132 floats (not 128), so the transposed scalar stores of a warp
//!   (16 rows × 2 k-groups of 4) land in 32 different banks.
//! - **Edges.** A block whose tile lies inside C, with `k % 8 == 0` and `n % 4 == 0` (so every
//!   16-byte load is aligned and in bounds), runs the unchecked fast path; other blocks run the
//!   same code with bounds-checked scalar loads (zeros outside) and guarded stores. The choice
//!   is uniform per block, so it is a single branch at the top.
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
// The main loop unrolls 8 k-steps by hand.
const _: () = assert!(BK == 8);
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

/// What one thread loads from global memory for one K-slab: 4 floats of A (one row, 4
/// consecutive k) and 4 of B (one k, 4 consecutive columns).
#[derive(Clone, Copy)]
struct Slab {
    a: [f32; 4],
    b: [f32; 4],
}

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
    /// This thread's load position: A row `a_row` (of the tile), k offset `a_k` (0 or 4);
    /// B row `b_k` (0..8), column `b_col` (multiple of 4).
    a_row: usize,
    a_k: usize,
    b_k: usize,
    b_col: usize,
}

impl Ctx<'_> {
    /// Loads this thread's part of K-slab `slab`. `CHECKED`: element by element, zero outside
    /// the matrices; otherwise two 16-byte loads (the caller proved them aligned and in bounds).
    #[inline(always)]
    fn load<const CHECKED: bool>(&self, slab: usize) -> Slab {
        let k0 = slab * BK;
        let (ar, ak) = (self.row0 + self.a_row, k0 + self.a_k);
        let (bk, bc) = (k0 + self.b_k, self.col0 + self.b_col);
        if CHECKED {
            let mut s = Slab {
                a: [0.0; 4],
                b: [0.0; 4],
            };
            unroll!(i in [0, 1, 2, 3] {
                // SAFETY: `ar < m` and `ak + i < k` give `ar·k + ak + i < m·k <= a.len()`;
                // likewise `bk·n + bc + i < k·n <= b.len()` (lengths checked at entry).
                if ar < self.m && ak + i < self.k {
                    s.a[i] = unsafe { *self.a.get_unchecked(ar * self.k + ak + i) };
                }
                if bk < self.k && bc + i < self.n {
                    s.b[i] = unsafe { *self.b.get_unchecked(bk * self.n + bc + i) };
                }
            });
            s
        } else {
            // SAFETY: the fast path runs only when the block's tile lies inside C and k is a
            // multiple of 8 and n of 4 (see `sgemm_f32`): `ar < m`, `ak + 4 <= k` and
            // `bk < k`, `bc + 4 <= n`, so both runs of 4 are inside the slices (whose lengths
            // the kernel checked), and their offsets are multiples of 4 floats from a 16-byte
            // aligned buffer start (device allocations are at least 256-byte aligned).
            unsafe {
                let pa = self.a.as_ptr().add(ar * self.k + ak).cast::<F4>();
                let pb = self.b.as_ptr().add(bk * self.n + bc).cast::<F4>();
                Slab {
                    a: pa.read().0,
                    b: pb.read().0,
                }
            }
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
    /// Stores a thread's slab into buffer `buf` (0 or 1): A transposed, B as is.
    #[inline(always)]
    fn store(&self, ctx: &Ctx, buf: usize, s: Slab) {
        let buf = buf & 1;
        for i in 0..4 {
            // SAFETY: `buf < 2`, `a_k + i < 8`, `a_row < 128`: the index is below
            // 2·8·132 = a1.len().
            unsafe {
                self.a1
                    .write_unchecked((buf * BK + ctx.a_k + i) * (AS_V4 * 4) + ctx.a_row, s.a[i])
            };
        }
        // SAFETY: `buf < 2`, `b_k < 8`, `b_col / 4 < 32`: below 2·8·32 = b4.len().
        unsafe {
            self.b4
                .write_unchecked((buf * BK + ctx.b_k) * BS_V4 + ctx.b_col / 4, s.b)
        };
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
        a_row: tid / 2,
        a_k: (tid % 2) * 4,
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
        tiles.store(ctx, 0, ctx.load::<CHECKED>(0));
    }
    sync::sync_threads();
    for slab in 0..slabs {
        let buf = slab & 1;
        let next = slab + 1 < slabs;
        let mut pending = Slab {
            a: [0.0; 4],
            b: [0.0; 4],
        };
        if next {
            pending = ctx.load::<CHECKED>(slab + 1);
        }
        // This thread's first vector of the buffer; the k-steps add constants, which ptxas
        // folds into the `LDS.128` offsets.
        let a_base = buf * BK * AS_V4 + tr;
        let b_base = buf * BK * BS_V4 + tc;
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            // Keeps LLVM from hoisting every step's shared loads to the top of the slab (it
            // did: 32 vectors live at once, spills under the 128-register cap). It emits
            // nothing; ptxas still overlaps the next step's loads with this step's FMAs.
            schedule_fence();
            // SAFETY: `buf < 2`, `kk < 8`, `tr, tc < 16`: `a_base + kk·33 + 16 < 2·8·33` and
            // `b_base + kk·32 + 16 < 2·8·32`, the arrays' lengths.
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
        });
        if next {
            tiles.store(ctx, buf ^ 1, pending);
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
