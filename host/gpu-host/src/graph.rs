//! CUDA graphs: the kernel launches a closure makes on a stream, recorded once and replayed
//! with one call.
//!
//! Each `cuLaunchKernel` costs the host a few microseconds; a replayed graph hands the driver
//! all its kernels at once, which is what makes loops of small kernels fast. [`Stream::capture`]
//! runs a closure with the stream in capture mode: every launch on that stream (through a
//! generated launcher or [`crate::KernelLaunch`], unchanged) is recorded instead of run.
//! [`Graph::launch`] replays the recording, [`Graph::update`] records the same kernels with new
//! arguments (other buffers, scalars, launch shapes) into the existing executable graph.
//!
//! On a GPU this is CUDA stream capture (`cuStreamBeginCapture` in thread-local mode,
//! `cuStreamEndCapture`, `cuGraphInstantiate`, `cuGraphLaunch`, `cuGraphExecUpdate`). On the
//! CPU simulator, launches under capture are recorded and a replay runs them in order.
//!
//! # What the closure may do
//! Launch kernels on the captured stream. Not allowed while capturing, each refused with
//! [`Error::Capture`] (and the capture then fails): synchronizing the stream, recording or
//! waiting on events on it, the first load of a kernel's code (generated modules load a
//! kernel on its first launch: call [`crate::Module::load_all`], or launch once, before
//! capturing), a nested capture. Copies on the captured stream are refused by the driver
//! (the capture is then reported as invalidated). The device's default stream cannot be
//! captured: capture a stream from [`crate::Gpu::new_stream`]. Only the calling thread's
//! launches are recorded: other threads must not launch on the stream during the capture.
//! Nor may any thread synchronize the device while a capture is in progress (the driver refuses
//! a context-wide synchronization then, and the first [`crate::Gpu::new_stream`] of a device does
//! one): that call fails with the driver's `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`.
//!
//! # Buffers
//! A graph stores the addresses of the buffers its launches used. So that they stay valid,
//! the graph borrows them: [`Stream::capture`] takes a closure that lives for the graph's
//! lifetime `'a`, and the buffers it borrows (outputs mutably) stay borrowed until the graph
//! is dropped. Dropping a graph waits for its replays to finish, so the buffers can be read
//! right after. A replay runs after the work queued before it on the stream it is launched on,
//! and after the writes to its buffers queued (on any stream) before the capture; while the
//! graph lives, nothing else can write them.

use std::cell::RefCell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, DriverError, result, sys};

use crate::error::{Error, Result};
use crate::launch::{LaunchConfig, sim_fault_error};
use crate::module::SimEntry;
use crate::stream::Stream;

thread_local! {
    /// The capture in progress on this thread, if any (captures are thread-local, as CUDA's
    /// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`).
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// What a capture has recorded so far.
struct Recording {
    /// [`Stream::id`] of the captured stream.
    stream: usize,
    nodes: Vec<Node>,
    /// The launches themselves, on the simulator.
    sim: Vec<SimOp>,
    /// The first operation refused during the capture: the capture fails with it even if the
    /// closure ignored the error.
    refused: Option<(String, String)>,
}

/// One kernel launch in a graph, for checking updates and for error messages.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub(crate) kernel: String,
    pub(crate) module: String,
    /// Sizes of the pushed PTX parameters.
    pub(crate) params: Vec<usize>,
    pub(crate) cfg: LaunchConfig,
}

/// A recorded launch on the simulator: everything needed to run it again.
pub(crate) struct SimOp {
    pub(crate) kernel: String,
    pub(crate) entry: SimEntry,
    pub(crate) cfg: LaunchConfig,
    /// Each parameter's bytes, in 16-byte aligned storage (as the launch path keeps them).
    pub(crate) params: Vec<Box<[u128]>>,
}

impl SimOp {
    /// Copies `bytes` into 16-byte aligned storage.
    pub(crate) fn param(bytes: &[u8]) -> Box<[u128]> {
        let mut words = vec![0u128; bytes.len().div_ceil(16).max(1)].into_boxed_slice();
        // SAFETY: `words` holds at least `bytes.len()` bytes; u128 has no invalid bit patterns
        // and the regions do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                words.as_mut_ptr().cast::<u8>(),
                bytes.len(),
            )
        };
        words
    }
}

/// Whether `stream` is being captured on this thread (its launches are recorded, not run).
pub(crate) fn capturing(stream: &Stream) -> bool {
    RECORDING.with(|r| {
        r.borrow()
            .as_ref()
            .is_some_and(|rec| rec.stream == stream.id())
    })
}

fn capturing_on_this_thread() -> bool {
    RECORDING.with(|r| r.borrow().is_some())
}

/// Remembers a refused operation so the capture fails with it; returns the error.
fn refuse(context: String, message: String) -> Error {
    RECORDING.with(|r| {
        if let Some(rec) = r.borrow_mut().as_mut()
            && rec.refused.is_none()
        {
            rec.refused = Some((context.clone(), message.clone()));
        }
    });
    Error::Capture { context, message }
}

/// [`Error::Capture`] when `stream` is being captured: for operations CUDA does not allow on a
/// capturing stream (synchronizing, events).
pub(crate) fn refuse_while_capturing(stream: &Stream, what: impl FnOnce() -> String) -> Result<()> {
    if !capturing(stream) {
        return Ok(());
    }
    Err(refuse(
        what(),
        "the stream is being captured into a graph (Stream::capture): its work is recorded, not \
         run, so it cannot be waited for or timed inside the capture; do it after the capture \
         (on the graph's replays)"
            .to_string(),
    ))
}

/// [`Error::Capture`] when a capture is in progress on this thread: loading a kernel's code
/// copies to the device and may compile, which CUDA does not allow while capturing.
pub(crate) fn refuse_load_while_capturing(module: &str, kernels: &[&str]) -> Result<()> {
    if !capturing_on_this_thread() {
        return Ok(());
    }
    Err(refuse(
        format!("loading kernels {kernels:?} of module `{module}`"),
        "a stream is being captured into a graph on this thread, and a kernel's first load is \
         not allowed during a capture: call Module::load_all() (or launch the kernel once) \
         before Stream::capture"
            .to_string(),
    ))
}

/// Adds a launch to the capture of `stream`.
pub(crate) fn record(node: Node, sim: Option<SimOp>) {
    RECORDING.with(|r| {
        if let Some(rec) = r.borrow_mut().as_mut() {
            rec.nodes.push(node);
            rec.sim.extend(sim);
        }
    });
}

/// A recorded sequence of kernel launches that can be replayed ([`Graph::launch`]) and given
/// new arguments ([`Graph::update`]); made by [`Stream::capture`]. See the [module
/// docs](crate::graph) for what a capture may contain and how buffers are kept alive.
///
/// `'a` is the lifetime of what the capture closure borrowed (its buffers): they stay borrowed
/// while the graph lives. Dropping the graph waits for its replays to finish.
pub struct Graph<'a> {
    stream: Stream,
    nodes: Vec<Node>,
    inner: ManuallyDrop<Inner>,
    /// Streams the graph was replayed on, synchronized when it is dropped.
    launched_on: RefCell<Vec<Stream>>,
    /// "graph of N kernels (first, ...)", for the fault report of in-flight work.
    summary: String,
    /// `summary`'s id in the device's launch log.
    log_id: u32,
    _borrows: PhantomData<&'a mut ()>,
}

enum Inner {
    Cuda(CudaGraph),
    Sim(Vec<SimOp>),
}

/// An executable CUDA graph and the graph it was instantiated (or last updated) from.
struct CudaGraph {
    ctx: Arc<CudaContext>,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    /// Completes once the work that wrote the graph's buffers before the capture has: every
    /// replay waits for it (see [`buffers_ready`]).
    ready: CudaEvent,
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("stream", &self.stream.id())
            .field("kernels", &self.kernels().collect::<Vec<_>>())
            .field("simulator", &matches!(&*self.inner, Inner::Sim(_)))
            .finish()
    }
}

/// What one capture produced.
struct Captured {
    nodes: Vec<Node>,
    inner: CapturedInner,
}

enum CapturedInner {
    /// A CUDA graph (not instantiated), owned, and its buffers' readiness event.
    Cuda(sys::CUgraph, CudaEvent),
    Sim(Vec<SimOp>),
}

/// Ends the capture of the thread (clearing its recording and, on a GPU, the stream's capture
/// mode) when dropped without [`CaptureGuard::finish`]: a closure that panics leaves the stream
/// usable.
struct CaptureGuard<'s> {
    stream: &'s Stream,
    done: bool,
}

impl CaptureGuard<'_> {
    /// The recording, and on a GPU the captured graph (or why the driver refused it).
    fn finish(
        &mut self,
    ) -> (
        Option<Recording>,
        Option<std::result::Result<sys::CUgraph, DriverError>>,
    ) {
        self.done = true;
        let recording = RECORDING.with(|r| r.borrow_mut().take());
        let graph = self.stream.cuda_stream().map(|s| {
            // SAFETY: the stream is alive (borrowed) and was put in capture mode by this thread.
            unsafe { result::stream::end_capture(s.cu_stream()) }
        });
        (recording, graph)
    }
}

impl Drop for CaptureGuard<'_> {
    fn drop(&mut self) {
        if !self.done
            && let (_, Some(Ok(graph))) = self.finish()
            && !graph.is_null()
        {
            // SAFETY: the graph was just returned by end_capture and is owned here.
            let _ = unsafe { result::graph::destroy(graph) };
        }
    }
}

fn destroy_graph(graph: sys::CUgraph) {
    if !graph.is_null() {
        // SAFETY: callers pass a graph they own and do not use afterwards.
        let _ = unsafe { result::graph::destroy(graph) };
    }
}

/// An event on the context's legacy default stream, recorded after a capture.
///
/// While capturing, each launch ordered that stream after its buffers' last writes on any
/// stream (and, for outputs, their reads; see `buffer_uses`); buffers from
/// `Gpu::to_device` were also written there. So the event completes once everything the
/// graph reads was written, and a replay that waits for it cannot race those writes. Later
/// writes to the graph's buffers cannot be queued while the graph borrows them.
fn buffers_ready(stream: &Stream) -> std::result::Result<CudaEvent, DriverError> {
    let s = stream
        .cuda_stream()
        .expect("only CUDA captures make CUDA graphs");
    s.context()
        .default_stream()
        .record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
}

/// Runs `work` with `stream` in capture mode and returns what it launched.
fn capture_into(stream: &Stream, work: impl FnOnce(&Stream) -> Result<()>) -> Result<Captured> {
    let what = || format!("capturing stream {:#x} into a graph", stream.id());
    stream.check(what)?;
    if stream.is_default() {
        return Err(Error::Capture {
            context: what(),
            message: "the device's default stream cannot be captured (on a GPU it is CUDA's \
                      legacy default stream, which synchronizes with every other stream): \
                      capture a stream from Gpu::new_stream()"
                .to_string(),
        });
    }
    if capturing_on_this_thread() {
        return Err(Error::Capture {
            context: what(),
            message: "another capture is in progress on this thread; captures do not nest"
                .to_string(),
        });
    }
    if let Some(s) = stream.cuda_stream() {
        s.context()
            .bind_to_thread()
            .map_err(stream.epoch().driver(what))?;
        // The legacy stream (which a replay waits on, see `buffers_ready`) waits for the work
        // queued on the captured stream before the capture: the launches recorded below order
        // their buffers' uses there without recording events on the capturing stream.
        s.context()
            .default_stream()
            .join(s)
            .map_err(stream.epoch().driver(what))?;
        // SAFETY: the stream is alive (borrowed) and belongs to the context just made current.
        unsafe {
            result::stream::begin_capture(
                s.cu_stream(),
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        }
        .map_err(stream.epoch().driver(what))?;
    }
    RECORDING.with(|r| {
        *r.borrow_mut() = Some(Recording {
            stream: stream.id(),
            nodes: Vec::new(),
            sim: Vec::new(),
            refused: None,
        })
    });
    let mut guard = CaptureGuard {
        stream,
        done: false,
    };
    let outcome = work(stream);
    let (recording, graph) = guard.finish();
    let recording = recording.expect("the recording is only taken by the guard");
    let fail = |e: Error| {
        if let Some(Ok(g)) = graph {
            destroy_graph(g);
        }
        Err(e)
    };
    if let Err(e) = outcome {
        return fail(e);
    }
    if let Some((context, message)) = recording.refused {
        return fail(Error::Capture { context, message });
    }
    let inner = match graph {
        None => CapturedInner::Sim(recording.sim),
        Some(Ok(g)) => match buffers_ready(stream) {
            Ok(ready) => CapturedInner::Cuda(g, ready),
            Err(e) => {
                destroy_graph(g);
                return Err(stream.epoch().driver(what)(e));
            }
        },
        Some(Err(e)) => {
            let message = match e.0 {
                sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                | sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED => format!(
                    "the driver invalidated the capture ({:?}): the closure did something \
                     not allowed while capturing (a copy or allocation on the captured \
                     stream, a synchronous call); only kernel launches may be captured",
                    e.0
                ),
                code => format!("the driver could not end the capture ({code:?})"),
            };
            return Err(Error::Capture {
                context: what(),
                message,
            });
        }
    };
    Ok(Captured {
        nodes: recording.nodes,
        inner,
    })
}

impl Stream {
    /// Records the kernel launches `work` makes on this stream into a [`Graph`] instead of
    /// running them; [`Graph::launch`] replays them. See the [module docs](crate::graph).
    ///
    /// Errors ([`Error::Capture`]; nothing is recorded): the device's default stream, a
    /// capture already in progress on this thread, an operation `work` made that is not
    /// allowed while capturing (even if `work` ignored its error), a kernel's first load.
    /// An error `work` returns is returned as is.
    pub fn capture<'a, F>(&self, work: F) -> Result<Graph<'a>>
    where
        F: FnOnce(&Stream) -> Result<()> + 'a,
    {
        let captured = capture_into(self, work)?;
        let inner = match captured.inner {
            CapturedInner::Sim(ops) => Inner::Sim(ops),
            CapturedInner::Cuda(graph, ready) => {
                let s = self
                    .cuda_stream()
                    .expect("a CUDA graph comes from a CUDA stream");
                let what = || {
                    format!(
                        "instantiating the graph of {} kernels captured on stream {:#x}",
                        captured.nodes.len(),
                        self.id()
                    )
                };
                // SAFETY: `graph` is a valid graph returned by end_capture, owned here.
                let exec = match unsafe {
                    result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0))
                } {
                    Ok(exec) => exec,
                    Err(e) => {
                        destroy_graph(graph);
                        return Err(self.epoch().driver(what)(e));
                    }
                };
                Inner::Cuda(CudaGraph {
                    ctx: s.context().clone(),
                    graph,
                    exec,
                    ready,
                })
            }
        };
        let summary = summarize(&captured.nodes);
        let log_id = self.epoch().state().log.intern(&summary);
        Ok(Graph {
            stream: self.clone(),
            nodes: captured.nodes,
            inner: ManuallyDrop::new(inner),
            launched_on: RefCell::new(Vec::new()),
            summary,
            log_id,
            _borrows: PhantomData,
        })
    }
}

fn summarize(nodes: &[Node]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for n in nodes {
        if !names.contains(&n.kernel.as_str()) {
            names.push(&n.kernel);
        }
    }
    format!("graph of {} kernels ({})", nodes.len(), names.join(", "))
}

impl<'a> Graph<'a> {
    /// Replays the graph on the stream it was captured on (asynchronously, like a launch).
    pub fn launch(&self) -> Result<()> {
        self.launch_on(&self.stream)
    }

    /// Replays the graph on `stream`, which must belong to the graph's device
    /// ([`Error::DeviceMismatch`] otherwise) and not be under capture.
    ///
    /// Errors a kernel hits surface at the next synchronization, as for launches; on the
    /// simulator the replay runs to completion and returns them.
    pub fn launch_on(&self, stream: &Stream) -> Result<()> {
        let what = || format!("launching a {}", self.summary);
        stream.check(what)?;
        self.stream.check(what)?;
        if stream.device_key() != self.stream.device_key() {
            return Err(Error::DeviceMismatch {
                context: format!(
                    "{}: the graph was captured on {}, the launch stream belongs to {}",
                    what(),
                    self.stream.device_key(),
                    stream.device_key()
                ),
            });
        }
        if capturing_on_this_thread() {
            return Err(refuse(
                what(),
                "a capture is in progress on this thread; graphs are launched outside captures"
                    .to_string(),
            ));
        }
        {
            let mut on = self.launched_on.borrow_mut();
            if !on.iter().any(|s| s.same_as(stream)) {
                on.push(stream.clone());
            }
        }
        match (&*self.inner, stream.cuda_stream()) {
            (Inner::Cuda(g), Some(s)) => {
                g.ctx
                    .bind_to_thread()
                    .map_err(stream.epoch().driver(what))?;
                s.wait(&g.ready).map_err(stream.epoch().driver(what))?;
                // SAFETY: the exec graph is alive (owned by `self`) and belongs to the stream's
                // context (same device key); the buffers its kernels use are borrowed for 'a.
                unsafe { result::graph::launch(g.exec, s.cu_stream()) }
                    .map_err(stream.epoch().driver(what))?;
                if let Some(first) = self.nodes.first() {
                    stream.epoch().state().launched(self.log_id, s, &first.cfg);
                }
                Ok(())
            }
            (Inner::Sim(ops), None) => ops.iter().try_for_each(replay_sim),
            _ => unreachable!("the stream and the graph share a device"),
        }
    }

    /// Records `work` (the same kernels, in the same order, as the graph's capture, with new
    /// arguments: other buffers, scalars, launch shapes) and makes the graph's replays use it,
    /// without instantiating a new graph (`cuGraphExecUpdate`).
    ///
    /// Errors ([`Error::Capture`]; the graph is unchanged): those of [`Stream::capture`], a
    /// different number of launches, a launch of another kernel or with another parameter
    /// list than the graph's at the same position, or an update the driver refuses.
    pub fn update<F>(&mut self, work: F) -> Result<()>
    where
        F: FnOnce(&Stream) -> Result<()> + 'a,
    {
        let what = || format!("updating a {}", self.summary);
        let captured = capture_into(&self.stream, work)?;
        let discard = |inner: CapturedInner| {
            if let CapturedInner::Cuda(g, _) = inner {
                destroy_graph(g);
            }
        };
        if let Err(message) = same_kernels(&self.nodes, &captured.nodes) {
            discard(captured.inner);
            return Err(Error::Capture {
                context: what(),
                message,
            });
        }
        match (&mut *self.inner, captured.inner) {
            (Inner::Cuda(g), CapturedInner::Cuda(new, ready)) => {
                // SAFETY: an all-zero result info is a valid out-parameter.
                let mut info: sys::CUgraphExecUpdateResultInfo = unsafe { std::mem::zeroed() };
                // SAFETY: `g.exec` is alive and owned by `self`; `new` is a valid graph owned
                // here; `info` is valid for writes.
                let status = unsafe { sys::cuGraphExecUpdate_v2(g.exec, new, &mut info) };
                if status != sys::CUresult::CUDA_SUCCESS {
                    destroy_graph(new);
                    return Err(Error::Capture {
                        context: what(),
                        message: format!(
                            "the driver refused the update ({status:?}: {:?}); capture a new \
                             graph instead",
                            info.result
                        ),
                    });
                }
                destroy_graph(std::mem::replace(&mut g.graph, new));
                g.ready = ready;
            }
            (Inner::Sim(ops), CapturedInner::Sim(new)) => *ops = new,
            _ => unreachable!("a graph is updated on the stream it was captured on"),
        }
        self.nodes = captured.nodes;
        Ok(())
    }

    /// Number of kernel launches in the graph.
    pub fn kernel_count(&self) -> usize {
        self.nodes.len()
    }

    /// The kernels the graph launches, in order.
    pub fn kernels(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.kernel.as_str())
    }

    /// The stream the graph was captured on (where [`Graph::launch`] replays it).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }
}

/// `Err` with a message when `new` does not launch the same kernels as `old`.
fn same_kernels(old: &[Node], new: &[Node]) -> std::result::Result<(), String> {
    if old.len() != new.len() {
        return Err(format!(
            "the graph has {} kernel launches, the update made {}: an update may change \
             arguments and launch shapes, not which kernels run; capture a new graph instead",
            old.len(),
            new.len()
        ));
    }
    for (i, (o, n)) in old.iter().zip(new).enumerate() {
        if o.kernel != n.kernel || o.module != n.module {
            return Err(format!(
                "launch {i}: the graph launches kernel `{}` (module `{}`) there, the update \
                 `{}` (module `{}`): an update may change arguments and launch shapes, not \
                 which kernels run; capture a new graph instead",
                o.kernel, o.module, n.kernel, n.module
            ));
        }
        if o.params != n.params {
            return Err(format!(
                "launch {i}: kernel `{}` was captured with PTX parameters of sizes {:?}, the \
                 update pushes {:?}",
                o.kernel, o.params, n.params
            ));
        }
    }
    Ok(())
}

/// Runs one recorded simulator launch.
fn replay_sim(op: &SimOp) -> Result<()> {
    let pointers: Vec<*mut c_void> = op
        .params
        .iter()
        .map(|p| p.as_ptr().cast_mut().cast::<c_void>())
        .collect();
    let launch = gpu::sim::Launch {
        kernel: &op.kernel,
        entry: op.entry,
        grid: op.cfg.grid,
        block: op.cfg.block,
        dynamic_shared_bytes: op.cfg.shared_mem_bytes,
        params: &pointers,
    };
    // SAFETY: the parameters were pushed by a launch whose caller promised they match the
    // kernel's signature; the buffer addresses among them stay valid because the graph
    // borrows the buffers for its lifetime; the kernel reads its parameters and does not
    // write through these pointers (it gets them as by-value parameters).
    unsafe { gpu::sim::launch(&launch) }.map_err(|fault| sim_fault_error(fault, &op.cfg))
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        // The buffers the graph borrows are released when it is gone: wait for its replays.
        for s in self.launched_on.get_mut().drain(..) {
            let _ = s.synchronize();
        }
        if self.stream.epoch().is_stale() {
            // After a device reset the handles may name someone else's objects: leak them.
            return;
        }
        // SAFETY: dropped once, here; `inner` is not used afterwards.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        if let Inner::Cuda(g) = inner {
            let _ = g.ctx.bind_to_thread();
            // SAFETY: both handles are owned by this graph, and its replays have finished.
            let _ = unsafe { result::graph::exec_destroy(g.exec) };
            destroy_graph(g.graph);
        }
    }
}
