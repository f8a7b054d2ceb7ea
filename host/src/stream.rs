//! Streams (ordered queues of device work) and events (points in a stream, for waiting and timing).

use std::mem::ManuallyDrop;
use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use crate::error::Result;
use crate::fault::Epoch;

/// An ordered queue of device work. Cheap to clone (shared handle).
///
/// Work submitted to one stream runs in submission order; work on different streams may overlap.
/// Get one from [`crate::Gpu::default_stream`] or [`crate::Gpu::new_stream`].
#[derive(Debug)]
pub struct Stream {
    /// Not dropped when stale: after a device reset the handle may name someone else's stream.
    inner: ManuallyDrop<Arc<CudaStream>>,
    epoch: Epoch,
}

impl Clone for Stream {
    fn clone(&self) -> Stream {
        Stream {
            inner: ManuallyDrop::new(Arc::clone(&self.inner)),
            epoch: self.epoch.clone(),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if !self.epoch.is_stale() {
            // SAFETY: dropped once, here; `inner` is not used afterwards.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
        }
    }
}

impl Stream {
    pub(crate) fn from_cuda(inner: Arc<CudaStream>, epoch: Epoch) -> Stream {
        Stream {
            inner: ManuallyDrop::new(inner),
            epoch,
        }
    }

    pub(crate) fn epoch(&self) -> &Epoch {
        &self.epoch
    }

    /// `Ok` when the stream may be used: made since the last recovery, device not poisoned.
    pub(crate) fn check(&self, what: impl FnOnce() -> String) -> Result<()> {
        self.epoch.check(what)
    }

    /// Blocks the calling thread until all work submitted to this stream has finished, and
    /// reports errors of that work (e.g. a kernel that panicked: [`crate::Error::KernelPanic`]).
    pub fn synchronize(&self) -> Result<()> {
        let what = || "synchronizing a stream".to_string();
        self.check(what)?;
        self.inner.synchronize().map_err(self.epoch.driver(what))?;
        self.epoch.state().stream_synchronized(&self.inner);
        Ok(())
    }

    /// Records an event at the current end of this stream. The event has timing enabled, so two
    /// of them measure the device time between them ([`Event::elapsed_ms`]).
    pub fn record_event(&self) -> Result<Event> {
        let what = || "recording an event on a stream".to_string();
        self.check(what)?;
        let inner = self
            .inner
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(self.epoch.driver(what))?;
        Ok(Event {
            inner: ManuallyDrop::new(inner),
            epoch: self.epoch.clone(),
        })
    }

    /// Makes all later work on this stream wait until `event` has completed (without blocking
    /// the host).
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let what = || "making a stream wait on an event".to_string();
        self.check(what)?;
        event.epoch.check(what)?;
        self.inner
            .wait(&event.inner)
            .map_err(self.epoch.driver(what))
    }

    /// Runs `work` (which submits work to this stream) between two timing events and returns its
    /// result together with the device time the submitted work took, in milliseconds.
    ///
    /// Blocks until the work has finished. The time covers everything queued on this stream
    /// between the two events, so work submitted to *other* streams inside `work` is not
    /// counted unless this stream waits for it.
    pub fn time<R>(&self, work: impl FnOnce(&Stream) -> Result<R>) -> Result<(R, f32)> {
        let start = self.record_event()?;
        let value = work(self)?;
        let end = self.record_event()?;
        let ms = start.elapsed_ms(&end)?;
        Ok((value, ms))
    }

    /// Whether both handles name the same CUDA stream.
    pub fn same_as(&self, other: &Stream) -> bool {
        *self.inner == *other.inner
    }

    /// The underlying cudarc stream, for anything this crate does not wrap.
    pub fn cuda_stream(&self) -> &Arc<CudaStream> {
        &self.inner
    }
}

/// A point in a stream's work, recorded by [`Stream::record_event`].
#[derive(Debug)]
pub struct Event {
    /// Not dropped when stale (see [`Stream`]).
    inner: ManuallyDrop<CudaEvent>,
    epoch: Epoch,
}

impl Drop for Event {
    fn drop(&mut self) {
        if !self.epoch.is_stale() {
            // SAFETY: dropped once, here; `inner` is not used afterwards.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
        }
    }
}

impl Event {
    /// Device time in milliseconds from `self` to `later` (both must have been recorded by
    /// [`Stream::record_event`]). Waits for both events to complete. Resolution is about half a
    /// microsecond.
    pub fn elapsed_ms(&self, later: &Event) -> Result<f32> {
        let what = || "measuring the time between two events".to_string();
        self.epoch.check(what)?;
        later.epoch.check(what)?;
        self.inner
            .elapsed_ms(&later.inner)
            .map_err(self.epoch.driver(what))
    }

    /// Blocks until the work recorded before this event has finished.
    pub fn synchronize(&self) -> Result<()> {
        let what = || "waiting for an event".to_string();
        self.epoch.check(what)?;
        self.inner.synchronize().map_err(self.epoch.driver(what))
    }

    /// Whether the work recorded before this event has finished, without waiting.
    pub fn is_complete(&self) -> Result<bool> {
        let what = || "querying an event".to_string();
        self.epoch.check(what)?;
        self.inner
            .try_is_complete()
            .map_err(self.epoch.driver(what))
    }

    /// The underlying cudarc event.
    pub fn cuda_event(&self) -> &CudaEvent {
        &self.inner
    }
}
