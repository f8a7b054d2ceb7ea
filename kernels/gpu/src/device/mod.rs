//! The device layer of the cooperative algorithms: the bodies of the device-wide kernels
//! (reduce, scan, …) that the host crate `gpu-algorithms` launches.
//!
//! A kernel is one concrete PTX entry point, so device-wide algorithms exist as *generic
//! bodies* here plus macros that instantiate them as `#[kernel]`s for a concrete element type and
//! operator. The `gpu-algorithms` host crate ships instantiations for the common types and the
//! built-in operators; for your own type or operator, instantiate them in your kernel crate and
//! launch them with `gpu-algorithms`' `*_with` functions:
//!
//! ```ignore
//! // kernels/my-kernels/src/lib.rs
//! gpu::reduce_kernel!(argmax_reduce, Pair, ArgMax);
//! gpu::inclusive_scan_kernel!(running_max, f32, gpu::ops::Max);
//! ```
//!
//! Same names as the [`crate::warp`] and [`crate::block`] layers.

mod histogram;
mod lookback;
mod merge;
mod pack;
mod random;
mod reduce;
mod scan;
mod segmented;
mod select;
mod sort;
mod transform;

pub use histogram::{HISTOGRAM_BLOCK, Sample, histogram_even, histogram_even_items};
pub use lookback::{STATUS_WORDS_PER_TILE, TileStatus};
pub use merge::{
    LOWER_BOUND_BLOCK, MERGE_BLOCK, lower_bound, merge, merge_items, merge_partition, merge_path,
    merge_splits, merge_tile,
};
pub use pack::{
    PACK_BLOCK, PACK_GROUP, pack, pack_group_words, pack_groups, pack_spread, pack_threads,
    pack_width, packed_words, unpack,
};
pub use random::{FILL_BLOCK, random_fill};
pub use reduce::{REDUCE_BLOCK, reduce, reduce_items};
pub use scan::{SCAN_BLOCK, scan, scan_items};
pub use segmented::{SEGMENTED_BLOCK, segmented_items, segmented_reduce};
pub use select::{SELECT_BLOCK, select};
pub use sort::{
    SORT_BLOCK, SORT_COUNTS_LEN, SORT_MAX_PASSES, SORT_SINGLE_BLOCK, histogram_items,
    radix_sort_histogram, radix_sort_pass, radix_sort_single, sort_items, sort_shared_bytes,
    sort_single_items, sort_single_shared_bytes, sort_single_threads, sort_single_tile, sort_tile,
};
pub use transform::{TRANSFORM_BLOCK, transform, transform_items, transform_unrolled, transform2};

/// Instantiates the device-wide reduction of `$t` with the operator `$op` (an expression, e.g.
/// `gpu::ops::Sum`) as the kernel `$name`. `$t` must be a single identifier (import it first).
///
/// The kernel's parameters, in order: `input: &[T]`, `init: T`, `partials: DisjointSlice<T>`
/// (one per block), `counter: DisjointSlice<u32>` (one, zero before the launch, zero again
/// after), `out: DisjointSlice<T>` (one). Launch with [`REDUCE_BLOCK`] threads per block; see
/// [`reduce`].
#[macro_export]
macro_rules! reduce_kernel {
    ($name:ident, $t:ident, $op:expr) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(
            input: &[$t],
            init: $t,
            partials: $crate::DisjointSlice<$t>,
            counter: $crate::DisjointSlice<u32>,
            out: $crate::DisjointSlice<$t>,
        ) {
            $crate::device::reduce::<$t, _, { $crate::device::reduce_items::<$t>() }>(
                input, init, $op, &partials, &counter, &out,
            )
        }
    };
}

/// Instantiates the single-pass device-wide inclusive scan of `$t` with `$op` as the kernel
/// `$name`. `$t` must be a single identifier, of at most 8 bytes.
///
/// Parameters: `input: &[T]`, `output: DisjointSlice<T>`, `status: DisjointSlice<u64>`
/// ([`STATUS_WORDS_PER_TILE`] per tile, zeroed once when allocated), `epoch: u32` (1, 2, 3, … for successive scans that
/// reuse `status`, below 2³⁰). Launch one block of [`SCAN_BLOCK`] threads per tile of
/// `SCAN_BLOCK · scan_items::<T>()` elements; see [`scan`].
#[macro_export]
macro_rules! inclusive_scan_kernel {
    ($name:ident, $t:ident, $op:expr) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(
            input: &[$t],
            output: $crate::DisjointSlice<$t>,
            status: $crate::DisjointSlice<u64>,
            epoch: u32,
        ) {
            $crate::device::scan::<$t, _, { $crate::device::scan_items::<$t>() }>(
                input, &output, $op, None, &status, epoch,
            )
        }
    };
}

/// Instantiates the exclusive scan (seeded with `init`) of `$t` with `$op` as the kernel
/// `$name`; like [`inclusive_scan_kernel!`] with an `init: T` parameter after `input`.
#[macro_export]
macro_rules! exclusive_scan_kernel {
    ($name:ident, $t:ident, $op:expr) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(
            input: &[$t],
            init: $t,
            output: $crate::DisjointSlice<$t>,
            status: $crate::DisjointSlice<u64>,
            epoch: u32,
        ) {
            $crate::device::scan::<$t, _, { $crate::device::scan_items::<$t>() }>(
                input,
                &output,
                $op,
                Some(init),
                &status,
                epoch,
            )
        }
    };
}

/// Instantiates the single-pass selection / stable partition of `$t` with the predicate `$pred`
/// (an expression: a closure `|x: &T| -> bool` or a [`Predicate`](crate::ops::Predicate)
/// value) as the kernel `$name`. Parameters: `input: &[T]`, `selected: DisjointSlice<T>`,
/// `rejected: DisjointSlice<T>` (empty for a plain selection), `num_selected:
/// DisjointSlice<u32>`, `status: DisjointSlice<u64>`, `epoch: u32`; see [`select`]. Launch like
/// a scan of `u32` ([`SCAN_BLOCK`] = [`SELECT_BLOCK`] threads, one block per tile of
/// `SELECT_BLOCK · scan_items::<T>()`).
#[macro_export]
macro_rules! select_kernel {
    ($name:ident, $t:ident, $pred:expr) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(
            input: &[$t],
            selected: $crate::DisjointSlice<$t>,
            rejected: $crate::DisjointSlice<$t>,
            num_selected: $crate::DisjointSlice<u32>,
            status: $crate::DisjointSlice<u64>,
            epoch: u32,
        ) {
            $crate::device::select::<$t, _, { $crate::device::scan_items::<$t>() }>(
                input,
                $pred,
                &selected,
                &rejected,
                &num_selected,
                &status,
                epoch,
            )
        }
    };
}

/// Instantiates selection by comparison with a threshold ([`Compare`](crate::ops::Compare)):
/// like [`select_kernel!`] with two more parameters after `input`: `op: u32` (a
/// [`CompareOp`](crate::ops::CompareOp) code) and `threshold: T`.
#[macro_export]
macro_rules! select_compare_kernel {
    ($name:ident, $t:ident) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(
            input: &[$t],
            op: u32,
            threshold: $t,
            selected: $crate::DisjointSlice<$t>,
            rejected: $crate::DisjointSlice<$t>,
            num_selected: $crate::DisjointSlice<u32>,
            status: $crate::DisjointSlice<u64>,
            epoch: u32,
        ) {
            let pred = $crate::ops::Compare {
                op: $crate::ops::CompareOp::from_code(op),
                threshold,
            };
            $crate::device::select::<$t, _, { $crate::device::scan_items::<$t>() }>(
                input,
                pred,
                &selected,
                &rejected,
                &num_selected,
                &status,
                epoch,
            )
        }
    };
}

/// Instantiates the even-bin histogram of samples of type `$t` as the kernel `$name`.
/// Parameters: `samples: &[T]`, `lower: T`, `upper: T`, `counts: DisjointSlice<u32>` (one per
/// bin, zeroed); see [`histogram_even`] for the launch.
#[macro_export]
macro_rules! histogram_even_kernel {
    ($name:ident, $t:ident) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(samples: &[$t], lower: $t, upper: $t, counts: $crate::DisjointSlice<u32>) {
            $crate::device::histogram_even::<$t, { $crate::device::histogram_even_items::<$t>() }>(
                samples, lower, upper, &counts,
            )
        }
    };
}

/// Instantiates the segmented reduction of `$t` with `$op` as the kernel `$name`. Parameters:
/// `input: &[T]`, `offsets: &[u64]` (segments + 1 of them), `init: T`, `out: DisjointSlice<T>`;
/// launch one block of [`SEGMENTED_BLOCK`] threads per segment. See [`segmented_reduce`].
#[macro_export]
macro_rules! segmented_reduce_kernel {
    ($name:ident, $t:ident, $op:expr) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(input: &[$t], offsets: &[u64], init: $t, out: $crate::DisjointSlice<$t>) {
            $crate::device::segmented_reduce::<$t, _, { $crate::device::segmented_items::<$t>() }>(
                input, offsets, init, $op, &out,
            )
        }
    };
}

/// Instantiates an element-wise transform `$a → $b` with the closure `$f` as the kernel `$name`:
/// `output[i] = f(input[i])`. Parameters: `input: &[A]`, `output: DisjointSlice<B>`; launch
/// [`TRANSFORM_BLOCK`] threads and any grid (see [`transform`]).
///
/// ```ignore
/// gpu::transform_kernel!(to_bf16, f32 => bf16, |x: f32| bf16::from_f32(x));
/// ```
#[macro_export]
macro_rules! transform_kernel {
    ($name:ident, $a:ident => $b:ident, $f:expr) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(input: &[$a], output: $crate::DisjointSlice<$b>) {
            $crate::device::transform::<$a, $b, _, { $crate::device::transform_items::<$a>() }>(
                input, &output, $f,
            )
        }
    };
}

/// Instantiates a binary element-wise transform `($a, $b) → $c` as the kernel `$name`:
/// `output[i] = f(a[i], b[i])`. Parameters: `a: &[A]`, `b: &[B]`, `output: DisjointSlice<C>`.
#[macro_export]
macro_rules! transform2_kernel {
    ($name:ident, $a:ident, $b:ident => $c:ident, $f:expr) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(a: &[$a], b: &[$b], output: $crate::DisjointSlice<$c>) {
            $crate::device::transform2::<$a, $b, $c, _, { $crate::device::transform_items::<$a>() }>(
                a, b, &output, $f,
            )
        }
    };
}
