//! Device-wide histogram with evenly spaced bins.

use crate::block;
use crate::shared;
use crate::slice::DisjointSlice;
use crate::sync::sync_threads;
use crate::thread::{block_idx_x, block_size, grid_dim_x, local_index};
use crate::{DeviceCopy, atomic};

/// Threads per block of the histogram kernels.
pub const HISTOGRAM_BLOCK: u32 = 256;

/// Sample types with even binning: which of `bins` equal-width bins over `[lower, upper)` a
/// value falls in.
pub trait Sample: DeviceCopy {
    /// The bin of `self`, or `None` outside `[lower, upper)` (and for NaN).
    ///
    /// Integers: `(x - lower) · bins / (upper - lower)` exactly (wide arithmetic). Floats:
    /// `⌊(x - lower) · (bins / (upper - lower))⌋` in the sample's precision, clamped to the last
    /// bin — the same arithmetic a CPU reference must use to agree at bin edges.
    fn bin_even(self, lower: Self, upper: Self, bins: u32) -> Option<u32>;
}

macro_rules! int_sample {
    ($($t:ty),*) => { $(
        impl Sample for $t {
            #[inline(always)]
            fn bin_even(self, lower: Self, upper: Self, bins: u32) -> Option<u32> {
                if self < lower || self >= upper {
                    return None;
                }
                // ⌊offset·bins / width⌋ without an integer division (a long software routine
                // on the GPU): the f64 quotient is within 2^-20 of the exact one (< 2^32), so
                // its floor is off by at most one, which exact u64 products then correct.
                // offset < width ≤ 2^32 - 1 and b ≤ bins ≤ 2^32 - 1 keep them below 2^64.
                let offset = (self as i64 - lower as i64) as u64;
                let width = (upper as i64 - lower as i64) as u64;
                let scaled = offset * bins as u64;
                let mut b = (offset as f64 * (bins as f64 / width as f64)) as u64;
                if b * width > scaled {
                    b -= 1;
                } else if (b + 1) * width <= scaled {
                    b += 1;
                }
                Some(b as u32)
            }
        }
    )* };
}

int_sample!(u8, i8, u16, i16, u32, i32);

macro_rules! wide_int_sample {
    ($($t:ty),*) => { $(
        impl Sample for $t {
            #[inline(always)]
            fn bin_even(self, lower: Self, upper: Self, bins: u32) -> Option<u32> {
                if self < lower || self >= upper {
                    return None;
                }
                // u64 offsets times a u32 bin count need up to 96 bits; split the product to
                // stay in u64 (no 128-bit division on the GPU).
                let offset = self.wrapping_sub(lower) as u64;
                let width = upper.wrapping_sub(lower) as u64;
                let (q, r) = (offset / width, offset % width);
                let bins = bins as u64;
                let hi = q * bins;
                // r < width, so r · bins / width < bins; compute it without overflow when
                // r · bins fits, else through f64 (off by at most one bin at 2^53+ widths).
                let lo = match r.checked_mul(bins) {
                    Some(p) => p / width,
                    None => ((r as f64 / width as f64) * bins as f64) as u64,
                };
                Some((hi + lo).min(bins - 1) as u32)
            }
        }
    )* };
}

wide_int_sample!(u64, i64);

macro_rules! float_sample {
    ($($t:ty),*) => { $(
        impl Sample for $t {
            #[inline(always)]
            fn bin_even(self, lower: Self, upper: Self, bins: u32) -> Option<u32> {
                if !(self >= lower && self < upper) {
                    return None;
                }
                let scale = bins as $t / (upper - lower);
                Some((((self - lower) * scale) as u32).min(bins - 1))
            }
        }
    )* };
}

float_sample!(f32, f64);

/// Items per thread per tile of the histogram kernels (64 bytes per thread).
pub const fn histogram_even_items<T>() -> usize {
    super::reduce_items::<T>()
}

/// The body of a device-wide even-bin histogram kernel: `counts[b] += #{x in samples : x in
/// bin b}` for `counts.len()` bins over `[lower, upper)` (see [`Sample::bin_even`]); samples
/// outside are ignored. `counts` must be zeroed before the launch (the host API does it).
///
/// Launch with [`HISTOGRAM_BLOCK`] threads, a grid of at most the number of full tiles (or 1),
/// and `counts.len() · 4` bytes of dynamic shared memory when that fits: each block then counts
/// into a private shared-memory histogram (fast shared atomics) and adds it to `counts` at the
/// end with one global atomic per non-empty bin. With less dynamic shared memory than that,
/// every sample is a global atomic (for very many bins).
#[inline(always)]
pub fn histogram_even<T: Sample, const N: usize>(
    samples: &[T],
    lower: T,
    upper: T,
    counts: &DisjointSlice<'_, u32>,
) {
    let bins = counts.len();
    assert!(
        bins > 0 && bins <= u32::MAX as usize,
        "device::histogram_even: bin count out of range"
    );
    let local = shared::dynamic::<u32>();
    let private = local.len() >= bins;
    let (t, threads) = (local_index() as usize, block_size() as usize);
    if private {
        let mut b = t;
        while b < bins {
            // SAFETY: b < bins <= local.len().
            unsafe { local.write_unchecked(b, 0) };
            b += threads;
        }
        sync_threads();
    }
    let count = |x: T| {
        if let Some(b) = x.bin_even(lower, upper, bins as u32) {
            let b = b as usize;
            if private {
                // SAFETY: b < bins <= local.len().
                unsafe {
                    atomic::shared::add(local.addr() + 4 * b as u32, 1u32, atomic::Scope::Block)
                };
            } else {
                // SAFETY: b < bins = counts.len(); concurrent updates are atomic.
                unsafe {
                    atomic::global::add(counts.as_mut_ptr().add(b), 1u32, atomic::Scope::Device)
                };
            }
        }
    };
    let n = samples.len();
    let tile = threads * N;
    let full_tiles = n / tile;
    let (grid, block) = (grid_dim_x() as usize, block_idx_x() as usize);
    let mut k = block;
    while k < full_tiles {
        let items: [T; N] = block::load_unordered(samples, k * tile);
        // Written out: a loop over the array kept it in local memory. Two rounds of
        // `MAX_UNROLL` (32) cover the 64 one-byte samples of a 64-byte tile row.
        const { assert!(N <= 2 * crate::unroll::MAX_UNROLL) };
        crate::unroll!(2, |h| {
            crate::unroll!(32, |j| {
                if h * 32 + j < N {
                    count(items[h * 32 + j])
                }
            })
        });
        k += grid;
    }
    if full_tiles * tile < n && block == full_tiles % grid {
        let first = full_tiles * tile + t * N;
        for i in 0..N {
            if let Some(&x) = samples.get(first + i) {
                count(x);
            }
        }
    }
    if private {
        sync_threads();
        let mut b = t;
        while b < bins {
            // SAFETY: b < bins <= local.len(); every block adds its counts atomically.
            unsafe {
                let c = local.read_unchecked(b);
                if c != 0 {
                    atomic::global::add(counts.as_mut_ptr().add(b), c, atomic::Scope::Device);
                }
            }
            b += threads;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Sample;

    /// The exact bin by 128-bit integer arithmetic.
    fn exact(x: i64, lower: i64, upper: i64, bins: u32) -> u32 {
        ((x - lower) as u128 * bins as u128 / (upper - lower) as u128) as u32
    }

    #[test]
    fn integer_bins_are_exact_at_the_edges() {
        let cases: [(u32, u32, u32); 4] = [
            (0, u32::MAX, 4096),
            (7, 1000, 3),
            (0, u32::MAX, u32::MAX),
            (5, 6, 1),
        ];
        for (lower, upper, bins) in cases {
            let width = (upper - lower) as u64;
            // Every bin edge, one below and one above it, and the ends.
            let edges = [1u64, 2, bins as u64 / 3, bins as u64 / 2, bins as u64 - 1]
                .map(|b| lower as u64 + (b * width).div_ceil(bins as u64));
            let near = edges.iter().flat_map(|&e| [e.saturating_sub(1), e, e + 1]);
            let xs = [lower as u64, upper as u64 - 1]
                .into_iter()
                .chain(near)
                .filter(|x| (lower as u64..upper as u64).contains(x))
                .map(|x| x as u32);
            for x in xs {
                let want = exact(x as i64, lower as i64, upper as i64, bins);
                assert_eq!(
                    x.bin_even(lower, upper, bins),
                    Some(want),
                    "{x} in [{lower}, {upper}) / {bins}"
                );
            }
            assert_eq!(upper.bin_even(lower, upper, bins), None);
        }
        assert_eq!((-3i32).bin_even(i32::MIN, i32::MAX, 2), Some(0));
        assert_eq!(0i32.bin_even(i32::MIN, i32::MAX, 2), Some(1));
    }
}
