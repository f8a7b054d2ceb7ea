//! Device-wide merge of two sorted runs and vectorized lower bound: the steps after a local sort
//! when sorted runs from several places (ranks of a distributed sort, chunks sorted apart) must
//! become one sorted sequence.

use std::ops::Range;

use algorithm_kernels::merge::{lower_bound, merge, merge_partition};
use gpu_host::gpu::device::{LOWER_BOUND_BLOCK, MERGE_BLOCK, merge_splits, merge_tile};
use gpu_host::typed::{Output, Safe, Slice, Value};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, Holds, KernelType, LaunchConfig, Result, Stream};

use crate::Algorithms;
use crate::algorithm_kernels::Module;

/// Element types with built-in merge and lower-bound kernels: the instances of the generic
/// kernels `algorithm_kernels::merge::{merge_partition, merge, lower_bound}` (`u32 i32 u64
/// i64`, ordered as integers, as the radix sort orders them).
pub trait MergeKey: DeviceCopy + Send + PartialOrd {
    /// The merge kernel's name.
    const MERGE: &'static str;
    /// The lower-bound kernel's name.
    const LOWER_BOUND: &'static str;
    /// The merge-partition kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH_PARTITION: PartitionLaunch<Self>;
    /// The merge kernel's typed launcher.
    #[doc(hidden)]
    const LAUNCH_MERGE: MergeLaunch<Self>;
    /// The lower-bound kernel's typed launcher.
    #[doc(hidden)]
    const LAUNCH_LOWER_BOUND: LowerBoundLaunch<Self>;
}

/// `merge_partition`: `(a, a_begin, a_end, b, b_begin, b_end, splits)`.
#[doc(hidden)]
pub type PartitionLaunch<T> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    u64,
    u64,
    &DeviceBuffer<T>,
    u64,
    u64,
    &mut DeviceBuffer<u64>,
) -> Result<()>;

/// `merge`: `(a, a_begin, a_end, b, b_begin, b_end, splits, out, out_begin)`.
#[doc(hidden)]
pub type MergeLaunch<T> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    u64,
    u64,
    &DeviceBuffer<T>,
    u64,
    u64,
    &DeviceBuffer<u64>,
    &mut DeviceBuffer<T>,
    u64,
) -> Result<()>;

/// `lower_bound`: `(sorted, begin, end, queries, out)`.
#[doc(hidden)]
pub type LowerBoundLaunch<T> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    u64,
    u64,
    &DeviceBuffer<T>,
    &mut DeviceBuffer<u64>,
) -> Result<()>;

// The key types are the kernels' instances: each gets its names and launches (the generic
// launchers, `Module::launch::<K>` underneath) from the kernel types, which exist for exactly
// the types `#[kernel(instances(...))]` lists.
impl<T> MergeKey for T
where
    T: DeviceCopy + Send + PartialOrd,
    merge_partition<T>: KernelType<
            Params = (
                Slice<T>,
                Value<u64>,
                Value<u64>,
                Slice<T>,
                Value<u64>,
                Value<u64>,
                Output<u64>,
            ),
            Safety = Safe,
        >,
    merge<T>: KernelType<
            Params = (
                Slice<T>,
                Value<u64>,
                Value<u64>,
                Slice<T>,
                Value<u64>,
                Value<u64>,
                Slice<u64>,
                Output<T>,
                Value<u64>,
            ),
            Safety = Safe,
        >,
    lower_bound<T>: KernelType<
            Params = (Slice<T>, Value<u64>, Value<u64>, Slice<T>, Output<u64>),
            Safety = Safe,
        >,
    Module: Holds<merge_partition<T>> + Holds<merge<T>> + Holds<lower_bound<T>>,
{
    const MERGE: &'static str = <merge<T> as KernelType>::NAME;
    const LOWER_BOUND: &'static str = <lower_bound<T> as KernelType>::NAME;
    const LAUNCH_PARTITION: PartitionLaunch<T> = Module::merge_partition::<T>;
    const LAUNCH_MERGE: MergeLaunch<T> = Module::merge::<T>;
    const LAUNCH_LOWER_BOUND: LowerBoundLaunch<T> = Module::lower_bound::<T>;
}

/// Temporary storage of a merge: where the merge path crosses each tile boundary, written by
/// the partition launch and read by the merge. Grows to the largest merge seen.
pub struct MergeTemp {
    splits: DeviceBuffer<u64>,
}

impl MergeTemp {
    /// Empty storage; the first merge allocates it.
    pub fn new(stream: &Stream) -> Result<MergeTemp> {
        Ok(MergeTemp {
            splits: stream.alloc_zeroed(0)?,
        })
    }
}

/// A bad range argument: what it is and why.
pub(crate) fn check_range(
    kernel: &str,
    argument: &str,
    range: &Range<usize>,
    len: usize,
) -> Result<()> {
    if range.start > range.end || range.end > len {
        return Err(Error::Argument {
            kernel: kernel.to_string(),
            argument: argument.to_string(),
            message: format!("range {range:?} does not fit a buffer of {len} elements"),
        });
    }
    Ok(())
}

impl Algorithms {
    /// Merges the ascending runs `a[a_range]` and `b[b_range]` into
    /// `out[out_start .. out_start + a_range.len() + b_range.len()]` (asynchronous), stably:
    /// of equal elements, those of `a` come first, each run's in its order. The runs must be
    /// ascending (as after [`Algorithms::sort_keys`]); otherwise the output is some permutation
    /// of the inputs, not sorted.
    ///
    /// Two launches (merge path): [`gpu::device::merge_partition`](gpu_host::gpu::device::merge_partition)
    /// finds where every tile of the output starts in each run, then
    /// [`gpu::device::merge`](gpu_host::gpu::device::merge) merges one tile per block. The
    /// partition's splits live in this stream's cached [`MergeTemp`].
    ///
    /// Errors (nothing launched): a range past its buffer's end (or reversed), or an output
    /// range past `out`'s end.
    #[allow(clippy::too_many_arguments)]
    pub fn merge<T: MergeKey>(
        &self,
        stream: &Stream,
        a: &DeviceBuffer<T>,
        a_range: Range<usize>,
        b: &DeviceBuffer<T>,
        b_range: Range<usize>,
        out: &mut DeviceBuffer<T>,
        out_start: usize,
    ) -> Result<()> {
        self.temps.with(
            stream,
            || MergeTemp::new(stream),
            |temp| self.merge_with_temp(stream, a, a_range, b, b_range, out, out_start, temp),
        )
    }

    /// [`Algorithms::merge`] with caller-owned temporary storage (kept by whoever merges
    /// repeatedly on several streams, like a distributed sort).
    #[allow(clippy::too_many_arguments)]
    pub fn merge_with_temp<T: MergeKey>(
        &self,
        stream: &Stream,
        a: &DeviceBuffer<T>,
        a_range: Range<usize>,
        b: &DeviceBuffer<T>,
        b_range: Range<usize>,
        out: &mut DeviceBuffer<T>,
        out_start: usize,
        temp: &mut MergeTemp,
    ) -> Result<()> {
        check_range(T::MERGE, "a", &a_range, a.len())?;
        check_range(T::MERGE, "b", &b_range, b.len())?;
        let total = a_range.len() + b_range.len();
        check_range(T::MERGE, "out", &(out_start..out_start + total), out.len())?;
        if total == 0 {
            return Ok(());
        }
        let tile = merge_tile::<T>();
        let blocks = u32::try_from(total.div_ceil(tile)).map_err(|_| Error::Argument {
            kernel: T::MERGE.to_string(),
            argument: "a/b".to_string(),
            message: format!(
                "{total} elements need {} blocks; at most 2^32 - 1",
                total.div_ceil(tile)
            ),
        })?;
        let splits = merge_splits(total, tile);
        if temp.splits.len() < splits {
            temp.splits = stream.alloc_zeroed(splits)?;
        }
        let (a0, a1) = (a_range.start as u64, a_range.end as u64);
        let (b0, b1) = (b_range.start as u64, b_range.end as u64);
        (T::LAUNCH_PARTITION)(
            &self.module,
            stream,
            LaunchConfig::for_elements(splits, LOWER_BOUND_BLOCK),
            a,
            a0,
            a1,
            b,
            b0,
            b1,
            &mut temp.splits,
        )?;
        (T::LAUNCH_MERGE)(
            &self.module,
            stream,
            LaunchConfig::new(blocks, MERGE_BLOCK),
            a,
            a0,
            a1,
            b,
            b0,
            b1,
            &temp.splits,
            out,
            out_start as u64,
        )
    }

    /// For each of `queries`, how many elements of the ascending run `sorted[range]` are less
    /// than it (asynchronous): `out[i]` = the position, counted from `range.start`, where
    /// `queries[i]` would be inserted before any equal element (`lower_bound`). One thread per
    /// query ([`gpu::device::lower_bound`](gpu_host::gpu::device::lower_bound)).
    ///
    /// Errors (nothing launched): `range` past the end of `sorted`, or `out` shorter than
    /// `queries`.
    pub fn lower_bound<T: MergeKey>(
        &self,
        stream: &Stream,
        sorted: &DeviceBuffer<T>,
        range: Range<usize>,
        queries: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        check_range(T::LOWER_BOUND, "sorted", &range, sorted.len())?;
        if out.len() < queries.len() {
            return Err(Error::Argument {
                kernel: T::LOWER_BOUND.to_string(),
                argument: "out".to_string(),
                message: format!(
                    "{} elements for {} queries; one per query needed",
                    out.len(),
                    queries.len()
                ),
            });
        }
        if queries.is_empty() {
            return Ok(());
        }
        (T::LAUNCH_LOWER_BOUND)(
            &self.module,
            stream,
            LaunchConfig::for_elements(queries.len(), LOWER_BOUND_BLOCK),
            sorted,
            range.start as u64,
            range.end as u64,
            queries,
            out,
        )
    }
}
