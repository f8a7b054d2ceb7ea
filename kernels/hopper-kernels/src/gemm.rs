//! bf16/f16 GEMM on Hopper tensor cores: `C[M×N] = A[M×K] · B[N×K]ᵀ`, A and B row-major (B as an
//! `nn.Linear` weight, torch's `a @ b.T`), f32 accumulate, C row-major in the input type.
//!
//! Design (the "ping-pong-free" warp-specialised layout of CUTLASS's sm90 kernels, simplified):
//! - one block per `BM × BN` tile of C, 3 warpgroups: warpgroup 0 is the producer (one thread
//!   issues the TMA copies of A and B tiles into a `STAGES`-deep ring of shared-memory stages),
//!   warpgroups 1 and 2 are consumers, each owning 64 rows of the tile and issuing
//!   `wgmma.m64n256k16` on the stages;
//! - each stage has a "full" mbarrier (completed by the copies' transaction bytes) and an
//!   "empty" mbarrier (completed when all 256 consumer threads are done reading it);
//! - `setmaxnreg` moves registers from the producer (40) to the consumers (232): a consumer
//!   holds a 64×256 f32 accumulator, 128 registers per thread;
//! - TMA writes with the 128-byte swizzle that the wgmma descriptors read, so there are no bank
//!   conflicts and no address arithmetic per element;
//! - ragged edges: TMA zero-fills out-of-bounds rows and columns (K tails add zeros), and the
//!   epilogue masks its stores.

use gpu::hopper::tma::{self, TensorMap};
use gpu::hopper::{mbarrier, wgmma};
use gpu::prelude::*;
use half::{bf16, f16};

/// Rows of C per block.
pub const BM: u32 = 128;
/// Columns of C per block.
pub const BN: u32 = 256;
/// K per pipeline stage: 64 two-byte elements = one 128-byte swizzled row.
pub const BK: u32 = 64;
/// Pipeline depth (shared-memory stages).
pub const STAGES: u32 = 4;
/// Threads per block: a producer warpgroup and two consumer warpgroups.
pub const THREADS: u32 = 384;
/// Tile rows of C that consecutive blocks walk before moving to the next tile column, so that
/// the blocks running together share their A and B tiles in L2.
pub const GROUP_M: u32 = 16;

const A_STAGE: u32 = BM * BK * 2;
const B_STAGE: u32 = BN * BK * 2;
/// Bytes each stage's copies deliver (the full boxes, out-of-bounds parts included).
const STAGE_TX: u32 = A_STAGE + B_STAGE;
/// Dynamic shared memory per block: the stages, 2 barriers per stage, and 1 KiB of slack to
/// align the stages to the 1024 bytes the 128-byte swizzle needs.
pub const SHARED_BYTES: u32 = 1024 + STAGES * STAGE_TX + 2 * STAGES * 8;

/// Problem shape, passed by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, DeviceCopy)]
#[repr(C)]
pub struct GemmDims {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

/// Number of tiles of C for `dims`; launch `min(tiles, SMs)` blocks (the grid is persistent:
/// block `b` computes tiles `b`, `b + grid`, `b + 2 grid`, ...).
pub const fn tiles(dims: GemmDims) -> u32 {
    dims.m.div_ceil(BM) * dims.n.div_ceil(BN)
}

/// The body shared by the bf16 and f16 kernels.
///
/// # Safety
/// `maps` holds the tensor maps of A (`[K, M]`, box `[64, 128]`) and B (`[K, N]`, box
/// `[64, 256]`), both 128-byte swizzled; `c` addresses `M × N` elements; launched with
/// `THREADS` threads, at most `tiles(dims)` blocks and `SHARED_BYTES` of dynamic shared memory.
#[inline(always)]
unsafe fn gemm<const F16: bool>(maps: &[TensorMap], c: *mut u16, dims: GemmDims) {
    let tid = thread::thread_idx_x();
    let base = (shared::dynamic::<u8>().addr() + 1023) & !1023;
    let a_smem = |s: u32| base + s * A_STAGE;
    let b_smem = |s: u32| base + STAGES * A_STAGE + s * B_STAGE;
    let bars = base + STAGES * STAGE_TX;
    let full = |s: u32| bars + 8 * s;
    let empty = |s: u32| bars + 8 * (STAGES + s);

    let tiles_m = dims.m.div_ceil(BM);
    let tiles_n = dims.n.div_ceil(BN);
    let tiles = tiles_m * tiles_n;
    let k_tiles = dims.k.div_ceil(BK);
    let (first_tile, tile_step) = (thread::block_idx_x(), thread::grid_dim_x());

    if tid == 0 {
        for s in 0..STAGES {
            // SAFETY: one thread initialises each barrier before the block barrier below.
            unsafe {
                mbarrier::init(full(s), 1);
                mbarrier::init(empty(s), 2 * 128);
            }
        }
        mbarrier::fence_init();
    }
    sync::sync_threads();

    let warpgroup = tid / 128;
    if warpgroup == 0 {
        // SAFETY: the whole producer warpgroup; it needs few registers.
        unsafe { wgmma::set_max_registers_dec::<40>() };
        if tid == 0 {
            let map_a = maps.as_ptr();
            // SAFETY: the host passes two maps.
            let map_b = unsafe { map_a.add(1) };
            // SAFETY: valid tensor maps in global memory (host contract).
            unsafe {
                tma::prefetch_map(map_a);
                tma::prefetch_map(map_b);
            }
            // `it` counts k-steps over all of this block's tiles: the ring runs on across
            // tiles, so the next tile's first stages load while the consumers store the last.
            let mut it = 0u32;
            let mut tile = first_tile;
            while tile < tiles {
                let (tile_m, tile_n) = tile_coords(tile, tiles_m, tiles_n);
                for kt in 0..k_tiles {
                    let s = it % STAGES;
                    // SAFETY: barriers initialised above; the stage is free once both consumer
                    // warpgroups arrived on `empty(s)` (parity trick: the first round passes).
                    // The copies deliver exactly STAGE_TX bytes into 1024-aligned stages.
                    unsafe {
                        mbarrier::wait_parity(empty(s), ((it / STAGES) & 1) ^ 1);
                        mbarrier::arrive_expect_tx(full(s), STAGE_TX);
                        let x = (kt * BK) as i32;
                        tma::load_2d(a_smem(s), map_a, full(s), x, (tile_m * BM) as i32);
                        tma::load_2d(b_smem(s), map_b, full(s), x, (tile_n * BN) as i32);
                    }
                    it += 1;
                }
                tile += tile_step;
            }
        }
    } else {
        // SAFETY: the whole consumer warpgroup; 128 * 40 + 256 * 232 <= 65536.
        unsafe { wgmma::set_max_registers_inc::<232>() };
        let consumer = warpgroup - 1;
        let t = tid - 128 * warpgroup;
        let (w, l) = (t / 32, t % 32);
        let (m, n) = (dims.m, dims.n);
        let mut it = 0u32;
        let mut tile = first_tile;
        while tile < tiles {
            let (tile_m, tile_n) = tile_coords(tile, tiles_m, tiles_n);
            let mut acc = [0.0f32; 128];
            // One batch of products stays in flight: batch `kt` is issued before waiting for
            // batch `kt - 1`, whose stage is then released to the producer.
            let mut prev = STAGES;
            for _ in 0..k_tiles {
                let s = it % STAGES;
                // SAFETY: the stage's copies completed when `full(s)` flips; the whole
                // warpgroup issues the products; a stage is released only after the
                // products reading it completed (wait_group).
                unsafe {
                    mbarrier::wait_parity(full(s), (it / STAGES) & 1);
                    wgmma::fence_accumulators_128(&mut acc);
                    wgmma::fence();
                    for kk in 0..BK / 16 {
                        let da =
                            wgmma::shared_desc_sw128(a_smem(s) + consumer * 64 * 128 + kk * 32);
                        let db = wgmma::shared_desc_sw128(b_smem(s) + kk * 32);
                        if F16 {
                            wgmma::mma_m64n256k16_f16(&mut acc, da, db, true);
                        } else {
                            wgmma::mma_m64n256k16_bf16(&mut acc, da, db, true);
                        }
                    }
                    wgmma::commit_group();
                    wgmma::wait_group::<1>();
                    wgmma::fence_accumulators_128(&mut acc);
                    if prev < STAGES {
                        mbarrier::arrive(empty(prev));
                    }
                }
                prev = s;
                it += 1;
            }
            // SAFETY: as above; the last batch completes before its stage is released and the
            // accumulators are read.
            unsafe {
                wgmma::wait_group::<0>();
                wgmma::fence_accumulators_128(&mut acc);
                if prev < STAGES {
                    mbarrier::arrive(empty(prev));
                }
            }

            // Epilogue: convert and store straight from the accumulator layout.
            let row0 = tile_m * BM + consumer * 64 + 16 * w + l / 4;
            let col0 = tile_n * BN + 2 * (l % 4);
            // Fully unrolled (constant register indices keep the accumulators out of local memory).
            macro_rules! store_chunks {
            ($($j:literal)*) => { $( store_chunk!($j, 0); store_chunk!($j, 1); )* };
        }
            macro_rules! store_chunk {
                ($j:literal, $h:literal) => {{
                    let (col, row) = (col0 + 8 * $j, row0 + 8 * $h);
                    let (lo, hi) = (acc[4 * $j + 2 * $h], acc[4 * $j + 2 * $h + 1]);
                    if row < m && col < n {
                        let idx = row as usize * n as usize + col as usize;
                        let word = if F16 {
                            wgmma::pack_f16x2(lo, hi)
                        } else {
                            wgmma::pack_bf16x2(lo, hi)
                        };
                        // SAFETY: (row, col) is inside C; each element has one owner thread. With
                        // an even N the pair is 4-byte aligned and both elements are in the row.
                        unsafe {
                            if n % 2 == 0 {
                                c.add(idx).cast::<u32>().write(word);
                            } else {
                                c.add(idx).write(word as u16);
                                if col + 1 < n {
                                    c.add(idx + 1).write((word >> 16) as u16);
                                }
                            }
                        }
                    }
                }};
            }
            store_chunks!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
            tile += tile_step;
        }
    }
}

/// Grouped raster order over the tiles of C: `GROUP_M` tile rows are walked down before moving
/// one tile column right, so the tiles in flight together share A and B panels in L2.
#[inline(always)]
fn tile_coords(tile: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
    let per_group = GROUP_M * tiles_n;
    let first_m = (tile / per_group) * GROUP_M;
    let group_rows = if tiles_m - first_m < GROUP_M {
        tiles_m - first_m
    } else {
        GROUP_M
    };
    let within = tile % per_group;
    (first_m + within % group_rows, within / group_rows)
}

/// bf16 GEMM with f32 accumulate (see the module docs). Launch with [`THREADS`] threads,
/// at most [`tiles`] blocks (persistent: one per SM) and [`SHARED_BYTES`] of dynamic shared memory; `maps` holds the TMA
/// descriptors of A and B encoded by `gpu-dense`.
///
/// `a` and `b` are read only through the tensor maps; they are parameters so that the host
/// runtime orders the launch after their writers and keeps them alive.
#[kernel(launch_bounds(384, 1))]
pub fn gemm_bf16_wgmma(
    a: &[bf16],
    b: &[bf16],
    maps: &[TensorMap],
    c: DisjointSlice<bf16>,
    dims: GemmDims,
) {
    let _ = (a, b);
    // SAFETY: the host launcher (`Dense::gemm_wgmma`) upholds the launch contract.
    unsafe { gemm::<false>(maps, c.as_mut_ptr().cast(), dims) }
}

/// f16 GEMM with f32 accumulate; as [`gemm_bf16_wgmma`].
#[kernel(launch_bounds(384, 1))]
pub fn gemm_f16_wgmma(
    a: &[f16],
    b: &[f16],
    maps: &[TensorMap],
    c: DisjointSlice<f16>,
    dims: GemmDims,
) {
    let _ = (a, b);
    // SAFETY: the host launcher (`Dense::gemm_wgmma`) upholds the launch contract.
    unsafe { gemm::<true>(maps, c.as_mut_ptr().cast(), dims) }
}
