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
            Error::KernelNotFound { module, kernel } => write!(
                f,
                "kernel `{kernel}` is not an entry point of PTX module `{module}` (is it \
                 `#[kernel]`/`.entry`, and was the module rebuilt?)"
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
            Error::Io { path, source } => write!(f, "reading {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // `DriverError`'s own Display calls into libcuda unconditionally; it is still the
            // right source to expose, and it only exists once libcuda was loaded.
            Error::Driver { source, .. } => Some(source),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
