//! What device intrinsics do when a kernel crate runs on the host (outside a GPU).

/// Called by every device intrinsic compiled for a non-GPU target without the simulator.
#[cold]
#[track_caller]
#[allow(dead_code)]
pub(crate) fn unsupported(what: &str) -> ! {
    panic!(
        "gpu::{what} runs only inside a GPU kernel (this code was compiled for the host without \
         the `sim` feature)"
    )
}

/// Called by the few intrinsics the simulator does not model.
#[cold]
#[track_caller]
#[allow(dead_code)]
pub(crate) fn unsupported_on_simulator(what: &str) -> ! {
    panic!("gpu::{what} is not supported by the CPU simulator; run this kernel on a GPU")
}
