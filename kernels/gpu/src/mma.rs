//! Tensor cores through `mma.sync` (sm_80+): warp-wide matrix multiply-accumulate on 16-bit
//! operands ([`mma_bf16_m16n8k16`], [`mma_f16_m16n8k16`]), the shared-memory fragment loads
//! that feed it ([`ldmatrix_x1`], [`ldmatrix_x2`], [`ldmatrix_x4`] and `_trans` forms), and
//! asynchronous global → shared copies ([`cp_async_cg16`], [`cp_async_ca`],
//! [`commit_group`], [`wait_group`]) for software-pipelined tiles.
//!
//! All `mma`/`ldmatrix` functions are `.sync.aligned` warp collectives: every lane of the warp
//! must call the same function together (no divergence, full warp). Fragments are plain `u32`
//! registers holding two 16-bit values each, lower index in bits 0..16 (see
//! [`crate::packed`]); accumulators are `f32`.
//!
//! # Fragment layouts (m16n8k16, 16-bit operands)
//! With `g = lane / 4` ("group", 0..8) and `t = lane % 4` ("thread in group", 0..4):
//!
//! | fragment | register | row | columns (lo half, hi half) |
//! | --- | --- | --- | --- |
//! | A (16×16, row-major, `[u32; 4]`) | `a[0]` | `g` | `2t, 2t+1` |
//! | | `a[1]` | `g + 8` | `2t, 2t+1` |
//! | | `a[2]` | `g` | `2t+8, 2t+9` |
//! | | `a[3]` | `g + 8` | `2t+8, 2t+9` |
//! | B (16×8, k × n, "col": `[u32; 2]`) | `b[0]` | k = `2t, 2t+1` | n = `g` |
//! | | `b[1]` | k = `2t+8, 2t+9` | n = `g` |
//! | C/D (16×8 f32, `[f32; 4]`) | `c[0]`, `c[1]` | `g` | `2t`, `2t+1` |
//! | | `c[2]`, `c[3]` | `g + 8` | `2t`, `2t+1` |
//!
//! B is "column-major": each register holds two consecutive **k** of one column n, so a B stored
//! as an N×K row-major array (an `nn.Linear` weight, or Bᵀ) is loaded with plain `ldmatrix`
//! from its rows, and a K×N row-major B with `ldmatrix_*_trans`.
//!
//! # ldmatrix
//! `ldmatrix` loads one to four 8×8 matrices of 16-bit elements from shared memory. Matrix `i`'s
//! eight rows (16 bytes each, 16-byte aligned) are addressed by lanes `8i .. 8i+8` (lane `8i + r`
//! passes the address of row `r`); addresses from other lanes are ignored. Each lane receives
//! one `u32` per matrix: register `i` holds row `g`, columns `2t, 2t+1` of matrix `i` (the
//! same layout as one A/B/C register above). The `_trans` forms deliver the transpose: register
//! `i` holds elements (row `2t`, column `g`) and (row `2t+1`, column `g`) of matrix `i`.
//!
//! So one `ldmatrix_x4` loads a whole A fragment: lanes 0..16 address rows 0..16 at column 0,
//! lanes 16..32 rows 0..16 at column 8 (matrices: rows 0-7/k 0-7, rows 8-15/k 0-7, rows 0-7/k
//! 8-15, rows 8-15/k 8-15 = `a[0..4]`): `row = lane % 16`, `col = (lane / 16) * 8`. For B
//! stored n-major (N×K), one `ldmatrix_x4` loads two n8 fragments: `n = (lane / 16) * 8 +
//! lane % 8`, `k = ((lane / 8) % 2) * 8` gives `[b0[0], b0[1], b1[0], b1[1]]`.
//!
//! # cp.async
//! `cp.async` copies global → shared without passing through registers, so a tile for stage
//! `s + 2` can be in flight while stage `s` is computed. Copies issued since the last
//! [`commit_group`] form a group; [`wait_group::<N>`](wait_group) waits until at most `N`
//! groups are pending. The data is visible to the issuing thread after the wait; to other
//! threads only after a barrier ([`crate::sync::sync_threads`]) following the wait.
//!
//! # Simulator
//! `ldmatrix` reads all lanes' rows at one instant when the last lane arrives (as the
//! hardware does for the warp); `mma` computes each output as `c + Σ a·b` with exact
//! products summed in f32 in k order (the tensor cores' internal summation order and
//! truncation differ in the last bits); `cp.async` is a synchronous copy, and the group
//! functions do nothing.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

/// `ldmatrix` flavours: number of matrices and whether transposed.
macro_rules! ldmatrix_fn {
    ($(#[$doc:meta])* $name:ident, $n:literal, $trans:literal, $ins:literal, [$($d:ident),+]) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Every lane that addresses a row (see the [module docs](self)) must pass the
        /// shared-window address of 16 readable, 16-byte aligned bytes of this block's shared
        /// memory. All 32 lanes must call this together.
        #[inline(always)]
        pub unsafe fn $name(addr: u32) -> [u32; $n] {
            device!(concat!("mma::", stringify!($name)), {
                $(let $d: u32;)+
                // SAFETY: the caller guarantees the addresses; reads shared memory only.
                unsafe {
                    core::arch::asm!(
                        concat!($ins, " {{", ldmatrix_fn!(@regs $($d),+), "}}, [{addr}];"),
                        $($d = out(reg32) $d,)+
                        addr = in(reg32) addr,
                        options(readonly, nostack),
                    )
                };
                [$($d),+]
            }, sim: {
                let r = sim_ldmatrix(concat!("mma::", stringify!($name)), addr, $n, $trans);
                let mut out = [0u32; $n];
                for (i, o) in out.iter_mut().enumerate() {
                    *o = (r[i / 2] >> (32 * (i % 2))) as u32;
                }
                out
            })
        }
    };
    (@regs $first:ident $(, $rest:ident)*) => {
        concat!("{", stringify!($first), "}" $(, ", {", stringify!($rest), "}")*)
    };
}

ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x1.shared.b16`: one 8×8 matrix, rows addressed by lanes 0..8.
    ldmatrix_x1, 1, false, "ldmatrix.sync.aligned.m8n8.x1.shared.b16", [d0]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x2.shared.b16`: two 8×8 matrices, rows addressed by lanes
    /// 0..16.
    ldmatrix_x2, 2, false, "ldmatrix.sync.aligned.m8n8.x2.shared.b16", [d0, d1]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: four 8×8 matrices, rows addressed by lanes
    /// 0..32 (one whole A fragment, or two B fragments).
    ldmatrix_x4, 4, false, "ldmatrix.sync.aligned.m8n8.x4.shared.b16", [d0, d1, d2, d3]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16`: one transposed 8×8 matrix.
    ldmatrix_x1_trans, 1, true, "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16", [d0]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16`: two transposed 8×8 matrices.
    ldmatrix_x2_trans, 2, true, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", [d0, d1]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: four transposed 8×8 matrices (e.g. B
    /// fragments of a K×N row-major B, or V in attention).
    ldmatrix_x4_trans, 4, true, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", [d0, d1, d2, d3]
);

/// The simulator's `ldmatrix`: results packed two `u32` per `u64`.
#[cfg(all(not(target_arch = "nvptx64"), feature = "sim"))]
#[track_caller]
fn sim_ldmatrix(what: &str, addr: u32, n: usize, trans: bool) -> [u64; 2] {
    use crate::sim::intrinsics::{shared_read, warp_exchange_map};
    warp_exchange_map(what, u32::MAX, addr as u64, |addrs| {
        let mut out = [[0u64; 2]; 32];
        for (lane, o) in out.iter_mut().enumerate() {
            let (g, t) = (lane / 4, lane % 4);
            for i in 0..n {
                let v: u32 = if trans {
                    let lo: u16 = shared_read(addrs[8 * i + 2 * t] as u32 + 2 * g as u32);
                    let hi: u16 = shared_read(addrs[8 * i + 2 * t + 1] as u32 + 2 * g as u32);
                    lo as u32 | (hi as u32) << 16
                } else {
                    shared_read(addrs[8 * i + g] as u32 + 4 * t as u32)
                };
                o[i / 2] |= (v as u64) << (32 * (i % 2));
            }
        }
        out
    })
}

/// One `mma.sync.aligned.m16n8k16.row.col.f32.<ty>.<ty>.f32`.
macro_rules! mma_fn {
    ($(#[$doc:meta])* $name:ident, $ins:literal, $to_f32:expr) => {
        $(#[$doc])*
        ///
        /// Computes `D = A·B + C` for a 16×16 A, a 16×8 B and a 16×8 f32 C in the fragment
        /// layouts of the [module docs](self). A warp collective: all 32 lanes call it together.
        #[inline(always)]
        pub fn $name(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
            device!(concat!("mma::", stringify!($name)), {
                let (d0, d1, d2, d3): (f32, f32, f32, f32);
                // SAFETY: a register-only warp collective; all lanes call it (documented).
                unsafe {
                    core::arch::asm!(
                        concat!($ins, " {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};"),
                        d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
                        a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                        b0 = in(reg32) b[0], b1 = in(reg32) b[1],
                        c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
                        options(pure, nomem, nostack),
                    )
                };
                [d0, d1, d2, d3]
            }, sim: { sim_mma(concat!("mma::", stringify!($name)), a, b, c, $to_f32) })
        }
    };
}

mma_fn!(
    /// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`: bf16 operands, f32 accumulate.
    mma_bf16_m16n8k16,
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    |h: u16| f32::from_bits((h as u32) << 16)
);
mma_fn!(
    /// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: f16 operands, f32 accumulate.
    mma_f16_m16n8k16,
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    |h: u16| sim_f16_to_f32(h)
);

/// f16 bits → f32 on the host (exact), without depending on the `half` feature.
#[cfg(all(not(target_arch = "nvptx64"), feature = "sim"))]
fn sim_f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let frac = (h & 0x3ff) as f32;
    match exp {
        0 => sign * frac * (2.0f32).powi(-24),
        31 if frac == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        e => sign * (1.0 + frac / 1024.0) * (2.0f32).powi(e - 15),
    }
}

/// The simulator's `mma` m16n8k16: gathers the warp's A and B fragments (three exchanges),
/// then computes this lane's four outputs.
#[cfg(all(not(target_arch = "nvptx64"), feature = "sim"))]
#[track_caller]
fn sim_mma(what: &str, a: [u32; 4], b: [u32; 2], c: [f32; 4], to_f32: fn(u16) -> f32) -> [f32; 4] {
    use crate::sim::intrinsics::{lane, warp_exchange};
    let a01 = warp_exchange(what, u32::MAX, a[0] as u64 | (a[1] as u64) << 32);
    let a23 = warp_exchange(what, u32::MAX, a[2] as u64 | (a[3] as u64) << 32);
    let bs = warp_exchange(what, u32::MAX, b[0] as u64 | (b[1] as u64) << 32);
    // A[row][k]: lane (row % 8) * 4 + (k % 8) / 2, register (row / 8) + 2 * (k / 8).
    let a_at = |row: usize, k: usize| {
        let l = (row % 8) * 4 + (k % 8) / 2;
        let reg = row / 8 + 2 * (k / 8);
        let word = if reg < 2 { a01[l] } else { a23[l] } >> (32 * (reg % 2));
        to_f32((word >> (16 * (k % 2))) as u16)
    };
    // B[k][n]: lane n * 4 + (k % 8) / 2, register k / 8.
    let b_at = |k: usize, n: usize| {
        let l = n * 4 + (k % 8) / 2;
        let word = bs[l] >> (32 * (k / 8));
        to_f32((word >> (16 * (k % 2))) as u16)
    };
    let lane = lane() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let mut d = c;
    for (i, di) in d.iter_mut().enumerate() {
        let row = g + 8 * (i / 2);
        let col = 2 * t + i % 2;
        for k in 0..16 {
            *di += a_at(row, k) * b_at(k, col);
        }
    }
    d
}

/// `cp.async.cg.shared.global [dst], [src], 16`: copies 16 bytes global → shared, bypassing
/// L1 (`.cg`: the right choice for tiles that each block reads once).
///
/// # Safety
/// `dst` must be a 16-byte aligned shared-window address of 16 bytes of this block's shared
/// memory; `src` a 16-byte aligned pointer to 16 readable bytes of global memory. The bytes
/// may be read only after [`wait_group`] (and a barrier, for other threads).
#[inline(always)]
pub unsafe fn cp_async_cg16(dst: u32, src: *const u8) {
    device!("mma::cp_async_cg16", {
        // SAFETY: forwarded to the caller.
        unsafe { core::arch::asm!("cp.async.cg.shared.global [{d}], [{s}], 16;", d = in(reg32) dst, s = in(reg64) src, options(nostack)) }
    }, sim: { sim_copy(dst, src, 16, 16) })
}

/// [`cp_async_cg16`] with zero fill: copies the first `src_bytes` (0..=16) bytes from `src`
/// and writes zeros to the rest of the 16 destination bytes (`cp.async ... 16, src_bytes`).
/// For ragged tile edges: pass 0 for a chunk wholly outside the matrix (nothing is read, but
/// `src` should still be a valid address, e.g. the matrix's start).
///
/// # Safety
/// As for [`cp_async_cg16`], with `src_bytes` readable bytes at `src`, `src_bytes <= 16`.
#[inline(always)]
pub unsafe fn cp_async_cg16_zfill(dst: u32, src: *const u8, src_bytes: u32) {
    device!("mma::cp_async_cg16_zfill", {
        // SAFETY: forwarded to the caller.
        unsafe { core::arch::asm!("cp.async.cg.shared.global [{d}], [{s}], 16, {n};", d = in(reg32) dst, s = in(reg64) src, n = in(reg32) src_bytes, options(nostack)) }
    }, sim: { sim_copy(dst, src, 16, src_bytes as usize) })
}

/// `cp.async.ca.shared.global [dst], [src], BYTES` (through L1) for `BYTES` = 4, 8 or 16
/// (other values fail to compile).
///
/// # Safety
/// `dst` (shared) and `src` (global) must address `BYTES` bytes, both aligned to `BYTES`.
#[inline(always)]
pub unsafe fn cp_async_ca<const BYTES: u32>(dst: u32, src: *const u8) {
    const {
        assert!(
            BYTES == 4 || BYTES == 8 || BYTES == 16,
            "cp.async.ca copies 4, 8 or 16 bytes"
        )
    };
    device!("mma::cp_async_ca", {
        // SAFETY: forwarded to the caller.
        unsafe {
            match BYTES {
                4 => core::arch::asm!("cp.async.ca.shared.global [{d}], [{s}], 4;", d = in(reg32) dst, s = in(reg64) src, options(nostack)),
                8 => core::arch::asm!("cp.async.ca.shared.global [{d}], [{s}], 8;", d = in(reg32) dst, s = in(reg64) src, options(nostack)),
                _ => core::arch::asm!("cp.async.ca.shared.global [{d}], [{s}], 16;", d = in(reg32) dst, s = in(reg64) src, options(nostack)),
            }
        }
    }, sim: { sim_copy(dst, src, BYTES as usize, BYTES as usize) })
}

/// [`cp_async_ca`] with zero fill: copies `src_bytes` (0..=`BYTES`) bytes, zeros the rest.
///
/// # Safety
/// As for [`cp_async_ca`], with `src_bytes <= BYTES` readable bytes at `src`.
#[inline(always)]
pub unsafe fn cp_async_ca_zfill<const BYTES: u32>(dst: u32, src: *const u8, src_bytes: u32) {
    const {
        assert!(
            BYTES == 4 || BYTES == 8 || BYTES == 16,
            "cp.async.ca copies 4, 8 or 16 bytes"
        )
    };
    device!("mma::cp_async_ca_zfill", {
        // SAFETY: forwarded to the caller.
        unsafe {
            match BYTES {
                4 => core::arch::asm!("cp.async.ca.shared.global [{d}], [{s}], 4, {n};", d = in(reg32) dst, s = in(reg64) src, n = in(reg32) src_bytes, options(nostack)),
                8 => core::arch::asm!("cp.async.ca.shared.global [{d}], [{s}], 8, {n};", d = in(reg32) dst, s = in(reg64) src, n = in(reg32) src_bytes, options(nostack)),
                _ => core::arch::asm!("cp.async.ca.shared.global [{d}], [{s}], 16, {n};", d = in(reg32) dst, s = in(reg64) src, n = in(reg32) src_bytes, options(nostack)),
            }
        }
    }, sim: { sim_copy(dst, src, BYTES as usize, src_bytes as usize) })
}

/// The simulator's `cp.async`: a synchronous copy of `src_bytes` bytes, zeros up to `bytes`.
#[cfg(all(not(target_arch = "nvptx64"), feature = "sim"))]
#[track_caller]
fn sim_copy(dst: u32, src: *const u8, bytes: usize, src_bytes: usize) {
    let p = crate::sim::intrinsics::shared_ptr(dst, bytes);
    let n = src_bytes.min(bytes);
    // SAFETY: `shared_ptr` bounds-checked the destination; the caller of the cp.async function
    // guaranteed `src_bytes` readable bytes at `src`. Shared and global memory do not overlap.
    unsafe {
        core::ptr::copy_nonoverlapping(src, p, n);
        core::ptr::write_bytes(p.add(n), 0, bytes - n);
    }
}

/// `cp.async.commit_group`: closes the group of copies this thread issued since the last one.
#[inline(always)]
pub fn commit_group() {
    device!("mma::commit_group", {
        // SAFETY: no operands; orders this thread's async copies.
        unsafe { core::arch::asm!("cp.async.commit_group;", options(nostack)) }
    }, sim: {})
}

/// `cp.async.wait_group N`: waits until at most `N` (0..=7) of this thread's committed groups
/// are still in flight. Then this thread may read those copies' data; other threads after a
/// following barrier.
#[inline(always)]
pub fn wait_group<const N: u32>() {
    const { assert!(N <= 7, "wait_group::<N> takes N in 0..=7") };
    device!("mma::wait_group", {
        // SAFETY: no operands; a memory-ordering wait on this thread's async copies.
        unsafe {
            match N {
                0 => core::arch::asm!("cp.async.wait_group 0;", options(nostack)),
                1 => core::arch::asm!("cp.async.wait_group 1;", options(nostack)),
                2 => core::arch::asm!("cp.async.wait_group 2;", options(nostack)),
                3 => core::arch::asm!("cp.async.wait_group 3;", options(nostack)),
                4 => core::arch::asm!("cp.async.wait_group 4;", options(nostack)),
                5 => core::arch::asm!("cp.async.wait_group 5;", options(nostack)),
                6 => core::arch::asm!("cp.async.wait_group 6;", options(nostack)),
                _ => core::arch::asm!("cp.async.wait_group 7;", options(nostack)),
            }
        }
    }, sim: {})
}

/// `cp.async.wait_all`: waits for all of this thread's async copies (committed or not).
#[inline(always)]
pub fn wait_all() {
    device!("mma::wait_all", {
        // SAFETY: no operands; a memory-ordering wait on this thread's async copies.
        unsafe { core::arch::asm!("cp.async.wait_all;", options(nostack)) }
    }, sim: {})
}
