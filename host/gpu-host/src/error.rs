//! The one error type of this crate.
//!
//! Every variant carries the context a user needs to act on it without a debugger: which kernel,
//! which argument, which device limit and both the requested and the allowed value.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::driver::DriverError;

/// Result of every fallible operation in `gpu_host`.
pub type Result<T> = std::result::Result<T, Error>;

/// Set once libcuda has been found loadable. `DriverError`'s own formatting asks libcuda for the
/// error string, and cudarc panics when the library is absent; a `DriverError` normally only
/// exists once the library was loaded, but a user can build one by hand, so `Display` checks.
static DRIVER_LOADED: AtomicBool = AtomicBool::new(false);

pub(crate) fn mark_driver_loaded() {
    DRIVER_LOADED.store(true, Ordering::Relaxed);
}

/// Everything that can go wrong between the host and the GPU.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library (libcuda) could not be loaded: no NVIDIA driver on this machine,
    /// or it is not on the loader's search path.
    NoDriver {
        /// What was looked for and where to look next.
        detail: String,
    },
    /// The driver is present but reports no CUDA device.
    NoDevice,
    /// A device ordinal beyond the devices the driver reports.
    InvalidOrdinal {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },
    /// A CUDA driver call failed.
    Driver {
        /// What was being done, e.g. "launching kernel `saxpy`".
        context: String,
        /// The driver's error code.
        source: DriverError,
    },
    /// A PTX module could not be used as given (not text the driver accepts, e.g. an interior
    /// NUL byte) or the driver's JIT compiler rejected it (the log is in `message`).
    InvalidPtx {
        /// The module's name as given to `load_ptx`.
        module: String,
        /// Why, including the JIT compiler's log where there is one.
        message: String,
    },
    /// A kernel name that the module does not define as an entry point.
    KernelNotFound {
        /// The module's name.
        module: String,
        /// The kernel asked for.
        kernel: String,
        /// The entry points the module does define.
        available: Vec<String>,
    },
    /// A launch configuration that breaks a device or kernel limit. Nothing was launched.
    LaunchConfig {
        /// The kernel that was to be launched.
        kernel: String,
        /// Which limit, the requested value and the limit's value.
        message: String,
    },
    /// A kernel argument that cannot be passed as given. Nothing was launched.
    Argument {
        /// The kernel that was to be launched.
        kernel: String,
        /// The parameter's name.
        argument: String,
        /// What is wrong with it.
        message: String,
    },
    /// A copy between buffers (host or device) of different lengths.
    SizeMismatch {
        /// The copy, e.g. "copy_from_host".
        operation: String,
        /// The length the destination or source required, in elements.
        expected: usize,
        /// The length that was given, in elements.
        actual: usize,
    },
    /// A size in bytes that does not fit the address space (`len * size_of::<T>()` overflowed).
    SizeOverflow {
        /// What was being sized.
        context: String,
    },
    /// Objects from different CUDA contexts (devices) used together.
    DeviceMismatch {
        /// What was combined with what.
        context: String,
    },
    /// A kernel panicked (`panic!`, a failed `assert!`, an out-of-bounds index...). On a GPU the
    /// CUDA context is now unusable: every later call on this device returns this same error
    /// until [`crate::Gpu::recover`] is called. See [`crate::fault`]. On the CPU simulator the
    /// launch returns it and the device stays usable (`source` is `None`).
    KernelPanic {
        /// The operation that reported it (often a later synchronization, not the launch).
        context: String,
        /// What the device recorded: kernel, source location, message, block and thread.
        panic: Box<crate::KernelPanic>,
        /// The sticky driver error the panic's `trap` left (usually `CUDA_ERROR_LAUNCH_FAILED`);
        /// `None` on the simulator.
        source: Option<DriverError>,
    },
    /// A simulated kernel can never finish: a barrier or warp collective that some threads of
    /// a block skip, exit before, or reach at different call sites. Reported by the CPU
    /// simulator (on a GPU this is undefined behavior, often a hang).
    KernelDivergence {
        /// The kernel.
        kernel: String,
        /// The simulator's report: block, and where the threads wait.
        message: String,
    },
    /// A simulated kernel ran longer than the simulator's timeout (`GPU_SIM_TIMEOUT_S`), e.g.
    /// spinning on a value nobody writes.
    KernelTimeout {
        /// The kernel.
        kernel: String,
        /// The simulator's report.
        message: String,
    },
    /// A kernel launched on the CPU simulator from a module loaded without its simulator entry
    /// (raw PTX through [`crate::Gpu::load_ptx`]): the simulator runs the kernel's Rust code,
    /// which it can only find through the entry `#[kernel]` generates.
    NoSimulatorEntry {
        /// The module.
        module: String,
        /// The kernel.
        kernel: String,
    },
    /// An operation the CPU simulator does not provide (driver-only queries, raw handles).
    Unsupported {
        /// What was asked for.
        what: String,
    },
    /// Capturing a stream into a graph, updating or launching a graph failed: an operation that
    /// is not allowed while a stream is captured (synchronizing it, a kernel's first load), a
    /// graph updated with launches of other kernels, or a graph launched on a stream of
    /// another device. See [`crate::Graph`].
    Capture {
        /// What was being done, e.g. "capturing stream 0x55d0 into a graph".
        context: String,
        /// What is wrong and what to do instead.
        message: String,
    },
    /// `GPU_BACKEND` names no backend ([`crate::Gpu::from_env`]).
    InvalidBackend {
        /// The value found.
        value: String,
    },
    /// A kernel faulted without a panic record: an illegal or misaligned address, an illegal
    /// instruction... The CUDA context is unusable until [`crate::Gpu::recover`].
    KernelFault {
        /// The operation that reported it.
        context: String,
        /// The kernel(s) that may have faulted: the launches not yet synchronized.
        kernels: String,
        /// The sticky driver error.
        source: DriverError,
    },
    /// After a kernel fault, the CUDA driver refuses every new context on the device for the
    /// rest of this process, so [`crate::Gpu::recover`] cannot bring the device back (seen with
    /// driver 580 on H200 and H100: even a brand-new non-primary context fails with the fault's
    /// code).
    /// The process must be restarted; to survive faults, run the work that may fault in a
    /// child process with [`crate::isolate`].
    ProcessPoisoned {
        /// The operation that failed.
        context: String,
        /// The device ordinal.
        device: usize,
        /// The kernel fault that poisoned the process, as first reported (`None` when this
        /// crate did not see it, e.g. other code in the process faulted).
        fault: Option<String>,
        /// The sticky driver error every new context is refused with.
        source: DriverError,
    },
    /// A child process for [`crate::isolate`] could not be started.
    Isolation {
        /// The job's name.
        job: String,
        /// Why.
        message: String,
    },
    /// An object (buffer, module, kernel, stream, event, `Gpu` clone) made before
    /// [`crate::Gpu::recover`] reset the device: its driver handles no longer exist.
    Stale {
        /// What was used, and how.
        what: String,
    },
    /// The device has not enough free memory for an allocation.
    OutOfMemory {
        /// What was being allocated.
        context: String,
        /// Bytes asked for.
        requested: usize,
        /// Free device memory when the allocation failed, in bytes (0 if unknown).
        free: usize,
        /// Total device memory, in bytes (0 if unknown).
        total: usize,
    },
    /// A PTX module built for a newer GPU architecture than this device (or a newer PTX ISA than
    /// this driver understands).
    PtxTooNew {
        /// The module's name.
        module: String,
        /// What the module needs and what the device or driver offers, and what to do.
        message: String,
    },
    /// Reading a file (a PTX module) failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl Error {
    /// Wraps a driver error with what was being done; used as `.map_err(Error::driver("..."))`.
    pub(crate) fn driver(context: impl Into<String>) -> impl FnOnce(DriverError) -> Error {
        let context = context.into();
        move |source| Error::Driver { context, source }
    }

    /// Whether this error left the device unusable until [`crate::Gpu::recover`] (a kernel
    /// panic or fault), or came from using an object made before a recovery.
    ///
    /// Errors from the CPU simulator never need recovery.
    pub fn needs_recovery(&self) -> bool {
        matches!(
            self,
            Error::KernelPanic {
                source: Some(_),
                ..
            } | Error::KernelFault { .. }
        )
    }

    /// Whether the device cannot be used again in this process ([`Error::ProcessPoisoned`]):
    /// only a new process can use it.
    pub fn needs_restart(&self) -> bool {
        matches!(self, Error::ProcessPoisoned { .. })
    }

    /// The device's panic report, when this error is a kernel panic.
    pub fn kernel_panic(&self) -> Option<&crate::KernelPanic> {
        match self {
            Error::KernelPanic { panic, .. } => Some(panic),
            _ => None,
        }
    }

    /// A closure-free variant of [`Error::driver`] for lazily built messages.
    pub(crate) fn driver_with(
        context: impl FnOnce() -> String,
    ) -> impl FnOnce(DriverError) -> Error {
        move |source| Error::Driver {
            context: context(),
            source,
        }
    }
}

/// Formats a driver error by code and, when libcuda is loaded, its description.
struct DriverErrorDisplay<'a>(&'a DriverError);

impl fmt::Display for DriverErrorDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0.0)?;
        if DRIVER_LOADED.load(Ordering::Relaxed)
            && let Ok(text) = self.0.error_string()
        {
            write!(f, " ({})", text.to_string_lossy())?;
        }
        Ok(())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDriver { detail } => write!(f, "no CUDA driver was found: {detail}"),
            Error::NoDevice => write!(
                f,
                "the CUDA driver is installed but reports no CUDA device (check nvidia-smi and \
                 CUDA_VISIBLE_DEVICES)"
            ),
            Error::InvalidOrdinal { ordinal, count } => write!(
                f,
                "CUDA device {ordinal} does not exist: the driver reports {count} device(s), \
                 ordinals 0..{count}"
            ),
            Error::Driver { context, source } => {
                write!(
                    f,
                    "CUDA driver error while {context}: {}",
                    DriverErrorDisplay(source)
                )
            }
            Error::InvalidPtx { module, message } => {
                write!(f, "PTX module `{module}` could not be loaded: {message}")
            }
            Error::KernelNotFound {
                module,
                kernel,
                available,
            } => write!(
                f,
                "kernel `{kernel}` is not an entry point of PTX module `{module}` (is it \
                 `#[kernel]`/`.entry`, and was the module rebuilt?); the module defines {}",
                if available.is_empty() {
                    "no entry points".to_string()
                } else {
                    available
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
            Error::LaunchConfig { kernel, message } => {
                write!(
                    f,
                    "invalid launch configuration for kernel `{kernel}`: {message}"
                )
            }
            Error::Argument {
                kernel,
                argument,
                message,
            } => write!(
                f,
                "invalid argument `{argument}` for kernel `{kernel}`: {message}"
            ),
            Error::SizeMismatch {
                operation,
                expected,
                actual,
            } => write!(
                f,
                "{operation}: length mismatch: expected {expected} element(s), got {actual}"
            ),
            Error::SizeOverflow { context } => {
                write!(f, "{context}: size in bytes overflows the address space")
            }
            Error::DeviceMismatch { context } => {
                write!(
                    f,
                    "objects from different CUDA contexts used together: {context}"
                )
            }
            Error::KernelPanic {
                context,
                panic,
                source: Some(source),
            } => write!(
                f,
                "{panic} (reported while {context}, as {}). The CUDA context is now unusable: \
                 call Gpu::recover() to reset the device, then reload modules and reallocate \
                 buffers (where the driver keeps the fault for the whole process, recover \
                 says so and the process must restart; see gpu_host::isolate)",
                DriverErrorDisplay(source)
            ),
            Error::KernelPanic {
                context,
                panic,
                source: None,
            } => write!(f, "{panic} (on the CPU simulator, while {context})"),
            Error::KernelDivergence { message, .. } | Error::KernelTimeout { message, .. } => {
                write!(f, "{message}")
            }
            Error::NoSimulatorEntry { module, kernel } => write!(
                f,
                "kernel `{kernel}` of module `{module}` cannot run on the CPU simulator: the \
                 module was loaded without simulator entries (raw PTX through Gpu::load_ptx). \
                 Load it through its generated launchers (`Module::load`), or with \
                 Gpu::load_module and the kernel's `__gpu_sim_entry_{kernel}`"
            ),
            Error::Capture { context, message } => write!(f, "while {context}: {message}"),
            Error::Unsupported { what } => {
                write!(f, "{what}: not available on the CPU simulator")
            }
            Error::InvalidBackend { value } => write!(
                f,
                "GPU_BACKEND={value:?} names no backend: use `cuda` (the default: the first \
                 GPU) or `sim` (the CPU simulator)"
            ),
            Error::KernelFault {
                context,
                kernels,
                source,
            } => write!(
                f,
                "kernel {kernels} faulted with {} (reported while {context}): an out-of-bounds, \
                 dangling or misaligned pointer access, an illegal instruction, or a `trap`: in \
                 kernel crates built with checks = \"trap\" (the default) a panic (failed index \
                 check, assert, unwrap) traps without a report; rebuild with \
                 GPU_KERNEL_CHECKS=report to see the block, thread and message. Run it under \
                 `cargo xtask sanitize` (memcheck) to find the access. The CUDA context is now \
                 unusable: call Gpu::recover() to reset the device, then reload modules and \
                 reallocate buffers (where the driver keeps the fault for the whole process, \
                 recover says so and the process must restart; see gpu_host::isolate)",
                DriverErrorDisplay(source)
            ),
            Error::ProcessPoisoned {
                context,
                device,
                fault,
                source,
            } => {
                write!(
                    f,
                    "{context}: CUDA device {device} cannot be used again in this process"
                )?;
                if let Some(fault) = fault {
                    write!(f, " after the kernel fault [{fault}]")?;
                }
                write!(
                    f,
                    ": the CUDA driver keeps the fault sticky for the whole process and refuses \
                     every new context with {}, even after resetting the device. Restart the \
                     process; to survive kernel faults, run the GPU work that may fault in a \
                     child process (gpu_host::isolate)",
                    DriverErrorDisplay(source)
                )
            }
            Error::Isolation { job, message } => {
                write!(f, "running job `{job}` in a child process: {message}")
            }
            Error::Stale { what } => write!(
                f,
                "{what}: it was created before Gpu::recover() reset the device, and its driver \
                 handles are gone; create it again from the recovered Gpu"
            ),
            Error::OutOfMemory {
                context,
                requested,
                free,
                total,
            } => write!(
                f,
                "out of device memory while {context}: {requested} bytes requested, {free} of \
                 {total} bytes free. Free buffers you no longer need (dropping a DeviceBuffer \
                 frees it in stream order), process the data in chunks, or use a GPU with more \
                 memory"
            ),
            Error::PtxTooNew { module, message } => {
                write!(f, "PTX module `{module}` cannot run here: {message}")
            }
            Error::Io { path, source } => write!(f, "reading {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // `DriverError`'s own Display calls into libcuda unconditionally; it is still the
            // right source to expose, and it only exists once libcuda was loaded.
            Error::Driver { source, .. }
            | Error::KernelPanic {
                source: Some(source),
                ..
            }
            | Error::KernelFault { source, .. }
            | Error::ProcessPoisoned { source, .. } => Some(source),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
