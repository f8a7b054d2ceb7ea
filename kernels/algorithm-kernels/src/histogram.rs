//! `histogram_even`: even-bin histograms, one generic kernel with an entry per sample type
//! (`histogram_even_f32`, ..., `histogram_even_u16`).

use gpu::device::{Sample, histogram_even_items};
use gpu::{DisjointSlice, kernel};

/// Counts `samples` into `counts.len()` equal-width bins over `[lower, upper)` (`counts`
/// zeroed); see [`gpu::device::histogram_even`] for the launch.
#[allow(clippy::too_many_arguments)]
#[kernel(instances(f32, f64, i32, u32, u8, u16))]
pub fn histogram_even<T: Sample>(samples: &[T], lower: T, upper: T, counts: DisjointSlice<u32>) {
    gpu::device::histogram_even::<T, { histogram_even_items::<T>() }>(
        samples, lower, upper, &counts,
    )
}
