//! Image kernels: RGB to gray (planar and interleaved) and a 2-D convolution.

use gpu::prelude::*;

/// Block shape of the 2-D image kernels.
pub const BLOCK_2D: (u32, u32) = (16, 16);
/// Side of the convolution filter (odd).
pub const FILTER: usize = 5;

/// Planar RGB (three f32 planes) to luminance, one thread per pixel.
#[kernel(block(256), grid_dims(1))]
pub fn rgb_to_gray_planar(r: &[f32], g: &[f32], b: &[f32], mut gray: DisjointSlice<f32>) {
    let i = thread::global_index();
    if let Some(out) = gray.get_mut(i) {
        let i = i.get();
        *out = 0.299 * r[i] + 0.587 * g[i] + 0.114 * b[i];
    }
}

/// Interleaved 8-bit RGB to 8-bit gray, one thread per pixel of a `width × height` image
/// (the PMPP textbook's colour-to-grayscale kernel).
#[kernel(block(16, 16), grid_dims(2))]
pub fn rgb_to_gray_interleaved(rgb: &[u8], width: u32, height: u32, mut gray: DisjointSlice<u8>) {
    let idx = thread::global_index_2d();
    let (col, row) = (idx.x(), idx.y());
    let (w, h) = (width as usize, height as usize);
    if col < w && row < h {
        let pixel = row * w + col;
        let r = rgb[3 * pixel] as f32;
        let g = rgb[3 * pixel + 1] as f32;
        let b = rgb[3 * pixel + 2] as f32;
        // SAFETY: every thread passes the same row stride `w`.
        unsafe { gray.set_2d(idx, w, (0.21 * r + 0.71 * g + 0.07 * b) as u8) };
    }
}

/// `out = image ⊛ filter` with a `FILTER × FILTER` filter, zero outside the image; one thread
/// per output pixel, everything read from global memory.
#[kernel(block(16, 16), grid_dims(2))]
pub fn convolution_2d(
    image: &[f32],
    filter: &[f32],
    width: u32,
    height: u32,
    mut out: DisjointSlice<f32>,
) {
    let image = Matrix::new(image, height as usize, width as usize);
    let filter = Matrix::new(filter, FILTER, FILTER);
    let idx = thread::global_index_2d();
    let (col, row) = (idx.x() as i64, idx.y() as i64);
    let (w, h) = (width as i64, height as i64);
    if col >= w || row >= h {
        return;
    }
    let radius = (FILTER / 2) as i64;
    let mut sum = 0.0f32;
    for fy in 0..FILTER {
        for fx in 0..FILTER {
            let y = row + fy as i64 - radius;
            let x = col + fx as i64 - radius;
            if y >= 0 && y < h && x >= 0 && x < w {
                sum += filter[(fy, fx)] * image[(y as usize, x as usize)];
            }
        }
    }
    // SAFETY: every thread passes the same row stride `width`.
    unsafe { out.set_2d(idx, width as usize, sum) };
}
