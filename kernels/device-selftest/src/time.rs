//! `gpu::time`: cycle counters, the global timer, `nanosleep`; and `asm::sm_id`.

use gpu::prelude::*;

/// Timer deltas seen by one thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, DeviceCopy)]
pub struct TimeRecord {
    pub clock64_delta: u64,
    pub globaltimer_delta: u64,
    pub globaltimer_start: u64,
    pub clock_delta: u32,
    pub sm_id: u32,
}

/// Launch: 2 blocks × 32 threads; `records.len() == 64`.
///
/// Expected: `clock64_delta > 0`, `clock_delta > 0` (both span a `nanosleep(1000)`, so in
/// practice hundreds of cycles or more), `globaltimer_delta >= 20_000` ns is *not* guaranteed
/// (`nanosleep` may sleep less), so check `globaltimer_delta > 0` and
/// `globaltimer_start > 0`; `sm_id` below the GPU's SM count.
#[kernel]
pub fn selftest_time(mut records: DisjointSlice<TimeRecord>) {
    let c0 = time::clock();
    let t0 = time::clock64();
    let g0 = time::globaltimer();
    time::nanosleep(1000);
    // Sleep until the global timer has visibly advanced (its resolution can be ~1 µs).
    let mut g1 = time::globaltimer();
    while g1 == g0 {
        time::nanosleep(1000);
        g1 = time::globaltimer();
    }
    let t1 = time::clock64();
    let c1 = time::clock();
    records.set(
        thread::global_index(),
        TimeRecord {
            clock64_delta: t1.wrapping_sub(t0),
            globaltimer_delta: g1.wrapping_sub(g0),
            globaltimer_start: g0,
            clock_delta: c1.wrapping_sub(c0),
            sm_id: gpu::asm::sm_id(),
        },
    );
}
