//! Matrix transpose of a row-major `width × height` f32 matrix into `height × width`.

use gpu::prelude::*;

/// Side of the square tile; the tiled kernel runs `TILE × ROWS` threads per block.
pub const TILE: usize = 32;
/// Rows of threads per block in the tiled kernel: each thread moves `TILE / ROWS` elements.
pub const ROWS: usize = 8;

/// One thread per element: reads coalesced, writes strided (the CUDA sample's
/// `transposeNaive`). Launch with `TILE × ROWS` blocks over `width × height / (TILE / ROWS)`.
#[kernel(block(32, 8))]
pub fn transpose_naive(input: &[f32], width: u32, height: u32, out: DisjointSlice<f32>) {
    let (w, h) = (width as usize, height as usize);
    let input = Matrix::new(input, h, w);
    let x = thread::block_idx_x() as usize * TILE + thread::thread_idx_x() as usize;
    let y = thread::block_idx_y() as usize * TILE + thread::thread_idx_y() as usize;
    for j in (0..TILE).step_by(ROWS) {
        if x < w && y + j < h {
            // SAFETY: element (y + j, x) of the input goes to (x, y + j) of the output, and
            // each thread owns distinct (x, y + j): no two threads write the same element.
            unsafe { out.write_unchecked_race(x * h + y + j, input[(y + j, x)]) };
        }
    }
}

/// Through a `TILE × (TILE + 1)` shared tile (the padding column avoids bank conflicts), so both
/// the reads and the writes are coalesced (the CUDA sample's `transposeNoBankConflicts`).
#[kernel(block(32, 8))]
pub fn transpose_tiled(input: &[f32], width: u32, height: u32, out: DisjointSlice<f32>) {
    let tile = shared_array!(f32, TILE * (TILE + 1));
    let (w, h) = (width as usize, height as usize);
    let input = Matrix::new(input, h, w);
    let (tx, ty) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let (bx, by) = (
        thread::block_idx_x() as usize,
        thread::block_idx_y() as usize,
    );

    let (x, y) = (bx * TILE + tx, by * TILE + ty);
    for j in (0..TILE).step_by(ROWS) {
        if x < w && y + j < h {
            tile.write((ty + j) * (TILE + 1) + tx, input[(y + j, x)]);
        }
    }
    sync_threads();
    let (x, y) = (by * TILE + tx, bx * TILE + ty);
    for j in (0..TILE).step_by(ROWS) {
        if x < h && y + j < w {
            let v = tile.read(tx * (TILE + 1) + ty + j);
            // SAFETY: output element (y + j, x) is written by this thread only.
            unsafe { out.write_unchecked_race((y + j) * h + x, v) };
        }
    }
}
