//! The launches of one device that no synchronization has confirmed yet, for naming the kernel
//! behind a fault that the driver reports later (faults surface at the next synchronizing call,
//! not at the launch).
//!
//! Every launch writes one entry, so recording costs a handful of relaxed atomic stores: a ring
//! of [`CAPACITY`] slots, each guarded by a sequence number (a seqlock), with kernel names
//! interned once when a kernel is loaded. Reading happens only when a fault is reported. The
//! log is diagnostic: an entry overwritten or cleared while read is skipped, never trusted.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex};

use crate::launch::LaunchConfig;

/// Launches remembered; older unsynchronized ones are forgotten (and the fault report says so).
pub(crate) const CAPACITY: usize = 64;

/// A slot's `kernel` when it holds no unsynchronized launch.
const EMPTY: u32 = u32::MAX;

/// One remembered launch, as read back.
pub(crate) struct Logged {
    pub(crate) kernel: Arc<str>,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
}

#[derive(Default)]
struct Slot {
    /// Odd while being written; `2 n + 2` once launch `n` is written.
    seq: AtomicU64,
    kernel: AtomicU32,
    stream: AtomicUsize,
    grid: [AtomicU32; 3],
    block: [AtomicU32; 3],
}

pub(crate) struct LaunchLog {
    /// Launches recorded so far.
    next: AtomicU64,
    /// `next` when every stream was last synchronized (or the log cleared).
    synced_at: AtomicU64,
    slots: Box<[Slot]>,
    /// Interned kernel names; an id is an index.
    names: Mutex<Vec<Arc<str>>>,
}

impl LaunchLog {
    pub(crate) fn new() -> LaunchLog {
        let slots: Box<[Slot]> = (0..CAPACITY).map(|_| Slot::default()).collect();
        for s in &slots {
            s.kernel.store(EMPTY, Ordering::Relaxed);
        }
        LaunchLog {
            next: AtomicU64::new(0),
            synced_at: AtomicU64::new(0),
            slots,
            names: Mutex::new(Vec::new()),
        }
    }

    fn names(&self) -> std::sync::MutexGuard<'_, Vec<Arc<str>>> {
        // Appends only: a poisoned lock still holds a valid list.
        self.names.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The id under which launches of `name` are recorded (the same for the same name).
    pub(crate) fn intern(&self, name: &str) -> u32 {
        let mut names = self.names();
        if let Some(i) = names.iter().position(|n| &**n == name) {
            return i as u32;
        }
        names.push(Arc::from(name));
        // Ids stay below `EMPTY`: a process does not load four billion distinct kernel names.
        (names.len() - 1).min(EMPTY as usize - 1) as u32
    }

    /// Remembers a submitted launch of kernel `id` on stream `stream` (a [`crate::Stream::id`]).
    pub(crate) fn record(&self, id: u32, stream: usize, cfg: &LaunchConfig) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = &self.slots[(n % CAPACITY as u64) as usize];
        slot.seq.store(2 * n + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        slot.stream.store(stream, Ordering::Relaxed);
        for (a, v) in slot.grid.iter().zip([cfg.grid.x, cfg.grid.y, cfg.grid.z]) {
            a.store(v, Ordering::Relaxed);
        }
        for (a, v) in slot
            .block
            .iter()
            .zip([cfg.block.x, cfg.block.y, cfg.block.z])
        {
            a.store(v, Ordering::Relaxed);
        }
        slot.kernel.store(id, Ordering::Relaxed);
        slot.seq.store(2 * n + 2, Ordering::Release);
    }

    /// Every launch on `stream` so far has finished without error.
    pub(crate) fn stream_synchronized(&self, stream: usize) {
        for s in self.slots.iter() {
            if s.stream.load(Ordering::Relaxed) == stream {
                s.kernel.store(EMPTY, Ordering::Relaxed);
            }
        }
    }

    /// Every launch so far has finished (or the device was reset).
    pub(crate) fn clear(&self) {
        self.synced_at
            .store(self.next.load(Ordering::Relaxed), Ordering::Relaxed);
        for s in self.slots.iter() {
            s.kernel.store(EMPTY, Ordering::Relaxed);
        }
    }

    /// The remembered unsynchronized launches, oldest first, and whether older ones may have
    /// been forgotten (more than [`CAPACITY`] launches since the last device-wide sync).
    pub(crate) fn pending(&self) -> (Vec<Logged>, bool) {
        let names = self.names();
        let next = self.next.load(Ordering::Acquire);
        let forgotten = next - self.synced_at.load(Ordering::Relaxed) > CAPACITY as u64;
        let mut out = Vec::new();
        for n in next.saturating_sub(CAPACITY as u64)..next {
            let slot = &self.slots[(n % CAPACITY as u64) as usize];
            let before = slot.seq.load(Ordering::Acquire);
            let kernel = slot.kernel.load(Ordering::Relaxed);
            let grid = slot.grid.each_ref().map(|a| a.load(Ordering::Relaxed));
            let block = slot.block.each_ref().map(|a| a.load(Ordering::Relaxed));
            fence(Ordering::Acquire);
            if before != 2 * n + 2 || slot.seq.load(Ordering::Relaxed) != before {
                continue;
            }
            if let Some(name) = names.get(kernel as usize) {
                out.push(Logged {
                    kernel: name.clone(),
                    grid,
                    block,
                });
            }
        }
        (out, forgotten)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_last_launches_until_synchronized() {
        let log = LaunchLog::new();
        let (a, b) = (log.intern("a"), log.intern("b"));
        assert_eq!(log.intern("a"), a);
        let cfg = LaunchConfig::new(4, 32);
        log.record(a, 1, &cfg);
        log.record(b, 2, &cfg);
        let (pending, forgotten) = log.pending();
        let names: Vec<&str> = pending.iter().map(|l| &*l.kernel).collect();
        assert_eq!((names, forgotten), (vec!["a", "b"], false));
        assert_eq!((pending[0].grid, pending[0].block), ([4, 1, 1], [32, 1, 1]));
        log.stream_synchronized(1);
        assert_eq!(log.pending().0.len(), 1);
        for _ in 0..CAPACITY + 1 {
            log.record(a, 3, &cfg);
        }
        let (pending, forgotten) = log.pending();
        assert_eq!((pending.len(), forgotten), (CAPACITY, true));
        log.clear();
        assert_eq!(log.pending().0.len(), 0);
        assert!(!log.pending().1);
    }
}
