//! Ordering one buffer's uses across streams, with driver calls only when the stream changes.
//!
//! Work queued on one stream runs in order, so a buffer used on a single stream needs nothing.
//! When a second stream uses it, that stream must first wait for the work already queued on the
//! others that could conflict: a read waits for the last writer, a write waits for the last
//! writer and for every reader since. [`BufferUses`] remembers which streams those are and,
//! only at such a switch, records an event on each of them and makes the new stream wait for it.
//!
//! cudarc's own scheme (per-buffer read and write events) records an event and waits on one
//! for every buffer of every launch once a context has two streams: two driver calls per
//! buffer per launch, about as much host time as the launch itself. `gpu-host` turns it off
//! for every context it creates ([`crate::Gpu::new`]) and orders buffers here instead.
//!
//! # Correctness
//! The event recorded at a switch covers everything queued on the old stream up to that
//! moment, which includes every use of the buffer queued there (a superset is safe). Writes
//! need `&mut DeviceBuffer`, so no read is being queued while a write is ordered; reads only
//! add streams to the state, so a read that took the fast path on its own stream while another
//! thread added a second reader stays recorded. A read also takes the fast path on a stream
//! named by the `reader` hint, which is set under the lock once that stream is among the
//! readers of the current write and cleared (under the lock, with the readers) by the next
//! write: the lock would find nothing to do for it. The state holds the streams (`Arc`), so a
//! stream handle it names is never destroyed and reused while the buffer lives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaStream, DriverError, sys};

/// [`BufferUses::sole`]'s value when more than one stream has queued uses, and
/// [`BufferUses::reader`]'s when no stream is known to have waited for the last write. No
/// stream has this handle (the legacy default stream's is 0).
const SEVERAL: usize = usize::MAX;

/// The streams with queued work that uses one buffer (see the module docs).
pub(crate) struct BufferUses {
    /// The one stream every queued use is on (its handle), or [`SEVERAL`]: the fast path, one
    /// atomic load per buffer per launch.
    sole: AtomicUsize,
    /// A stream among [`Uses::readers`] (its handle), or [`SEVERAL`]: a further read on it
    /// needs nothing either (it waited for the last write already), which is the fast path of
    /// a buffer written on one stream and read on another, e.g. uploaded on the default
    /// stream and read by kernels on a created one.
    reader: AtomicUsize,
    state: Mutex<Uses>,
}

struct Uses {
    /// The stream of the last write (the allocation or upload counts as one).
    writer: Arc<CudaStream>,
    /// Streams that read the buffer since that write; each has waited for it already.
    readers: Vec<Arc<CudaStream>>,
}

fn id(stream: &CudaStream) -> usize {
    stream.cu_stream() as usize
}

/// Makes `stream` wait for the work queued on `other` so far.
fn wait_for(stream: &CudaStream, other: &CudaStream) -> Result<(), DriverError> {
    let event = other.record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
    stream.wait(&event)
}

impl BufferUses {
    /// A buffer whose memory was allocated (or written) by work queued on `stream`.
    pub(crate) fn new(stream: &Arc<CudaStream>) -> BufferUses {
        BufferUses {
            sole: AtomicUsize::new(id(stream)),
            reader: AtomicUsize::new(SEVERAL),
            state: Mutex::new(Uses {
                writer: stream.clone(),
                readers: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Uses> {
        // A panic while holding the lock leaves a consistent state (every field is replaced
        // whole), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Orders a read of the buffer about to be queued on `stream` after the earlier writes.
    #[inline]
    pub(crate) fn before_read(&self, stream: &Arc<CudaStream>) -> Result<(), DriverError> {
        let me = id(stream);
        if self.sole.load(Ordering::Acquire) == me || self.reader.load(Ordering::Acquire) == me {
            return Ok(());
        }
        self.order(stream, false, None)
    }

    /// Orders a write of the buffer about to be queued on `stream` after the earlier reads and
    /// writes. The caller holds the buffer exclusively (`&mut`).
    #[inline]
    pub(crate) fn before_write(&self, stream: &Arc<CudaStream>) -> Result<(), DriverError> {
        if self.sole.load(Ordering::Acquire) == id(stream) {
            return Ok(());
        }
        self.order(stream, true, None)
    }

    /// [`BufferUses::before_read`] or [`BufferUses::before_write`] for a `stream` that has
    /// already waited for everything queued on `covered` (no event is recorded there: during a
    /// graph capture, `covered` is the capturing stream, where recording would be captured).
    pub(crate) fn before_use_covering(
        &self,
        stream: &Arc<CudaStream>,
        write: bool,
        covered: &CudaStream,
    ) -> Result<(), DriverError> {
        self.order(stream, write, Some(id(covered)))
    }

    /// The ordering itself, under the lock; the callers' fast paths return before it when
    /// `stream` needs nothing (every use on it, or for a read, a reader since the last write).
    #[inline(never)]
    fn order(
        &self,
        stream: &Arc<CudaStream>,
        write: bool,
        covered: Option<usize>,
    ) -> Result<(), DriverError> {
        let me = id(stream);
        if self.sole.load(Ordering::Acquire) == me {
            return Ok(());
        }
        let must_wait = |other: &CudaStream| id(other) != me && Some(id(other)) != covered;
        let mut uses = self.lock();
        // A reader of the current write has waited for it already.
        let synced = uses.readers.iter().any(|r| id(r) == me);
        if !synced && must_wait(&uses.writer) {
            wait_for(stream, &uses.writer)?;
        }
        if write {
            for r in uses.readers.iter().filter(|r| must_wait(r)) {
                wait_for(stream, r)?;
            }
            uses.readers.clear();
            uses.writer = stream.clone();
            self.reader.store(SEVERAL, Ordering::Release);
        } else {
            if !synced {
                uses.readers.push(stream.clone());
            }
            self.reader.store(me, Ordering::Release);
        }
        self.sole.store(uses.sole(), Ordering::Release);
        Ok(())
    }
}

impl Uses {
    /// The stream every queued use is on, or [`SEVERAL`].
    fn sole(&self) -> usize {
        let w = id(&self.writer);
        if self.readers.iter().all(|r| id(r) == w) {
            w
        } else {
            SEVERAL
        }
    }
}
