//! A kernel with static shared memory, barriers and a by-value struct parameter: C = A·B for
//! row-major f32 matrices through 16×16 shared-memory tiles.

use gpu::prelude::*;
use gpu::{shared_array, sync};

/// Side of the square thread block and of the shared-memory tiles.
pub const TILE: u32 = 16;
const T: usize = TILE as usize;

/// Matrix sizes, passed by value (three `u32`, 12 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, DeviceCopy)]
#[repr(C)]
pub struct MatDims {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

/// A is m×k, B is k×n, C is m×n; launch with a `TILE × TILE` block and a grid covering C.
#[kernel]
pub fn matmul_tiled(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>, dims: MatDims) {
    assert!(
        thread::block_dim_x() == TILE
            && thread::block_dim_y() == TILE
            && thread::block_dim_z() == 1
    );
    let tile_a = shared_array!(f32, T * T);
    let tile_b = shared_array!(f32, T * T);
    let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
    // Masking by T - 1 is a no-op (the assert above) that proves `ty * T + tx < T * T`.
    let tx = thread::thread_idx_x() as usize & (T - 1);
    let ty = thread::thread_idx_y() as usize & (T - 1);
    let idx = thread::global_index_2d();
    let (row, col) = (idx.y(), idx.x());
    let mut acc = 0.0f32;
    for t in 0..k.div_ceil(T) {
        let (a_col, b_row) = (t * T + tx, t * T + ty);
        let a_val = if row < m && a_col < k {
            a[row * k + a_col]
        } else {
            0.0
        };
        let b_val = if b_row < k && col < n {
            b[b_row * n + col]
        } else {
            0.0
        };
        tile_a.write(ty * T + tx, a_val);
        tile_b.write(ty * T + tx, b_val);
        sync::sync_threads();
        for p in 0..T {
            acc += tile_a.read(ty * T + p) * tile_b.read(p * T + tx);
        }
        sync::sync_threads();
    }
    if row < m && col < n {
        // SAFETY: the row stride `n` comes from a kernel parameter, identical in every thread.
        if let Some(out) = unsafe { c.get_mut_2d(idx, n) } {
            *out = acc;
        }
    }
}
