//! Rust kernels beside their CUDA C++ twins.
//!
//! `twin-kernels` (kernels/twin-kernels) holds classic textbook kernels written the natural way in
//! Rust; `kernels/twin-kernels/cuda/twins.cu` holds the same kernels in CUDA C++, as CUDA's samples
//! write them. This crate builds both (the C++ side with nvcc, when there is one), runs each
//! twin pair on the same inputs with the same launch shapes, checks both outputs against a CPU
//! reference ([`cases`]), and times them side by side (the `twins-bench` program in benches/).
//!
//! On the CPU simulator only the Rust side runs: the simulator executes Rust, not PTX.

pub mod cases;
pub mod ptx_stats;

use gpu_host::{Gpu, Module, Result};

/// Typed launchers of the Rust twins (generated at build time).
pub mod kernels {
    gpu_host::include_kernels!("twin_kernels");
}

pub use kernels::twin_kernels::Module as TwinKernels;

/// The C++ twins compiled by nvcc to PTX (`compute_80`), or why they were not.
pub const CUDA_PTX: std::result::Result<&str, &str> =
    include!(concat!(env!("OUT_DIR"), "/twins.cu.rs"));

/// Which implementation of a twin pair runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The Rust kernel (`twin-kernels`), through its generated launcher.
    Rust,
    /// The CUDA C++ kernel (`twins.cu`), compiled by nvcc.
    Cuda,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Rust => "Rust",
            Side::Cuda => "CUDA C++",
        })
    }
}

/// Problem sizes: small enough for the CPU simulator, or large enough to time on a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    Test,
    Bench,
}

/// Both sides' kernels, loaded on one device.
pub struct Kernels {
    /// The Rust twins.
    pub rust: TwinKernels,
    /// The C++ twins; `None` on the simulator or when there was no nvcc at build time.
    pub cuda: Option<Module>,
    /// Why `cuda` is `None`.
    pub cuda_missing: Option<String>,
}

impl Kernels {
    /// Loads the Rust twins, and the C++ twins on a GPU when nvcc produced them.
    pub fn load(gpu: &Gpu) -> Result<Kernels> {
        let rust = TwinKernels::load(gpu)?;
        let (cuda, cuda_missing) = if gpu.is_simulator() {
            (None, Some("the CPU simulator runs Rust only".to_string()))
        } else {
            match CUDA_PTX {
                Ok(ptx) => {
                    let names: Vec<&str> = kernels::twin_kernels::KERNELS.to_vec();
                    (Some(gpu.load_ptx("twins.cu", ptx, &names)?), None)
                }
                Err(why) => (None, Some(why.to_string())),
            }
        };
        Ok(Kernels {
            rust,
            cuda,
            cuda_missing,
        })
    }

    /// The C++ module, or an error saying why there is none.
    pub fn cuda(&self) -> Result<&Module> {
        self.cuda
            .as_ref()
            .ok_or_else(|| gpu_host::Error::Unsupported {
                what: format!(
                    "the CUDA C++ twins: {}",
                    self.cuda_missing.as_deref().unwrap_or("not loaded")
                ),
            })
    }
}
