//! Layer normalization over rows: `y = (x - mean) / sqrt(var + eps) · gamma + beta`, with the
//! mean and the (biased) variance of each row, `gamma` and `beta` of the row's length and type,
//! math in f32.
//!
//! One block per row. Rows that fit in registers (32 values per thread) are read once: the
//! mean, then the variance as the mean of `(x - mean)²` from the registers (two-pass, so no
//! cancellation), then the write. Longer rows read the row three times (sum, squared
//! deviations, write).

use gpu::prelude::*;
use half::bf16;

use crate::rows::{RowElem, load_chunk, store_chunk};

/// 16-byte chunks per thread held in registers by the f32 kernel (32 values).
pub const CHUNKS_F32: usize = 8;
/// 16-byte chunks per thread held in registers by the bf16 kernel (32 values).
pub const CHUNKS_BF16: usize = 4;

/// Normalizes chunk `c` (chunk `k` of this thread) and stores it.
///
/// # Safety
/// As for [`store_chunk`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn finish_chunk<T: RowElem, const VEC: usize>(
    c: [f32; VEC],
    (gamma, beta): (&[T], &[T]),
    y: &DisjointSlice<'_, T>,
    (row_start, cols): (usize, usize),
    (k, t, b): (usize, usize, usize),
    mean: f32,
    rstd: f32,
) {
    let g = load_chunk::<T, VEC>(gamma, k, b, 0.0);
    let be = load_chunk::<T, VEC>(beta, k, b, 0.0);
    let mut out = [0.0f32; VEC];
    for e in 0..VEC {
        out[e] = math::fma((c[e] - mean) * rstd, g[e], be[e]);
    }
    // SAFETY: forwarded to the caller.
    unsafe { store_chunk::<T, VEC>(y, row_start, cols, k, t, b, out) };
}

#[inline(always)]
fn layernorm_row<T: RowElem, const VEC: usize, const K: usize>(
    x: &[T],
    gamma: &[T],
    beta: &[T],
    y: &DisjointSlice<'_, T>,
    cols: usize,
    eps: f32,
) {
    let b = thread::block_size() as usize;
    let t = thread::local_index() as usize;
    let row_start = thread::block_index() * cols;
    let row = &x[row_start..row_start + cols];
    let (gamma, beta) = (&gamma[..cols], &beta[..cols]);
    let tile = b * VEC;
    let n = cols as f32;
    if cols <= K * tile {
        let mut v = [[0.0f32; VEC]; K];
        for (k, chunk) in v.iter_mut().enumerate() {
            if k * tile < cols {
                *chunk = load_chunk::<T, VEC>(row, k, b, 0.0);
            }
        }
        let mut s = 0.0f32;
        for chunk in &v {
            for &e in chunk {
                s += e;
            }
        }
        let mean = block::reduce(s, Sum) / n;
        // Deviations of the padding (zeros past the row's end) must not count.
        let mut q = 0.0f32;
        for (k, chunk) in v.iter().enumerate() {
            let start = (k * b + t) * VEC;
            for (e, &val) in chunk.iter().enumerate() {
                if start + e < cols {
                    let d = val - mean;
                    q = math::fma(d, d, q);
                }
            }
        }
        let var = block::reduce(q, Sum) / n;
        let rstd = 1.0 / math::sqrt(var + eps);
        for (k, &chunk) in v.iter().enumerate() {
            if k * tile < cols {
                // SAFETY: one block per row; chunk `k` of thread `t` is this thread's alone.
                unsafe {
                    finish_chunk::<T, VEC>(
                        chunk,
                        (gamma, beta),
                        y,
                        (row_start, cols),
                        (k, t, b),
                        mean,
                        rstd,
                    )
                };
            }
        }
    } else {
        let tiles = cols.div_ceil(tile);
        let mut s = 0.0f32;
        for k in 0..tiles {
            for e in load_chunk::<T, VEC>(row, k, b, 0.0) {
                s += e;
            }
        }
        let mean = block::reduce(s, Sum) / n;
        let mut q = 0.0f32;
        for k in 0..tiles {
            let c = load_chunk::<T, VEC>(row, k, b, 0.0);
            let start = (k * b + t) * VEC;
            for (e, &val) in c.iter().enumerate() {
                if start + e < cols {
                    let d = val - mean;
                    q = math::fma(d, d, q);
                }
            }
        }
        let var = block::reduce(q, Sum) / n;
        let rstd = 1.0 / math::sqrt(var + eps);
        for k in 0..tiles {
            let c = load_chunk::<T, VEC>(row, k, b, 0.0);
            // SAFETY: one block per row; chunk `k` of thread `t` is this thread's alone.
            unsafe {
                finish_chunk::<T, VEC>(
                    c,
                    (gamma, beta),
                    y,
                    (row_start, cols),
                    (k, t, b),
                    mean,
                    rstd,
                )
            };
        }
    }
}

/// Layer normalization of each row of the `rows × cols` f32 matrix `x` into `y`; `gamma` and
/// `beta` hold `cols` values. Launch one block per row, any multiple of 32 threads up to 1024;
/// rows of up to `32 · threads` elements are held in registers.
#[kernel]
pub fn layernorm_f32(
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    y: DisjointSlice<f32>,
    cols: u32,
    eps: f32,
) {
    layernorm_row::<f32, 4, CHUNKS_F32>(x, gamma, beta, &y, cols as usize, eps);
}

/// Layer normalization of bf16 rows (math in f32); launch as [`layernorm_f32`].
#[kernel]
pub fn layernorm_bf16(
    x: &[bf16],
    gamma: &[bf16],
    beta: &[bf16],
    y: DisjointSlice<bf16>,
    cols: u32,
    eps: f32,
) {
    layernorm_row::<bf16, 8, CHUNKS_BF16>(x, gamma, beta, &y, cols as usize, eps);
}
