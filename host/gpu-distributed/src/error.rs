//! Errors of distributed work. Every variant names the rank it happened on; failures of other
//! ranks name the rank that failed.

use std::fmt;
use std::time::Duration;

/// What went wrong.
#[derive(Debug)]
pub enum Error {
    /// An error of the local device (allocation, copy, launch, driver).
    Gpu(gpu_host::Error),
    /// NCCL could not be loaded; the message lists where it was looked for and what to install.
    NcclUnavailable(String),
    /// An NCCL call failed on this rank (NCCL's error name and its last message).
    Nccl {
        rank: usize,
        call: String,
        message: String,
    },
    /// A rank failed (panicked, exited, timed out, or called a collective that does not match
    /// the others'), so this rank's communicator was aborted instead of waiting forever.
    RankFailed {
        /// The rank this error is reported on.
        rank: usize,
        /// The rank that failed (may be `rank` itself).
        failed_rank: usize,
        reason: String,
    },
    /// This rank waited longer than its timeout (for the other ranks to join, or for queued
    /// collectives to finish); the communicator was aborted and the other ranks told.
    Timeout {
        rank: usize,
        what: String,
        after: Duration,
    },
    /// A bad argument, found before anything was called.
    Argument {
        rank: usize,
        operation: String,
        message: String,
    },
    /// The distributed setup is wrong (environment variables, rendezvous, mixed backends).
    Setup(String),
    /// A socket of the rendezvous failed.
    Io {
        context: String,
        source: std::io::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<gpu_host::Error> for Error {
    fn from(e: gpu_host::Error) -> Error {
        Error::Gpu(e)
    }
}

impl Error {
    /// The rank that failed, when this error is (or was caused by) a rank's failure.
    pub fn failed_rank(&self) -> Option<usize> {
        match self {
            Error::RankFailed { failed_rank, .. } => Some(*failed_rank),
            Error::Timeout { rank, .. } | Error::Nccl { rank, .. } => Some(*rank),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Gpu(e) => write!(f, "{e}"),
            Error::NcclUnavailable(m) => write!(f, "{m}"),
            Error::Nccl {
                rank,
                call,
                message,
            } => write!(f, "rank {rank}: {call} failed: {message}"),
            Error::RankFailed {
                rank,
                failed_rank,
                reason,
            } if rank == failed_rank => {
                write!(f, "rank {rank} failed: {reason}")
            }
            Error::RankFailed {
                rank,
                failed_rank,
                reason,
            } => write!(
                f,
                "rank {rank}: rank {failed_rank} failed, so this rank stopped: {reason}"
            ),
            Error::Timeout { rank, what, after } => write!(
                f,
                "rank {rank}: timed out after {:.1} s {what} (a rank may be stuck or gone; \
                 the timeout is GPU_DIST_TIMEOUT_S or CommOptions::timeout)",
                after.as_secs_f64()
            ),
            Error::Argument {
                rank,
                operation,
                message,
            } => write!(f, "rank {rank}: {operation}: {message}"),
            Error::Setup(m) => write!(f, "{m}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Gpu(e) => Some(e),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
