//! A single-launch reduction with a grid-wide barrier ([`gpu::grid::sync`]); the launch must be
//! cooperative (`LaunchConfig::cooperative()`).

use gpu::block;
use gpu::grid::{self, GridBarrier};
use gpu::ops::Sum;
use gpu::prelude::*;

/// Sums `values` in one launch: every block reduces its grid-stride share into
/// `partials[block]`; after a grid barrier block 0 adds the partials (in block order) into
/// `total[0]`; after a second barrier every block copies `total[0]` into `seen[block]` (so the
/// host sees that the barrier is reusable and publishes memory). `barrier` is one `u32` of any
/// value; `partials` and `seen` hold one value per block.
#[kernel]
pub fn grid_reduce_sum(
    values: &[u32],
    partials: DisjointSlice<u64>,
    barrier: DisjointSlice<u32>,
    total: DisjointSlice<u64>,
    seen: DisjointSlice<u64>,
) {
    let bar = GridBarrier::new(&barrier);
    let g = thread::grid_dim();
    let blocks = (g.x * g.y * g.z) as usize;
    let b = thread::block_idx().x as usize;
    let first_thread = thread::thread_idx_x() == 0;

    let mut sum = 0u64;
    for i in thread::grid_stride(values.len()) {
        sum += u64::from(values[i.get()]);
    }
    let block_sum = block::reduce(sum, Sum);
    if first_thread {
        // SAFETY: only thread 0 of block `b` writes `partials[b]`.
        unsafe { partials.write_unchecked_race(b, block_sum) };
    }
    grid::sync(&bar);
    if b == 0 && first_thread {
        let mut t = 0u64;
        for k in 0..blocks.min(partials.len()) {
            // SAFETY: in bounds; written before the grid barrier by block `k`, read after it.
            t += unsafe { partials.as_mut_ptr().add(k).read_volatile() };
        }
        // SAFETY: only thread 0 of block 0 writes `total[0]`.
        unsafe { total.write_unchecked_race(0, t) };
    }
    grid::sync(&bar);
    if first_thread {
        // SAFETY: `total[0]` (asserted in bounds) was written before the barrier, read after.
        let t = unsafe {
            assert!(!total.is_empty());
            total.as_mut_ptr().read_volatile()
        };
        // SAFETY: only thread 0 of block `b` writes `seen[b]`.
        unsafe { seen.write_unchecked_race(b, t) };
    }
}
