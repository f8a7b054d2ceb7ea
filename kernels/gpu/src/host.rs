//! What device intrinsics do when a kernel crate runs on the host (outside a GPU).

/// Called by every device intrinsic compiled for a non-GPU target.
#[cold]
#[track_caller]
#[allow(dead_code)]
pub(crate) fn unsupported(what: &str) -> ! {
    panic!("gpu::{what} runs only inside a GPU kernel (this code was compiled for the host)")
}
