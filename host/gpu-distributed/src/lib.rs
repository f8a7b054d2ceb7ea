//! Several GPUs and machines: collectives and transfers between devices through NCCL, with the
//! same API on the CPU simulator, failure detection that turns a dead rank into an error on
//! every other rank, and a launcher that starts one process per GPU.
//!
//! Two ways to run:
//! - **One process, several devices**: [`Communicator::for_devices`] gives one communicator
//!   per device; drive them from one thread with a [`Group`] per step, or one thread each
//!   ([`run_ranks`]).
//! - **One process per GPU** (and across machines): start the program with
//!   `cargo xtask launch -n N PROGRAM` (or [`launch::Launcher`], or torchrun); each process
//!   calls [`Communicator::from_env`], which reads torchrun's variables and meets rank 0 over
//!   TCP.
//!
//! NCCL is loaded at run time (`libnccl.so.2` on the library path or from the `nvidia-nccl`
//! Python wheel); nothing is needed to build. On simulated devices
//! ([`gpu_host::Gpu::simulator_device`], or `GPU_BACKEND=sim`) the same communicators run
//! without NCCL, with NCCL's results, so distributed programs are tested in CI.
//!
//! # Failure, never a hang
//! Communicators are NCCL's blocking ones, watched by a thread that aborts a call blocked past
//! [`CommOptions::timeout`] or after another rank failed ([`CommOptions::non_blocking`] gives
//! NCCL's non-blocking ones instead). Every wait ([`Communicator::synchronize`], creation,
//! group calls) polls NCCL's asynchronous error and the rendezvous, and gives up after the
//! timeout. A rank that panics, returns an error out of [`run_ranks`],
//! exits or is killed is seen by the rendezvous (its connection closes, or it says why); every
//! other rank's next wait aborts its NCCL communicator and returns [`Error::RankFailed`] naming
//! the rank and the reason. Calls whose kinds, lengths, element types or roots differ between
//! ranks are reported the same way ([`CommOptions::check_calls`]).
//!
//! NVLink multicast (NVLS) stays off: [`launch::Launcher`] sets `NCCL_NVLS_ENABLE=0`, and
//! communicators set it in their own process when it is unset.
//!
//! Safety model: raw NCCL calls live in one private module; this API takes `DeviceBuffer`s,
//! checks lengths, ranks and devices before NCCL is called, and keeps the buffers borrowed
//! (and ordered on the communicator's stream) until their work is queued.

mod comm;
mod element;
mod error;
mod group;
mod hub;
/// The launcher: one process per GPU (the `gpu-launcher` crate, re-exported).
pub mod launch {
    pub use gpu_launcher::*;
}
mod nccl;
mod tcp;

pub use comm::{CommOptions, Communicator, Rendezvous, TIMEOUT_ENV, run_ranks};
pub use element::{CommElement, DataType, ReduceOp};
pub use error::{Error, Result};
pub use group::Group;
pub use nccl::{NCCL_LIBRARY_ENV, nccl_info};

/// How many GPUs an NCCL world can use on this machine: its GPU count when it has at least two
/// and NCCL loads, or why not (for programs and tests that fall back or skip without them).
pub fn nccl_gpu_count() -> std::result::Result<usize, String> {
    let count = gpu_host::Gpu::count().map_err(|e| e.to_string())?;
    if count < 2 {
        return Err(format!("needs 2 GPUs, found {count}"));
    }
    nccl_info().map(|_| count)
}

/// Sets `NCCL_NVLS_ENABLE=0` in this process unless it is set: NVLink multicast can take the
/// shared GPUs of a host out of service, and nothing here needs it.
pub fn disable_nvls_unless_set() {
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // SAFETY: called before NCCL is loaded and before this crate starts threads; Rust's
        // own environment access is locked, and NCCL reads the variable at its init.
        unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    }
}
