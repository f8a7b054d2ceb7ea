//! Blocks on OS threads, threads on fibers: the scheduler and the per-thread/per-block state the
//! intrinsics read.

use core::cell::{Cell, RefCell, UnsafeCell};
use core::panic::Location;
use std::boxed::Box;
use std::string::String;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use std::vec::Vec;

use corosensei::stack::DefaultStack;

use super::fiber::{Fiber, Params, ThreadYielder};
use super::rendezvous::{self, Barrier, Warp};
use super::{Fault, Launch, panic_capture};
use crate::thread::{Dim3, WARP_SIZE};

/// Most threads a block may have (as on every GPU since Fermi).
const MAX_BLOCK_THREADS: u64 = 1024;
/// Static shared memory a block may use (the GPU's 48 KiB static limit).
const STATIC_SHARED_LIMIT: u32 = 48 * 1024;

/// How the simulator runs a launch.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// OS threads running blocks in parallel (`GPU_SIM_WORKERS`; default: the CPU count, at
    /// most 8).
    pub workers: usize,
    /// A launch still running after this long is stopped (`GPU_SIM_TIMEOUT_S`, default 60).
    pub timeout: Duration,
    /// Stack bytes per simulated thread (`GPU_SIM_STACK_KB`, default 256 KiB; only the pages
    /// used are committed).
    pub stack_bytes: usize,
}

impl SimOptions {
    /// The defaults, overridden by the `GPU_SIM_*` environment variables.
    pub fn from_env() -> SimOptions {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        SimOptions {
            workers: var("GPU_SIM_WORKERS").map_or(cpus.min(8), |w| w.max(1) as usize),
            timeout: Duration::from_secs(var("GPU_SIM_TIMEOUT_S").unwrap_or(60).max(1)),
            stack_bytes: var("GPU_SIM_STACK_KB")
                .map_or(256 * 1024, |k| (k.max(16) * 1024) as usize),
        }
    }
}

/// Where a simulated thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Runnable (including spinning on a synchronizing intrinsic).
    Ready,
    /// Waiting at a block barrier.
    Barrier,
    /// Waiting in a warp collective.
    Warp,
    /// Returned from the kernel.
    Done,
}

/// One simulated thread.
pub(crate) struct ThreadCtx {
    pub(crate) thread: Dim3,
    pub(crate) linear: u32,
    block: *const BlockCtx,
    yielder: Cell<*const ThreadYielder>,
    pub(crate) state: Cell<State>,
    /// Where it last suspended (for deadlock and timeout reports).
    pub(crate) site: Cell<&'static Location<'static>>,
    /// Every lane's value from the last warp collective it took part in.
    pub(crate) warp_values: Cell<[u64; 32]>,
}

impl ThreadCtx {
    pub(crate) fn block(&self) -> &BlockCtx {
        // SAFETY: the block context outlives its threads' fibers (see `run_block`).
        unsafe { &*self.block }
    }

    pub(crate) fn set_yielder(&self, y: &ThreadYielder) {
        self.yielder.set(y);
    }

    pub(crate) fn lane(&self) -> u32 {
        self.linear % WARP_SIZE
    }

    pub(crate) fn warp(&self) -> &Warp {
        &self.block().warps[(self.linear / WARP_SIZE) as usize]
    }

    /// Suspends this fiber in `state` until the scheduler resumes it (for `Ready`, on its next
    /// round; otherwise once a rendezvous sets it `Ready` again).
    pub(crate) fn suspend(&self, state: State, site: &'static Location<'static>) {
        self.state.set(state);
        self.site.set(site);
        let y = self.yielder.get();
        // SAFETY: set when the fiber started; the yielder lives on the fiber's own stack, which
        // is running (this function is called from it).
        unsafe { (*y).suspend(()) };
    }
}

/// One simulated block: its threads, barrier, warps and shared memory.
pub(crate) struct BlockCtx {
    pub(crate) kernel: String,
    pub(crate) block_idx: Dim3,
    pub(crate) block_dim: Dim3,
    pub(crate) grid_dim: Dim3,
    pub(crate) threads: Box<[ThreadCtx]>,
    pub(crate) barrier: Barrier,
    pub(crate) warps: Box<[Warp]>,
    pub(crate) shared: SharedArena,
    fault: RefCell<Option<Fault>>,
    aborting: Cell<bool>,
}

impl BlockCtx {
    pub(crate) fn is_aborting(&self) -> bool {
        self.aborting.get()
    }

    pub(crate) fn record_panic(&self, t: &ThreadCtx, location: Option<String>, message: String) {
        let mut fault = self.fault.borrow_mut();
        if fault.is_none() {
            *fault = Some(Fault::Panic {
                kernel: self.kernel.clone(),
                block: self.block_idx,
                thread: t.thread,
                location,
                message,
            });
        }
    }

    pub(crate) fn record_divergence(&self, detail: String) {
        let mut fault = self.fault.borrow_mut();
        if fault.is_none() {
            *fault = Some(Fault::Divergence {
                kernel: self.kernel.clone(),
                block: self.block_idx,
                detail,
            });
        }
    }

    pub(crate) fn has_fault(&self) -> bool {
        self.fault.borrow().is_some()
    }

    pub(crate) fn size(&self) -> u32 {
        self.threads.len() as u32
    }
}

/// A block's shared memory: the dynamic region at address 0, static arrays after it, each
/// placed the first time its `shared_array!` site runs in the block.
pub(crate) struct SharedArena {
    memory: Box<[UnsafeCell<u128>]>,
    dynamic_bytes: u32,
    static_end: Cell<u32>,
    sites: RefCell<Vec<(usize, u32)>>,
}

impl SharedArena {
    fn new(dynamic_bytes: u32) -> SharedArena {
        let bytes = dynamic_bytes.next_multiple_of(16) as usize + STATIC_SHARED_LIMIT as usize;
        let memory = (0..bytes / 16).map(|_| UnsafeCell::new(0u128)).collect();
        SharedArena {
            memory,
            dynamic_bytes,
            static_end: Cell::new(dynamic_bytes.next_multiple_of(16)),
            sites: RefCell::new(Vec::new()),
        }
    }

    pub(crate) fn dynamic_bytes(&self) -> u32 {
        self.dynamic_bytes
    }

    /// The address of the static array declared at `site`, allocating it on first use.
    pub(crate) fn static_addr(&self, site: usize, bytes: usize, align: usize) -> u32 {
        if let Some(&(_, addr)) = self.sites.borrow().iter().find(|(s, _)| *s == site) {
            return addr;
        }
        let start = (self.static_end.get() as usize).next_multiple_of(align.max(16));
        let end = start + bytes;
        let used = end - self.dynamic_bytes.next_multiple_of(16) as usize;
        if used > STATIC_SHARED_LIMIT as usize {
            panic!(
                "static shared memory of this kernel exceeds the {} KiB limit ({used} bytes)",
                STATIC_SHARED_LIMIT / 1024
            );
        }
        self.static_end.set(end as u32);
        self.sites.borrow_mut().push((site, start as u32));
        start as u32
    }

    /// A pointer to `size` bytes at shared address `addr`; panics past the block's shared
    /// memory (on a GPU, an illegal address).
    #[track_caller]
    pub(crate) fn ptr(&self, addr: u32, size: usize) -> *mut u8 {
        let limit = self.static_end.get() as usize;
        if addr as usize + size > limit {
            panic!(
                "shared memory access of {size} bytes at address {addr:#x} is outside the \
                 block's {limit} bytes of shared memory"
            );
        }
        // `UnsafeCell` makes writes through the pointer legal; the arena never moves.
        self.memory
            .as_ptr()
            .cast::<u8>()
            .cast_mut()
            .wrapping_add(addr as usize)
    }
}

std::thread_local! {
    static CURRENT: Cell<*const ThreadCtx> = const { Cell::new(core::ptr::null()) };
}

/// The simulated thread running on this OS thread, if any.
pub(crate) fn try_current() -> Option<&'static ThreadCtx> {
    let p = CURRENT.with(Cell::get);
    // SAFETY: set only while the scheduler runs that thread's fiber; the context outlives it.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The simulated thread calling an intrinsic.
#[track_caller]
pub(crate) fn current(what: &str) -> &'static ThreadCtx {
    match try_current() {
        Some(t) => t,
        None => panic!(
            "gpu::{what} runs only inside a kernel (on a GPU, or on the simulator through \
             gpu_host::Gpu::simulator()); it was called from plain host code"
        ),
    }
}

/// Lets other simulated threads run: called by the intrinsics a thread might spin on
/// (atomics, volatile accesses, fences, clocks, `nanosleep`).
#[track_caller]
pub(crate) fn yield_now() {
    if let Some(t) = try_current() {
        t.suspend(State::Ready, Location::caller());
    }
}

/// The launch's parameter array may be read from every worker.
struct SharedParams<'a>(&'a [*mut core::ffi::c_void]);
// SAFETY: the pointers are only handed to kernel entry points, whose caller guaranteed they
// address memory valid for the whole launch; the array itself is read-only.
unsafe impl Sync for SharedParams<'_> {}

/// Runs a launch to completion.
///
/// # Safety
/// As for [`super::launch`].
pub(crate) unsafe fn run(launch: &Launch<'_>, options: &SimOptions) -> Result<(), Fault> {
    let invalid = |detail: String| {
        Err(Fault::InvalidLaunch {
            kernel: launch.kernel.into(),
            detail,
        })
    };
    let (grid, block) = (launch.grid, launch.block);
    if grid.volume() == 0 || block.volume() == 0 {
        return invalid(std::format!(
            "grid ({}, {}, {}) and block ({}, {}, {}) must be non-zero in every dimension",
            grid.x,
            grid.y,
            grid.z,
            block.x,
            block.y,
            block.z
        ));
    }
    if block.volume() > MAX_BLOCK_THREADS {
        return invalid(std::format!(
            "{} threads per block; the limit is {MAX_BLOCK_THREADS}",
            block.volume()
        ));
    }
    panic_capture::install();
    let blocks = grid.volume() as usize;
    let next = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let first_fault: Mutex<Option<(usize, Fault)>> = Mutex::new(None);
    let params = SharedParams(launch.params);
    let plan = Plan {
        kernel: launch.kernel,
        entry: launch.entry,
        grid,
        block,
        dynamic_shared_bytes: launch.dynamic_shared_bytes,
    };
    let deadline = Instant::now() + options.timeout;
    let workers = options.workers.clamp(1, blocks);
    let worker = || {
        let params = &params;
        let mut stacks: Vec<DefaultStack> = Vec::new();
        loop {
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= blocks || abort.load(Ordering::Relaxed) {
                break;
            }
            let block_idx = Dim3::new(
                (b % grid.x as usize) as u32,
                (b / grid.x as usize % grid.y as usize) as u32,
                (b / (grid.x as usize * grid.y as usize)) as u32,
            );
            let end = run_block(
                &plan,
                Params(params.0.as_ptr()),
                block_idx,
                &mut stacks,
                options,
                &abort,
                deadline,
            );
            if let Err(fault) = end {
                abort.store(true, Ordering::Relaxed);
                let mut first = first_fault.lock().unwrap_or_else(|e| e.into_inner());
                // Keep the fault of the lowest block: the report does not depend on timing
                // when several blocks fail the same way.
                if first.as_ref().is_none_or(|(fb, _)| b < *fb) {
                    *first = Some((b, fault));
                }
            }
        }
    };
    if workers == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(worker);
            }
        });
    }
    match first_fault.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some((_, fault)) => Err(fault),
        None => Ok(()),
    }
}

/// What every block of a launch needs (the parameter array travels separately).
struct Plan<'a> {
    kernel: &'a str,
    entry: super::Entry,
    grid: Dim3,
    block: Dim3,
    dynamic_shared_bytes: u32,
}

/// Runs one block: every thread a fiber, round-robin over the runnable ones.
fn run_block(
    launch: &Plan<'_>,
    params: Params,
    block_idx: Dim3,
    stacks: &mut Vec<DefaultStack>,
    options: &SimOptions,
    abort: &AtomicBool,
    deadline: Instant,
) -> Result<(), Fault> {
    let bd = launch.block;
    let n = bd.volume() as usize;
    let mut ctx = Box::new(BlockCtx {
        kernel: launch.kernel.into(),
        block_idx,
        block_dim: bd,
        grid_dim: launch.grid,
        threads: Box::new([]),
        barrier: Barrier::default(),
        warps: (0..n.div_ceil(WARP_SIZE as usize))
            .map(|w| Warp::new(n, w))
            .collect(),
        shared: SharedArena::new(launch.dynamic_shared_bytes),
        fault: RefCell::new(None),
        aborting: Cell::new(false),
    });
    let block_ptr: *const BlockCtx = &*ctx;
    ctx.threads = (0..n)
        .map(|i| ThreadCtx {
            thread: Dim3::new(
                (i % bd.x as usize) as u32,
                (i / bd.x as usize % bd.y as usize) as u32,
                (i / (bd.x as usize * bd.y as usize)) as u32,
            ),
            linear: i as u32,
            block: block_ptr,
            yielder: Cell::new(core::ptr::null()),
            state: Cell::new(State::Ready),
            site: Cell::new(Location::caller()),
            warp_values: Cell::new([0; 32]),
        })
        .collect();
    let block: &BlockCtx = &ctx;
    let mut fibers: Vec<Option<Fiber>> = (0..n)
        .map(|i| {
            let stack = match stacks.pop() {
                Some(s) => s,
                None => DefaultStack::new(options.stack_bytes)
                    .expect("allocating a simulated thread's stack"),
            };
            Some(Fiber::new(stack, &block.threads[i], launch.entry, params))
        })
        .collect();

    let mut done = 0;
    let outcome = loop {
        let mut ran = false;
        for (i, slot) in fibers.iter_mut().enumerate() {
            let t = &block.threads[i];
            if t.state.get() != State::Ready {
                continue;
            }
            let Some(fiber) = slot.as_mut() else { continue };
            ran = true;
            CURRENT.with(|c| c.set(t));
            panic_capture::set_capturing(true);
            let finished = fiber.resume();
            panic_capture::set_capturing(false);
            CURRENT.with(|c| c.set(core::ptr::null()));
            if finished {
                t.state.set(State::Done);
                done += 1;
                if let Some(f) = slot.take() {
                    stacks.push(f.into_stack());
                }
            }
            if block.has_fault() {
                break;
            }
        }
        if block.has_fault() {
            break block.fault.borrow_mut().take();
        }
        if done == n {
            break None;
        }
        if !ran {
            break Some(Fault::Divergence {
                kernel: block.kernel.clone(),
                block: block_idx,
                detail: rendezvous::describe_stall(block),
            });
        }
        if abort.load(Ordering::Relaxed) {
            break None;
        }
        if Instant::now() > deadline {
            break Some(Fault::Timeout {
                kernel: block.kernel.clone(),
                seconds: options.timeout.as_secs(),
                detail: rendezvous::describe_running(block),
            });
        }
    };
    // Tear down whatever is still suspended (after a fault or an abort): the unwind passes
    // through the fibers' own catch (which re-raises it because the block is aborting).
    block.aborting.set(true);
    for f in fibers.into_iter().flatten() {
        stacks.push(f.into_stack());
    }
    match outcome {
        Some(fault) => Err(fault),
        None => Ok(()),
    }
}
