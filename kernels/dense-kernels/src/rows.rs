//! Shared pieces of the row-wise kernels (softmax, layernorm): the element types, and moving
//! one row between global memory and registers.
//!
//! One block works on one row (the grid is one block per row, `B` threads). A thread's part of
//! the row is `K` *chunks* of [`RowElement::VEC`] elements (16 bytes of storage), in one of two
//! layouts, both coalesced (each warp-wide access covers consecutive addresses):
//!
//! - aligned (the row length is a multiple of `VEC`, so every row starts 16-byte aligned):
//!   chunk `k` of thread `t` is the 16-byte vector at element `(k·B + t)·VEC`, one
//!   `ld.v4`/`st.v4` (a warp moves 512 consecutive bytes per instruction);
//! - ragged (any other length): element `e` of chunk `k` is element `(k·VEC + e)·B + t`,
//!   moved one element at a time.
//!
//! Elements past the row's end read as a fill value and are not written. The loops over `k`
//! and `e` have constant trip counts and are unrolled, so the chunks stay in registers (an
//! array indexed at run time would go to local memory).

use half::bf16;

/// A row element: stored as `Self`, computed in `f32`.
pub trait RowElement: gpu::DeviceCopy {
    /// Elements per 16-byte chunk.
    const VEC: usize;
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    /// `from_f32` of every value (bf16: two per instruction on the GPU).
    #[inline(always)]
    fn pack<const N: usize>(v: [f32; N]) -> [Self; N] {
        v.map(Self::from_f32)
    }
}

impl RowElement for f32 {
    const VEC: usize = 4;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> f32 {
        v
    }
}

impl RowElement for bf16 {
    const VEC: usize = 8;
    /// bf16 is the high half of an f32: a shift.
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
    /// Round to nearest even on the bits (NaN stays a quiet NaN): a few integer instructions,
    /// no library call.
    #[inline(always)]
    fn from_f32(v: f32) -> bf16 {
        let b = v.to_bits();
        if v.is_nan() {
            return bf16::from_bits(((b >> 16) as u16) | 0x0040);
        }
        let rounded = b.wrapping_add(0x7fff + ((b >> 16) & 1));
        bf16::from_bits((rounded >> 16) as u16)
    }
    /// Pairs through `cvt.rn.bf16x2.f32` (sm_80+): one instruction for two values instead of
    /// about six integer instructions each, which matters: the bf16 kernels are close to
    /// instruction-bound. Same rounding (nearest even) as [`Self::from_f32`]; a NaN becomes the
    /// canonical NaN.
    #[inline(always)]
    fn pack<const N: usize>(v: [f32; N]) -> [bf16; N] {
        #[cfg(target_arch = "nvptx64")]
        {
            let mut out = [bf16::ZERO; N];
            for i in 0..N / 2 {
                let d: u32;
                // SAFETY: an arithmetic instruction on registers.
                unsafe {
                    core::arch::asm!(
                        "cvt.rn.bf16x2.f32 {d}, {hi}, {lo};",
                        d = out(reg32) d, hi = in(reg32) v[2 * i + 1], lo = in(reg32) v[2 * i],
                        options(pure, nomem, nostack),
                    )
                };
                out[2 * i] = bf16::from_bits(d as u16);
                out[2 * i + 1] = bf16::from_bits((d >> 16) as u16);
            }
            if N % 2 == 1 {
                out[N - 1] = Self::from_f32(v[N - 1]);
            }
            out
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            v.map(Self::from_f32)
        }
    }
}

/// The VEC elements of a 16-byte chunk loaded by [`RowLayout::load_words`], in f32.
#[inline(always)]
pub fn words_to_f32<T: RowElement, const VEC: usize>(words: [u32; 4]) -> [f32; VEC] {
    const { assert!(VEC == T::VEC && VEC * size_of::<T>() == 16) };
    // SAFETY: 16 bytes of plain data reinterpreted as VEC elements (any bit pattern is a
    // valid `T`: DeviceCopy).
    let c: [T; VEC] = unsafe { core::mem::transmute_copy(&words) };
    c.map(T::to_f32)
}

/// Runs `$body` with `$k` bound to 0, 1, … 7 in turn, written out: the loops over a thread's
/// chunks must be unrolled for the chunks to stay in registers, and LLVM's unroller gives up on
/// the guarded loads and stores of eight chunks. Bodies guard with `if $k < K`.
#[macro_export]
#[doc(hidden)]
macro_rules! unroll8 {
    ($k:ident => $body:block) => {{
        {
            let $k = 0usize;
            $body
        }
        {
            let $k = 1usize;
            $body
        }
        {
            let $k = 2usize;
            $body
        }
        {
            let $k = 3usize;
            $body
        }
        {
            let $k = 4usize;
            $body
        }
        {
            let $k = 5usize;
            $body
        }
        {
            let $k = 6usize;
            $body
        }
        {
            let $k = 7usize;
            $body
        }
    }};
}

/// The most chunks per thread a kernel may hold (what [`unroll8`] covers).
pub const MAX_CHUNKS: usize = 8;

/// Cache policy of a chunk access.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    /// Data read or written once (the matrix): `.cs`, evict-first, so it does not push the
    /// reused data out of L1/L2.
    Stream,
    /// Data read again (layernorm's gamma and beta, every row; the general path's second and
    /// third reads of a long row): the read-only path, cached in L1 and L2.
    Keep,
}

/// One 16-byte read of global memory with the given cache policy.
///
/// # Safety
/// `p` must be a 16-byte aligned global address of 16 readable bytes that nothing writes during
/// the kernel.
#[inline(always)]
unsafe fn read16(p: *const u8, cache: Cache) -> [u32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: the caller guarantees 16 aligned, readable, read-only bytes at `p`.
        unsafe {
            if cache == Cache::Stream {
                core::arch::asm!(
                    "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.cs.v4.u32 {{{a}, {b}, {c}, {d}}}, [g]; }}",
                    p = in(reg64) p, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                    options(pure, readonly, nostack),
                )
            } else {
                core::arch::asm!(
                    "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.v4.u32 {{{a}, {b}, {c}, {d}}}, [g]; }}",
                    p = in(reg64) p, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                    options(pure, readonly, nostack),
                )
            }
        };
        [a, b, c, d]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = cache;
        // SAFETY: the caller guarantees 16 readable bytes at `p` (the simulator's buffers need
        // not be 16-byte aligned, hence unaligned).
        unsafe { p.cast::<[u32; 4]>().read_unaligned() }
    }
}

/// One 16-byte streaming (`.cs`) write of global memory.
///
/// # Safety
/// `p` must be a 16-byte aligned global address of 16 writable bytes no other thread accesses.
#[inline(always)]
unsafe fn write16(p: *mut u8, v: [u32; 4]) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller guarantees 16 aligned, writable, exclusive bytes at `p`.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; st.global.cs.v4.u32 [g], {{{a}, {b}, {c}, {d}}}; }}",
            p = in(reg64) p, a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
            options(nostack),
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller guarantees 16 writable bytes at `p`.
    unsafe {
        p.cast::<[u32; 4]>().write_unaligned(v)
    };
}

/// Where this thread's chunks lie in a row: the thread `t`, the block size `b`, the row length
/// `cols`, and the layout (see the module docs).
#[derive(Clone, Copy)]
pub struct RowLayout<const ALIGNED: bool> {
    pub t: usize,
    pub b: usize,
    pub cols: usize,
}

impl<const ALIGNED: bool> RowLayout<ALIGNED> {
    /// Row elements one chunk index covers across the block (`k` advances by this many).
    #[inline(always)]
    pub fn tile<const VEC: usize>(&self) -> usize {
        self.b * VEC
    }

    /// Index within the row of element `e` of chunk `k`.
    #[inline(always)]
    pub fn index<const VEC: usize>(&self, k: usize, e: usize) -> usize {
        if ALIGNED {
            (k * self.b + self.t) * VEC + e
        } else {
            (k * VEC + e) * self.b + self.t
        }
    }

    /// Whether element `e` of chunk `k` lies in the row.
    #[inline(always)]
    pub fn valid<const VEC: usize>(&self, k: usize, e: usize) -> bool {
        self.index::<VEC>(k, e) < self.cols
    }

    /// Chunk `k` of this thread from `row` (the row's first element; `cols` elements readable,
    /// 16-byte aligned when `ALIGNED`), converted to f32; elements past the end are `fill`.
    ///
    /// # Safety
    /// `row` must point to `cols` readable elements (16-byte aligned when `ALIGNED`) that no
    /// thread writes during the kernel.
    #[inline(always)]
    pub unsafe fn load<T: RowElement, const VEC: usize>(
        &self,
        row: *const T,
        k: usize,
        fill: f32,
        cache: Cache,
    ) -> [f32; VEC] {
        const { assert!(VEC == T::VEC && VEC * size_of::<T>() == 16) };
        if ALIGNED {
            let start = self.index::<VEC>(k, 0);
            if start < self.cols {
                // SAFETY: with `cols` a multiple of VEC, the whole chunk is in the row, and
                // `row + start` is 16-byte aligned (the row is, and `start` is a multiple of
                // VEC elements = 16 bytes); the caller guarantees it is readable.
                let words = unsafe { read16(row.add(start).cast::<u8>(), cache) };
                // SAFETY: 16 bytes of plain data reinterpreted as VEC elements (any bit
                // pattern is a valid `T`: DeviceCopy).
                let c: [T; VEC] = unsafe { core::mem::transmute_copy(&words) };
                c.map(T::to_f32)
            } else {
                [fill; VEC]
            }
        } else {
            core::array::from_fn(|e| {
                let i = self.index::<VEC>(k, e);
                if i < self.cols {
                    // SAFETY: `i < cols`, inside the readable row.
                    unsafe { row.add(i).read() }.to_f32()
                } else {
                    fill
                }
            })
        }
    }

    /// Chunk `k` of this thread from `row` as the 16 raw bytes (aligned layout only), not yet
    /// converted, and whether the chunk lies in the row (past the end: the row's last chunk
    /// instead). The load is unconditional (the address is clamped into the row), so a thread's
    /// loads sit in one basic block and all issue before the first use: a guarded load and its
    /// conversion, chunk after chunk, let the compiler reuse one register quadruple and wait a
    /// full memory latency per chunk.
    ///
    /// # Safety
    /// As for [`Self::load`], with `ALIGNED` (so `cols` is a multiple of VEC) and `cols >= 1`.
    #[inline(always)]
    pub unsafe fn load_words<T: RowElement, const VEC: usize>(
        &self,
        row: *const T,
        k: usize,
        cache: Cache,
    ) -> ([u32; 4], bool) {
        const { assert!(VEC == T::VEC && VEC * size_of::<T>() == 16) };
        let start = self.index::<VEC>(k, 0);
        let inside = start < self.cols;
        let at = if inside { start } else { self.cols - VEC };
        // SAFETY: `at + VEC <= cols` (cols is a nonzero multiple of VEC when ALIGNED), and
        // `row + at` is 16-byte aligned; readable and read-only by the caller's promise.
        (unsafe { read16(row.add(at).cast::<u8>(), cache) }, inside)
    }

    /// Stores chunk `k` of this thread (values in f32) to `row`; elements past the row's end
    /// are dropped.
    ///
    /// # Safety
    /// `row` must point to `cols` writable elements (16-byte aligned when `ALIGNED`) that only
    /// this block accesses during the kernel; within the block, chunk `k` of thread `t` is this
    /// thread's alone (true for both layouts).
    #[inline(always)]
    pub unsafe fn store<T: RowElement, const VEC: usize>(
        &self,
        row: *mut T,
        k: usize,
        values: [f32; VEC],
    ) {
        const { assert!(VEC == T::VEC && VEC * size_of::<T>() == 16) };
        if ALIGNED {
            let start = self.index::<VEC>(k, 0);
            if start < self.cols {
                // SAFETY: as in `load`: the chunk is inside the row and 16-byte aligned; only
                // this thread writes it (the caller's promise).
                unsafe {
                    let items = T::pack(values);
                    let words: [u32; 4] = core::mem::transmute_copy(&items);
                    write16(row.add(start).cast::<u8>(), words)
                };
            }
        } else {
            for (e, v) in values.into_iter().enumerate() {
                let i = self.index::<VEC>(k, e);
                if i < self.cols {
                    // SAFETY: `i < cols`, inside the row; this thread's element alone.
                    unsafe { row.add(i).write(T::from_f32(v)) };
                }
            }
        }
    }
}
