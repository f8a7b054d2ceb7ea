//! Compiles `#![no_std]` kernel crates to PTX with the stable toolchain's built-in
//! `nvptx64-nvidia-cuda` target, writes a manifest of each module's kernels next to the PTX, and
//! generates typed host launchers from that manifest.
//!
//! Used by `cargo xtask build-kernels` and by build scripts of applications that embed their
//! PTX (see [`KernelBuild::build_script`]).

pub mod annotate;
pub mod arch;
pub mod barriers;
pub mod branches;
pub mod checks;
pub mod compile;
pub mod core_source;
pub mod counters;
pub mod dep_cache;
pub mod diff;
pub mod error;
pub mod generic_launchers;
pub mod guards;
pub mod index32;
pub mod launchers;
pub mod manifest;
pub mod nvcc;
pub mod parallel;
pub mod peephole;
pub mod ptx;
pub mod ptxas;
pub mod remat;
pub mod sass;
pub mod shared_pairs;
pub mod speculate;
pub mod sysroot;
pub mod toolchain;
pub mod units;
pub mod workspace;

pub use arch::Arch;
pub use compile::{BuiltModule, KernelBuild};
pub use error::{Error, Result};
pub use manifest::Manifest;

/// rustc's built-in target for NVIDIA GPUs.
pub const NVPTX_TARGET: &str = "nvptx64-nvidia-cuda";
