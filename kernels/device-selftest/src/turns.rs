//! Turns on a global counter ([`gpu::grid::wait_turn`] / [`gpu::grid::end_turn`]) in an
//! ordinary (not cooperative) launch.

use gpu::prelude::*;

/// Thread 0 of block `b` waits for turn `b + skip` on `turns[0]` (zeroed), folds `b` into
/// `acc[0]` with plain (volatile) reads and writes, `acc = 31 · acc + b + 1`, and passes the
/// turn. With `skip` 0 the blocks take their turns in block order, so `acc[0]` is the fold of
/// `1, 2, ..., grid` from its starting value, whatever the blocks' timing, only if the turns
/// exclude each other and keep that order. With `skip` 1 no block's turn ever comes, and every
/// block gives up after `timeout_ns` (the launch fails). One warp per block.
#[kernel(block(32), grid_dims(1))]
pub fn selftest_turns_fold(
    turns: DisjointSlice<u32>,
    acc: DisjointSlice<u32>,
    skip: u32,
    timeout_ns: u64,
) {
    if thread::thread_idx_x() == 0 && !turns.is_empty() && !acc.is_empty() {
        let b = thread::block_idx_x();
        // SAFETY: `turns[0]` is touched only through turns; `acc[0]` only by the holder of the
        // turn, whose accesses the turn's acquire and release order after the previous holder's.
        unsafe {
            gpu::grid::wait_turn_within(turns.as_mut_ptr(), b + skip, timeout_ns);
            let a = acc.as_mut_ptr();
            a.write_volatile(a.read_volatile().wrapping_mul(31).wrapping_add(b + 1));
            gpu::grid::end_turn(turns.as_mut_ptr());
        }
    }
}
