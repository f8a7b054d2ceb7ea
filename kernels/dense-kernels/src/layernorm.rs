//! Layer normalization over rows: `y = (x - mean) / sqrt(var + eps) · gamma + beta`, with the
//! mean and the (biased) variance of each row, `gamma` and `beta` of the row's length and type,
//! math in f32.
//!
//! One block per row. Rows that fit in registers (32 values per thread) are read once (all of
//! a thread's 16-byte loads issued before the first use): the mean, then the variance as the mean of `(x - mean)²` from the registers (two-pass, so no
//! cancellation), then the write. Longer rows read the row three times (sum, squared
//! deviations, write).

use gpu::prelude::*;
use half::bf16;

use crate::rows::{Cache, MAX_CHUNKS, RowElement, RowLayout, words_to_f32};
use crate::unroll8;

/// 16-byte chunks per thread held in registers by the f32 kernel (32 values).
pub const CHUNKS_F32: usize = 8;
/// 16-byte chunks per thread held in registers by the bf16 kernel (32 values).
pub const CHUNKS_BF16: usize = 4;
/// The pointers of one row: input, gamma, beta, output.
#[derive(Clone, Copy)]
struct RowPtrs<T> {
    x: *const T,
    gamma: *const T,
    beta: *const T,
    y: *mut T,
}

/// Normalizes chunk `c` (chunk `k` of this thread) and stores it.
///
/// # Safety
/// As for [`layernorm_row`].
#[inline(always)]
unsafe fn finish_chunk<T: RowElement, const VEC: usize, const ALIGNED: bool>(
    c: [f32; VEC],
    p: RowPtrs<T>,
    layout: RowLayout<ALIGNED>,
    k: usize,
    (mean, rstd): (f32, f32),
) {
    // SAFETY: forwarded to the caller (gamma and beta hold `cols` read-only elements).
    let (g, be) = unsafe {
        (
            layout.load::<T, VEC>(p.gamma, k, 0.0, Cache::Keep),
            layout.load::<T, VEC>(p.beta, k, 0.0, Cache::Keep),
        )
    };
    let mut out = [0.0f32; VEC];
    for e in 0..VEC {
        out[e] = math::fma((c[e] - mean) * rstd, g[e], be[e]);
    }
    // SAFETY: forwarded to the caller.
    unsafe { layout.store::<T, VEC>(p.y, k, out) };
}

/// Sum of the squared deviations from `mean` of the row elements in chunk `c` (chunk `k`).
#[inline(always)]
fn squared_deviations<const VEC: usize, const ALIGNED: bool>(
    c: &[f32; VEC],
    layout: RowLayout<ALIGNED>,
    k: usize,
    mean: f32,
    mut q: f32,
) -> f32 {
    for (e, &val) in c.iter().enumerate() {
        // The padding (zeros past the row's end) must not count.
        if layout.valid::<VEC>(k, e) {
            let d = val - mean;
            q = math::fma(d, d, q);
        }
    }
    q
}

/// # Safety
/// `p.x`, `p.gamma`, `p.beta` must address `layout.cols` read-only elements and `p.y` as many
/// elements that only this block accesses; all 16-byte aligned when `ALIGNED`.
#[inline(always)]
unsafe fn layernorm_row<T: RowElement, const VEC: usize, const K: usize, const ALIGNED: bool>(
    p: RowPtrs<T>,
    layout: RowLayout<ALIGNED>,
    eps: f32,
) {
    let cols = layout.cols;
    let tile = layout.tile::<VEC>();
    let n = cols as f32;
    if cols <= K * tile {
        const { assert!(K <= MAX_CHUNKS) };
        // The shift of the mean's sum: the row's first element, the same in every thread.
        // SAFETY: `cols >= 1` (the host launches nothing for empty rows): x[0] is readable.
        let shift = unsafe { p.x.read() }.to_f32();
        // Chunks past the row's end stay `shift`: they add nothing to the shifted sum.
        let mut v = [[shift; VEC]; K];
        if ALIGNED {
            // All loads first, as raw words, then the conversions: loads in one basic block
            // all issue before the first use (see `RowLayout::load_words`). Guarded
            // load-then-convert per chunk made the compiler wait a memory latency per chunk.
            let mut xw = [([0u32; 4], false); K];
            unroll8!(k => {
                if k < K {
                    // SAFETY: the caller's promise on `x` (aligned layout, cols >= 1).
                    xw[k] = unsafe { layout.load_words::<T, VEC>(p.x, k, Cache::Stream) };
                }
            });
            unroll8!(k => {
                if k < K && xw[k].1 {
                    v[k] = words_to_f32::<T, VEC>(xw[k].0);
                }
            });
        } else {
            unroll8!(k => {
                if k < K && k * tile < cols {
                    // SAFETY: the caller's promise on `x`.
                    v[k] = unsafe { layout.load::<T, VEC>(p.x, k, shift, Cache::Stream) };
                }
            });
        }
        // The mean of `x − shift`, plus the shift (the row's first element): the sum stays
        // within the row's spread (less rounding for a large mean).
        let mut s = 0.0f32;
        for chunk in &v {
            for &e in chunk {
                s += e - shift;
            }
        }
        let mean = block::reduce(s, Sum) / n + shift;
        let mut q = 0.0f32;
        unroll8!(k => {
            if k < K {
                q = squared_deviations(&v[k], layout, k, mean, q);
            }
        });
        let var = block::reduce(q, Sum) / n;
        let rstd = 1.0 / math::sqrt(var + eps);
        unroll8!(k => {
            if k < K && k * tile < cols {
                // SAFETY: the caller's promises.
                unsafe { finish_chunk::<T, VEC, ALIGNED>(v[k], p, layout, k, (mean, rstd)) };
            }
        });
    } else {
        let tiles = cols.div_ceil(tile);
        let mut s = 0.0f32;
        for k in 0..tiles {
            // SAFETY: the caller's promise on `x`.
            for e in unsafe { layout.load::<T, VEC>(p.x, k, 0.0, Cache::Keep) } {
                s += e;
            }
        }
        let mean = block::reduce(s, Sum) / n;
        let mut q = 0.0f32;
        for k in 0..tiles {
            // SAFETY: the caller's promise on `x`.
            let c = unsafe { layout.load::<T, VEC>(p.x, k, 0.0, Cache::Keep) };
            q = squared_deviations(&c, layout, k, mean, q);
        }
        let var = block::reduce(q, Sum) / n;
        let rstd = 1.0 / math::sqrt(var + eps);
        for k in 0..tiles {
            // SAFETY: the caller's promises.
            unsafe {
                let c = layout.load::<T, VEC>(p.x, k, 0.0, Cache::Keep);
                finish_chunk::<T, VEC, ALIGNED>(c, p, layout, k, (mean, rstd));
            }
        }
    }
}

#[inline(always)]
fn layernorm_kernel<T: RowElement, const VEC: usize, const K: usize>(
    x: &[T],
    gamma: &[T],
    beta: &[T],
    y: &DisjointSlice<'_, T>,
    cols: usize,
    eps: f32,
) {
    let row_start = thread::block_index() * cols;
    let xr = x[row_start..row_start + cols].as_ptr();
    let (gamma, beta) = (gamma[..cols].as_ptr(), beta[..cols].as_ptr());
    assert!(row_start + cols <= y.len());
    // SAFETY: in bounds (checked above).
    let yr = unsafe { y.as_mut_ptr().add(row_start) };
    let p = RowPtrs {
        x: xr,
        gamma,
        beta,
        y: yr,
    };
    let (t, b) = (
        thread::local_index() as usize,
        thread::block_size() as usize,
    );
    let aligned = cols.is_multiple_of(VEC)
        && [xr as usize, gamma as usize, beta as usize, yr as usize]
            .iter()
            .all(|a| a.is_multiple_of(16));
    // SAFETY: the pointers address `cols` elements each (sliced above): the inputs are kernel
    // inputs (read-only), the output row is this block's alone (one block per row); 16-byte
    // aligned when `aligned`.
    unsafe {
        if aligned {
            layernorm_row::<T, VEC, K, true>(p, RowLayout { t, b, cols }, eps);
        } else {
            layernorm_row::<T, VEC, K, false>(p, RowLayout { t, b, cols }, eps);
        }
    }
}

/// Layer normalization of each row of the `rows × cols` f32 matrix `x` into `y`; `gamma` and
/// `beta` hold `cols` values. Launch one block per row, any multiple of 32 threads up to 1024;
/// rows of up to `32 · threads` elements are held in registers.
#[kernel(launch_bounds(1024, 1))]
pub fn layernorm_f32(
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    y: DisjointSlice<f32>,
    cols: u32,
    eps: f32,
) {
    layernorm_kernel::<f32, 4, CHUNKS_F32>(x, gamma, beta, &y, cols as usize, eps);
}

/// Layer normalization of bf16 rows (math in f32); launch as [`layernorm_f32`].
#[kernel(launch_bounds(1024, 1))]
pub fn layernorm_bf16(
    x: &[bf16],
    gamma: &[bf16],
    beta: &[bf16],
    y: DisjointSlice<bf16>,
    cols: u32,
    eps: f32,
) {
    layernorm_kernel::<bf16, 8, CHUNKS_BF16>(x, gamma, beta, &y, cols as usize, eps);
}
