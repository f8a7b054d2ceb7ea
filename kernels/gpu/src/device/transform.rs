//! Device-wide element-wise transforms.

use super::reduce_items;
use crate::DeviceCopy;
use crate::block;
use crate::slice::DisjointSlice;
use crate::thread::{block_idx_x, block_size, grid_dim_x, local_index};

/// Threads per block of the transform kernels.
pub const TRANSFORM_BLOCK: u32 = 256;

/// Items per thread per tile of a transform from `A`: 64 bytes of input.
pub const fn transform_items<A>() -> usize {
    reduce_items::<A>()
}

/// The body of a unary transform kernel: `output[i] = f(input[i])` for `i < input.len()`.
///
/// Any grid (the host uses one block per tile up to a few waves): blocks stride over tiles of
/// `TRANSFORM_BLOCK · N` elements, with 16-byte vector loads and stores where alignment allows.
/// Panics (the launch fails) if `output` is shorter than `input`.
#[inline(always)]
pub fn transform<A: DeviceCopy, B: DeviceCopy, F: Fn(A) -> B, const N: usize>(
    input: &[A],
    output: &DisjointSlice<'_, B>,
    f: F,
) {
    transform_tiles::<A, B, F, N, false>(input, output, f)
}

/// [`transform`] with the per-thread item loop unrolled ([`crate::unroll!`]), for a long `f`
/// (the accurate `gpu::math` functions): each item's result then stays in a register, where
/// `[A; N]::map` kept a long body's results in local memory. For short bodies (the `convert_*`
/// kernels) `transform`'s `map` measured a few percent faster.
#[inline(always)]
pub fn transform_unrolled<A: DeviceCopy, B: DeviceCopy, F: Fn(A) -> B, const N: usize>(
    input: &[A],
    output: &DisjointSlice<'_, B>,
    f: F,
) {
    transform_tiles::<A, B, F, N, true>(input, output, f)
}

#[inline(always)]
fn transform_tiles<
    A: DeviceCopy,
    B: DeviceCopy,
    F: Fn(A) -> B,
    const N: usize,
    const UNROLLED: bool,
>(
    input: &[A],
    output: &DisjointSlice<'_, B>,
    f: F,
) {
    let n = input.len();
    assert!(
        output.len() >= n,
        "device::transform: output shorter than the input"
    );
    let tile = block_size() as usize * N;
    let (grid, mut k) = (grid_dim_x() as usize, block_idx_x() as usize);
    while k * tile < n {
        let start = k * tile;
        // SAFETY: block `k` alone writes tile `k` of the output.
        unsafe {
            if start + tile <= n {
                let items: [A; N] = block::load_blocked(input, start);
                let out: [B; N] = if UNROLLED {
                    let mut out = [core::mem::MaybeUninit::<B>::uninit(); N];
                    crate::unroll!(N, |i| {
                        out[i].write(f(items[i]));
                    });
                    out.map(|v| v.assume_init())
                } else {
                    items.map(&f)
                };
                block::store_blocked(output, start, out);
            } else {
                let first = start + local_index() as usize * N;
                for i in 0..N {
                    if let Some(&x) = input.get(first + i) {
                        output.write_unchecked_race(first + i, f(x));
                    }
                }
            }
        }
        k += grid;
    }
}

/// The body of a binary transform kernel: `output[i] = f(a[i], b[i])` for
/// `i < min(a.len(), b.len())`; like [`transform`].
#[inline(always)]
pub fn transform2<A: DeviceCopy, B: DeviceCopy, C: DeviceCopy, F: Fn(A, B) -> C, const N: usize>(
    a: &[A],
    b: &[B],
    output: &DisjointSlice<'_, C>,
    f: F,
) {
    let n = a.len().min(b.len());
    assert!(
        output.len() >= n,
        "device::transform2: output shorter than the inputs"
    );
    let tile = block_size() as usize * N;
    let (grid, mut k) = (grid_dim_x() as usize, block_idx_x() as usize);
    while k * tile < n {
        let start = k * tile;
        // SAFETY: block `k` alone writes tile `k` of the output.
        unsafe {
            if start + tile <= n {
                let xs: [A; N] = block::load_blocked(a, start);
                let ys: [B; N] = block::load_blocked(b, start);
                let mut out = [core::mem::MaybeUninit::<C>::uninit(); N];
                // Unrolled so that `out` stays in registers for a long `f` (see `unroll`).
                crate::unroll!(N, |i| {
                    out[i].write(f(xs[i], ys[i]));
                });
                block::store_blocked(output, start, out.map(|v| v.assume_init()));
            } else {
                let first = start + local_index() as usize * N;
                for i in 0..N {
                    if first + i < n {
                        output.write_unchecked_race(first + i, f(a[first + i], b[first + i]));
                    }
                }
            }
        }
        k += grid;
    }
}
