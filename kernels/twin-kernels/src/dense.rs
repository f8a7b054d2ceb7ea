//! Tiled SGEMM, the textbook version: `C = A·B` for row-major f32 matrices, A `m × k`, B `k × n`.

use gpu::prelude::*;

/// Side of the square thread block and of the shared tiles.
pub const TILE: u32 = 16;
const T: usize = TILE as usize;

/// Matrix sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, DeviceCopy)]
#[repr(C)]
pub struct Dims {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

/// Each `TILE × TILE` block stages a tile of A and of B in shared memory per step along k; each
/// thread computes one element of C.
#[kernel(block(16, 16), grid_dims(2))]
pub fn sgemm_tiled(a: &[f32], b: &[f32], dims: Dims, mut c: DisjointSlice<f32>) {
    let tile_a = shared_array!(f32, T * T);
    let tile_b = shared_array!(f32, T * T);
    let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
    let (a, b) = (Matrix::new(a, m, k), Matrix::new(b, k, n));
    let (tx, ty) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let idx = thread::global_index_2d();
    let (row, col) = (idx.y(), idx.x());
    let mut acc = 0.0f32;
    for t in 0..k.div_ceil(T) {
        let (a_col, b_row) = (t * T + tx, t * T + ty);
        let a_val = if row < m && a_col < k {
            a[(row, a_col)]
        } else {
            0.0
        };
        let b_val = if b_row < k && col < n {
            b[(b_row, col)]
        } else {
            0.0
        };
        tile_a.write(ty * T + tx, a_val);
        tile_b.write(ty * T + tx, b_val);
        sync_threads();
        for p in 0..T {
            acc += tile_a.read(ty * T + p) * tile_b.read(p * T + tx);
        }
        sync_threads();
    }
    if row < m && col < n {
        // SAFETY: every thread passes the same row stride `n`.
        unsafe { c.set_2d(idx, n, acc) };
    }
}
