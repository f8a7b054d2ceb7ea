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

use crate::rows::{Cache, MAX_CHUNKS, RowElem, RowLayout, words_to_f32};
use crate::unroll8;

/// 16-byte chunks per thread held in registers by the f32 kernel (32 values).
pub const CHUNKS_F32: usize = 8;
/// 16-byte chunks per thread held in registers by the bf16 kernel (32 values).
pub const CHUNKS_BF16: usize = 4;
/// Whether the register path sums `x − shift` and its square in one block reduction (else: the
/// mean, then the squared deviations, two reductions).
const ONE_PASS: bool = true;
/// Whether the aligned register path issues all its loads as raw words before converting.
const RAW_LOADS: bool = true;
/// Chunks of gamma and beta loaded before the reduction (aligned rows), per kernel.
const PF_BF16: usize = 4;
const PF_F32: usize = 2;

/// Sum of `a` as a tree (log₂ N dependent adds instead of N).
#[inline(always)]
fn tree_sum<const N: usize>(mut a: [f32; N]) -> f32 {
    for step in [16, 8, 4, 2, 1] {
        for i in 0..step {
            if i + step < N {
                a[i] += a[i + step];
            }
        }
    }
    a[0]
}

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
unsafe fn finish_chunk<T: RowElem, const VEC: usize, const ALIGNED: bool>(
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
unsafe fn layernorm_row<
    T: RowElem,
    const VEC: usize,
    const K: usize,
    const PF: usize,
    const ALIGNED: bool,
>(
    p: RowPtrs<T>,
    layout: RowLayout<ALIGNED>,
    eps: f32,
) {
    let cols = layout.cols;
    let tile = layout.tile::<VEC>();
    let n = cols as f32;
    if cols <= K * tile {
        const { assert!(K <= MAX_CHUNKS && PF <= K) };
        // The shift of the one-pass sums: the row's first element, the same in every thread.
        // SAFETY: `cols >= 1` (the host launches nothing for empty rows): x[0] is readable.
        let shift = unsafe { p.x.read() }.to_f32();
        // Padding reads as `shift`, so it adds nothing to the shifted sums.
        let mut v = [[shift; VEC]; K];
        // gamma and beta of the first PF chunks, loaded early (packed) so that their latency
        // overlaps the reduction instead of following it.
        let mut gw = [[0u32; 4]; K];
        let mut bw = [[0u32; 4]; K];
        if ALIGNED && RAW_LOADS {
            let mut xw = [([0u32; 4], false); K];
            unroll8!(k => {
                if k < K {
                    // SAFETY: the caller's promise on `x` (aligned layout, cols >= 1).
                    xw[k] = unsafe { layout.load_words::<T, VEC>(p.x, k, Cache::Stream) };
                }
            });
            unroll8!(k => {
                if k < PF {
                    // SAFETY: the caller's promises on gamma and beta (aligned layout).
                    unsafe {
                        gw[k] = layout.load_words::<T, VEC>(p.gamma, k, Cache::Keep).0;
                        bw[k] = layout.load_words::<T, VEC>(p.beta, k, Cache::Keep).0;
                    }
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
            if ALIGNED {
                unroll8!(k => {
                    if k < PF {
                        // SAFETY: the caller's promises on gamma and beta (aligned layout).
                        unsafe {
                            gw[k] = layout.load_words::<T, VEC>(p.gamma, k, Cache::Keep).0;
                            bw[k] = layout.load_words::<T, VEC>(p.beta, k, Cache::Keep).0;
                        }
                    }
                });
            }
        }
        let (mean, var) = if ONE_PASS {
            // Sums of d = x − shift and d² in one block reduction: var = Σd²/n − (Σd/n)². The
            // shift (a row element) keeps the mean of d within the row's spread, so the
            // subtraction does not cancel the way raw Σx² − (Σx)²/n would for a large mean.
            // VEC independent accumulators, then a tree: short dependency chains.
            let mut sa = [0.0f32; VEC];
            let mut qa = [0.0f32; VEC];
            for chunk in &v {
                for e in 0..VEC {
                    let d = chunk[e] - shift;
                    sa[e] += d;
                    qa[e] = math::fma(d, d, qa[e]);
                }
            }
            let [s, q] = block::reduce([tree_sum(sa), tree_sum(qa)], |a: [f32; 2], b: [f32; 2]| {
                [a[0] + b[0], a[1] + b[1]]
            });
            let md = s / n;
            (shift + md, (q / n - md * md).max(0.0))
        } else {
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
            (mean, block::reduce(q, Sum) / n)
        };
        let rstd = 1.0 / math::sqrt(var + eps);
        unroll8!(k => {
            if k < K && k * tile < cols {
                if ALIGNED && k < PF {
                    let g = words_to_f32::<T, VEC>(gw[k]);
                    let be = words_to_f32::<T, VEC>(bw[k]);
                    let mut out = [0.0f32; VEC];
                    for e in 0..VEC {
                        out[e] = math::fma((v[k][e] - mean) * rstd, g[e], be[e]);
                    }
                    // SAFETY: the caller's promise on `y`.
                    unsafe { layout.store::<T, VEC>(p.y, k, out) };
                } else {
                    // SAFETY: the caller's promises.
                    unsafe { finish_chunk::<T, VEC, ALIGNED>(v[k], p, layout, k, (mean, rstd)) };
                }
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
fn layernorm_kernel<T: RowElem, const VEC: usize, const K: usize, const PF: usize>(
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
            layernorm_row::<T, VEC, K, PF, true>(p, RowLayout { t, b, cols }, eps);
        } else {
            layernorm_row::<T, VEC, K, PF, false>(p, RowLayout { t, b, cols }, eps);
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
    layernorm_kernel::<f32, 4, CHUNKS_F32, PF_F32>(x, gamma, beta, &y, cols as usize, eps);
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
    layernorm_kernel::<bf16, 8, CHUNKS_BF16, PF_BF16>(x, gamma, beta, &y, cols as usize, eps);
}
