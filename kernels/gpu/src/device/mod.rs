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

mod lookback;
mod reduce;
mod scan;

pub use lookback::TileStatus;
pub use reduce::{REDUCE_BLOCK, reduce, reduce_items};
pub use scan::{SCAN_BLOCK, scan, scan_items};

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
/// (2 per tile, zeroed once when allocated), `epoch: u32` (1, 2, 3, … for successive scans that
/// reuse `status`, below 2³⁰). Launch one block of [`SCAN_BLOCK`] threads per tile of
/// `SCAN_BLOCK · scan_items::<T>()` elements; see [`scan`].
#[macro_export]
macro_rules! inclusive_scan_kernel {
    ($name:ident, $t:ident, $op:expr) => {
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
