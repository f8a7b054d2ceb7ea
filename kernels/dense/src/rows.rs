//! Shared pieces of the row-wise kernels (softmax, layernorm): the element types, and moving
//! one row between global memory and registers.
//!
//! One block works on one row (the grid is one block per row). A thread's part of a row is a
//! set of *chunks* of [`RowElem::VEC`] consecutive elements (16 bytes): chunk `k` of thread `t`
//! starts at element `(k·B + t)·VEC` of the row, for a block of `B` threads, so each load
//! instruction of a warp reads 512 consecutive bytes. When the row length is a multiple of
//! `VEC` (every row then starts 16-byte aligned) a chunk moves as one 16-byte vector; otherwise
//! element by element, with the elements past the row's end skipped.

use gpu::DisjointSlice;
use gpu::block;
use half::bf16;

/// A row element: stored as `Self`, computed in `f32`.
pub trait RowElem: gpu::DeviceCopy {
    /// Elements per 16-byte chunk.
    const VEC: usize;
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
}

impl RowElem for f32 {
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

impl RowElem for bf16 {
    const VEC: usize = 8;
    /// bf16 is the high half of an f32: a shift.
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
    /// Round to nearest even on the bits (NaN stays a quiet NaN); no library call, a few
    /// integer instructions.
    #[inline(always)]
    fn from_f32(v: f32) -> bf16 {
        let b = v.to_bits();
        if v.is_nan() {
            return bf16::from_bits(((b >> 16) as u16) | 0x0040);
        }
        let rounded = b.wrapping_add(0x7fff + ((b >> 16) & 1));
        bf16::from_bits((rounded >> 16) as u16)
    }
}

/// Loads chunk `k` of this thread (`t = local_index()`, block of `b`) from `row` (the row's elements), converted to f32; elements
/// past the row's end are `fill`.
#[inline(always)]
pub fn load_chunk<T: RowElem, const VEC: usize>(
    row: &[T],
    k: usize,
    b: usize,
    fill: f32,
) -> [f32; VEC] {
    const { assert!(VEC == T::VEC) };
    // The block load puts this thread (`local_index()`) at `t·VEC` inside the tile.
    let items: [T; VEC] = block::load_blocked_partial(row, k * b * VEC, T::from_f32(fill));
    items.map(T::to_f32)
}

/// Stores chunk `k` of this thread (values in f32) to the row `row` starting at element
/// `row_start` of `y`; elements past the row's end (`row_start + cols`) are dropped.
///
/// # Safety
/// The row must belong to this block alone, and chunk `k` of this thread to this thread alone
/// (true for the chunk layout above: one block per row).
#[inline(always)]
pub unsafe fn store_chunk<T: RowElem, const VEC: usize>(
    y: &DisjointSlice<'_, T>,
    row_start: usize,
    cols: usize,
    k: usize,
    t: usize,
    b: usize,
    values: [f32; VEC],
) {
    const { assert!(VEC == T::VEC) };
    let start = (k * b + t) * VEC;
    if start >= cols {
        return;
    }
    let items = values.map(T::from_f32);
    if start + VEC <= cols {
        // SAFETY: the chunk lies inside this block's row (checked just above), so the block
        // store's tile position `row_start + k·b·VEC + t·VEC` is this thread's chunk alone.
        unsafe { block::store_blocked_partial(y, row_start + k * b * VEC, items) };
    } else {
        let p = y.as_mut_ptr();
        for (e, item) in items.into_iter().enumerate() {
            if start + e < cols {
                // SAFETY: inside this block's row (start + e < cols) and of this thread's
                // chunk alone; `y` holds rows·cols elements (checked by the host).
                unsafe { p.add(row_start + start + e).write(item) };
            }
        }
    }
}
