//! Device faults: kernel panics, sticky CUDA errors, and recovering from them.
//!
//! # What happens when a kernel faults
//! A kernel that panics (the `gpu` crate's panic handler ends it with `trap`) or touches an
//! illegal address leaves the CUDA context in a *sticky* error state: every later driver call in
//! that context fails with the same code, and nothing allocated in it is reachable again. CUDA
//! offers one way out: reset the device's primary context, which destroys every allocation,
//! module and stream in it.
//!
//! This crate turns that into:
//! - **A host error that says what happened.** The first error after the fault is
//!   [`Error::KernelPanic`] when the kernel panicked (with the panic
//!   record the device wrote: source file, line, column and message when the kernel crate
//!   enables `gpu`'s `panic-report` feature, and always the block and thread that panicked), or
//!   [`Error::KernelFault`] for other sticky errors (illegal address,
//!   misaligned access, illegal instruction). Both name the kernel: the host remembers the
//!   launches not yet synchronized and, for a panic, picks those whose grid and block shapes
//!   match the record. Every later call on the poisoned device returns the same error.
//! - **Explicit recovery, where the driver allows it.** [`Gpu::recover`](crate::Gpu::recover)
//!   resets the primary context and gives the `Gpu` a fresh one; later work runs normally.
//!   Current drivers (measured: 580.159 on H200 and H100) keep the fault for the whole
//!   *process*: no context can be created again, not even a new non-primary one. `recover`
//!   then returns [`Error::ProcessPoisoned`], as does every later
//!   use of the device in the process; run work that may fault in a child process
//!   ([`crate::isolate`]) so that only the child is lost.
//! - **No use of dead handles.** Every buffer, module, kernel, stream and event remembers the
//!   device *generation* it was made in. After a recovery, using an old one returns
//!   [`Error::Stale`] instead of touching a handle the driver may have
//!   reused, and dropping it leaks its (already destroyed) driver handle instead of freeing
//!   something that now belongs to someone else. Other clones of the recovered `Gpu` are stale too.
//!
//! The panic record lives in page-locked host memory mapped into the device
//! (`cuMemHostAlloc(DEVICEMAP)`), because device memory cannot be read once the context is
//! poisoned; each loaded module's `__gpu_panic_record` global is pointed at it. The layout is
//! `gpu_abi::panic::PanicRecord`, the type the device's panic handler writes.

use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaModule, CudaStream, DevicePtr, DriverError};

use crate::error::Error;
use crate::launch::LaunchConfig;
use crate::launch_log::{LaunchLog, Logged};

// The record's layout and constants: one definition, shared with the device's panic handler.
#[cfg(test)]
use gpu_abi::panic::FLAG_NO_DETAILS;
use gpu_abi::panic::{FILE_CAP, FLAG_LOCATION, FLAG_MESSAGE, MESSAGE_CAP, RECORD_VERSION};
pub(crate) use gpu_abi::panic::{PanicRecord as RawRecord, RECORD_MAGIC, RECORD_SYMBOL};

/// What the device reported about a kernel panic, decoded. Part of [`Error::KernelPanic`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelPanic {
    /// The kernel that panicked, as far as the host can tell: one name when exactly one launch
    /// in flight matches the panicking grid's shape, otherwise `"one of `a`, `b`"`.
    pub kernel: String,
    /// Source file of the panic (`None` when the kernel crate was built without `gpu`'s
    /// `panic-report` feature).
    pub file: Option<String>,
    /// Line of the panic (0 when unknown).
    pub line: u32,
    /// Column of the panic (0 when unknown).
    pub column: u32,
    /// The panic message, when there was one and it was recorded.
    pub message: Option<String>,
    /// Whether `file` or `message` was cut to fit the record.
    pub truncated: bool,
    /// `blockIdx` of the thread that panicked first.
    pub block: (u32, u32, u32),
    /// `threadIdx` of the thread that panicked first.
    pub thread: (u32, u32, u32),
    /// The launch's grid shape (blocks).
    pub grid_dim: (u32, u32, u32),
    /// The launch's block shape (threads).
    pub block_dim: (u32, u32, u32),
}

impl KernelPanic {
    /// Decodes a complete record; `None` when the record was never written (magic missing) or
    /// has another layout version.
    pub(crate) fn from_record(r: &RawRecord, kernel: String) -> Option<KernelPanic> {
        if r.magic != RECORD_MAGIC || r.version != RECORD_VERSION {
            return None;
        }
        let text = |bytes: &[u8], len: u32, cap: usize| {
            let n = (len as usize).min(cap);
            (
                String::from_utf8_lossy(&bytes[..n]).into_owned(),
                len as usize > cap,
            )
        };
        let (file, file_cut) = text(&r.file, r.file_len, FILE_CAP);
        let (message, msg_cut) = text(&r.message, r.message_len, MESSAGE_CAP);
        let t = |a: [u32; 3]| (a[0], a[1], a[2]);
        Some(KernelPanic {
            kernel,
            file: (r.flags & FLAG_LOCATION != 0).then_some(file),
            line: r.line,
            column: r.column,
            message: (r.flags & FLAG_MESSAGE != 0).then_some(message),
            truncated: file_cut || msg_cut,
            block: t(r.block_idx),
            thread: t(r.thread_idx),
            grid_dim: t(r.grid_dim),
            block_dim: t(r.block_dim),
        })
    }

    /// Whether the kernel crate recorded location and message (`gpu/panic-report`).
    pub fn has_details(&self) -> bool {
        self.file.is_some() || self.message.is_some()
    }
}

impl fmt::Display for KernelPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel {} panicked", self.kernel)?;
        if let Some(file) = &self.file {
            write!(f, " at {file}:{}:{}", self.line, self.column)?;
        }
        let (b, t) = (self.block, self.thread);
        write!(
            f,
            " in block ({}, {}, {}), thread ({}, {}, {})",
            b.0, b.1, b.2, t.0, t.1, t.2
        )?;
        match &self.message {
            Some(m) => write!(f, ": {m}")?,
            None if !self.has_details() => write!(
                f,
                " (no location or message recorded: enable the `panic-report` feature of the \
                 kernel crate's `gpu` dependency)"
            )?,
            None => {}
        }
        if self.truncated {
            write!(f, " [truncated]")?;
        }
        Ok(())
    }
}

/// The cause of a poisoned context, shared by every error reported after it.
#[derive(Clone, Debug)]
pub(crate) enum Fault {
    Panic {
        panic: KernelPanic,
        code: DriverError,
    },
    Sticky {
        kernels: String,
        code: DriverError,
    },
    /// The driver refuses new contexts on the device for the rest of the process.
    Fatal {
        device: usize,
        fault: Option<String>,
        code: DriverError,
    },
}

impl Fault {
    /// One line saying what the fault was, without advice (for [`Error::ProcessPoisoned`]).
    pub(crate) fn summary(&self) -> String {
        match self {
            Fault::Panic { panic, .. } => panic.to_string(),
            Fault::Sticky { kernels, code } => {
                format!("kernel {kernels} faulted with {:?}", code.0)
            }
            Fault::Fatal { fault, .. } => fault.clone().unwrap_or_default(),
        }
    }

    /// The error for an operation (`context`) that failed because of this fault.
    pub(crate) fn error(&self, context: String) -> Error {
        match self {
            Fault::Panic { panic, code } => Error::KernelPanic {
                context,
                panic: Box::new(panic.clone()),
                source: Some(*code),
            },
            Fault::Sticky { kernels, code } => Error::KernelFault {
                context,
                kernels: kernels.clone(),
                source: *code,
            },
            Fault::Fatal {
                device,
                fault,
                code,
            } => Error::ProcessPoisoned {
                context,
                device: *device,
                fault: fault.clone(),
                source: *code,
            },
        }
    }
}

/// Whether a driver error leaves the context unusable (CUDA's "sticky" errors).
pub(crate) fn is_sticky(code: CUresult) -> bool {
    use CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_ECC_UNCORRECTABLE
            | CUDA_ERROR_CONTEXT_IS_DESTROYED
    )
}

/// A launch submitted but not yet known to be finished.
#[derive(Clone, Debug)]

/// Page-locked host memory mapped into the device, holding one [`RawRecord`].
struct MappedRecord {
    host: *mut RawRecord,
    device: sys::CUdeviceptr,
}

// SAFETY: the pointer is only dereferenced under the `DeviceState` mutex, by volatile reads of
// plain integers; the allocation lives until the context is reset, after which it is dropped
// from the state before anyone could read it.
unsafe impl Send for MappedRecord {}

#[derive(Default)]
struct Inner {
    record: Option<MappedRecord>,
    fault: Option<Arc<Fault>>,
}

/// Per-device fault state shared by every `Gpu` handle of one device in this process.
pub(crate) struct DeviceState {
    pub(crate) ordinal: usize,
    generation: AtomicU64,
    poisoned: AtomicBool,
    /// Set for good once the driver refused a new context after a fault ([`Fault::Fatal`]).
    fatal: AtomicBool,
    inner: Mutex<Inner>,
    /// Launches not confirmed by a synchronization, for naming a faulting kernel.
    pub(crate) log: LaunchLog,
}

impl fmt::Debug for DeviceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceState")
            .field("ordinal", &self.ordinal)
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .field("poisoned", &self.poisoned.load(Ordering::Relaxed))
            .field("fatal", &self.fatal.load(Ordering::Relaxed))
            .finish()
    }
}

/// The state of device `ordinal` (one per device per process).
pub(crate) fn device_state(ordinal: usize) -> Arc<DeviceState> {
    static STATES: OnceLock<Mutex<Vec<Arc<DeviceState>>>> = OnceLock::new();
    let mut states = STATES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(s) = states.iter().find(|s| s.ordinal == ordinal) {
        return s.clone();
    }
    let s = Arc::new(DeviceState {
        ordinal,
        generation: AtomicU64::new(0),
        poisoned: AtomicBool::new(false),
        fatal: AtomicBool::new(false),
        inner: Mutex::new(Inner::default()),
        log: LaunchLog::new(),
    });
    states.push(s.clone());
    s
}

/// The ordinal the CPU simulator's state is filed under (no CUDA device has it).
pub(crate) const SIMULATOR_ORDINAL: usize = usize::MAX;

/// The state of the CPU simulator: never poisoned (a simulated kernel's panic stops only its own
/// launch) and never reset, so its objects are never stale.
pub(crate) fn simulator_state() -> Arc<DeviceState> {
    device_state(SIMULATOR_ORDINAL)
}

impl DeviceState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current epoch of this device.
    pub(crate) fn epoch(self: &Arc<Self>) -> Epoch {
        Epoch {
            state: self.clone(),
            generation: self.generation.load(Ordering::Acquire),
        }
    }

    /// Records the fault behind sticky error `code` (first call only) and returns it.
    fn poison(&self, code: &DriverError) -> Arc<Fault> {
        let mut inner = self.lock();
        if let Some(f) = &inner.fault {
            return f.clone();
        }
        let record = inner.record.as_ref().map(|r| {
            // SAFETY: `host` points to a live, 512-byte, 4-aligned mapped allocation (see
            // `MappedRecord`); the device has stopped (the context is poisoned), and a volatile
            // read of plain integers is valid whatever the device wrote.
            unsafe { r.host.read_volatile() }
        });
        let (pending, forgotten) = self.log.pending();
        let names = |filter: &dyn Fn(&Logged) -> bool| -> Vec<Arc<str>> {
            let mut v: Vec<Arc<str>> = Vec::new();
            for l in pending.iter().filter(|l| filter(l)) {
                if !v.contains(&l.kernel) {
                    v.push(l.kernel.clone());
                }
            }
            v
        };
        let describe = |v: &[Arc<str>]| match v {
            [] if forgotten => {
                "(unknown: more launches were in flight than the host remembers)".to_string()
            }
            [] => "(unknown: no unsynchronized launch was recorded)".to_string(),
            [one] => format!("`{one}`"),
            many => format!(
                "one of {}",
                many.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let all = names(&|_| true);
        let fault = match record.filter(|r| r.magic == RECORD_MAGIC) {
            Some(r) => {
                let (g, b) = (r.grid_dim, r.block_dim);
                let matching = names(&|l| l.grid == g && l.block == b);
                let kernel = describe(if matching.is_empty() { &all } else { &matching });
                match KernelPanic::from_record(&r, kernel.clone()) {
                    Some(panic) => Fault::Panic { panic, code: *code },
                    None => Fault::Sticky {
                        kernels: kernel,
                        code: *code,
                    },
                }
            }
            None => Fault::Sticky {
                kernels: describe(&all),
                code: *code,
            },
        };
        let fault = Arc::new(fault);
        inner.fault = Some(fault.clone());
        self.poisoned.store(true, Ordering::Release);
        fault
    }

    /// Remembers a submitted launch of the kernel interned as `kernel` (see
    /// [`LaunchLog::intern`]), for naming it if it faults.
    pub(crate) fn launched(&self, kernel: u32, stream: &CudaStream, cfg: &LaunchConfig) {
        self.log.record(kernel, stream.cu_stream() as usize, cfg);
    }

    /// All work on `stream` finished without error.
    pub(crate) fn stream_synchronized(&self, stream: &CudaStream) {
        self.log.stream_synchronized(stream.cu_stream() as usize);
    }

    /// All work on every stream finished without error.
    pub(crate) fn all_synchronized(&self) {
        self.log.clear();
    }

    /// Points module `module`'s `__gpu_panic_record` global (if it has one) at this device's
    /// mapped record, allocating the record on first use. `ctx` must be current.
    pub(crate) fn attach_record(
        &self,
        ctx: &Arc<CudaContext>,
        module: &Arc<CudaModule>,
        stream: &Arc<CudaStream>,
    ) -> Result<bool, DriverError> {
        let view = match module.get_global(RECORD_SYMBOL, stream) {
            Ok(v) => v,
            Err(DriverError(CUresult::CUDA_ERROR_NOT_FOUND)) => return Ok(false),
            Err(e) => return Err(e),
        };
        if cudarc::driver::DeviceSlice::len(&view) != 8 {
            return Ok(false);
        }
        let (global, _guard) = view.device_ptr(stream);
        let mut inner = self.lock();
        if inner.record.is_none() {
            ctx.bind_to_thread()?;
            let mut host: *mut c_void = std::ptr::null_mut();
            // SAFETY: `host` is a valid out-pointer; the size is the record's; the flags ask
            // for page-locked memory mapped into every context's address space.
            unsafe {
                sys::cuMemHostAlloc(
                    &mut host,
                    std::mem::size_of::<RawRecord>(),
                    sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE,
                )
            }
            .result()?;
            // SAFETY: `host` is a fresh 512-byte allocation; all-zero bytes are a valid
            // `RawRecord` (plain integers) and mean "no panic" (magic 0).
            unsafe {
                std::ptr::write_bytes(host.cast::<u8>(), 0, std::mem::size_of::<RawRecord>())
            };
            let mut device: sys::CUdeviceptr = 0;
            // SAFETY: `host` was allocated with DEVICEMAP in the current context; `device` is a
            // valid out-pointer; flags must be 0.
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) }.result()?;
            inner.record = Some(MappedRecord {
                host: host.cast(),
                device,
            });
        }
        let device = inner.record.as_ref().map_or(0, |r| r.device);
        // SAFETY: `global` is the device address of the module's 8-byte `__gpu_panic_record`
        // (size checked above); the source is an 8-byte local; the copy is synchronous.
        unsafe {
            sys::cuMemcpyHtoD_v2(
                global,
                (&device as *const sys::CUdeviceptr).cast(),
                std::mem::size_of::<sys::CUdeviceptr>(),
            )
        }
        .result()?;
        Ok(true)
    }

    /// Resets the device's primary context and starts a new generation. Returns the fault that
    /// was pending, if any.
    pub(crate) fn reset(&self, ctx: &CudaContext) -> Result<Option<Arc<Fault>>, DriverError> {
        let mut inner = self.lock();
        // SAFETY: resetting the primary context of a valid device. Every handle made in it dies;
        // this crate's wrappers check the generation bumped below before using theirs, and leak
        // rather than free them on drop. Handles taken out through the cudarc escape hatches are
        // the caller's responsibility (documented on `Gpu::recover`).
        unsafe { sys::cuDevicePrimaryCtxReset_v2(ctx.cu_device()) }.result()?;
        // The reset freed the mapped record together with everything else.
        inner.record = None;
        self.log.clear();
        let fault = inner.fault.take();
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.poisoned.store(false, Ordering::Release);
        Ok(fault)
    }
}

impl DeviceState {
    /// Records that the driver refused a new context with sticky error `code` after a fault:
    /// from now on every use of the device reports [`Error::ProcessPoisoned`]. `fault` is the
    /// fault's own report, when known. Returns the error for `context`.
    pub(crate) fn mark_fatal(
        &self,
        code: DriverError,
        fault: Option<String>,
        context: String,
    ) -> Error {
        let mut inner = self.lock();
        let fault = match inner.fault.as_deref() {
            Some(f @ Fault::Fatal { .. }) => f.clone(),
            _ => Fault::Fatal {
                device: self.ordinal,
                fault,
                code,
            },
        };
        let fault = Arc::new(fault);
        inner.fault = Some(fault.clone());
        self.fatal.store(true, Ordering::Release);
        self.poisoned.store(true, Ordering::Release);
        fault.error(context)
    }

    /// The [`Error::ProcessPoisoned`] for `context`, once the device was found unrecoverable.
    pub(crate) fn fatal_error(&self, context: impl FnOnce() -> String) -> Option<Error> {
        if !self.fatal.load(Ordering::Acquire) {
            return None;
        }
        self.lock().fault.clone().map(|f| f.error(context()))
    }
}

/// The device generation an object was made in; checked before every use of its handles.
#[derive(Clone, Debug)]
pub(crate) struct Epoch {
    state: Arc<DeviceState>,
    generation: u64,
}

impl Epoch {
    #[inline]
    pub(crate) fn state(&self) -> &Arc<DeviceState> {
        &self.state
    }

    /// Whether both objects were made for the same CUDA device (one state per device per
    /// process), without looking at their handles: a cheap test that may answer `false` for
    /// objects of one device (simulated devices share a state, so they always answer `false`);
    /// callers fall back to comparing device keys.
    #[inline]
    pub(crate) fn surely_same_device(&self, other: &Epoch) -> bool {
        Arc::ptr_eq(&self.state, &other.state) && self.state.ordinal != SIMULATOR_ORDINAL
    }

    /// Whether the device was reset since this object was made (its handles are dead).
    #[inline]
    pub(crate) fn is_stale(&self) -> bool {
        self.state.generation.load(Ordering::Acquire) != self.generation
    }

    /// `Ok` when the object's handles may be used: not stale, device not poisoned.
    #[inline]
    pub(crate) fn check(&self, what: impl FnOnce() -> String) -> Result<(), Error> {
        let s = &self.state;
        if !s.fatal.load(Ordering::Acquire)
            && s.generation.load(Ordering::Acquire) == self.generation
            && !s.poisoned.load(Ordering::Acquire)
        {
            return Ok(());
        }
        self.check_failed(what)
    }

    /// [`Epoch::check`] once one of its flags is set: the error, if the fault is recorded.
    #[cold]
    #[inline(never)]
    fn check_failed(&self, what: impl FnOnce() -> String) -> Result<(), Error> {
        if self.state.fatal.load(Ordering::Acquire) {
            let fault = self.state.lock().fault.clone();
            if let Some(f) = fault {
                return Err(f.error(what()));
            }
        }
        if self.is_stale() {
            return Err(Error::Stale { what: what() });
        }
        if self.state.poisoned.load(Ordering::Acquire) {
            let fault = self.state.lock().fault.clone();
            if let Some(f) = fault {
                return Err(f.error(what()));
            }
        }
        Ok(())
    }

    /// Maps a driver error of an operation on this device: sticky errors become the device's
    /// fault ([`Error::KernelPanic`] / [`Error::KernelFault`]), others [`Error::Driver`].
    ///
    /// The mapper borrows the epoch rather than holding a clone of its state, so that building
    /// it (which `map_err(epoch.driver(..))` does before the call it guards, error or not) costs
    /// no reference count traffic on a launch's success path.
    #[inline]
    pub(crate) fn driver(
        &self,
        what: impl FnOnce() -> String,
    ) -> impl FnOnce(DriverError) -> Error {
        move |source| {
            if is_sticky(source.0) {
                self.state.poison(&source).error(what())
            } else {
                Error::Driver {
                    context: what(),
                    source,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RawRecord {
        let mut r = RawRecord {
            magic: RECORD_MAGIC,
            version: RECORD_VERSION,
            line: 42,
            column: 9,
            block_idx: [1, 2, 3],
            thread_idx: [4, 5, 6],
            grid_dim: [8, 1, 1],
            block_dim: [64, 1, 1],
            file_len: 0,
            message_len: 0,
            flags: FLAG_LOCATION | FLAG_MESSAGE,
            reserved: 0,
            file: [0; FILE_CAP],
            message: [0; MESSAGE_CAP],
        };
        let file = b"kernels/fault-kernels/src/lib.rs";
        r.file[..file.len()].copy_from_slice(file);
        r.file_len = file.len() as u32;
        let msg = b"planted panic";
        r.message[..msg.len()].copy_from_slice(msg);
        r.message_len = msg.len() as u32;
        r
    }

    #[test]
    fn decodes_a_record() {
        let p = KernelPanic::from_record(&record(), "`panic_at`".into()).unwrap();
        assert_eq!(p.file.as_deref(), Some("kernels/fault-kernels/src/lib.rs"));
        assert_eq!((p.line, p.column), (42, 9));
        assert_eq!(p.message.as_deref(), Some("planted panic"));
        assert_eq!((p.block, p.thread), ((1, 2, 3), (4, 5, 6)));
        assert!(!p.truncated);
        assert_eq!(
            p.to_string(),
            "kernel `panic_at` panicked at kernels/fault-kernels/src/lib.rs:42:9 in block (1, 2, 3), \
             thread (4, 5, 6): planted panic"
        );
    }

    #[test]
    fn rejects_incomplete_or_foreign_records() {
        let mut r = record();
        r.magic = 0;
        assert!(KernelPanic::from_record(&r, String::new()).is_none());
        let mut r = record();
        r.version = 99;
        assert!(KernelPanic::from_record(&r, String::new()).is_none());
    }

    #[test]
    fn truncation_and_missing_details_are_reported() {
        let mut r = record();
        r.message_len = 1000;
        let p = KernelPanic::from_record(&r, "`k`".into()).unwrap();
        assert!(p.truncated);
        assert_eq!(p.message.as_ref().unwrap().len(), MESSAGE_CAP);
        let mut r = record();
        r.flags = FLAG_NO_DETAILS;
        let p = KernelPanic::from_record(&r, "`k`".into()).unwrap();
        assert!(!p.has_details());
        assert!(p.to_string().contains("panic-report"), "{p}");
    }

    #[test]
    fn an_unrecoverable_device_says_so_everywhere() {
        // An ordinal no real device has, so that no other test shares this state.
        let state = device_state(9_999);
        let before = state.epoch();
        assert!(before.check(|| "using a buffer".into()).is_ok());
        let code = DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
        let panic = KernelPanic::from_record(&record(), "`panic_at`".into()).unwrap();
        let fault = Fault::Panic { panic, code };
        let e = state.mark_fatal(code, Some(fault.summary()), "recovering device 9999".into());
        assert!(e.needs_restart() && !e.needs_recovery(), "{e}");
        let text = e.to_string();
        for part in [
            "recovering device 9999",
            "cannot be used again in this process",
            "planted panic",
            "CUDA_ERROR_ILLEGAL_ADDRESS",
            "Restart the process",
            "gpu_host::isolate",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        // Objects from before, and later sticky errors, report the same.
        let e = before.check(|| "using a buffer".into()).unwrap_err();
        assert!(
            e.needs_restart() && e.to_string().starts_with("using a buffer"),
            "{e}"
        );
        let e = before.driver(|| "a launch".into())(code);
        assert!(e.needs_restart(), "{e}");
        assert!(
            state
                .fatal_error(|| "opening".into())
                .unwrap()
                .needs_restart()
        );
        // A second report keeps the first fault.
        let e = state.mark_fatal(code, None, "again".into());
        assert!(e.to_string().contains("planted panic"), "{e}");
    }

    #[test]
    fn sticky_codes() {
        assert!(is_sticky(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(is_sticky(CUresult::CUDA_ERROR_LAUNCH_FAILED));
        assert!(!is_sticky(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(!is_sticky(CUresult::CUDA_ERROR_INVALID_VALUE));
    }
}
