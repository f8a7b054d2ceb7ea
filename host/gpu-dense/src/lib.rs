//! Dense compute kernels, called from the host.
//!
//! ```ignore
//! let gpu = gpu_host::Gpu::first()?;
//! let dense = gpu_dense::Dense::load(&gpu)?;
//! ```
//!
//! Two kernel modules are embedded: `dense_kernels` (PTX for sm_80, runs on every GPU since
//! Ampere) and `hopper_kernels` (PTX for sm_90a: `wgmma`, TMA). The Hopper module is loaded only
//! on compute capability 9.0 devices; the methods pick the fastest kernel the device has.

mod attention;
mod gemm;
mod hopper_attention;
mod hopper_attention_backward;
mod hopper_gemm;
mod rows;
mod sgemm;
mod tma_map;

use gpu_host::{Gpu, Result};

pub use ::dense_kernels::gemm::{
    GEMM_POLICIES, GEMM_POLICY_99K, GEMM_POLICY_163K, GEMM_POLICY_216K, GemmPolicy,
};
pub use attention::{AttentionGrads, AttentionInputs, AttentionShape, attention_kernel_names};
pub use gemm::GemmElement;
pub use gpu_host::gpu;
pub use hopper_attention::{AttentionElement, WgmmaSchedule};
pub use hopper_gemm::{TensorMap, WgmmaElement};
pub use rows::{RowElement, row_block_size};

gpu_host::include_kernels!("dense_kernels");
gpu_host::include_kernels!("hopper_kernels");

/// The dense kernels, loaded on one GPU.
pub struct Dense {
    #[allow(dead_code)]
    dense: dense_kernels::Module,
    #[allow(dead_code)]
    hopper: Option<hopper_kernels::Module>,
    /// `gemm_wgmma`'s tensor-map cache and grid size (see `hopper_gemm`).
    wgmma: hopper_gemm::WgmmaState,
    /// `attention_wgmma`'s tensor-map cache.
    wgmma_attention_maps: hopper_attention::MapCache,
    /// `attention_backward_wgmma`'s tensor-map cache (Q, K, V, dO).
    wgmma_attention_backward_maps: hopper_attention::MapCache,
    /// Shared memory a block may have on this device (opt-in included), in bytes: picks the
    /// mma.sync GEMM's policy.
    shared_limit: u32,
}

impl Dense {
    /// Makes the kernels ready on `gpu`; each is loaded on its first use, from SASS for the
    /// device when the build had ptxas, else from PTX the driver JIT-compiles (see
    /// [`gpu_host::code`]). The sm_90a module exists on compute capability 9.0 devices and on the
    /// simulator (where its kernels report that they need a GPU).
    pub fn load(gpu: &Gpu) -> Result<Dense> {
        let hopper = if gpu.is_simulator() || gpu.properties().compute_capability == (9, 0) {
            Some(hopper_kernels::Module::load(gpu)?)
        } else {
            None
        };
        Ok(Dense {
            dense: dense_kernels::Module::load(gpu)?,
            hopper,
            wgmma: hopper_gemm::WgmmaState::new(gpu),
            wgmma_attention_maps: Default::default(),
            wgmma_attention_backward_maps: Default::default(),
            shared_limit: gpu.properties().shared_memory_limit_per_block(),
        })
    }

    /// The modules (`dense_kernels`, then `hopper_kernels` where it exists): which kernels are
    /// loaded and from what code ([`gpu_host::Module::loaded_kernels`]).
    pub fn raw_modules(&self) -> Vec<&gpu_host::Module> {
        std::iter::once(self.dense.raw())
            .chain(self.hopper.as_ref().map(|h| h.raw()))
            .collect()
    }

    /// Whether the sm_90a kernels (wgmma + TMA GEMM) are available on this device.
    pub fn has_hopper(&self) -> bool {
        self.hopper.is_some()
    }
}
