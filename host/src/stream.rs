//! Streams (ordered queues of device work) and events (points in a stream, for waiting and timing).

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use crate::error::{Error, Result};

/// An ordered queue of device work. Cheap to clone (shared handle).
///
/// Work submitted to one stream runs in submission order; work on different streams may overlap.
/// Get one from [`crate::Gpu::default_stream`] or [`crate::Gpu::new_stream`].
#[derive(Clone, Debug)]
pub struct Stream {
    inner: Arc<CudaStream>,
}

impl Stream {
    pub(crate) fn from_cuda(inner: Arc<CudaStream>) -> Stream {
        Stream { inner }
    }

    /// Blocks the calling thread until all work submitted to this stream has finished, and
    /// reports errors of that work (e.g. a kernel that faulted).
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(Error::driver("synchronizing a stream"))
    }

    /// Records an event at the current end of this stream. The event has timing enabled, so two
    /// of them measure the device time between them ([`Event::elapsed_ms`]).
    pub fn record_event(&self) -> Result<Event> {
        let inner = self
            .inner
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(Error::driver("recording an event on a stream"))?;
        Ok(Event { inner })
    }

    /// Makes all later work on this stream wait until `event` has completed (without blocking
    /// the host).
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        self.inner
            .wait(&event.inner)
            .map_err(Error::driver("making a stream wait on an event"))
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
    inner: CudaEvent,
}

impl Event {
    /// Device time in milliseconds from `self` to `later` (both must have been recorded by
    /// [`Stream::record_event`]). Waits for both events to complete. Resolution is about half a
    /// microsecond.
    pub fn elapsed_ms(&self, later: &Event) -> Result<f32> {
        self.inner
            .elapsed_ms(&later.inner)
            .map_err(Error::driver("measuring the time between two events"))
    }

    /// Blocks until the work recorded before this event has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(Error::driver("waiting for an event"))
    }

    /// Whether the work recorded before this event has finished, without waiting.
    pub fn is_complete(&self) -> Result<bool> {
        self.inner
            .try_is_complete()
            .map_err(Error::driver("querying an event"))
    }

    /// The underlying cudarc event.
    pub fn cuda_event(&self) -> &CudaEvent {
        &self.inner
    }
}
