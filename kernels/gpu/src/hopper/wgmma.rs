//! `wgmma` (sm_90a): warpgroup matrix multiply-accumulate. Four consecutive warps (a warpgroup,
//! starting at a warp index divisible by 4) issue one `m64nNk16` product together: A (64×16)
//! and B (N×16, K-major) are read from shared memory through matrix descriptors
//! ([`shared_desc_sw128`]), the 64×N f32 accumulator lives in registers, N/2 per thread.
//!
//! The products run asynchronously: [`fence`] before the first one (and whenever the
//! accumulator registers were touched by ordinary code), [`commit_group`] after a batch, then
//! [`wait_group`] before reading the accumulators or reusing the shared memory they read.
//!
//! Accumulator layout (per thread of the warpgroup, `t = 0..128`, warp `w = t / 32`, lane
//! `l = t % 32`): register `4 j + 2 h + e` holds row `16 w + l / 4 + 8 h`, column
//! `8 j + 2 (l % 4) + e` of the 64×N tile.
//!
//! The `_rs` forms take A (64×16) from registers instead: four `b32` words per thread, each two
//! 16-bit values, word `r` holding row `16 w + l / 4 + 8 (r % 2)`, columns
//! `8 (r / 2) + 2 (l % 4) + {0, 1}` (low half first). That is the accumulator layout of the
//! 16 columns `16 kk .. 16 kk + 16` of a 64×N product rounded pairwise: word `r` of k-step `kk`
//! packs accumulator registers `8 kk + 2 r` and `8 kk + 2 r + 1`, so a product's result feeds
//! the next product with no shared-memory round trip (flash attention's `P · V`). Their B
//! operand is MN-major (`imm-trans-b` = 1, [`shared_desc_sw128_mn`]): B stored as K rows of N
//! contiguous elements, as a row-major `[K, N]` matrix (V in `P · V`) arrives from TMA.
//!
//! Descriptors are 64-bit values the instruction reads from uniform registers. Built from values
//! ptxas cannot prove warp-uniform (anything derived from the thread index, even `tid / 128`,
//! or a loop counter under a role branch on it), they are computed in vector registers and moved
//! over one `R2UR` a word per product; [`warpgroup_index`] and [`crate::warp::broadcast`] of
//! such values from lane 0 (CUTLASS's `canonical_warp_group_idx`) let ptxas build them with
//! uniform instructions instead.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables, unused_mut))]

/// This thread's warpgroup in a 1-D block, `thread_idx_x / 128`, broadcast from lane 0 so that
/// ptxas knows it (and role branches, shared-memory offsets and descriptors derived from it) is
/// the same in every lane of the warp: see the module docs.
#[inline(always)]
pub fn warpgroup_index() -> u32 {
    crate::warp::broadcast(crate::thread::thread_idx_x() / 128, 0)
}

/// `wgmma.fence`: orders this warpgroup's earlier register and shared-memory accesses before
/// the products issued next.
///
/// # Safety
/// Executed by all threads of the warpgroup (`.sync.aligned`: same instruction, converged).
#[inline(always)]
pub unsafe fn fence() {
    device!("hopper::wgmma::fence", {
        // SAFETY: caller guarantees a converged warpgroup.
        unsafe { core::arch::asm!("wgmma.fence.sync.aligned;", options(nostack)) }
    })
}

/// `wgmma.commit_group`: closes the batch of products issued since the last commit.
///
/// # Safety
/// Executed by all threads of the warpgroup.
#[inline(always)]
pub unsafe fn commit_group() {
    device!("hopper::wgmma::commit_group", {
        // SAFETY: caller guarantees a converged warpgroup.
        unsafe { core::arch::asm!("wgmma.commit_group.sync.aligned;", options(nostack)) }
    })
}

/// `wgmma.wait_group N`: waits until at most `N` committed batches are still running. After
/// `wait_group::<0>()` the accumulators may be read and every operand tile reused.
///
/// # Safety
/// Executed by all threads of the warpgroup.
#[inline(always)]
pub unsafe fn wait_group<const N: u32>() {
    device!("hopper::wgmma::wait_group", {
        // SAFETY: caller guarantees a converged warpgroup.
        unsafe {
            core::arch::asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack))
        }
    })
}

/// `setmaxnreg.inc`: raises this warpgroup's register allocation to `N` per thread (a
/// multiple of 8 in 24..=256), taken from registers that other warpgroups released with
/// [`set_max_registers_dec`]. Only takes effect in a kernel with a register cap at entry
/// (`launch_bounds(threads, 1)`).
///
/// # Safety
/// Executed by all threads of the warpgroup; the block's total stays within the SM's budget.
#[inline(always)]
pub unsafe fn set_max_registers_inc<const N: u32>() {
    device!("hopper::wgmma::set_max_registers_inc", {
        // SAFETY: caller guarantees a converged warpgroup and a feasible register budget.
        unsafe {
            core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack))
        }
    })
}

/// `setmaxnreg.dec`: lowers this warpgroup's register allocation to `N` per thread, releasing
/// the rest for [`set_max_registers_inc`] in other warpgroups.
///
/// # Safety
/// Executed by all threads of the warpgroup; the code that follows fits in `N` registers.
#[inline(always)]
pub unsafe fn set_max_registers_dec<const N: u32>() {
    device!("hopper::wgmma::set_max_registers_dec", {
        // SAFETY: caller guarantees a converged warpgroup.
        unsafe {
            core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack))
        }
    })
}

/// A shared-memory matrix descriptor for a K-major operand tile stored with the 128-byte
/// swizzle (what a TMA load with `CU_TENSOR_MAP_SWIZZLE_128B` and a 64-element bf16/f16 inner
/// box writes): rows of 128 bytes, 8-row (1024-byte) swizzle atoms stacked along M/N.
///
/// `addr` is the shared address of the first row's first element to use. The tile must start
/// 1024-byte aligned; stepping along K within the 64-element row is done by adding
/// `2 * k` bytes to `addr` (k a multiple of 16), as the hardware applies the swizzle to the
/// absolute address bits.
#[inline(always)]
pub const fn shared_desc_sw128(addr: u32) -> u64 {
    // start address >> 4 (bits 0..14), leading byte offset 16 B (unused with swizzling,
    // bits 16..30), stride byte offset 1024 B between 8-row atoms (bits 32..46), base offset 0,
    // layout type 1 = 128-byte swizzle (bits 62..64).
    ((addr as u64 >> 4) & 0x3fff) | (1u64 << 16) | ((1024u64 >> 4) << 32) | (1u64 << 62)
}

/// A shared-memory matrix descriptor for an MN-major operand (B of the `_rs` products, read
/// with `imm-trans-b` = 1) stored with the 128-byte swizzle: K rows of 64 N-elements (128
/// bytes), as a TMA load of a row-major `[K, N]` box with a 64-element inner box writes them.
/// Eight K rows make a 1024-byte swizzle atom; atoms follow each other along K 1024 bytes
/// apart (the stride byte offset), and the next 64 N-elements start `lbo` bytes after the
/// first (the leading byte offset: the size of one 64-column tile, used when N > 64).
///
/// `addr` is the shared address of K row `k` (a multiple of 8) of the first 64 columns:
/// k-step `kk` of 16 rows starts at `base + 2048 kk`, so every step starts on an atom and the
/// tile must be 1024-byte aligned.
#[inline(always)]
pub const fn shared_desc_sw128_mn(addr: u32, lbo: u32) -> u64 {
    ((addr as u64 >> 4) & 0x3fff)
        | (((lbo as u64 >> 4) & 0x3fff) << 16)
        | ((1024u64 >> 4) << 32)
        | (1u64 << 62)
}

/// Pins the accumulator registers: an empty asm that claims to read and write them, so the
/// compiler neither reads them before a [`wait_group`] nor moves their definitions after a
/// product that updates them in place.
macro_rules! fence_regs {
    ($name:ident, $n:literal, [$($i:tt)*]) => {
        /// Keeps the compiler from moving accesses to these accumulator registers across the
        /// surrounding wgmma instructions (see the module docs).
        #[inline(always)]
        pub fn $name(d: &mut [f32; $n]) {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: an empty template; no memory access.
            unsafe {
                core::arch::asm!(
                    concat!("// wgmma accumulators:", $(" {", stringify!($i), "}",)*),
                    $(inout(reg32) d[$i],)* options(nostack, nomem, preserves_flags)
                )
            }
        }
    };
}

/// Defines one `wgmma.mma_async` with A and B from shared-memory descriptors.
macro_rules! mma {
    ($(#[$doc:meta])* $name:ident, $shape:literal, $ty:literal, $n:literal, [$i0:tt $($i:tt)*]) => {
        $(#[$doc])*
        ///
        /// `d += A · Bᵀ` (or `d = A · Bᵀ` when `accumulate` is false), A = `a` (64×16, K-major,
        /// [`shared_desc_sw128`]), B = `b` (N×16, K-major), f32 accumulate.
        ///
        /// # Safety
        /// Executed by all 128 threads of a warpgroup with the same descriptors, after a
        /// [`fence`]; the descriptors address valid tiles that nothing writes until a
        /// [`wait_group`] covering this product returns; `d` is not read or written by
        /// ordinary code until then.
        #[inline(always)]
        pub unsafe fn $name(d: &mut [f32; $n], a: u64, b: u64, accumulate: bool) {
            device!(concat!("hopper::wgmma::", stringify!($name)), {
                // SAFETY: the caller guarantees the warpgroup and operand contracts above.
                unsafe {
                    core::arch::asm!(
                        concat!(
                            "{{ .reg .pred %p; setp.ne.u32 %p, {sc}, 0; wgmma.mma_async.sync.aligned.",
                            $shape, ".f32.", $ty, ".", $ty, " {{{", stringify!($i0), "}",
                            $(", {", stringify!($i), "}",)*
                            "}}, {da}, {db}, %p, 1, 1, 0, 0; }}"
                        ),
                        inout(reg32) d[$i0], $(inout(reg32) d[$i],)*
                        da = in(reg64) a, db = in(reg64) b, sc = in(reg32) accumulate as u32,
                        options(nostack)
                    )
                }
            })
        }
    };
}

fence_regs!(fence_accumulators_32, 32, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]);
fence_regs!(fence_accumulators_64, 64, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]);
fence_regs!(fence_accumulators_128, 128, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]);

/// Pins the A-fragment registers of an `_rs` product: as the accumulators, they must not be
/// overwritten (or moved) until a [`wait_group`] covering the product returns.
#[inline(always)]
pub fn fence_fragment(a: &mut [u32; 4]) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: an empty template; no memory access.
    unsafe {
        core::arch::asm!(
            "// wgmma A fragment: {0} {1} {2} {3}",
            inout(reg32) a[0], inout(reg32) a[1], inout(reg32) a[2], inout(reg32) a[3],
            options(nostack, nomem, preserves_flags)
        )
    }
}

/// Defines one `wgmma.mma_async` with A from registers and an MN-major B
/// (`imm-trans-b` = 1) from a shared-memory descriptor.
macro_rules! mma_rs {
    ($(#[$doc:meta])* $name:ident, $shape:literal, $ty:literal, $n:literal, [$i0:tt $($i:tt)*]) => {
        $(#[$doc])*
        ///
        /// `d += A · B` (or `d = A · B` when `accumulate` is false), A = `a` (64×16 in
        /// registers, the layout in the module docs), B = `b` (16×N, MN-major,
        /// [`shared_desc_sw128_mn`]), f32 accumulate.
        ///
        /// # Safety
        /// Executed by all 128 threads of a warpgroup with the same descriptor, after a
        /// [`fence`]; the descriptor addresses a valid tile that nothing writes until a
        /// [`wait_group`] covering this product returns; neither `d` nor `a` is read or written by
        /// ordinary code until then (pin them with the fence functions after the wait).
        #[inline(always)]
        pub unsafe fn $name(d: &mut [f32; $n], a: &mut [u32; 4], b: u64, accumulate: bool) {
            device!(concat!("hopper::wgmma::", stringify!($name)), {
                // SAFETY: the caller guarantees the warpgroup and operand contracts above.
                unsafe {
                    core::arch::asm!(
                        concat!(
                            "{{ .reg .pred %p; setp.ne.u32 %p, {sc}, 0; wgmma.mma_async.sync.aligned.",
                            $shape, ".f32.", $ty, ".", $ty, " {{{", stringify!($i0), "}",
                            $(", {", stringify!($i), "}",)*
                            "}}, {{{a0}, {a1}, {a2}, {a3}}}, {db}, %p, 1, 1, 1; }}"
                        ),
                        inout(reg32) d[$i0], $(inout(reg32) d[$i],)*
                        a0 = inout(reg32) a[0], a1 = inout(reg32) a[1],
                        a2 = inout(reg32) a[2], a3 = inout(reg32) a[3],
                        db = in(reg64) b, sc = in(reg32) accumulate as u32,
                        options(nostack)
                    )
                }
            })
        }
    };
}

mma_rs!(
    /// `wgmma.mma_async.m64n64k16.f32.bf16.bf16`, A from registers, B MN-major.
    mma_rs_m64n64k16_bf16, "m64n64k16", "bf16", 32, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]
);
mma_rs!(
    /// `wgmma.mma_async.m64n128k16.f32.bf16.bf16`, A from registers, B MN-major.
    mma_rs_m64n128k16_bf16, "m64n128k16", "bf16", 64, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]
);

mma!(
    /// `wgmma.mma_async.m64n128k16.f32.bf16.bf16`.
    mma_m64n128k16_bf16, "m64n128k16", "bf16", 64, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]
);
mma!(
    /// `wgmma.mma_async.m64n128k16.f32.f16.f16`.
    mma_m64n128k16_f16, "m64n128k16", "f16", 64, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]
);
mma!(
    /// `wgmma.mma_async.m64n256k16.f32.bf16.bf16`.
    mma_m64n256k16_bf16, "m64n256k16", "bf16", 128, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]
);
mma!(
    /// `wgmma.mma_async.m64n256k16.f32.f16.f16`.
    mma_m64n256k16_f16, "m64n256k16", "f16", 128, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]
);

/// Packs two f32 into a bf16×2 word (`cvt.rn.bf16x2.f32`, round to nearest even): `lo` in
/// the low half, so the word stores as `[lo, hi]` in memory.
#[cfg(feature = "half")]
#[inline(always)]
pub fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    device!("hopper::wgmma::pack_bf16x2", {
        let r: u32;
        // SAFETY: register-only conversion.
        unsafe {
            core::arch::asm!("cvt.rn.bf16x2.f32 {r}, {h}, {l};", r = out(reg32) r, h = in(reg32) hi, l = in(reg32) lo, options(pure, nomem, nostack))
        };
        r
    }, sim: {
        (half::bf16::from_f32(lo).to_bits() as u32) | ((half::bf16::from_f32(hi).to_bits() as u32) << 16)
    })
}

/// Packs two f32 into an f16×2 word (`cvt.rn.f16x2.f32`): `lo` in the low half.
#[cfg(feature = "half")]
#[inline(always)]
pub fn pack_f16x2(lo: f32, hi: f32) -> u32 {
    device!("hopper::wgmma::pack_f16x2", {
        let r: u32;
        // SAFETY: register-only conversion.
        unsafe {
            core::arch::asm!("cvt.rn.f16x2.f32 {r}, {h}, {l};", r = out(reg32) r, h = in(reg32) hi, l = in(reg32) lo, options(pure, nomem, nostack))
        };
        r
    }, sim: {
        (half::f16::from_f32(lo).to_bits() as u32) | ((half::f16::from_f32(hi).to_bits() as u32) << 16)
    })
}

// --- forward 2 ---

mma_rs!(
    /// `wgmma.mma_async.m64n64k16.f32.f16.f16`, A from registers, B MN-major.
    mma_rs_m64n64k16_f16, "m64n64k16", "f16", 32, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]
);
mma_rs!(
    /// `wgmma.mma_async.m64n128k16.f32.f16.f16`, A from registers, B MN-major.
    mma_rs_m64n128k16_f16, "m64n128k16", "f16", 64, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]
);

// --- backward ---
// Pieces of the attention backward (`hopper_kernels::attention_backward`): the N = 64
// shared-memory product, products with both operands MN-major, a pair of f32 reductions into
// global memory, a 1-D bulk copy (LSE and Δ rows) and a 1-D bulk f32 reduction (dQ tiles).

mma!(
    /// `wgmma.mma_async.m64n64k16.f32.bf16.bf16`.
    mma_m64n64k16_bf16, "m64n64k16", "bf16", 32, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]
);

/// Defines one `wgmma.mma_async` with both operands MN-major in shared memory
/// (`imm-trans-a` = `imm-trans-b` = 1).
macro_rules! mma_tt {
    ($(#[$doc:meta])* $name:ident, $shape:literal, $ty:literal, $n:literal, [$i0:tt $($i:tt)*]) => {
        $(#[$doc])*
        ///
        /// `d += A · B` (or `d = A · B` when `accumulate` is false), A = `a` (64×16 stored
        /// MN-major: 16 K rows of 64 M-elements, [`shared_desc_sw128_mn`]), B = `b` (16×N,
        /// MN-major), f32 accumulate. A matrix stored as `[K, M]` rows (attention's dSᵀ) is
        /// then the A of a product over its rows.
        ///
        /// # Safety
        /// As the K-major products: the whole warpgroup after a [`fence`], valid tiles that
        /// nothing writes until a covering [`wait_group`], `d` untouched until then.
        #[inline(always)]
        pub unsafe fn $name(d: &mut [f32; $n], a: u64, b: u64, accumulate: bool) {
            device!(concat!("hopper::wgmma::", stringify!($name)), {
                // SAFETY: the caller guarantees the warpgroup and operand contracts above.
                unsafe {
                    core::arch::asm!(
                        concat!(
                            "{{ .reg .pred %p; setp.ne.u32 %p, {sc}, 0; wgmma.mma_async.sync.aligned.",
                            $shape, ".f32.", $ty, ".", $ty, " {{{", stringify!($i0), "}",
                            $(", {", stringify!($i), "}",)*
                            "}}, {da}, {db}, %p, 1, 1, 1, 1; }}"
                        ),
                        inout(reg32) d[$i0], $(inout(reg32) d[$i],)*
                        da = in(reg64) a, db = in(reg64) b, sc = in(reg32) accumulate as u32,
                        options(nostack)
                    )
                }
            })
        }
    };
}

mma_tt!(
    /// `wgmma.mma_async.m64n64k16.f32.bf16.bf16`, A and B MN-major.
    mma_tt_m64n64k16_bf16, "m64n64k16", "bf16", 32, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]
);

/// `red.global.add.f32` twice: adds `a` and `b` to the two consecutive f32 at `at` (8-byte
/// aligned), atomically per element, without returning the old values. (The vector form
/// `red.global.add.v2.f32` needs PTX ISA 8.1; the builder emits an older version.)
///
/// # Safety
/// `at` is an 8-byte aligned global address of two f32 that other threads change only
/// atomically while this runs.
#[inline(always)]
pub unsafe fn red_add_f32x2(at: *mut f32, a: f32, b: f32) {
    device!("hopper::wgmma::red_add_f32x2", {
        // SAFETY: the caller guarantees the address contract above.
        unsafe {
            core::arch::asm!(
                "red.global.add.f32 [{p}], {a}; red.global.add.f32 [{p}+4], {b};",
                p = in(reg64) at, a = in(reg32) a, b = in(reg32) b, options(nostack)
            )
        }
    })
}

/// `cp.async.bulk` (1-D, no tensor map): copies `bytes` (a multiple of 16) from global `src`
/// (16-byte aligned) to shared `dst` (16-byte aligned), completing `bytes` transactions on the
/// mbarrier `bar`. Issued by one thread.
///
/// # Safety
/// As `tma::load_2d`: `src` readable, `dst` free until `bar`'s phase completes, the phase
/// expecting these bytes.
#[inline(always)]
pub unsafe fn bulk_load(dst: u32, src: *const f32, bytes: u32, bar: u32) {
    device!("hopper::wgmma::bulk_load", {
        // SAFETY: the caller guarantees the contracts above.
        unsafe {
            core::arch::asm!(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
                d = in(reg32) dst, s = in(reg64) src, n = in(reg32) bytes, b = in(reg32) bar,
                options(nostack)
            )
        }
    })
}

/// `cp.reduce.async.bulk .add.f32` (1-D, no tensor map): adds `bytes` (a multiple of 16) of
/// f32 at shared `src` (16-byte aligned) element-wise into global `dst` (16-byte aligned),
/// atomically per element, in the bulk async-group of this thread: complete it with
/// `tma::store_commit` and `tma::store_wait_read` before reusing `src`, `tma::store_wait`
/// before the block exits.
///
/// # Safety
/// `dst` addresses `bytes` of f32 that others change only atomically while this runs; the
/// writes to `src` by other threads were made visible to the async proxy
/// (`mbarrier::fence_proxy_async_shared` in each writer, then a barrier).
#[inline(always)]
pub unsafe fn bulk_reduce_add_f32(dst: *mut f32, src: u32, bytes: u32) {
    device!("hopper::wgmma::bulk_reduce_add_f32", {
        // SAFETY: the caller guarantees the contracts above.
        unsafe {
            core::arch::asm!(
                "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [{d}], [{s}], {n};",
                d = in(reg64) dst, s = in(reg32) src, n = in(reg32) bytes, options(nostack)
            )
        }
    })
}
