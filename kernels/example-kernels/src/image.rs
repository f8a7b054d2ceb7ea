//! Image kernels.

use gpu::prelude::*;

/// Converts interleaved 8-bit RGB pixels to 8-bit luma (ITU-R BT.601 weights).
///
/// Integer weights (77, 150, 29) / 256 make the result exact and identical to the CPU
/// reference; a float formula could round differently at .5 boundaries.
#[kernel]
pub fn rgb_to_gray(rgb: &[u8], mut gray: DisjointSlice<u8>) {
    let i = thread::global_index();
    if let Some(out) = gray.get_mut(i) {
        let p = 3 * i.get();
        let (r, g, b) = (rgb[p] as u32, rgb[p + 1] as u32, rgb[p + 2] as u32);
        *out = ((77 * r + 150 * g + 29 * b + 128) >> 8) as u8;
    }
}
