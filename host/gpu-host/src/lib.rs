//! Host runtime for Rust GPU kernels: open a device, move data, load PTX and launch kernels
//! with validated configurations and typed arguments.
//!
//! Built on cudarc's driver API with dynamic loading, so programs using it build and start on
//! machines without CUDA; [`Gpu::new`] then returns [`Error::NoDriver`] instead of panicking.
//!
//! The same API runs kernels on the CPU simulator (`gpu::sim`) instead of a GPU:
//! [`Gpu::simulator`], or [`Gpu::from_env`] with `GPU_BACKEND=sim`. Buffers, streams, events,
//! modules and typed launchers work unchanged; a kernel panic is the same
//! [`Error::KernelPanic`], reported by the launch itself.
//!
//! ```ignore
//! use gpu_host::{Gpu, LaunchConfig};
//!
//! gpu_host::include_kernels!("example_kernels"); // generated launchers, see the macro
//!
//! let gpu = Gpu::first()?;
//! let a = gpu.to_device(&[1.0f32, 2.0, 3.0])?;
//! let b = gpu.to_device(&[10.0f32, 20.0, 30.0])?;
//! let mut out = gpu.alloc_zeroed::<f32>(3)?;
//! let module = gpu.load_ptx_file("target/kernels/example_kernels.ptx")?;
//! let kernel = module.kernel("vector_add")?;
//! let mut launch = kernel.prepare(gpu.default_stream(), LaunchConfig::for_elements(3, 256))?;
//! launch.input("a", &a).input("b", &b).output("out", &mut out);
//! // SAFETY: vector_add(a: &[f32], b: &[f32], out: DisjointSlice<f32>) takes exactly these.
//! unsafe { launch.launch() }?;
//! assert_eq!(out.to_vec()?, [11.0, 22.0, 33.0]);
//! # Ok::<(), gpu_host::Error>(())
//! ```
//!
//! Safety model: everything is safe except [`KernelLaunch::launch`], whose caller promises that
//! the pushed arguments match the kernel's PTX signature. Generated launchers keep that promise
//! for `#[kernel]` functions, and a launch also checks the pushed parameter sizes against the
//! PTX entry's declaration when it can read it.
//!
//! Generated modules also launch a kernel named by its type, `module.launch::<K>(stream,
//! config, args)`, for library code that picks kernels by type (e.g. a generic kernel's
//! instance `axpy<T>`): see [`typed`].

mod buffer;
mod buffer_uses;
pub mod code;
mod device;
mod error;
pub mod fault;
pub mod graph;
pub mod isolate;
mod launch;
mod launch_args;
mod launch_log;
mod module;
pub mod profile;
pub mod ptx;
mod stream;
pub mod typed;

pub use buffer::{BufferUse, DeviceBuffer, SIM_ALIGN};
pub use code::{CodeUnit, KernelCode, Sass};
pub use device::{BACKEND_ENV, DeviceProperties, Gpu};
pub use error::{Error, Result};
pub use fault::KernelPanic;
pub use graph::Graph;
pub use launch::{
    BlockSizeSuggestion, Dim3, INDEX32_ENV, KernelLaunch, LaunchConfig, Occupancy, index32_enabled,
    validate_launch,
};
pub use module::{Kernel, KernelAttributes, Module, SimEntry};
pub use profile::{Cost, KernelStats, Profile};
pub use stream::{Event, Stream};
pub use typed::{Args, Holds, KernelType};

/// The contract of the kernels' 32-bit index variants (which launches run them).
pub use gpu_abi::index32;

/// The marker trait (and its derive) for types that may be copied to the device and passed to
/// kernels by value. The derive expands to paths under `::gpu`, so a crate deriving it needs
/// `gpu` as a dependency too.
pub use gpu::DeviceCopy;

/// The device crate, re-exported so generated code can name `gpu_host::gpu::...`.
pub use gpu;

/// cudarc, re-exported for escape hatches (`Gpu::cuda_context`, `DeviceBuffer::as_cuda_slice`).
pub use cudarc;

/// Includes the typed launchers a build script generated for a kernel crate:
/// `gpu_host::include_kernels!("example_kernels")` expands to
/// `include!(concat!(env!("OUT_DIR"), "/example_kernels.rs"))`.
#[macro_export]
macro_rules! include_kernels {
    ($name:literal) => {
        include!(concat!(env!("OUT_DIR"), "/", $name, ".rs"));
    };
}

#[cfg(test)]
mod tests;
