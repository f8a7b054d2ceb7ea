//! `merge_partition_<type>` and `merge_<type>`: the two launches of a stable merge of two
//! ascending runs; `lower_bound_<type>`: where queries fall in an ascending run. Integer keys
//! (the order of the radix sort's integer keys).
//!
//! Every run is given as a buffer and a range in it (`a[a_begin..a_end]`), so one kernel merges
//! runs that sit inside larger buffers.

use gpu::device::{merge_items, merge_tile};
use gpu::{DeviceCopy, DisjointSlice, kernel};

/// `splits[i]`: how many of the first `i · merge_tile::<T>()` outputs of the merge of
/// `a[a_begin..a_end]` and `b[b_begin..b_end]` come from `a`; see
/// [`gpu::device::merge_partition`]. One thread per split
/// ([`merge_splits`](gpu::device::merge_splits) of them).
#[allow(clippy::too_many_arguments)]
#[kernel(instances(u32, i32, u64, i64))]
pub fn merge_partition<T: DeviceCopy + PartialOrd>(
    a: &[T],
    a_begin: u64,
    a_end: u64,
    b: &[T],
    b_begin: u64,
    b_end: u64,
    mut splits: DisjointSlice<u64>,
) {
    let a = &a[a_begin as usize..a_end as usize];
    let b = &b[b_begin as usize..b_end as usize];
    gpu::device::merge_partition(a, b, merge_tile::<T>(), &mut splits)
}

/// The stable merge of `a[a_begin..a_end]` and `b[b_begin..b_end]` into
/// `out[out_begin..]`, given `merge_partition`'s `splits`; see [`gpu::device::merge`]. Launch
/// [`MERGE_BLOCK`](gpu::device::MERGE_BLOCK) threads per block, one block per
/// `merge_tile::<T>()` outputs. Registers are capped so that four blocks share an SM (at
/// most 64 a thread; ptxas fits it without spilling) for more loads in flight.
#[allow(clippy::too_many_arguments)]
#[kernel(launch_bounds(256, 4), instances(u32, i32, u64, i64))]
pub fn merge<T: DeviceCopy + PartialOrd>(
    a: &[T],
    a_begin: u64,
    a_end: u64,
    b: &[T],
    b_begin: u64,
    b_end: u64,
    splits: &[u64],
    out: DisjointSlice<T>,
    out_begin: u64,
) {
    let a = &a[a_begin as usize..a_end as usize];
    let b = &b[b_begin as usize..b_end as usize];
    let total = a.len() + b.len();
    let out = out.into_range(out_begin as usize..out_begin as usize + total);
    gpu::device::merge::<T, { merge_items::<T>() }>(a, b, splits, &out)
}

/// `out[i]`: the position of `queries[i]` in the ascending run `sorted[begin..end]` (counted
/// from `begin`, before any equal element); see [`gpu::device::lower_bound`]. One thread per
/// query in blocks of [`LOWER_BOUND_BLOCK`](gpu::device::LOWER_BOUND_BLOCK).
#[kernel(instances(u32, i32, u64, i64))]
pub fn lower_bound<T: DeviceCopy + PartialOrd>(
    sorted: &[T],
    begin: u64,
    end: u64,
    queries: &[T],
    out: DisjointSlice<u64>,
) {
    gpu::device::lower_bound(&sorted[begin as usize..end as usize], queries, &out)
}
