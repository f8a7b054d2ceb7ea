//! [`Communicator`]: one rank's end of a group of devices that run collectives together.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use gpu_host::{DeviceBuffer, Gpu, Stream};

use crate::element::{CommElement, ReduceOp};
use crate::error::{Error, Result};
use crate::group::Group;
use crate::hub::{Hub, Link, LocalLink, WaitError};
use crate::nccl::{self, CommHandle, Config, IN_PROGRESS, Nccl, SUCCESS, UniqueId};
use crate::tcp;

/// The environment variable giving the default timeout in seconds ([`CommOptions::timeout`]).
pub const TIMEOUT_ENV: &str = "GPU_DIST_TIMEOUT_S";

/// How a communicator behaves when things go wrong.
#[derive(Clone, Debug)]
pub struct CommOptions {
    /// The longest any wait may take: for the other ranks to join, for an NCCL call to be
    /// accepted, for queued collectives to finish ([`Communicator::synchronize`]). Then the
    /// communicator is aborted, every rank is told, and the call returns [`Error::Timeout`].
    /// Default: `$GPU_DIST_TIMEOUT_S` seconds, else 300.
    pub timeout: Duration,
    /// Compare every collective's kind, element type, length, operator and root across ranks,
    /// and every transfer's length with its receive, through the rendezvous (asynchronously:
    /// one message per call, no round trip). A mismatch fails every rank with an error naming
    /// both calls instead of hanging or corrupting memory. Default: on.
    pub check_calls: bool,
    /// Create NCCL's non-blocking communicators: every NCCL call returns at once and is polled
    /// (with `ncclCommGetAsyncError`) instead of blocking. Off by default because NCCL then
    /// launches every group from a new thread, which made a 1 MiB all_reduce take twice as long
    /// on two H200s; the default blocking communicators get the same guarantee from a watchdog
    /// thread that aborts them when a call blocks past the timeout or a rank fails.
    /// Default: `$GPU_DIST_NONBLOCKING` is `1`.
    pub non_blocking: bool,
    /// Queue collectives on a high-priority stream of the communicator's own
    /// ([`Gpu::new_high_priority_stream`]) instead of the device's default stream, so that
    /// transfers get SMs ahead of long kernels running beside them on other streams.
    /// Default: `$GPU_DIST_HIGH_PRIORITY` is `1`.
    pub high_priority_stream: bool,
}

impl Default for CommOptions {
    fn default() -> CommOptions {
        let secs = std::env::var(TIMEOUT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(300.0);
        CommOptions {
            timeout: Duration::from_secs_f64(secs),
            check_calls: true,
            non_blocking: std::env::var("GPU_DIST_NONBLOCKING").is_ok_and(|v| v.trim() == "1"),
            high_priority_stream: std::env::var("GPU_DIST_HIGH_PRIORITY")
                .is_ok_and(|v| v.trim() == "1"),
        }
    }
}

/// An NCCL communicator handle, aborted at most once (by its rank's thread or its watchdog).
pub(crate) struct NcclComm {
    pub(crate) lib: &'static Nccl,
    pub(crate) handle: CommHandle,
    shared: Arc<Watched>,
}

/// What the watchdog thread shares with the rank's thread.
struct Watched {
    lib: &'static Nccl,
    handle: usize,
    aborted: AtomicBool,
    /// Set while the rank's thread is inside an NCCL call that may block (group end, which
    /// connects to peers on first use; finalize): since when, and what.
    busy: Mutex<Option<(Instant, &'static str)>>,
    closed: AtomicBool,
}

impl Watched {
    fn abort(&self) {
        if !self.aborted.swap(true, Ordering::SeqCst) {
            // SAFETY: a live handle, aborted once (the swap); NCCL stops its kernels, wakes a
            // thread blocked in it, and frees the communicator.
            unsafe { (self.lib.comm_abort)(self.handle as CommHandle) };
        }
    }
}

/// Marks the rank's thread as inside a blocking NCCL call while it lives.
pub(crate) struct Busy<'a>(&'a Watched);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        *self.0.busy.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl NcclComm {
    /// Wraps a fresh handle and starts its watchdog: a thread that, while the rank's thread is
    /// blocked in NCCL ([`NcclComm::busy`]), aborts the communicator when a rank fails or the
    /// timeout passes, so the blocked call returns instead of hanging.
    fn new(lib: &'static Nccl, handle: CommHandle, link: Arc<dyn Link>, timeout: Duration) -> Self {
        let shared = Arc::new(Watched {
            lib,
            handle: handle as usize,
            aborted: AtomicBool::new(false),
            busy: Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        let watched = shared.clone();
        let _ = std::thread::Builder::new()
            .name("gpu-dist-watchdog".into())
            .spawn(move || {
                while !watched.closed.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                    let busy = *watched.busy.lock().unwrap_or_else(|p| p.into_inner());
                    let Some((since, what)) = busy else { continue };
                    if link.failure().is_some() {
                        watched.abort();
                    } else if since.elapsed() > timeout {
                        link.fail(format!(
                            "timed out after {:.1} s blocked in {what}",
                            since.elapsed().as_secs_f64()
                        ));
                        watched.abort();
                    }
                }
            });
        NcclComm {
            lib,
            handle,
            shared,
        }
    }

    pub(crate) fn aborted(&self) -> bool {
        self.shared.aborted.load(Ordering::SeqCst)
    }

    /// Marks a call that may block (see [`NcclComm::new`]).
    pub(crate) fn busy(&self, what: &'static str) -> Busy<'_> {
        *self.shared.busy.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), what));
        Busy(&self.shared)
    }

    /// `ncclCommGetAsyncError`: SUCCESS, IN_PROGRESS, or the error code.
    fn async_error(&self) -> i32 {
        if self.aborted() {
            return SUCCESS;
        }
        let mut code = SUCCESS;
        // SAFETY: a live handle (not aborted: checked above, and only this thread or the
        // watchdog, while this thread is busy in NCCL, aborts it); writes one int.
        let r = unsafe { (self.lib.comm_get_async_error)(self.handle, &mut code) };
        if r != SUCCESS { r } else { code }
    }

    fn abort(&self) {
        self.shared.abort();
    }

    /// Destroys the handle (once) and stops the watchdog.
    fn destroy(&self) {
        if !self.shared.aborted.swap(true, Ordering::SeqCst) {
            // SAFETY: finalized by the caller; destroyed once (the swap), never used again.
            unsafe { (self.lib.comm_destroy)(self.handle) };
        }
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
    }
}

/// One rank of a communicator: a device, the stream its collectives run on, and the link to the
/// other ranks.
///
/// Collectives and transfers are queued on [`Communicator::stream`] and return at once, like
/// kernel launches: later work on that stream sees their results, and
/// [`Communicator::synchronize`] waits for them on the host while watching for failed ranks.
/// Use it (not a plain stream synchronization) before reading results on the host: if another
/// rank has died, a plain synchronization would wait forever, this one returns
/// [`Error::RankFailed`].
///
/// Backends: NCCL on GPUs (one communicator per GPU, in one process or one process per GPU),
/// and the CPU simulator ([`Gpu::simulator_device`]), where ranks are threads or processes and
/// the data goes through the rendezvous hub, with NCCL's results.
///
/// Buffers must live on this communicator's device ([`Error::Argument`] otherwise); lengths
/// are checked on this rank before anything is called, and across ranks through the
/// rendezvous ([`CommOptions::check_calls`]).
pub struct Communicator {
    rank: usize,
    size: usize,
    gpu: Gpu,
    stream: Stream,
    pub(crate) link: Arc<dyn Link>,
    pub(crate) nccl: Option<NcclComm>,
    options: CommOptions,
    /// Collectives called so far (their sequence numbers).
    seq: Cell<u64>,
    /// Transfers so far, per (peer, is_send).
    p2p: RefCell<HashMap<(usize, bool), u64>>,
    /// Rank 0 of a multi-process world holds the hub: it waits for the others before closing.
    hub: Option<Arc<Hub>>,
}

// SAFETY: the NCCL handle may be used from any thread, one at a time (NCCL's rule for a
// communicator); `Communicator` is not `Sync`, so `&self` methods never run concurrently.
unsafe impl Send for Communicator {}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("device", &self.gpu.ordinal())
            .field("backend", &self.backend_name())
            .finish()
    }
}

/// What the torchrun-style environment says about this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendezvous {
    /// This process's rank (`RANK`).
    pub rank: usize,
    /// How many ranks (`WORLD_SIZE`).
    pub world_size: usize,
    /// The rank on this machine, which picks the GPU (`LOCAL_RANK`; default `RANK`).
    pub local_rank: usize,
    /// Where rank 0 listens (`MASTER_ADDR`; default 127.0.0.1).
    pub master_addr: String,
    /// Rank 0's port (`MASTER_PORT`; default 29500).
    pub master_port: u16,
}

impl Rendezvous {
    /// Reads `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT` (torchrun's
    /// variables, which `cargo xtask launch` sets).
    pub fn from_env() -> Result<Rendezvous> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let number = |name: &str| -> Result<Option<usize>> {
            var(name)
                .map(|v| {
                    v.trim().parse::<usize>().map_err(|_| {
                        Error::Setup(format!("{name}={v:?} is not a non-negative integer"))
                    })
                })
                .transpose()
        };
        let (Some(rank), Some(world_size)) = (number("RANK")?, number("WORLD_SIZE")?) else {
            return Err(Error::Setup(
                "RANK and WORLD_SIZE are not set: start the program with `cargo xtask launch \
                 -n N PROGRAM` (or torchrun), or set RANK, WORLD_SIZE, MASTER_ADDR and \
                 MASTER_PORT yourself"
                    .into(),
            ));
        };
        if world_size == 0 || rank >= world_size {
            return Err(Error::Setup(format!(
                "RANK={rank} with WORLD_SIZE={world_size}: the rank must be below the world size"
            )));
        }
        let master_port = match var("MASTER_PORT") {
            None => 29500,
            Some(p) => p
                .trim()
                .parse()
                .map_err(|_| Error::Setup(format!("MASTER_PORT={p:?} is not a port number")))?,
        };
        Ok(Rendezvous {
            rank,
            world_size,
            local_rank: number("LOCAL_RANK")?.unwrap_or(rank),
            master_addr: var("MASTER_ADDR").unwrap_or_else(|| "127.0.0.1".into()),
            master_port,
        })
    }
}

fn wait_error(rank: usize, what: &str, after: Duration) -> impl Fn(WaitError) -> Error + '_ {
    move |e| match e {
        WaitError::Failed(f) => Error::RankFailed {
            rank,
            failed_rank: f.rank,
            reason: f.reason,
        },
        WaitError::TimedOut => Error::Timeout {
            rank,
            what: what.to_string(),
            after,
        },
    }
}

/// The links of this process's ranks, for the panic hook (process mode only).
static PANIC_LINKS: std::sync::Mutex<Vec<Weak<dyn Link>>> = std::sync::Mutex::new(Vec::new());

/// Makes a panic anywhere in this process tell the other ranks before the process dies.
fn install_panic_hook(link: &Arc<dyn Link>) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    PANIC_LINKS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Arc::downgrade(link));
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let links: Vec<_> = PANIC_LINKS
                .lock()
                .map(|l| l.iter().filter_map(Weak::upgrade).collect())
                .unwrap_or_default();
            for link in links {
                link.fail(format!("panicked: {info}"));
            }
            previous(info);
        }));
    });
}

/// The stream a new communicator queues on: the device's default stream, or a high-priority
/// stream of its own ([`CommOptions::high_priority_stream`]).
fn comm_stream(gpu: &Gpu, options: &CommOptions) -> Result<Stream> {
    Ok(if options.high_priority_stream {
        gpu.new_high_priority_stream()?
    } else {
        gpu.default_stream().clone()
    })
}

impl Communicator {
    /// One communicator per device of `gpus`, all in this process (rank `i` on `gpus[i]`), on
    /// each device's default stream. GPUs get NCCL communicators; simulated devices
    /// ([`Gpu::simulator_device`]) get simulated ones. Drive them from one thread with a
    /// [`Group`] per step, or move each to a thread of its own ([`run_ranks`] does that).
    pub fn for_devices(gpus: &[Gpu]) -> Result<Vec<Communicator>> {
        Communicator::for_devices_with(gpus, CommOptions::default())
    }

    /// [`Communicator::for_devices`] with options.
    pub fn for_devices_with(gpus: &[Gpu], options: CommOptions) -> Result<Vec<Communicator>> {
        let n = gpus.len();
        if n == 0 {
            return Err(Error::Setup(
                "Communicator::for_devices: no devices given".into(),
            ));
        }
        let sims = gpus.iter().filter(|g| g.is_simulator()).count();
        if sims != 0 && sims != n {
            return Err(Error::Setup(
                "Communicator::for_devices: the devices mix GPUs and the CPU simulator".into(),
            ));
        }
        for (i, a) in gpus.iter().enumerate() {
            if let Some(j) = gpus[..i].iter().position(|b| b.ordinal() == a.ordinal()) {
                return Err(Error::Setup(format!(
                    "Communicator::for_devices: devices {j} and {i} are both device {} (one \
                     rank per device)",
                    a.ordinal()
                )));
            }
        }
        let hub = Hub::new(n);
        let streams = gpus
            .iter()
            .map(|gpu| comm_stream(gpu, &options))
            .collect::<Result<Vec<_>>>()?;
        let mut comms: Vec<Communicator> = gpus
            .iter()
            .zip(streams)
            .enumerate()
            .map(|(rank, (gpu, stream))| Communicator {
                rank,
                size: n,
                gpu: gpu.clone(),
                stream,
                link: Arc::new(LocalLink {
                    hub: hub.clone(),
                    rank,
                }),
                nccl: None,
                options: options.clone(),
                seq: Cell::new(0),
                p2p: RefCell::default(),
                hub: None,
            })
            .collect();
        if sims == n {
            return Ok(comms);
        }
        let lib = nccl::nccl().map_err(Error::NcclUnavailable)?;
        let id = unique_id(lib, 0)?;
        // One thread creates every rank's communicator: inside one NCCL group.
        // SAFETY: NCCL group calls take no arguments.
        unsafe { (lib.group_start)() };
        let mut first_error = None;
        for c in comms.iter_mut() {
            match c.init_nccl(lib, id) {
                Ok(()) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        // SAFETY: as above.
        let end = unsafe { (lib.group_end)() };
        if let Some(e) = first_error {
            return Err(e);
        }
        if end != SUCCESS && end != IN_PROGRESS {
            return Err(Error::Nccl {
                rank: 0,
                call: "ncclGroupEnd (creating the communicators)".into(),
                message: lib.describe(end, None),
            });
        }
        for c in &comms {
            c.settle("for NCCL to set the communicators up")?;
        }
        Ok(comms)
    }

    /// This process's rank of a world started by `cargo xtask launch` or torchrun (one process
    /// per GPU): reads [`Rendezvous::from_env`], opens GPU `LOCAL_RANK` (or simulated device
    /// `LOCAL_RANK` with `GPU_BACKEND=sim`), meets the other ranks through rank 0 at
    /// `MASTER_ADDR:MASTER_PORT`, and creates the communicator on the device's default stream.
    pub fn from_env() -> Result<Communicator> {
        Communicator::from_env_with(CommOptions::default())
    }

    /// [`Communicator::from_env`] with options.
    pub fn from_env_with(options: CommOptions) -> Result<Communicator> {
        let rdv = Rendezvous::from_env()?;
        let sim = matches!(
            std::env::var(gpu_host::BACKEND_ENV)
                .as_deref()
                .map(str::trim),
            Ok("sim" | "simulator" | "cpu")
        );
        let gpu = if sim {
            Gpu::simulator_device(rdv.local_rank)?
        } else {
            let count = Gpu::count()?;
            if rdv.local_rank >= count {
                return Err(Error::Setup(format!(
                    "rank {}: LOCAL_RANK={} but this machine has {count} GPU(s); start at most \
                     {count} process(es) per machine",
                    rdv.rank, rdv.local_rank
                )));
            }
            Gpu::new(rdv.local_rank)?
        };
        Communicator::join(&gpu, &rdv, options)
    }

    /// Joins the world `rdv` describes with `gpu` (see [`Communicator::from_env`]).
    pub fn join(gpu: &Gpu, rdv: &Rendezvous, options: CommOptions) -> Result<Communicator> {
        let (rank, size) = (rdv.rank, rdv.world_size);
        if rank >= size {
            return Err(Error::Setup(format!(
                "rank {rank} of a world of {size}: the rank must be below the world size"
            )));
        }
        let deadline = Instant::now() + options.timeout;
        let (link, hub): (Arc<dyn Link>, _) = if rank == 0 {
            let hub = Hub::new(size);
            if size > 1 {
                let listener = tcp::listen(rdv.master_port).map_err(|source| Error::Io {
                    context: format!(
                        "rank 0: listening on port {} (MASTER_PORT) for the other ranks",
                        rdv.master_port
                    ),
                    source,
                })?;
                tcp::serve(hub.clone(), listener);
            }
            (
                Arc::new(LocalLink {
                    hub: hub.clone(),
                    rank,
                }),
                Some(hub),
            )
        } else {
            let addr = format!("{}:{}", rdv.master_addr, rdv.master_port);
            let link =
                tcp::TcpLink::connect(&addr, rank, size, deadline).map_err(|source| Error::Io {
                    context: format!(
                        "rank {rank}: connecting to rank 0 at {addr} (MASTER_ADDR:MASTER_PORT) \
                         for {:.0} s",
                        options.timeout.as_secs_f64()
                    ),
                    source,
                })?;
            (Arc::new(link), None)
        };
        install_panic_hook(&link);
        let mut comm = Communicator {
            rank,
            size,
            gpu: gpu.clone(),
            stream: comm_stream(gpu, &options)?,
            link,
            nccl: None,
            options,
            seq: Cell::new(0),
            p2p: RefCell::default(),
            hub,
        };
        if gpu.is_simulator() {
            // Everyone present before the first collective (and a fast failure otherwise).
            comm.barrier()?;
            return Ok(comm);
        }
        let lib = match nccl::nccl() {
            Ok(lib) => lib,
            Err(e) => {
                comm.link.fail(format!("NCCL is not available: {e}"));
                return Err(Error::NcclUnavailable(e));
            }
        };
        if rank == 0 {
            let id = unique_id(lib, rank)?;
            comm.link
                .publish_id(id.internal.iter().map(|&c| c as u8).collect());
        }
        let bytes = comm.link.wait_id(deadline).map_err(wait_error(
            rank,
            "waiting for rank 0's NCCL id",
            comm.options.timeout,
        ))?;
        let mut id = UniqueId { internal: [0; 128] };
        for (d, s) in id.internal.iter_mut().zip(&bytes) {
            *d = *s as std::ffi::c_char;
        }
        // Every rank present before the blocking init (a rank that died or hangs before it is
        // reported here instead of blocking the others in NCCL's bootstrap).
        comm.barrier()?;
        comm.init_nccl(lib, id)?;
        comm.settle("for the other ranks to join (ncclCommInitRankConfig)")?;
        Ok(comm)
    }

    fn init_nccl(&mut self, lib: &'static Nccl, id: UniqueId) -> Result<()> {
        self.bind()?;
        let mut handle: CommHandle = std::ptr::null_mut();
        let mut config = Config::new(!self.options.non_blocking);
        // SAFETY: `handle` and `config` outlive the call; rank < size; the device's context is
        // current on this thread.
        let r = unsafe {
            (lib.comm_init_rank_config)(
                &mut handle,
                self.size as i32,
                id,
                self.rank as i32,
                &mut config,
            )
        };
        if handle.is_null() || (r != SUCCESS && r != IN_PROGRESS) {
            let message = lib.describe(r, None);
            self.link
                .fail(format!("creating its NCCL communicator failed: {message}"));
            return Err(Error::Nccl {
                rank: self.rank,
                call: format!("ncclCommInitRankConfig ({})", lib.version_string()),
                message,
            });
        }
        self.nccl = Some(NcclComm::new(
            lib,
            handle,
            self.link.clone(),
            self.options.timeout,
        ));
        Ok(())
    }

    /// Makes this rank's device current on the calling thread (NCCL uses the current one).
    pub(crate) fn bind(&self) -> Result<()> {
        if let Some(ctx) = self.gpu.cuda_context() {
            ctx.bind_to_thread().map_err(|source| {
                Error::Gpu(gpu_host::Error::Driver {
                    context: format!("making device {} current", self.gpu.ordinal()),
                    source,
                })
            })?;
        }
        Ok(())
    }

    /// This rank (0-based).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The device this rank runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The stream collectives are queued on (the device's default stream unless
    /// [`Communicator::set_stream`] chose another).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Queues later collectives and transfers on `stream`, a stream of this communicator's
    /// device: e.g. one from [`Gpu::new_high_priority_stream`], so that a transfer overlapping
    /// a long kernel gets SMs ahead of it. Buffers stay ordered across the change (every call
    /// orders its buffers' earlier uses on other streams before it). Errors: a stream of
    /// another device.
    pub fn set_stream(&mut self, stream: Stream) -> Result<()> {
        if stream.is_simulator() != self.gpu.is_simulator()
            || stream.device_ordinal() != self.gpu.ordinal()
        {
            return Err(Error::Argument {
                rank: self.rank,
                operation: "set_stream".to_string(),
                message: format!(
                    "the stream belongs to {} device {}, the communicator to {} device {}",
                    if stream.is_simulator() {
                        "simulated"
                    } else {
                        "GPU"
                    },
                    stream.device_ordinal(),
                    if self.gpu.is_simulator() {
                        "simulated"
                    } else {
                        "GPU"
                    },
                    self.gpu.ordinal()
                ),
            });
        }
        self.stream = stream;
        Ok(())
    }

    /// The options this communicator was made with.
    pub fn options(&self) -> &CommOptions {
        &self.options
    }

    /// `"NCCL 2.28.9"` or `"simulated"`.
    pub fn backend_name(&self) -> String {
        match &self.nccl {
            Some(n) => n.lib.version_string(),
            None => "simulated".into(),
        }
    }

    /// Whether this is a simulated communicator (CPU simulator devices).
    pub fn is_simulated(&self) -> bool {
        self.nccl.is_none()
    }

    pub(crate) fn next_seq(&self) -> u64 {
        let s = self.seq.get();
        self.seq.set(s + 1);
        s
    }

    pub(crate) fn next_p2p(&self, peer: usize, is_send: bool) -> u64 {
        let mut m = self.p2p.borrow_mut();
        let n = m.entry((peer, is_send)).or_insert(0);
        *n += 1;
        *n - 1
    }

    /// An error when this communicator can no longer be used (aborted, or a rank failed).
    pub(crate) fn check_usable(&self) -> Result<()> {
        if let Some(f) = self.link.failure() {
            self.abort();
            return Err(Error::RankFailed {
                rank: self.rank,
                failed_rank: f.rank,
                reason: f.reason,
            });
        }
        if self.nccl.as_ref().is_some_and(NcclComm::aborted) {
            return Err(Error::RankFailed {
                rank: self.rank,
                failed_rank: self.rank,
                reason: "this communicator was aborted".into(),
            });
        }
        Ok(())
    }

    /// Aborts the NCCL communicator (its queued work stops), once.
    pub(crate) fn abort(&self) {
        if let Some(n) = &self.nccl {
            n.abort();
        }
    }

    /// The error for a failed NCCL call. A call fails most often because another rank died
    /// or aborted (its sockets close): if the rendezvous learns of such a failure within a
    /// moment, the error names that rank; otherwise this rank is declared failed.
    pub(crate) fn nccl_error(&self, call: &str, message: String) -> Error {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            if let Some(f) = self.link.failure() {
                self.abort();
                return Error::RankFailed {
                    rank: self.rank,
                    failed_rank: f.rank,
                    reason: format!("{} (here, {call} failed: {message})", f.reason),
                };
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.fail(format!("{call} failed: {message}"));
        Error::Nccl {
            rank: self.rank,
            call: call.to_string(),
            message,
        }
    }

    /// Declares this rank failed (every rank learns it) and aborts.
    pub(crate) fn fail(&self, reason: String) {
        self.link.fail(reason);
        self.abort();
    }

    /// Polls until `done` says so, watching for NCCL errors, failed ranks and the timeout.
    pub(crate) fn watch(&self, what: &str, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
        let start = Instant::now();
        let mut round = 0u32;
        loop {
            if done()? {
                return Ok(());
            }
            if let Some(n) = &self.nccl
                && !n.aborted()
            {
                let code = n.async_error();
                if code != SUCCESS && code != IN_PROGRESS {
                    let message = n.lib.describe(code, Some(n.handle));
                    return Err(self.nccl_error(&format!("waiting {what}"), message));
                }
            }
            self.check_usable()?;
            let waited = start.elapsed();
            if waited > self.options.timeout {
                self.fail(format!(
                    "timed out after {:.1} s waiting {what}",
                    waited.as_secs_f64()
                ));
                return Err(Error::Timeout {
                    rank: self.rank,
                    what: format!("waiting {what}"),
                    after: waited,
                });
            }
            round += 1;
            if round < 200 {
                std::hint::spin_loop();
            } else if round < 2000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }

    /// Polls a non-blocking NCCL communicator until its last call is accepted.
    pub(crate) fn settle(&self, what: &str) -> Result<()> {
        let Some(n) = &self.nccl else { return Ok(()) };
        self.watch(what, || Ok(n.aborted() || n.async_error() != IN_PROGRESS))
    }

    /// Waits on the host for every collective and transfer queued on this communicator's
    /// stream (and everything queued there before them), returning early with
    /// [`Error::RankFailed`] when a rank fails and [`Error::Timeout`] after
    /// [`CommOptions::timeout`]; the communicator is then aborted instead of hanging.
    pub fn synchronize(&self) -> Result<()> {
        self.check_usable()?;
        if self.nccl.is_none() {
            return Ok(()); // simulated work is complete when its call returns
        }
        let event = self.stream.record_event()?;
        self.watch("for the queued collectives to finish", || {
            Ok(event.is_complete()?)
        })
    }

    /// Waits until every rank has reached this call (and the collectives queued before it have
    /// finished on this rank).
    pub fn barrier(&self) -> Result<()> {
        self.check_usable()?;
        let seq = self.next_seq();
        let desc = crate::hub::OpDesc {
            kind: crate::hub::OpKind::Barrier,
            dtype: crate::DataType::U8,
            count: 0,
            op: None,
            root: None,
        };
        self.synchronize()?;
        self.link.contribute(seq, desc, Vec::new());
        let deadline = Instant::now() + self.options.timeout;
        self.link
            .collect(seq, deadline)
            .map(drop)
            .map_err(wait_error(
                self.rank,
                "at a barrier for the other ranks",
                self.options.timeout,
            ))
            .inspect_err(|e| {
                if matches!(e, Error::Timeout { .. }) {
                    self.fail(format!("timed out at barrier #{seq}"));
                }
                self.abort();
            })
    }

    pub(crate) fn wait_error(&self, what: &'static str) -> impl Fn(WaitError) -> Error + '_ {
        move |e| {
            if matches!(e, WaitError::TimedOut) {
                self.link.fail(format!(
                    "timed out after {:.1} s waiting {what}",
                    self.options.timeout.as_secs_f64()
                ));
            }
            self.abort();
            wait_error(self.rank, what, self.options.timeout)(e)
        }
    }

    /// Declares this rank failed with `reason`: every other rank's next wait returns
    /// [`Error::RankFailed`] naming this rank. For a program that hits an error of its own
    /// between collectives (the panic hook and dropped communicators do it for panics and
    /// exits).
    pub fn abort_world(&self, reason: &str) {
        self.fail(reason.to_string());
    }

    // ------------------------------------------------------------ one-call conveniences

    /// `recv = send₀ ⊕ send₁ ⊕ …` on every rank (NCCL `AllReduce`); lengths equal.
    pub fn all_reduce<T: CommElement>(
        &self,
        send: &DeviceBuffer<T>,
        recv: &mut DeviceBuffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        let mut g = Group::new();
        g.all_reduce(self, send, recv, op)?;
        g.run()
    }

    /// [`Communicator::all_reduce`] with the result written over the input.
    pub fn all_reduce_in_place<T: CommElement>(
        &self,
        buf: &mut DeviceBuffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        let mut g = Group::new();
        g.all_reduce_in_place(self, buf, op)?;
        g.run()
    }

    /// The reduction of every rank's `send` into `recv` on `root` only (other ranks pass
    /// `None`).
    pub fn reduce<T: CommElement>(
        &self,
        send: &DeviceBuffer<T>,
        recv: Option<&mut DeviceBuffer<T>>,
        op: ReduceOp,
        root: usize,
    ) -> Result<()> {
        let mut g = Group::new();
        g.reduce(self, send, recv, op, root)?;
        g.run()
    }

    /// `root`'s `buf` copied into every rank's `buf`.
    pub fn broadcast<T: CommElement>(&self, buf: &mut DeviceBuffer<T>, root: usize) -> Result<()> {
        let mut g = Group::new();
        g.broadcast(self, buf, root)?;
        g.run()
    }

    /// Every rank's `send` (same length on all) concatenated in rank order into every rank's
    /// `recv` (`size()` times as long).
    pub fn all_gather<T: CommElement>(
        &self,
        send: &DeviceBuffer<T>,
        recv: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let mut g = Group::new();
        g.all_gather(self, send, recv)?;
        g.run()
    }

    /// The reduction of every rank's `send`, split in `size()` equal parts: rank `r` gets part
    /// `r` in `recv` (`send.len() == recv.len() * size()`).
    pub fn reduce_scatter<T: CommElement>(
        &self,
        send: &DeviceBuffer<T>,
        recv: &mut DeviceBuffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        let mut g = Group::new();
        g.reduce_scatter(self, send, recv, op)?;
        g.run()
    }

    /// Sends all of `buf` to rank `peer`, which must receive it with the same length. Alone,
    /// NCCL's send waits for the matching receive: pair sends and receives in one [`Group`] to
    /// exchange in both directions.
    pub fn send<T: CommElement>(&self, buf: &DeviceBuffer<T>, peer: usize) -> Result<()> {
        let mut g = Group::new();
        g.send(self, buf, 0..buf.len(), peer)?;
        g.run()
    }

    /// Receives into all of `buf` what rank `peer` sends.
    pub fn recv<T: CommElement>(&self, buf: &mut DeviceBuffer<T>, peer: usize) -> Result<()> {
        let len = buf.len();
        let mut g = Group::new();
        g.recv(self, buf, 0..len, peer)?;
        g.run()
    }
}

fn unique_id(lib: &Nccl, rank: usize) -> Result<UniqueId> {
    let mut id = UniqueId { internal: [0; 128] };
    // SAFETY: writes the 128-byte id.
    let r = unsafe { (lib.get_unique_id)(&mut id) };
    if r != SUCCESS {
        return Err(Error::Nccl {
            rank,
            call: "ncclGetUniqueId".into(),
            message: lib.describe(r, None),
        });
    }
    Ok(id)
}

impl Drop for Communicator {
    fn drop(&mut self) {
        let healthy = self.link.failure().is_none();
        if let Some(n) = &self.nccl
            && !n.aborted()
        {
            let mut clean = healthy && self.synchronize().is_ok();
            if clean {
                let _busy = n.busy("ncclCommFinalize");
                // SAFETY: a live handle; finalize flushes its work (the watchdog aborts it if
                // that blocks past the timeout or a rank fails).
                let r = unsafe { (n.lib.comm_finalize)(n.handle) };
                clean = (r == SUCCESS || r == IN_PROGRESS)
                    && self.settle("for the communicator to finalize").is_ok();
            }
            if clean && !n.aborted() {
                n.destroy();
            } else {
                n.abort();
            }
        }
        self.link.goodbye();
        if let Some(hub) = &self.hub {
            // Rank 0 holds the rendezvous: let the other ranks finish (or fail) first.
            hub.wait_all_gone(Instant::now() + self.options.timeout);
        }
    }
}

/// Runs `body` once per device of `gpus`, each on a thread of its own with its rank's
/// communicator (from [`Communicator::for_devices`]); returns each rank's result in rank order.
///
/// A rank that panics or returns an error fails the world: the other ranks' waits return
/// [`Error::RankFailed`] naming it instead of hanging, and its own entry is the error (a panic
/// becomes [`Error::RankFailed`] with the panic message).
pub fn run_ranks<R: Send>(
    gpus: &[Gpu],
    body: impl Fn(&Communicator) -> Result<R> + Sync,
) -> Result<Vec<Result<R>>> {
    let comms = Communicator::for_devices(gpus)?;
    Ok(std::thread::scope(|scope| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|comm| {
                let body = &body;
                scope.spawn(move || {
                    let rank = comm.rank();
                    let outcome =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&comm)));
                    match outcome {
                        Ok(Ok(v)) => Ok(v),
                        Ok(Err(e)) => {
                            if comm.link.failure().is_none() {
                                comm.fail(format!("returned an error: {e}"));
                            }
                            Err(e)
                        }
                        Err(panic) => {
                            let msg = panic
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_else(|| "a panic".into());
                            let reason = format!("panicked: {msg}");
                            comm.fail(reason.clone());
                            Err(Error::RankFailed {
                                rank,
                                failed_rank: rank,
                                reason,
                            })
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| unreachable!("panics are caught"))
            })
            .collect()
    }))
}
