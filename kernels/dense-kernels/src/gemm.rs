//! bf16/f16 GEMM on tensor cores with `mma.sync` (any sm_80+ GPU): `C = A · Bᵀ`.
//!
//! A is M×K row-major, B is N×K row-major (an `nn.Linear` weight: torch's `a @ b.T`), C is M×N
//! row-major in the input type, accumulated in f32. M and N are arbitrary (edges masked: zero
//! filled loads, guarded stores); K must be a multiple of 8 so that every 16-byte row chunk
//! is either wholly inside or wholly outside the matrix (the host checks).
//!
//! # Design (the classic Ampere kernel)
//! - A block computes a `BM × BN` = 128 × 256 tile of C with 8 warps (2 × 4), each owning a
//!   64 × 64 warp tile: 4 × 8 `m16n8k16` accumulators = 128 f32 registers per thread.
//! - K is walked in steps of `BK` = 64. The A and B tiles of a step are copied global → shared
//!   with 16-byte `cp.async.cg` (zero-fill for rows past M/N and chunks past K) into a
//!   `STAGES`-deep ring in dynamic shared memory, so the copies for step `s + STAGES - 1` are in
//!   flight while step `s` is multiplied. One barrier per step.
//! - Shared rows are padded from 64 to 72 elements (144 bytes): the eight 16-byte rows one
//!   `ldmatrix` phase reads then start in eight different 16-byte bank groups (144 = 9 · 16,
//!   9 odd), so fragment loads are conflict free.
//! - How deep K is cut per stage and how many stages there are is a [`GemmPolicy`], chosen by
//!   the host from the device's shared memory per block ([`GEMM_POLICIES`]): 4 stages of 64
//!   (216 KiB, Hopper-class), 3 of 64 (162 KiB, A100-class), 3 of 32 (90 KiB, RTX 30/40-class).
//!   The tile and the code are the same; each policy is its own kernel.
//! - Fragments come from `ldmatrix.x4` (A: one per 16 rows; B: one per 16 columns, since B is
//!   stored n-major, i.e. already "col" for `mma`). They are double-buffered: slice kk + 1 is
//!   loaded before slice kk's `mma`s, and the step's wait + barrier + refill sit before the
//!   last slice, whose `mma`s overlap the first `ldmatrix` of the next stage (docs/gemm-tuning.md:
//!   +21% on the H100).
//! - Blocks are ordered in groups of `GROUP_M` tile rows (a 1-D grid remapped), so concurrently
//!   running blocks share A and B tiles in L2.
//! - The epilogue converts pairs of accumulators to packed bf16x2/f16x2 and stores 4 bytes per
//!   lane when the pair is inside C and N is even (else element by element).

use gpu::mma;
use gpu::packed::{Bf16x2, F16x2};
use gpu::prelude::*;
use gpu::unroll;
use half::{bf16, f16};

/// Block tile rows (M), in every policy.
pub const GEMM_BM: u32 = 128;
/// Block tile columns (N), in every policy.
pub const GEMM_BN: u32 = 256;
/// Threads per block (8 warps), in every policy.
pub const GEMM_THREADS: u32 = 256;
/// Tile rows per L2 group in the block order.
pub const GEMM_GROUP_M: u32 = 8;

/// A tuning policy of the mma.sync GEMM: how deep K is cut per stage and how many stages the
/// shared-memory ring holds. The block tile (128 × 256, 8 warps of 64 × 64) is the same in all
/// of them; what changes with the GPU is how much shared memory a block may have, so a new GPU
/// class is a new row of [`GEMM_POLICIES`] (CUB's idea), not a new kernel body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmPolicy {
    /// The kernels' name suffix (`gemm_bf16{suffix}`): empty for the first policy.
    pub suffix: &'static str,
    /// K per pipeline stage.
    pub bk: u32,
    /// Pipeline depth (shared-memory stages).
    pub stages: u32,
}

impl GemmPolicy {
    /// Dynamic shared memory the policy's kernels need, in bytes (the host passes this at
    /// launch): `stages` × (A tile + B tile) rows of `bk + 8` elements (padded, see the module
    /// docs) × 2 bytes.
    pub const fn shared_bytes(self) -> u32 {
        self.stages * (GEMM_BM + GEMM_BN) * (self.bk + 8) * 2
    }
}

/// Hopper-class shared memory (227 KiB per block: H100, H200): 4 stages of K = 64, 216 KiB.
pub const GEMM_POLICY_216K: GemmPolicy = GemmPolicy {
    suffix: "",
    bk: 64,
    stages: 4,
};
/// A100-class (163 KiB per block, sm_80): 3 stages of K = 64, 162 KiB.
pub const GEMM_POLICY_163K: GemmPolicy = GemmPolicy {
    suffix: "_163k",
    bk: 64,
    stages: 3,
};
/// RTX 30/40-class and other sm_86/sm_89 parts (99 KiB per block): 3 stages of K = 32, 90 KiB.
pub const GEMM_POLICY_99K: GemmPolicy = GemmPolicy {
    suffix: "_99k",
    bk: 32,
    stages: 3,
};

/// The policies, most shared memory first: the host takes the first one whose
/// [`GemmPolicy::shared_bytes`] the device allows per block.
pub const GEMM_POLICIES: [GemmPolicy; 3] = [GEMM_POLICY_216K, GEMM_POLICY_163K, GEMM_POLICY_99K];

/// Dynamic shared memory of the first (Hopper-class) policy, in bytes.
pub const GEMM_SHARED_BYTES: u32 = GEMM_POLICY_216K.shared_bytes();

const WARPS_N: u32 = 4;
const WM: u32 = GEMM_BM / 2; // 64 rows per warp
const WN: u32 = GEMM_BN / WARPS_N; // 64 columns per warp
const MI: usize = (WM / 16) as usize; // m16 tiles per warp
const NI: usize = (WN / 8) as usize; // n8 tiles per warp

/// Compile-time consistency of a body's const parameters with its policy numbers.
const fn check_policy(
    bk: u32,
    stages: u32,
    chunks: usize,
    a_chunks: usize,
    slices: usize,
    wait_prologue: u32,
    wait_step: u32,
) {
    assert!(
        bk.is_multiple_of(16) && stages >= 3,
        "a policy needs K in k16 slices and 3+ stages"
    );
    assert!(a_chunks == (GEMM_BM * bk / 8 / GEMM_THREADS) as usize);
    assert!(chunks == a_chunks + (GEMM_BN * bk / 8 / GEMM_THREADS) as usize);
    assert!(slices == (bk / 16) as usize);
    assert!(wait_prologue == stages - 2 && wait_step == stages - 3);
}

/// The 16-bit input types: the `mma` instruction and the packing of the output.
pub trait GemmElement: DeviceCopy {
    fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4];
    /// Two f32 → two values packed (lo = lower column).
    fn pack(lo: f32, hi: f32) -> u32;
    fn from_f32(x: f32) -> Self;
}

impl GemmElement for bf16 {
    #[inline(always)]
    fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        mma::mma_bf16_m16n8k16(a, b, c)
    }
    #[inline(always)]
    fn pack(lo: f32, hi: f32) -> u32 {
        Bf16x2::from_f32(lo, hi).0
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        gpu::packed::f32_to_bf16(x)
    }
}

impl GemmElement for f16 {
    #[inline(always)]
    fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        mma::mma_f16_m16n8k16(a, b, c)
    }
    #[inline(always)]
    fn pack(lo: f32, hi: f32) -> u32 {
        F16x2::from_f32(lo, hi).0
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        gpu::packed::f32_to_f16(x)
    }
}

/// One thread's share of the copies of one stage: source pointers advance by `BK` elements per
/// step; rows past M/N are zero-filled (`valid` false). `CHUNKS` copies, the first `A_CHUNKS`
/// of them from A.
struct Loader<const CHUNKS: usize> {
    src: [*const u8; CHUNKS],
    valid: [bool; CHUNKS],
    /// Byte offset of each chunk inside a stage.
    dst: [u32; CHUNKS],
    /// Column (element) of this thread's chunks within the BK slice: all chunks share it.
    col: u32,
}

impl<const CHUNKS: usize> Loader<CHUNKS> {
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn new<T>(
        bk: u32,
        a_chunks: usize,
        a: &[T],
        b: &[T],
        m0: u32,
        n0: u32,
        m: u32,
        n: u32,
        k: u32,
    ) -> Self {
        let tid = thread::thread_idx().x;
        let row_chunks = bk / 8;
        let pitch = bk + 8;
        let col = (tid % row_chunks) * 8;
        let mut l = Loader {
            src: [core::ptr::null(); CHUNKS],
            valid: [false; CHUNKS],
            dst: [0; CHUNKS],
            col,
        };
        unroll!(CHUNKS, |i| {
            let (is_a, j) = if i < a_chunks {
                (true, i)
            } else {
                (false, i - a_chunks)
            };
            let row = tid / row_chunks + j as u32 * (GEMM_THREADS / row_chunks);
            let (base, limit, r0, tile_off) = if is_a {
                (a.as_ptr(), m, m0, 0)
            } else {
                (b.as_ptr(), n, n0, GEMM_BM * pitch)
            };
            let grow = r0 + row;
            l.valid[i] = grow < limit;
            let off = if l.valid[i] {
                grow as usize * k as usize + col as usize
            } else {
                0
            };
            // The offset is inside the matrix (row < limit, col < 32 ≤ ... checked per step).
            l.src[i] = base.wrapping_add(off).cast();
            l.dst[i] = (tile_off + row * pitch + col) * 2;
        });
        l
    }

    /// Issues the copies of K step `step` into stage `stage` of shared memory at `smem`
    /// (stages of `stage_bytes`, K steps of `bk`).
    #[inline(always)]
    fn load<T>(&self, smem: u32, stage_bytes: u32, bk: u32, stage: u32, step: u32, k: u32) {
        let k0 = step * bk;
        let in_k = k0 + self.col < k;
        let stage_base = smem + stage * stage_bytes;
        unroll!(CHUNKS, |i| {
            let ok = self.valid[i] && in_k;
            let src = if ok {
                self.src[i].wrapping_add(k0 as usize * core::mem::size_of::<T>())
            } else {
                self.src[i]
            };
            // SAFETY: `dst` is a 16-byte aligned chunk inside this stage of the dynamic shared
            // memory (the host launches with the policy's shared bytes); when `ok`, `src` points
            // at 8 elements inside row `grow` of the matrix (k0 + col + 8 <= K since K % 8 ==
            // 0), 16-byte aligned because K % 8 == 0 and the buffer is 256-byte aligned; when
            // not, nothing is read (src-size 0) from the row's start, a valid address.
            unsafe {
                mma::cp_async_cg16_zfill(stage_base + self.dst[i], src, if ok { 16 } else { 0 })
            };
        });
    }
}

/// The kernel body, for both element types and every policy. The policy's numbers come as const
/// parameters: `BK`, `STAGES`, and what stable Rust cannot derive from them in types —
/// `CHUNKS` (16-byte copies per thread per stage, A then B), `A_CHUNKS` (of them, A's),
/// `SLICES` (k16 slices per stage) and the `cp.async` group waits `STAGES - 2` and
/// `STAGES - 3`; [`check_policy`] ties them together at compile time. See the module docs.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gemm_body<
    T: GemmElement,
    const BK: u32,
    const STAGES: u32,
    const CHUNKS: usize,
    const A_CHUNKS: usize,
    const SLICES: usize,
    const WAIT_PROLOGUE: u32,
    const WAIT_STEP: u32,
>(
    a: &[T],
    b: &[T],
    c: DisjointSlice<T>,
    m: u32,
    n: u32,
    k: u32,
) {
    const {
        check_policy(
            BK,
            STAGES,
            CHUNKS,
            A_CHUNKS,
            SLICES,
            WAIT_PROLOGUE,
            WAIT_STEP,
        )
    };
    let pitch = BK + 8;
    let stage_bytes = (GEMM_BM + GEMM_BN) * pitch * 2;
    let tiles_m = m.div_ceil(GEMM_BM);
    let tiles_n = n.div_ceil(GEMM_BN);
    let pid = thread::block_idx().x;
    // Grouped order: GROUP_M tile rows are walked column by column, so the blocks running at
    // once read few distinct A and B tiles.
    let in_group = GEMM_GROUP_M * tiles_n;
    let first_m = (pid / in_group) * GEMM_GROUP_M;
    let group_rows = (tiles_m - first_m).min(GEMM_GROUP_M);
    let tile_m = first_m + (pid % in_group) % group_rows;
    let tile_n = (pid % in_group) / group_rows;
    let (m0, n0) = (tile_m * GEMM_BM, tile_n * GEMM_BN);

    let smem = shared::dynamic::<u16>().addr();
    let tid = thread::thread_idx().x;
    let lane = tid % 32;
    let warp = tid / 32;
    let (wm, wn) = (warp / WARPS_N, warp % WARPS_N);

    let loader = Loader::<CHUNKS>::new(BK, A_CHUNKS, a, b, m0, n0, m, n, k);
    let steps = k.div_ceil(BK);

    // Prologue: STAGES - 1 steps in flight.
    for s in 0..STAGES - 1 {
        if s < steps {
            loader.load::<T>(smem, stage_bytes, BK, s, s, k);
        }
        mma::commit_group();
    }

    // Per-lane ldmatrix byte offsets within a stage (k added per 16-wide slice).
    // A: row (lane % 16) of each 16-row tile, column (lane / 16) * 8.
    let a_off = ((wm * WM + lane % 16) * pitch + (lane / 16) * 8) * 2;
    // B (n-major): row n = (lane / 16) * 8 + lane % 8 of each 16-column pair, k ((lane / 8) % 2) * 8.
    let b_off =
        (GEMM_BM * pitch + (wn * WN + (lane / 16) * 8 + lane % 8) * pitch + ((lane / 8) % 2) * 8)
            * 2;

    // Fragments of one k16 slice of the stage at `base`: A for MI m16 tiles, B for NI n8 tiles.
    let fragments = |base: u32, kk: u32| {
        let mut fa = [[0u32; 4]; MI];
        let mut fb = [[0u32; 2]; NI];
        unroll!(MI, |i| {
            // SAFETY: 16-byte aligned rows inside this stage's A tile.
            fa[i] =
                unsafe { mma::ldmatrix_x4(base + a_off + ((i as u32 * 16) * pitch + kk * 16) * 2) };
        });
        unroll!(NI / 2, |j| {
            // SAFETY: 16-byte aligned rows inside this stage's B tile.
            let r =
                unsafe { mma::ldmatrix_x4(base + b_off + ((j as u32 * 16) * pitch + kk * 16) * 2) };
            fb[2 * j] = [r[0], r[1]];
            fb[2 * j + 1] = [r[2], r[3]];
        });
        (fa, fb)
    };
    // Fragments are double-buffered: the ldmatrix of slice kk + 1 is issued before the mma of
    // slice kk, and the first slice of step s + 1 is loaded (after the step's wait + barrier)
    // before the last mma of step s, so no k-step starts with an ldmatrix latency bubble.
    // Groups: the prologue committed steps 0..STAGES-1; step s commits step s + STAGES - 1.
    mma::wait_group::<WAIT_PROLOGUE>();
    sync_threads();
    let mut cur = fragments(smem, 0);
    let mut acc = [[[0.0f32; 4]; NI]; MI];
    let mut stage = 0;
    for step in 0..steps {
        let base = smem + stage * stage_bytes;
        let next_stage = if stage + 1 == STAGES { 0 } else { stage + 1 };
        unroll!(SLICES, |kk| {
            let next = if kk + 1 < SLICES {
                fragments(base, kk as u32 + 1)
            } else {
                // Step s + 1 complete for this thread (at most STAGES - 3 groups pending:
                // step s + 1 is group s + 1 of s + STAGES - 1 committed), then for all threads
                // after the barrier; every thread has also finished reading step s - 1's
                // stage, which is refilled with step s + STAGES - 1.
                mma::wait_group::<WAIT_STEP>();
                sync_threads();
                let refill = step + STAGES - 1;
                if refill < steps {
                    loader.load::<T>(smem, stage_bytes, BK, refill % STAGES, refill, k);
                }
                mma::commit_group();
                // Past the last step this reads a stage nothing refills: unused values.
                fragments(smem + next_stage * stage_bytes, 0)
            };
            let (fa, fb) = cur;
            unroll!(MI, |i| {
                unroll!(NI, |j| {
                    acc[i][j] = T::mma(fa[i], fb[j], acc[i][j]);
                });
            });
            cur = next;
        });
        stage = next_stage;
    }
    mma::wait_all();

    // Epilogue: lane holds rows g, g + 8 and columns 2t, 2t + 1 of each 16×8 accumulator.
    let (g, t) = (lane / 4, lane % 4);
    let out = c.as_mut_ptr();
    let pairs = n.is_multiple_of(2);
    unroll!(MI, |i| {
        unroll!(NI, |j| {
            let col = n0 + wn * WN + j as u32 * 8 + 2 * t;
            unroll!(2, |h| {
                let row = m0 + wm * WM + i as u32 * 16 + g + 8 * h as u32;
                let (lo, hi) = (acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                let at = row as usize * n as usize + col as usize;
                if row >= m || col >= n {
                    // Outside C: nothing to store.
                } else if pairs {
                    // SAFETY: (row, col) and (row, col + 1) are inside C (col + 1 < n as n is
                    // even and col is even); the byte offset is 4-aligned; this lane is the only
                    // writer of these two elements.
                    unsafe { out.add(at).cast::<u32>().write(T::pack(lo, hi)) };
                } else {
                    // SAFETY: as above, element by element, each checked against n.
                    unsafe {
                        out.add(at).write(T::from_f32(lo));
                        if col + 1 < n {
                            out.add(at + 1).write(T::from_f32(hi));
                        }
                    }
                }
            });
        });
    });
}

// One kernel per (element type, policy): `gemm_<type><policy suffix>`, the body with the
// policy's numbers (checked against `GEMM_POLICIES` by `check_policy` and the host's table).
macro_rules! gemm_kernels {
    ($($name:ident: $t:ident, $policy:ident;)*) => { $(
        #[doc = concat!("`C = A · Bᵀ` for ", stringify!($t), " (f32 accumulate) with [`",
            stringify!($policy), "`]. Grid: `ceil(M/128) · ceil(N/256)` blocks (1-D) of 256 ",
            "threads, the policy's `shared_bytes()` of dynamic shared memory. See the module docs.")]
        #[kernel(launch_bounds(256, 1))]
        pub fn $name(a: &[$t], b: &[$t], c: DisjointSlice<$t>, m: u32, n: u32, k: u32) {
            gemm_body::<
                $t,
                { $policy.bk },
                { $policy.stages },
                { (3 * $policy.bk / 16) as usize },
                { ($policy.bk / 16) as usize },
                { ($policy.bk / 16) as usize },
                { $policy.stages - 2 },
                { $policy.stages - 3 },
            >(a, b, c, m, n, k);
        }
    )* };
}

gemm_kernels! {
    gemm_bf16: bf16, GEMM_POLICY_216K;
    gemm_f16: f16, GEMM_POLICY_216K;
    gemm_bf16_163k: bf16, GEMM_POLICY_163K;
    gemm_f16_163k: f16, GEMM_POLICY_163K;
    gemm_bf16_99k: bf16, GEMM_POLICY_99K;
    gemm_f16_99k: f16, GEMM_POLICY_99K;
}
