//! Device-wide merge of two sorted runs and vectorized lower bound: the steps after a local sort
//! when sorted runs from several places (ranks of a distributed sort, chunks sorted apart) must
//! become one sorted sequence.

use std::ops::Range;

use gpu_host::gpu::device::{LOWER_BOUND_BLOCK, MERGE_BLOCK, merge_tile};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};

use crate::Algorithms;
use crate::algorithm_kernels::Module;

/// Element types with built-in merge and lower-bound kernels: `u32 i32 u64 i64` (ordered as
/// integers, as the radix sort orders them).
pub trait MergeKey: DeviceCopy + Send + PartialOrd {
    /// The merge kernel's name.
    const MERGE: &'static str;
    /// The lower-bound kernel's name.
    const LOWER_BOUND: &'static str;
    /// The merge kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH_MERGE: MergeLaunch<Self>;
    /// The lower-bound kernel's typed launcher.
    #[doc(hidden)]
    const LAUNCH_LOWER_BOUND: LowerBoundLaunch<Self>;
}

/// `gpu::merge_kernel!`: `(a, a_begin, a_end, b, b_begin, b_end, out, out_begin)`.
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
    &mut DeviceBuffer<T>,
    u64,
) -> Result<()>;

/// `gpu::lower_bound_kernel!`: `(sorted, begin, end, queries, out)`.
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

// One identifier per kernel names it and picks its launcher (a missing kernel does not compile).
macro_rules! keys {
    ($($t:ident: $merge:ident $lower:ident;)*) => { $(
        impl MergeKey for $t {
            const MERGE: &'static str = stringify!($merge);
            const LOWER_BOUND: &'static str = stringify!($lower);
            const LAUNCH_MERGE: MergeLaunch<$t> = Module::$merge;
            const LAUNCH_LOWER_BOUND: LowerBoundLaunch<$t> = Module::$lower;
        }
    )* };
}

keys! {
    u32: merge_u32 lower_bound_u32;
    i32: merge_i32 lower_bound_i32;
    u64: merge_u64 lower_bound_u64;
    i64: merge_i64 lower_bound_i64;
}

/// A bad range argument: what it is and why.
fn check_range(kernel: &str, argument: &str, range: &Range<usize>, len: usize) -> Result<()> {
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
    /// One launch (merge path, [`gpu::device::merge`](gpu_host::gpu::device::merge)): each block merges one tile of the
    /// output from the parts of both runs that land in it.
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
        check_range(T::MERGE, "a", &a_range, a.len())?;
        check_range(T::MERGE, "b", &b_range, b.len())?;
        let total = a_range.len() + b_range.len();
        check_range(T::MERGE, "out", &(out_start..out_start + total), out.len())?;
        if total == 0 {
            return Ok(());
        }
        let blocks = total.div_ceil(merge_tile::<T>());
        let blocks = u32::try_from(blocks).map_err(|_| Error::Argument {
            kernel: T::MERGE.to_string(),
            argument: "a/b".to_string(),
            message: format!("{total} elements need {blocks} blocks; at most 2^32 - 1"),
        })?;
        (T::LAUNCH_MERGE)(
            &self.module,
            stream,
            LaunchConfig::new(blocks, MERGE_BLOCK),
            a,
            a_range.start as u64,
            a_range.end as u64,
            b,
            b_range.start as u64,
            b_range.end as u64,
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
