//! `Dense::gemm_wgmma`: the bf16/f16 GEMM on Hopper tensor cores (wgmma + TMA), see
//! `hopper_kernels::gemm` for the kernel's design.

use std::collections::HashMap;
use std::sync::Mutex;

use ::hopper_kernels::gemm::{self, GemmDims};
use ::hopper_kernels::gemm::{BK, BM, BN, SHARED_BYTES, THREADS};
use gpu_host::cudarc::driver::sys;
use gpu_host::{DeviceBuffer, Error, LaunchConfig, Result, Stream};
use half::{bf16, f16};

use crate::Dense;
pub use gpu_host::gpu::hopper::tma::TensorMap;

/// Element types `Dense::gemm_wgmma` accepts: bf16 and f16 (f32 accumulate).
pub trait WgmmaElement: gpu_host::gpu::DeviceCopy + sealed::Sealed {
    /// The kernel's name (for errors).
    const KERNEL: &'static str;
    /// The TMA element type.
    #[doc(hidden)]
    const TMA_TYPE: sys::CUtensorMapDataType;
    #[doc(hidden)]
    fn launch(
        module: &crate::hopper_kernels::Module,
        stream: &Stream,
        cfg: LaunchConfig,
        inputs: Inputs<'_, Self>,
        c: &mut DeviceBuffer<Self>,
        dims: GemmDims,
    ) -> Result<()>;
}

/// A, B and their tensor maps, as the kernel receives them.
#[doc(hidden)]
pub type Inputs<'a, T> = (
    &'a DeviceBuffer<T>,
    &'a DeviceBuffer<T>,
    &'a DeviceBuffer<TensorMap>,
);

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

macro_rules! wgmma_elem {
    ($t:ty, $kernel:ident, $tma:ident) => {
        impl WgmmaElement for $t {
            const KERNEL: &'static str = stringify!($kernel);
            const TMA_TYPE: sys::CUtensorMapDataType = sys::CUtensorMapDataType::$tma;
            fn launch(
                module: &crate::hopper_kernels::Module,
                stream: &Stream,
                cfg: LaunchConfig,
                inputs: Inputs<'_, Self>,
                c: &mut DeviceBuffer<Self>,
                dims: GemmDims,
            ) -> Result<()> {
                let (a, b, maps) = inputs;
                module.$kernel(stream, cfg, a, b, maps, c, dims)
            }
        }
    };
}
wgmma_elem!(bf16, gemm_bf16_wgmma, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
wgmma_elem!(f16, gemm_f16_wgmma, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);

/// Tensor maps already copied to the device, by (A address, B address, m, n, k, type). A map's
/// bytes depend only on these, so an entry stays right even if the buffers it was made for are
/// freed and others allocated at the same addresses.
type MapCache = Mutex<HashMap<(u64, u64, u32, u32, u32, u32), DeviceBuffer<TensorMap>>>;

/// What `gemm_wgmma` keeps between calls.
pub(crate) struct WgmmaState {
    maps: MapCache,
    /// Blocks of the persistent grid: one per SM (one 384-thread block with ~193 KiB of shared
    /// memory fills an SM).
    pub(crate) sm_count: u32,
}

impl WgmmaState {
    pub(crate) fn new(gpu: &gpu_host::Gpu) -> WgmmaState {
        WgmmaState {
            maps: MapCache::default(),
            sm_count: gpu.properties().multiprocessor_count.max(1),
        }
    }
}

/// Most cached map pairs; the cache is cleared when full (one pair is 256 bytes of device memory).
const MAP_CACHE_LIMIT: usize = 64;

/// Encodes the 2-D tensor map of a row-major `rows × cols` matrix at `addr`, read in boxes of
/// `box_rows × 64` elements with the 128-byte swizzle the wgmma descriptors expect.
fn encode_map<T: WgmmaElement>(
    addr: u64,
    rows: u32,
    cols: u32,
    box_rows: u32,
) -> Result<TensorMap> {
    // The row stride is a multiple of 16 bytes (checked by the caller: K % 8 == 0).
    crate::tma_map::encode_tiled(
        T::TMA_TYPE,
        addr,
        &[cols as u64, rows as u64],
        &[cols as u64 * 2],
        &[BK, box_rows],
        || format!("a {rows}×{cols} matrix for `{}`", T::KERNEL),
    )
}

impl Dense {
    /// `C[m×n] = A[m×k] · B[n×k]ᵀ` in bf16 or f16 with f32 accumulate, on Hopper tensor cores
    /// (wgmma fed by TMA): A, B and C row-major, B laid out like an `nn.Linear` weight (torch's
    /// `a @ b.T`). Asynchronous on `stream`.
    ///
    /// Needs a compute capability 9.0 GPU (H100/H200): elsewhere, and on the CPU simulator, it
    /// returns an error without launching. `k` must be a multiple of 8 (TMA needs 16-byte row
    /// strides); any `m`, `n` work (partial tiles are zero-filled on load and masked on store).
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_wgmma<T: WgmmaElement>(
        &self,
        stream: &Stream,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<()> {
        crate::gemm::check_gemm_args(T::KERNEL, (a.len(), b.len(), c.len()), m, n, k)?;
        // Shapes first (they are wrong on any device), then the device.
        let Some(module) = self.hopper.as_ref() else {
            return Err(Error::LaunchConfig {
                kernel: T::KERNEL.to_string(),
                message: "needs a compute capability 9.0 GPU (H100/H200: wgmma and TMA exist on \
                          sm_90a only); use the mma.sync GEMM on this device"
                    .to_string(),
            });
        };
        if stream.is_simulator() {
            return Err(Error::LaunchConfig {
                kernel: T::KERNEL.to_string(),
                message: "wgmma, TMA and mbarrier transaction counts are not simulated; this \
                          kernel runs on a compute capability 9.0 GPU only"
                    .to_string(),
            });
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        let dims = GemmDims {
            m: m as u32,
            n: n as u32,
            k: k as u32,
        };
        if k == 0 {
            // Nothing to multiply: C = 0. (A zero-width tensor map cannot be encoded.)
            return c.copy_from_host(&vec![bytemuck_zero::<T>(); m * n]);
        }
        let blocks = gemm::tiles(dims).min(self.wgmma.sm_count);
        let key = (
            a.device_ptr(),
            b.device_ptr(),
            dims.m,
            dims.n,
            dims.k,
            T::TMA_TYPE as u32,
        );
        let mut cache = self.wgmma.maps.lock().unwrap_or_else(|e| e.into_inner());
        if !cache.contains_key(&key) {
            let maps = [
                encode_map::<T>(key.0, dims.m, dims.k, BM)?,
                encode_map::<T>(key.1, dims.n, dims.k, BN)?,
            ];
            if cache.len() >= MAP_CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(key, stream.to_device(&maps)?);
        }
        let maps = &cache[&key];
        let cfg = LaunchConfig::new(blocks, THREADS).with_shared_mem(SHARED_BYTES);
        T::launch(module, stream, cfg, (a, b, maps), c, dims)
    }
}

/// A zero of `T` (both element types are plain 16-bit patterns where all-zero bits is +0).
fn bytemuck_zero<T: WgmmaElement>() -> T {
    // SAFETY: `T` is bf16 or f16 (sealed), for which the all-zero bit pattern is +0.0.
    unsafe { std::mem::zeroed() }
}
