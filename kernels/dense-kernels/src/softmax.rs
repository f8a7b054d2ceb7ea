//! Row softmax: `y[r][j] = exp(x[r][j] - max_r) / Σ_j exp(x[r][j] - max_r)`, math in f32.
//!
//! One block per row. Rows of up to `block · K · VEC` elements (32 per thread, so up to 32768
//! with 1024 threads) stay in registers: one read and one write of the data, two block
//! reductions (max, then sum). Longer rows take two passes over global memory: an online
//! max-and-sum (the running sum is rescaled when the maximum grows), then the normalized write.
//! Subtracting the row maximum keeps `exp` in range for inputs of any magnitude.

use core::f32::consts::LOG2_E;

use gpu::math::exp2_approx;
use gpu::prelude::*;
use half::bf16;

use crate::rows::{Cache, MAX_CHUNKS, RowElement, RowLayout};
use crate::unroll8;

/// 16-byte chunks per thread held in registers by the f32 kernel (32 values).
pub const CHUNKS_F32: usize = 8;
/// 16-byte chunks per thread held in registers by the bf16 kernel (32 values).
pub const CHUNKS_BF16: usize = 4;

/// `e^(x - m)` through `ex2.approx` (relative error about 2^-21 for the arguments here, which
/// are ≤ 0): the subtraction comes first so large inputs lose no bits to `x·log2 e`.
#[inline(always)]
fn exp_shifted(x: f32, m: f32) -> f32 {
    exp2_approx((x - m) * LOG2_E)
}

/// Combines two `[max, sum of exp(x - max)]` pairs.
#[inline(always)]
fn merge(a: [f32; 2], b: [f32; 2]) -> [f32; 2] {
    let m = a[0].max(b[0]);
    if m == f32::NEG_INFINITY {
        return [m, 0.0];
    }
    [m, a[1] * exp_shifted(a[0], m) + b[1] * exp_shifted(b[0], m)]
}

/// The softmax of one row (`x`: its first element, `y`: its output), `K` chunks per thread.
///
/// # Safety
/// `x` and `y` must address `layout.cols` elements (16-byte aligned when `ALIGNED`), `x`
/// read-only during the kernel, `y` this block's alone.
#[inline(always)]
unsafe fn softmax_row<T: RowElement, const VEC: usize, const K: usize, const ALIGNED: bool>(
    x: *const T,
    y: *mut T,
    layout: RowLayout<ALIGNED>,
) {
    let cols = layout.cols;
    let tile = layout.tile::<VEC>();
    if cols <= K * tile {
        // Fast path: the whole row in registers.
        const { assert!(K <= MAX_CHUNKS) };
        let mut v = [[f32::NEG_INFINITY; VEC]; K];
        unroll8!(k => {
            if k < K && k * tile < cols {
                // SAFETY: the caller's promise on `x`.
                v[k] = unsafe { layout.load::<T, VEC>(x, k, f32::NEG_INFINITY, Cache::Stream) };
            }
        });
        let mut m = f32::NEG_INFINITY;
        for chunk in &v {
            for &e in chunk {
                m = m.max(e);
            }
        }
        let m = block::reduce(m, Max);
        let mut s = 0.0f32;
        for chunk in v.iter_mut() {
            for e in chunk.iter_mut() {
                *e = exp_shifted(*e, m);
                s += *e;
            }
        }
        let inv = 1.0 / block::reduce(s, Sum);
        unroll8!(k => {
            if k < K && k * tile < cols {
                // SAFETY: the caller's promise on `y`; chunk `k` is this thread's alone.
                unsafe { layout.store::<T, VEC>(y, k, v[k].map(|e| e * inv)) };
            }
        });
    } else {
        // General path: online (max, sum), then a second read to write the output.
        let tiles = cols.div_ceil(tile);
        let mut acc = [f32::NEG_INFINITY, 0.0f32];
        for k in 0..tiles {
            // SAFETY: the caller's promise on `x`.
            let c = unsafe { layout.load::<T, VEC>(x, k, f32::NEG_INFINITY, Cache::Keep) };
            let mut cm = f32::NEG_INFINITY;
            for &e in &c {
                cm = cm.max(e);
            }
            let m = acc[0].max(cm);
            if m != f32::NEG_INFINITY {
                let mut s = acc[1] * exp_shifted(acc[0], m);
                for &e in &c {
                    s += exp_shifted(e, m);
                }
                acc = [m, s];
            }
        }
        let [m, s] = block::reduce(acc, merge);
        let inv = 1.0 / s;
        for k in 0..tiles {
            // SAFETY: the caller's promises on `x` and `y`.
            unsafe {
                let c = layout.load::<T, VEC>(x, k, f32::NEG_INFINITY, Cache::Keep);
                layout.store::<T, VEC>(y, k, c.map(|e| exp_shifted(e, m) * inv));
            }
        }
    }
}

/// Row `block_index()` of `x` → `y`, picking the aligned layout when it applies.
#[inline(always)]
fn softmax_kernel<T: RowElement, const VEC: usize, const K: usize>(
    x: &[T],
    y: &DisjointSlice<'_, T>,
    cols: usize,
) {
    let row_start = thread::block_index() * cols;
    // Bounds: the row lies in `x`; `y` holds as many elements (checked by the host, and here).
    let xr = x[row_start..row_start + cols].as_ptr();
    assert!(row_start + cols <= y.len());
    // SAFETY: in bounds (checked above).
    let yr = unsafe { y.as_mut_ptr().add(row_start) };
    let (t, b) = (
        thread::local_index() as usize,
        thread::block_size() as usize,
    );
    let aligned = cols.is_multiple_of(VEC)
        && (xr as usize).is_multiple_of(16)
        && (yr as usize).is_multiple_of(16);
    // SAFETY: `xr`/`yr` address this block's row of `cols` elements (one block per row; `x` is
    // a kernel input, not written); 16-byte aligned when `aligned`.
    unsafe {
        if aligned {
            softmax_row::<T, VEC, K, true>(xr, yr, RowLayout { t, b, cols });
        } else {
            softmax_row::<T, VEC, K, false>(xr, yr, RowLayout { t, b, cols });
        }
    }
}

/// Softmax of each row of the `rows × cols` f32 matrix `x` (row-major) into `y`. Launch one
/// block per row (`rows` blocks), any multiple of 32 threads up to 1024; rows of up to
/// `32 · threads` elements are held in registers.
#[kernel(launch_bounds(1024, 1))]
pub fn softmax_f32(x: &[f32], y: DisjointSlice<f32>, cols: u32) {
    softmax_kernel::<f32, 4, CHUNKS_F32>(x, &y, cols as usize);
}

/// Softmax of each row of the `rows × cols` bf16 matrix `x` into `y` (math in f32, rounded to
/// nearest even on the store). Launch as [`softmax_f32`].
#[kernel(launch_bounds(1024, 1))]
pub fn softmax_bf16(x: &[bf16], y: DisjointSlice<bf16>, cols: u32) {
    softmax_kernel::<bf16, 8, CHUNKS_BF16>(x, &y, cols as usize);
}
