//! bf16/f16 GEMM on tensor cores through `mma.sync` (sm_80+): `C = A · Bᵀ`.

use ::dense_kernels::gemm::{GEMM_BM, GEMM_BN, GEMM_SHARED_BYTES, GEMM_THREADS};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};
use half::{bf16, f16};

use crate::{Dense, dense_kernels};

/// The element types of the tensor-core GEMM: `half::bf16` and `half::f16` (inputs and output;
/// the products are accumulated in f32).
/// Sealed through [`WgmmaElement`](crate::WgmmaElement), which carries the Hopper kernels.
pub trait GemmElement: DeviceCopy + crate::WgmmaElement {
    /// The mma.sync kernel for this type.
    const MMA_SYNC_KERNEL: &'static str;
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn launch_mma_sync(
        module: &dense_kernels::Module,
        stream: &Stream,
        config: LaunchConfig,
        a: &DeviceBuffer<Self>,
        b: &DeviceBuffer<Self>,
        c: &mut DeviceBuffer<Self>,
        m: u32,
        n: u32,
        k: u32,
    ) -> Result<()>;
}

macro_rules! gemm_element {
    ($t:ty, $kernel:ident) => {
        impl GemmElement for $t {
            const MMA_SYNC_KERNEL: &'static str = stringify!($kernel);
            fn launch_mma_sync(
                module: &dense_kernels::Module,
                stream: &Stream,
                config: LaunchConfig,
                a: &DeviceBuffer<Self>,
                b: &DeviceBuffer<Self>,
                c: &mut DeviceBuffer<Self>,
                m: u32,
                n: u32,
                k: u32,
            ) -> Result<()> {
                module.$kernel(stream, config, a, b, c, m, n, k)
            }
        }
    };
}
gemm_element!(bf16, gemm_bf16);
gemm_element!(f16, gemm_f16);

/// Checks the GEMM arguments before anything is launched: K a multiple of 8 (the kernels
/// copy 16-byte row chunks), buffers long enough, sizes within the kernels' 32-bit indices.
/// Returns `(m, n, k)` as `u32`.
pub(crate) fn check_gemm_args(
    kernel: &str,
    (a_len, b_len, c_len): (usize, usize, usize),
    m: usize,
    n: usize,
    k: usize,
) -> Result<(u32, u32, u32)> {
    let bad = |argument: &str, message: String| Error::Argument {
        kernel: kernel.to_string(),
        argument: argument.to_string(),
        message,
    };
    if !k.is_multiple_of(8) {
        return Err(bad(
            "k",
            format!(
                "K = {k} is not a multiple of 8: rows of A and B are copied in 16-byte chunks \
                 (pad K with zeros to a multiple of 8)"
            ),
        ));
    }
    let dim = |name: &str, v: usize| {
        u32::try_from(v)
            .ok()
            .filter(|&v| v < i32::MAX as u32)
            .ok_or_else(|| bad(name, format!("{name} = {v} exceeds 2^31 - 1")))
    };
    let (m32, n32, k32) = (dim("m", m)?, dim("n", n)?, dim("k", k)?);
    let need = |name: &str, len: usize, rows: usize, cols: usize, what: &str| match rows
        .checked_mul(cols)
    {
        Some(want) if len >= want => Ok(()),
        _ => Err(bad(
            name,
            format!("{what} needs {rows} × {cols} elements, the buffer has {len}"),
        )),
    };
    need("a", a_len, m, k, "A (M×K, row-major)")?;
    need("b", b_len, n, k, "B (N×K, row-major: C = A·Bᵀ)")?;
    need("c", c_len, m, n, "C (M×N, row-major)")?;
    Ok((m32, n32, k32))
}

impl Dense {
    /// `C = A · Bᵀ` on tensor cores with the fastest kernel this device has: wgmma + TMA on
    /// compute capability 9.0 GPUs ([`Dense::gemm_wgmma`]), `mma.sync` elsewhere and on the CPU
    /// simulator ([`Dense::gemm_mma_sync`]). A is M×K, B is N×K (an `nn.Linear` weight; torch's
    /// `a @ b.T`), C is M×N, all row-major in `T` (`bf16` or `f16`), accumulated in f32.
    /// Asynchronous on `stream`; K must be a multiple of 8; errors launch nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm<T: GemmElement>(
        &self,
        stream: &Stream,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<()> {
        if self.has_hopper() && !stream.is_simulator() {
            self.gemm_wgmma(stream, a, b, c, m, n, k)
        } else {
            self.gemm_mma_sync(stream, a, b, c, m, n, k)
        }
    }

    /// `C = A · Bᵀ` on tensor cores with `mma.sync` (any sm_80+ GPU), asynchronous on
    /// `stream`: A is M×K, B is N×K (an `nn.Linear` weight; torch's `a @ b.T`), C is M×N, all
    /// row-major in `T` (`bf16` or `f16`), accumulated in f32 and rounded once to `T`.
    ///
    /// M and N are arbitrary; K must be a multiple of 8 (16-byte rows). Errors (nothing
    /// launched): K not a multiple of 8, a buffer shorter than its matrix, a size over 2^31 - 1.
    /// An empty C (M or N zero) launches nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_mma_sync<T: GemmElement>(
        &self,
        stream: &Stream,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<()> {
        let (m32, n32, k32) =
            check_gemm_args(T::MMA_SYNC_KERNEL, (a.len(), b.len(), c.len()), m, n, k)?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        let blocks = (m32.div_ceil(GEMM_BM) as u64) * (n32.div_ceil(GEMM_BN) as u64);
        let grid = u32::try_from(blocks).map_err(|_| Error::Argument {
            kernel: T::MMA_SYNC_KERNEL.to_string(),
            argument: "m".to_string(),
            message: format!("{blocks} tiles of 128×256 exceed the grid limit"),
        })?;
        let config = LaunchConfig::new(grid, GEMM_THREADS).with_shared_mem(GEMM_SHARED_BYTES);
        T::launch_mma_sync(&self.dense, stream, config, a, b, c, m32, n32, k32)
    }
}
