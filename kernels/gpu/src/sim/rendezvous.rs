//! Block barriers and warp collectives as rendezvous of fibers, and the reports written when
//! one can never complete.

use core::cell::Cell;
use core::fmt::Write;
use core::panic::Location;
use std::string::String;
use std::vec::Vec;

use super::runtime::{BlockCtx, State, ThreadCtx, current};
use crate::thread::WARP_SIZE;

/// What a barrier reduces over the threads' predicates (`barrier.red`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BarrierResult {
    pub(crate) count: u32,
    pub(crate) all: bool,
    pub(crate) any: bool,
}

/// The block's barrier (`barrier.sync 0`).
#[derive(Default)]
pub(crate) struct Barrier {
    arrived: Cell<u32>,
    count: Cell<u32>,
    site: Cell<Option<&'static Location<'static>>>,
    /// Set when threads wait at different call sites.
    mixed: Cell<Option<&'static Location<'static>>>,
    last: Cell<BarrierResult>,
}

/// `sync_threads` and its reducing forms: waits until every thread of the block arrives.
#[track_caller]
pub(crate) fn barrier(what: &str, predicate: bool) -> BarrierResult {
    let site = Location::caller();
    let t = current(what);
    let block = t.block();
    let bar = &block.barrier;
    match bar.site.get() {
        None => bar.site.set(Some(site)),
        Some(first) if !same_site(first, site) && bar.mixed.get().is_none() => {
            bar.mixed.set(Some(site))
        }
        Some(_) => {}
    }
    bar.arrived.set(bar.arrived.get() + 1);
    bar.count.set(bar.count.get() + predicate as u32);
    if bar.arrived.get() == block.size() {
        if let (Some(a), Some(b)) = (bar.site.get(), bar.mixed.get()) {
            block.record_divergence(std::format!(
                "divergent barrier: the block's threads wait at different barriers ({} and {}); \
                 every thread must reach the same sync_threads",
                site_text(a),
                site_text(b)
            ));
        }
        let n = block.size();
        let result = BarrierResult {
            count: bar.count.get(),
            all: bar.count.get() == n,
            any: bar.count.get() > 0,
        };
        bar.last.set(result);
        bar.arrived.set(0);
        bar.count.set(0);
        bar.site.set(None);
        bar.mixed.set(None);
        for other in block.threads.iter() {
            if other.state.get() == State::Barrier {
                other.state.set(State::Ready);
            }
        }
        // Let the others run before this thread goes on, as the barrier releases all at once.
        t.suspend(State::Ready, site);
        result
    } else {
        t.suspend(State::Barrier, site);
        bar.last.get()
    }
}

fn same_site(a: &Location<'_>, b: &Location<'_>) -> bool {
    a.file() == b.file() && a.line() == b.line() && a.column() == b.column()
}

/// One warp's collectives in flight.
pub(crate) struct Warp {
    /// Lanes that exist (a block whose size is not a multiple of 32 has a partial last warp).
    exists: u32,
    first_thread: u32,
    /// Per lane: the effective mask and value of the collective it waits in.
    pending: [Cell<Option<(u32, u64)>>; 32],
}

impl Warp {
    pub(crate) fn new(block_threads: usize, warp: usize) -> Warp {
        let first = warp * WARP_SIZE as usize;
        let lanes = (block_threads - first).min(WARP_SIZE as usize);
        Warp {
            exists: if lanes == 32 {
                u32::MAX
            } else {
                (1u32 << lanes) - 1
            },
            first_thread: first as u32,
            pending: Default::default(),
        }
    }

    pub(crate) fn exists_mask(&self) -> u32 {
        self.exists
    }

    /// Lanes that exist and have not exited.
    pub(crate) fn live_lanes(&self, block: &BlockCtx) -> u32 {
        let mut m = 0;
        for lane in 0..WARP_SIZE {
            if self.exists & (1 << lane) != 0
                && block.threads[(self.first_thread + lane) as usize]
                    .state
                    .get()
                    != State::Done
            {
                m |= 1 << lane;
            }
        }
        m
    }
}

/// A warp collective: waits until every lane of `mask` (that exists) has called a collective
/// with the same mask, then returns every lane's `value` (lanes outside the mask read 0).
#[track_caller]
pub(crate) fn exchange(what: &str, mask: u32, value: u64) -> [u64; 32] {
    match arrive(what, mask, value, Location::caller()) {
        Arrival::Woken(woken) => woken,
        Arrival::Last(values) => {
            release_lanes(what, mask, |_| values);
            values
        }
    }
}

/// A warp collective whose per-lane results the last lane to arrive computes from every lane's
/// `value` with `f`, all at one instant (as the GPU executes `ldmatrix` for the whole warp):
/// no lane runs between the reads `f` makes for the lanes. Returns this lane's result.
#[track_caller]
pub(crate) fn exchange_map(
    what: &str,
    mask: u32,
    value: u64,
    f: impl FnOnce(&[u64; 32]) -> [[u64; 2]; 32],
) -> [u64; 2] {
    match arrive(what, mask, value, Location::caller()) {
        Arrival::Woken(woken) => [woken[0], woken[1]],
        Arrival::Last(values) => {
            let results = f(&values);
            release_lanes(what, mask, |l| {
                let mut v = [0u64; 32];
                v[..2].copy_from_slice(&results[l as usize]);
                v
            });
            results[current(what).lane() as usize]
        }
    }
}

/// How a lane came out of [`arrive`].
enum Arrival {
    /// It was the last lane of the mask: every lane's value (it must then `release_lanes`).
    Last([u64; 32]),
    /// It waited: what the last lane handed it.
    Woken([u64; 32]),
}

/// The arrival half of a warp collective.
fn arrive(what: &str, mask: u32, value: u64, site: &'static Location<'static>) -> Arrival {
    let t = current(what);
    let warp = t.warp();
    let lane = t.lane();
    let mask = mask & warp.exists;
    if mask & (1 << lane) == 0 {
        panic!(
            "gpu::{what}: lane {lane} called a warp collective with mask {mask:#010x}, which does \
             not include the lane itself (undefined on a GPU)"
        );
    }
    warp.pending[lane as usize].set(Some((mask, value)));
    let complete = (0..WARP_SIZE)
        .filter(|l| mask & (1 << l) != 0)
        .all(|l| matches!(warp.pending[l as usize].get(), Some((m, _)) if m == mask));
    if !complete {
        t.suspend(State::Warp, site);
        return Arrival::Woken(t.warp_values.get());
    }
    let mut values = [0u64; 32];
    for l in 0..WARP_SIZE {
        if mask & (1 << l) != 0 {
            values[l as usize] = warp.pending[l as usize].take().map_or(0, |(_, v)| v);
        }
    }
    Arrival::Last(values)
}

/// The release half, run by the last lane to arrive: hands every other lane of `mask` its
/// result (`result_for(lane)`) and makes it runnable.
fn release_lanes(what: &str, mask: u32, result_for: impl Fn(u32) -> [u64; 32]) {
    let t = current(what);
    let warp = t.warp();
    let lane = t.lane();
    let mask = mask & warp.exists;
    let block = t.block();
    for l in 0..WARP_SIZE {
        if mask & (1 << l) != 0 && l != lane {
            let other = &block.threads[(warp.first_thread + l) as usize];
            other.warp_values.set(result_for(l));
            other.state.set(State::Ready);
        }
    }
}

/// Why no thread of a stalled block can run: which threads wait where, which exited.
pub(crate) fn describe_stall(block: &BlockCtx) -> String {
    let mut out = String::new();
    let exited: Vec<u32> = threads_in(block, |t| t.state.get() == State::Done);
    let at_barrier: Vec<u32> = threads_in(block, |t| t.state.get() == State::Barrier);
    if !at_barrier.is_empty() {
        let site = block.threads[at_barrier[0] as usize].site.get();
        let _ = write!(
            out,
            "{} of {} threads ({}) wait at the barrier at {}",
            at_barrier.len(),
            block.size(),
            ranges(&at_barrier),
            site_text(site)
        );
        if !exited.is_empty() {
            let _ = write!(
                out,
                "; threads {} exited without reaching it (a barrier must be reached by every \
                 thread of the block)",
                ranges(&exited)
            );
        }
    }
    for (w, warp) in block.warps.iter().enumerate() {
        let waiting: Vec<u32> = (0..WARP_SIZE)
            .filter(|&l| {
                warp.exists & (1 << l) != 0
                    && block.threads[(warp.first_thread + l) as usize].state.get() == State::Warp
            })
            .collect();
        let Some(&first) = waiting.first() else {
            continue;
        };
        let (mask, _) = warp.pending[first as usize].get().unwrap_or((0, 0));
        let missing: Vec<u32> = (0..WARP_SIZE)
            .filter(|l| mask & (1 << l) != 0 && !waiting.contains(l))
            .collect();
        let gone = warp.exists & !warp.live_lanes(block);
        if !out.is_empty() {
            out.push_str("; ");
        }
        let site = block.threads[(warp.first_thread + first) as usize]
            .site
            .get();
        let _ = write!(
            out,
            "lanes {} of warp {w} wait in a warp collective at {} with mask {mask:#010x}, \
             which lanes {} never join",
            ranges(&waiting),
            site_text(site),
            ranges(&missing)
        );
        let exited_missing: Vec<u32> = missing
            .iter()
            .copied()
            .filter(|l| gone & (1 << l) != 0)
            .collect();
        if !exited_missing.is_empty() {
            let _ = write!(out, " (lanes {} exited)", ranges(&exited_missing));
        }
    }
    if out.is_empty() {
        out.push_str("no thread can run");
    }
    out
}

/// Which threads are still running and where they last synchronized (for a timeout).
pub(crate) fn describe_running(block: &BlockCtx) -> String {
    let running: Vec<u32> = threads_in(block, |t| t.state.get() == State::Ready);
    match running.first() {
        Some(&t) => std::format!(
            "in block ({}, {}, {}), threads {} are still running (thread {} last synchronized \
             at {}); a spin-wait for a value no thread writes never ends",
            block.block_idx.x,
            block.block_idx.y,
            block.block_idx.z,
            ranges(&running),
            t,
            site_text(block.threads[t as usize].site.get())
        ),
        None => "no thread is running".into(),
    }
}

fn threads_in(block: &BlockCtx, pred: impl Fn(&ThreadCtx) -> bool) -> Vec<u32> {
    block
        .threads
        .iter()
        .filter(|t| pred(t))
        .map(|t| t.linear)
        .collect()
}

fn site_text(site: &Location<'_>) -> String {
    std::format!("{}:{}:{}", site.file(), site.line(), site.column())
}

/// `0..=127, 200, 202..=203` for a sorted list of indices.
pub(crate) fn ranges(items: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < items.len() {
        let start = items[i];
        let mut end = start;
        while i + 1 < items.len() && items[i + 1] == end + 1 {
            i += 1;
            end = items[i];
        }
        if !out.is_empty() {
            out.push_str(", ");
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}..={end}");
        }
        i += 1;
    }
    if out.is_empty() {
        out.push_str("none");
    }
    out
}
