//! Device-wide even-bin histograms.

use algorithm_kernels::histogram::histogram_even;
use gpu_host::gpu::device::{HISTOGRAM_BLOCK, histogram_even_items};
use gpu_host::typed::{Output, Safe, Slice, Value};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, Holds, KernelType, LaunchConfig, Result, Stream};

use crate::Algorithms;
use crate::algorithm_kernels::Module;

/// Sample types with a built-in histogram kernel: the instances of the generic kernel
/// `algorithm_kernels::histogram::histogram_even` (`f32 f64 i32 u32 u8 u16`).
pub trait HistogramBuiltin: DeviceCopy + Send + PartialOrd {
    /// The kernel's name.
    const KERNEL: &'static str;
    /// The kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH: HistogramLaunch<Self>;
    /// The kernel's position in the module (for its occupancy).
    #[doc(hidden)]
    const INDEX: usize;
}

/// The typed launcher of `histogram_even`'s instance for `T`: `(samples, lower, upper, counts)`.
#[doc(hidden)]
pub type HistogramLaunch<T> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    T,
    T,
    &mut DeviceBuffer<u32>,
) -> Result<()>;

// The kernel's instances are the sample types: each gets its name, its launch (the generic
// launcher, `Module::launch::<histogram_even<T>>` underneath) and its position from the kernel
// type `histogram_even<T>`, which exists for exactly the types `#[kernel(instances(...))]` lists.
impl<T> HistogramBuiltin for T
where
    T: DeviceCopy + Send + PartialOrd,
    histogram_even<T>:
        KernelType<Params = (Slice<T>, Value<T>, Value<T>, Output<u32>), Safety = Safe>,
    Module: Holds<histogram_even<T>>,
{
    const KERNEL: &'static str = <histogram_even<T> as KernelType>::NAME;
    const LAUNCH: HistogramLaunch<T> = Module::histogram_even::<T>;
    const INDEX: usize = <Module as Holds<histogram_even<T>>>::INDEX;
}

impl Algorithms {
    /// Counts `samples` into `counts.len()` equal-width bins over `[lower, upper)`
    /// (asynchronous): `counts[b]` = number of samples in bin `b`; samples outside the range
    /// (and NaN) are not counted. `counts` is overwritten.
    ///
    /// Bin of `x`: integers `(x - lower) · bins / (upper - lower)` exactly; floats
    /// `⌊(x - lower) · (bins / (upper - lower))⌋` in the sample type's precision (clamped to the
    /// last bin). Each block counts into shared memory when the bins fit (up to the device's
    /// per-block shared memory / 4), then merges with one atomic per bin.
    ///
    /// Errors (nothing launched): no bins, `lower >= upper` (or NaN bounds).
    pub fn histogram_even<T: HistogramBuiltin>(
        &self,
        stream: &Stream,
        samples: &DeviceBuffer<T>,
        lower: T,
        upper: T,
        counts: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        let kernel = self.kernel_at(T::INDEX)?;
        let bad = |argument: &str, message: String| Error::Argument {
            kernel: T::KERNEL.to_string(),
            argument: argument.to_string(),
            message,
        };
        let bins = counts.len();
        if bins == 0 {
            return Err(bad(
                "counts",
                "zero bins: the counts buffer is empty".into(),
            ));
        }
        if bins > u32::MAX as usize {
            return Err(bad("counts", format!("{bins} bins; at most 2^32 - 1")));
        }
        if lower.partial_cmp(&upper) != Some(std::cmp::Ordering::Less) {
            return Err(bad(
                "lower/upper",
                "the range is empty: lower must be below upper".into(),
            ));
        }
        counts.copy_from_host(&vec![0u32; bins])?;
        let tile = HISTOGRAM_BLOCK as usize * histogram_even_items::<T>();
        let shared_limit = kernel.device().shared_memory_limit_per_block() as usize;
        let shared = if bins * 4 <= shared_limit {
            bins * 4
        } else {
            0
        };
        let resident = kernel
            .occupancy(HISTOGRAM_BLOCK, shared)?
            .active_blocks_per_sm
            .max(1)
            * self.multiprocessors.max(1);
        let blocks = (samples.len() / tile).clamp(1, resident as usize);
        let cfg = LaunchConfig::new(blocks as u32, HISTOGRAM_BLOCK).with_shared_mem(shared as u32);
        // The grid is at most the number of full tiles (or 1), and the dynamic shared memory
        // either holds every bin or is 0.
        (T::LAUNCH)(&self.module, stream, cfg, samples, lower, upper, counts)
    }
}
