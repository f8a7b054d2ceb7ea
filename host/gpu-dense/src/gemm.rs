//! bf16/f16 GEMM on tensor cores through `mma.sync` (sm_80+): `C = A · Bᵀ`.

use ::dense_kernels::gemm::{GEMM_BM, GEMM_BN, GEMM_POLICIES, GEMM_THREADS, GemmPolicy};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};
use half::{bf16, f16};

use crate::{Dense, dense_kernels};

/// The element types of the tensor-core GEMM: `half::bf16` and `half::f16` (inputs and output;
/// the products are accumulated in f32).
/// Sealed through [`WgmmaElement`](crate::WgmmaElement), which carries the Hopper kernels.
pub trait GemmElement: DeviceCopy + crate::WgmmaElement {
    /// The mma.sync kernel for this type (the first policy's; the others add the policy's
    /// suffix).
    const MMA_SYNC_KERNEL: &'static str;
    /// The mma.sync kernels' launchers, one per [`GEMM_POLICIES`] entry, in its order.
    #[doc(hidden)]
    const LAUNCH_MMA_SYNC: [MmaSyncLaunch<Self>; GEMM_POLICIES.len()];
}

/// A typed launcher of an mma.sync GEMM kernel: `(a, b, c, m, n, k)`.
#[doc(hidden)]
pub type MmaSyncLaunch<T> = fn(
    &dense_kernels::Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    &DeviceBuffer<T>,
    &mut DeviceBuffer<T>,
    u32,
    u32,
    u32,
) -> Result<()>;

// The kernels of each policy, in `GEMM_POLICIES` order (a missing kernel does not compile).
macro_rules! gemm_element {
    ($t:ty, $first:ident, $($kernel:ident),*) => {
        impl GemmElement for $t {
            const MMA_SYNC_KERNEL: &'static str = stringify!($first);
            const LAUNCH_MMA_SYNC: [MmaSyncLaunch<Self>; GEMM_POLICIES.len()] =
                [dense_kernels::Module::$first, $(dense_kernels::Module::$kernel),*];
        }
    };
}
gemm_element!(bf16, gemm_bf16, gemm_bf16_163k, gemm_bf16_99k);
gemm_element!(f16, gemm_f16, gemm_f16_163k, gemm_f16_99k);

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

    /// The mma.sync GEMM's tuning policy on this device: the first of [`GEMM_POLICIES`] whose
    /// shared memory the device allows per block (216 KiB on Hopper-class GPUs, 162 KiB on an
    /// A100, 90 KiB on RTX 30/40-class GPUs). `None` on a device with less (none since Ampere).
    pub fn gemm_policy(&self) -> Option<GemmPolicy> {
        GEMM_POLICIES
            .into_iter()
            .find(|p| p.shared_bytes() <= self.shared_limit)
    }

    /// `C = A · Bᵀ` on tensor cores with `mma.sync` (any sm_80+ GPU), asynchronous on
    /// `stream`: A is M×K, B is N×K (an `nn.Linear` weight; torch's `a @ b.T`), C is M×N, all
    /// row-major in `T` (`bf16` or `f16`), accumulated in f32 and rounded once to `T`. Runs
    /// the device's [`Dense::gemm_policy`].
    ///
    /// M and N are arbitrary; K must be a multiple of 8 (16-byte rows). Errors (nothing
    /// launched): K not a multiple of 8, a buffer shorter than its matrix, a size over 2^31 - 1,
    /// a device with too little shared memory for every policy. An empty C (M or N zero)
    /// launches nothing.
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
        let policy = self.gemm_policy().ok_or_else(|| Error::Argument {
            kernel: T::MMA_SYNC_KERNEL.to_string(),
            argument: "device".to_string(),
            message: format!(
                "{} bytes of shared memory per block; the smallest GEMM policy needs {}",
                self.shared_limit,
                GEMM_POLICIES[GEMM_POLICIES.len() - 1].shared_bytes()
            ),
        })?;
        self.gemm_mma_sync_with(policy, stream, a, b, c, m, n, k)
    }

    /// [`Dense::gemm_mma_sync`] with a chosen `policy` (one of [`GEMM_POLICIES`]), e.g. to
    /// run the A100 or RTX-class configuration on an H100. Errors as `gemm_mma_sync`, and when
    /// the policy needs more shared memory per block than this device allows.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_mma_sync_with<T: GemmElement>(
        &self,
        policy: GemmPolicy,
        stream: &Stream,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<()> {
        let index = GEMM_POLICIES.iter().position(|p| *p == policy);
        let kernel = || format!("{}{}", T::MMA_SYNC_KERNEL, policy.suffix);
        let Some(index) = index else {
            return Err(Error::Argument {
                kernel: kernel(),
                argument: "policy".to_string(),
                message: format!("{policy:?} is not one of GEMM_POLICIES"),
            });
        };
        if policy.shared_bytes() > self.shared_limit {
            return Err(Error::Argument {
                kernel: kernel(),
                argument: "policy".to_string(),
                message: format!(
                    "the policy needs {} bytes of shared memory per block; this device allows {}",
                    policy.shared_bytes(),
                    self.shared_limit
                ),
            });
        }
        let (m32, n32, k32) = check_gemm_args(&kernel(), (a.len(), b.len(), c.len()), m, n, k)?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        let blocks = (m32.div_ceil(GEMM_BM) as u64) * (n32.div_ceil(GEMM_BN) as u64);
        let grid = u32::try_from(blocks).map_err(|_| Error::Argument {
            kernel: kernel(),
            argument: "m".to_string(),
            message: format!("{blocks} tiles of 128×256 exceed the grid limit"),
        })?;
        let config = LaunchConfig::new(grid, GEMM_THREADS).with_shared_mem(policy.shared_bytes());
        (T::LAUNCH_MMA_SYNC[index])(&self.dense, stream, config, a, b, c, m32, n32, k32)
    }
}
