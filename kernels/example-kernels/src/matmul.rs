//! Matrix multiply C = A·B for row-major f32 matrices: A is m×k, B is k×n, C is m×n.

use gpu::prelude::*;
use gpu::{shared_array, sync};

/// Side of the square thread block and of the shared-memory tiles. Launch with a
/// `TILE × TILE` block and a grid covering C (`LaunchConfig::tiles_2d(n, m, (TILE, TILE))`).
pub const TILE: u32 = 16;
const T: usize = TILE as usize;

/// Matrix sizes, passed by value: a `DeviceCopy` struct shared by kernel and host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, DeviceCopy)]
#[repr(C)]
pub struct MatDims {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

/// One thread per element of C, reading its row of A and column of B from global memory.
#[kernel]
pub fn matmul_naive(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>, dims: MatDims) {
    let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
    let idx = thread::global_index_2d();
    let (row, col) = (idx.y(), idx.x());
    if row >= m || col >= n {
        return;
    }
    let mut acc = 0.0f32;
    for p in 0..k {
        acc += a[row * k + p] * b[p * n + col];
    }
    // SAFETY: the row stride `n` comes from a kernel parameter, identical in every thread.
    if let Some(out) = unsafe { c.get_mut_2d(idx, n) } {
        *out = acc;
    }
}

/// Tiled: the block stages a TILE×TILE tile of A and of B in shared memory, then every thread
/// multiplies from there. Each global value is loaded once per tile instead of once per
/// multiply-add, cutting global traffic by a factor of TILE.
#[kernel]
pub fn matmul_tiled(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>, dims: MatDims) {
    // The tile indexing below assumes the block shape; a wrong launch traps (a host error).
    assert!(
        thread::block_dim_x() == TILE
            && thread::block_dim_y() == TILE
            && thread::block_dim_z() == 1
    );
    let tile_a = shared_array!(f32, T * T);
    let tile_b = shared_array!(f32, T * T);
    let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
    // Masking by T - 1 is a no-op here (the assert above) that proves `ty * T + tx < T * T`,
    // so the shared-memory accesses below need no bounds checks.
    let tx = thread::thread_idx_x() as usize & (T - 1);
    let ty = thread::thread_idx_y() as usize & (T - 1);
    let idx = thread::global_index_2d();
    let (row, col) = (idx.y(), idx.x());

    let mut acc = 0.0f32;
    for t in 0..k.div_ceil(T) {
        let (a_col, b_row) = (t * T + tx, t * T + ty);
        tile_a.write(
            ty * T + tx,
            if row < m && a_col < k {
                a[row * k + a_col]
            } else {
                0.0
            },
        );
        tile_b.write(
            ty * T + tx,
            if b_row < k && col < n {
                b[b_row * n + col]
            } else {
                0.0
            },
        );
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
