//! Block and warp barriers, barrier reductions, fences (with a static shared array).

use gpu::atomic::Scope;
use gpu::prelude::*;

/// What one thread saw of the barriers.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, DeviceCopy)]
pub struct BarrierRecord {
    pub count: u32,
    pub and_all: u32,
    pub and_one_false: u32,
    pub or_one: u32,
    pub or_none: u32,
    pub neighbor: u32,
    pub warp_neighbor: u32,
    pub message: u32,
}

/// Launch: 2 blocks × 128 threads (1-D); `records.len() == 256`.
///
/// Expected for thread `l` (`0..128`) of block `b`, record `records[b * 128 + l]`:
/// `count = 43` (threads with `l % 3 == 0`), `and_all = 1`, `and_one_false = 0`, `or_one = 1`,
/// `or_none = 0`, `neighbor = ((l + 1) % 128) * 2 + b * 1000`, `warp_neighbor = (l ^ 1) + 7`,
/// `message = 1234 + b`.
#[kernel]
pub fn selftest_barriers(mut records: DisjointSlice<BarrierRecord>) {
    let l = thread::local_index();
    let b = thread::block_idx_x();

    let count = sync::sync_threads_count(l.is_multiple_of(3));
    let and_all = sync::sync_threads_and(l < 128);
    let and_one_false = sync::sync_threads_and(l != 5);
    let or_one = sync::sync_threads_or(l == 77);
    let or_none = sync::sync_threads_or(false);

    // Block barrier: read a value another warp wrote.
    let tile = shared_array!(u32, 128);
    tile.write(l as usize, l * 2 + b * 1000);
    sync_threads();
    let neighbor = tile.read(((l + 1) % 128) as usize);

    // Warp barrier: read a value written by the neighbouring lane.
    let lanes = shared_array!([u32; 128]);
    lanes.write(l as usize, l + 7);
    sync::sync_warp(warp::FULL_MASK);
    let warp_neighbor = lanes.read((l ^ 1) as usize);
    sync::sync_warp_all();

    // Message passing between warps: data, fence, flag; the reader spins on the flag. The flag
    // is only touched by atomics (release = fence + atomic store, acquire = atomic load + fence),
    // so the two threads never race by the PTX memory model, and compute-sanitizer's racecheck
    // (which does not treat volatile accesses as synchronization) sees no hazard either. The
    // data slot is read by other threads only after the `sync_threads` below.
    let mailbox = shared_array!(u32, 2); // [0] = flag, [1] = data
    if l == 0 {
        mailbox.write(0, 0);
    }
    sync_threads();
    if l == 0 {
        mailbox.write(1, 1234 + b);
        sync::fence_block();
        mailbox.atomic_exch(0, 1);
    } else if l == 32 {
        while mailbox.atomic_or(0, 0) == 0 {
            time::nanosleep(100);
        }
        sync::fence_block();
    }
    // The remaining fences: nothing observable beyond completing.
    sync::fence_device();
    sync::fence_system();
    sync::fence_sc(Scope::Block);
    sync::fence_acq_rel(Scope::Block);
    sync::fence_acq_rel(Scope::Device);
    sync::fence_acq_rel(Scope::System);
    sync_threads();
    let message = mailbox.read(1);

    records.set(
        thread::global_index(),
        BarrierRecord {
            count,
            and_all: and_all as u32,
            and_one_false: and_one_false as u32,
            or_one: or_one as u32,
            or_none: or_none as u32,
            neighbor,
            warp_neighbor,
            message,
        },
    );
}
