//! Streams (ordered queues of device work) and events (points in a stream, for waiting and timing).

use std::mem::ManuallyDrop;
use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use std::time::Instant;

use crate::device::DeviceKey;
use crate::error::{Error, Result};
use crate::fault::Epoch;

/// An ordered queue of device work. Cheap to clone (shared handle).
///
/// Work submitted to one stream runs in submission order; work on different streams may overlap.
/// Get one from [`crate::Gpu::default_stream`] or [`crate::Gpu::new_stream`].
///
/// On the simulator a stream runs each piece of work to completion when it is submitted.
#[derive(Debug)]
pub struct Stream {
    /// Not dropped when stale: after a device reset the handle may name someone else's stream.
    inner: ManuallyDrop<StreamInner>,
    epoch: Epoch,
}

#[derive(Debug, Clone)]
enum StreamInner {
    Cuda(Arc<CudaStream>),
    /// A simulator stream; the allocation only gives it an identity.
    Sim(Arc<SimStream>),
}

#[derive(Debug)]
struct SimStream {
    /// The simulated device (also keeps the allocation non-empty, so every stream has its own
    /// address).
    ordinal: usize,
    /// Whether this is the device's default stream (which, like CUDA's legacy default stream,
    /// cannot be captured into a graph).
    default: bool,
}

impl Clone for Stream {
    fn clone(&self) -> Stream {
        Stream {
            inner: ManuallyDrop::new((*self.inner).clone()),
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
            inner: ManuallyDrop::new(StreamInner::Cuda(inner)),
            epoch,
        }
    }

    pub(crate) fn new_sim(ordinal: usize, epoch: Epoch) -> Stream {
        Stream::sim(ordinal, false, epoch)
    }

    /// A simulated device's default stream.
    pub(crate) fn new_sim_default(ordinal: usize, epoch: Epoch) -> Stream {
        Stream::sim(ordinal, true, epoch)
    }

    fn sim(ordinal: usize, default: bool, epoch: Epoch) -> Stream {
        Stream {
            inner: ManuallyDrop::new(StreamInner::Sim(Arc::new(SimStream { ordinal, default }))),
            epoch,
        }
    }

    /// Whether this is a device's default stream: CUDA's legacy default stream (the null
    /// handle), or the simulator's stand-in for it.
    pub fn is_default(&self) -> bool {
        match &*self.inner {
            StreamInner::Cuda(s) => s.cu_stream().is_null(),
            StreamInner::Sim(s) => s.default,
        }
    }

    #[inline]
    pub(crate) fn epoch(&self) -> &Epoch {
        &self.epoch
    }

    /// `Ok` when the stream may be used: made since the last recovery, device not poisoned.
    #[inline]
    pub(crate) fn check(&self, what: impl FnOnce() -> String) -> Result<()> {
        self.epoch.check(what)
    }

    /// The device this stream belongs to.
    pub(crate) fn device_key(&self) -> DeviceKey {
        match &*self.inner {
            StreamInner::Cuda(s) => DeviceKey::of_context(s.context()),
            StreamInner::Sim(s) => DeviceKey::Sim { ordinal: s.ordinal },
        }
    }

    /// Whether this stream belongs to the CPU simulator.
    pub fn is_simulator(&self) -> bool {
        matches!(&*self.inner, StreamInner::Sim(_))
    }

    /// The ordinal of the device this stream belongs to (a GPU's, or a simulated device's).
    pub fn device_ordinal(&self) -> usize {
        match &*self.inner {
            StreamInner::Cuda(s) => s.context().ordinal(),
            StreamInner::Sim(s) => s.ordinal,
        }
    }

    /// A number identifying this stream among the live streams of the process (e.g. to key a
    /// per-stream cache): the CUDA stream handle, or the simulator stream's address.
    #[inline]
    pub fn id(&self) -> usize {
        match &*self.inner {
            StreamInner::Cuda(s) => s.cu_stream() as usize,
            StreamInner::Sim(s) => Arc::as_ptr(s) as usize,
        }
    }

    /// Blocks the calling thread until all work submitted to this stream has finished, and
    /// reports errors of that work (e.g. a kernel that panicked: [`crate::Error::KernelPanic`]).
    /// A no-op on the simulator (its work is finished when submitted).
    pub fn synchronize(&self) -> Result<()> {
        let what = || "synchronizing a stream".to_string();
        self.check(what)?;
        crate::graph::refuse_while_capturing(self, what)?;
        if let StreamInner::Cuda(s) = &*self.inner {
            s.synchronize().map_err(self.epoch.driver(what))?;
            self.epoch.state().stream_synchronized(s);
        }
        Ok(())
    }

    /// Records an event at the current end of this stream. The event has timing enabled, so two
    /// of them measure the device time between them ([`Event::elapsed_ms`]). On the simulator
    /// the event is the host time now (all earlier work has finished).
    pub fn record_event(&self) -> Result<Event> {
        let what = || "recording an event on a stream".to_string();
        self.check(what)?;
        crate::graph::refuse_while_capturing(self, what)?;
        let inner = match &*self.inner {
            StreamInner::Cuda(s) => EventInner::Cuda(
                s.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(self.epoch.driver(what))?,
            ),
            StreamInner::Sim(_) => EventInner::Sim(Instant::now()),
        };
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
        crate::graph::refuse_while_capturing(self, what)?;
        event.epoch.check(what)?;
        match (&*self.inner, &*event.inner) {
            (StreamInner::Cuda(s), EventInner::Cuda(e)) => {
                s.wait(e).map_err(self.epoch.driver(what))
            }
            // Simulated work is complete when recorded: nothing to wait for.
            (StreamInner::Sim(_), EventInner::Sim(_)) => Ok(()),
            _ => Err(Error::DeviceMismatch {
                context: format!(
                    "{}: one is on the CPU simulator, the other on a GPU",
                    what()
                ),
            }),
        }
    }

    /// Runs `work` (which submits work to this stream) between two timing events and returns its
    /// result together with the device time the submitted work took, in milliseconds.
    ///
    /// Blocks until the work has finished. The time covers everything queued on this stream
    /// between the two events, so work submitted to *other* streams inside `work` is not
    /// counted unless this stream waits for it. On the simulator it is host wall time.
    pub fn time<R>(&self, work: impl FnOnce(&Stream) -> Result<R>) -> Result<(R, f32)> {
        let start = self.record_event()?;
        let value = work(self)?;
        let end = self.record_event()?;
        let ms = start.elapsed_ms(&end)?;
        Ok((value, ms))
    }

    /// Whether both handles name the same stream.
    pub fn same_as(&self, other: &Stream) -> bool {
        match (&*self.inner, &*other.inner) {
            (StreamInner::Cuda(a), StreamInner::Cuda(b)) => **a == **b,
            (StreamInner::Sim(a), StreamInner::Sim(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// The underlying cudarc stream, for anything this crate does not wrap; `None` on the
    /// simulator.
    #[inline]
    pub fn cuda_stream(&self) -> Option<&Arc<CudaStream>> {
        match &*self.inner {
            StreamInner::Cuda(s) => Some(s),
            StreamInner::Sim(_) => None,
        }
    }
}

/// A point in a stream's work, recorded by [`Stream::record_event`].
#[derive(Debug)]
pub struct Event {
    /// Not dropped when stale (see [`Stream`]).
    inner: ManuallyDrop<EventInner>,
    epoch: Epoch,
}

#[derive(Debug)]
enum EventInner {
    Cuda(CudaEvent),
    /// The host time the event was recorded at (the simulator's work before it had finished).
    Sim(Instant),
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
    /// microsecond. On the simulator: host wall time between the two recordings.
    pub fn elapsed_ms(&self, later: &Event) -> Result<f32> {
        let what = || "measuring the time between two events".to_string();
        self.epoch.check(what)?;
        later.epoch.check(what)?;
        match (&*self.inner, &*later.inner) {
            (EventInner::Cuda(a), EventInner::Cuda(b)) => {
                a.elapsed_ms(b).map_err(self.epoch.driver(what))
            }
            (EventInner::Sim(a), EventInner::Sim(b)) => {
                let ms = if b >= a {
                    b.duration_since(*a).as_secs_f64() * 1e3
                } else {
                    -(a.duration_since(*b).as_secs_f64() * 1e3)
                };
                Ok(ms as f32)
            }
            _ => Err(Error::DeviceMismatch {
                context: format!(
                    "{}: one is on the CPU simulator, the other on a GPU",
                    what()
                ),
            }),
        }
    }

    /// Blocks until the work recorded before this event has finished.
    pub fn synchronize(&self) -> Result<()> {
        let what = || "waiting for an event".to_string();
        self.epoch.check(what)?;
        match &*self.inner {
            EventInner::Cuda(e) => e.synchronize().map_err(self.epoch.driver(what)),
            EventInner::Sim(_) => Ok(()),
        }
    }

    /// Whether the work recorded before this event has finished, without waiting.
    pub fn is_complete(&self) -> Result<bool> {
        let what = || "querying an event".to_string();
        self.epoch.check(what)?;
        match &*self.inner {
            EventInner::Cuda(e) => e.try_is_complete().map_err(self.epoch.driver(what)),
            EventInner::Sim(_) => Ok(true),
        }
    }

    /// The underlying cudarc event; `None` on the simulator.
    pub fn cuda_event(&self) -> Option<&CudaEvent> {
        match &*self.inner {
            EventInner::Cuda(e) => Some(e),
            EventInner::Sim(_) => None,
        }
    }
}
