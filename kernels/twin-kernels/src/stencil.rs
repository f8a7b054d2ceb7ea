//! Stencils: one explicit step of the 1-D heat equation with a shared-memory halo, and a 2-D
//! five-point Jacobi step from global memory.

use gpu::prelude::*;

/// Threads per block of the 1-D stencil.
pub const BLOCK: u32 = 256;
const B: usize = BLOCK as usize;

/// `out[i] = u[i] + alpha * (u[i-1] - 2 u[i] + u[i+1])`; the two end points keep their value.
/// The block stages its `BLOCK` points and one halo point on each side in shared memory.
#[kernel(block(256), grid_dims(1))]
pub fn heat_step_1d(u: &[f32], alpha: f32, mut out: DisjointSlice<f32>) {
    let tile = shared_array!(f32, B + 2);
    let n = u.len();
    let tid = thread::thread_idx_x() as usize;
    let i = thread::global_index();
    let g = i.get();
    if g < n {
        tile.write(tid + 1, u[g]);
        if tid == 0 && g > 0 {
            tile.write(0, u[g - 1]);
        }
        if (tid == B - 1 || g == n - 1) && g + 1 < n {
            tile.write(tid + 2, u[g + 1]);
        }
    }
    sync_threads();
    if g < n {
        let c = tile.read(tid + 1);
        let v = if g == 0 || g == n - 1 {
            c
        } else {
            c + alpha * (tile.read(tid) - 2.0 * c + tile.read(tid + 2))
        };
        out.set(i, v);
    }
}

/// Block shape of the 2-D stencil.
pub const BLOCK_2D: (u32, u32) = (32, 8);

/// One Jacobi step of Laplace's equation on a `width × height` grid: each interior point becomes
/// the mean of its four neighbours; boundary points are copied.
#[kernel(block(32, 8), grid_dims(2))]
pub fn jacobi_step_2d(u: &[f32], width: u32, height: u32, mut out: DisjointSlice<f32>) {
    let idx = thread::global_index_2d();
    let (x, y) = (idx.x(), idx.y());
    let (w, h) = (width as usize, height as usize);
    if x >= w || y >= h {
        return;
    }
    let i = y * w + x;
    let v = if x == 0 || y == 0 || x == w - 1 || y == h - 1 {
        u[i]
    } else {
        0.25 * (u[i - 1] + u[i + 1] + u[i - w] + u[i + w])
    };
    // SAFETY: every thread passes the same row stride `w`.
    unsafe { out.set_2d(idx, w, v) };
}
