//! Devices: finding the driver, opening a device and reading its limits once.

use std::sync::Arc;

use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{CudaContext, DriverError};

use crate::error::{Error, Result, mark_driver_loaded};
use crate::fault::{self, Epoch};
use crate::stream::Stream;

/// A device's identity and the limits launches are validated against.
///
/// Read once per [`Gpu`] from the driver's device attributes. The fields are public so tests can
/// build a fake device (see [`crate::validate_launch`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProperties {
    /// The device ordinal this was read from.
    pub ordinal: usize,
    /// Marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability `(major, minor)`, e.g. `(9, 0)` for sm_90.
    pub compute_capability: (u32, u32),
    /// Number of streaming multiprocessors (SMs).
    pub multiprocessor_count: u32,
    /// Global memory in bytes.
    pub total_memory: usize,
    /// Most threads one block may have (product of the block dimensions).
    pub max_threads_per_block: u32,
    /// Largest block dimension along x, y, z.
    pub max_block_dims: (u32, u32, u32),
    /// Largest grid dimension along x, y, z (in blocks).
    pub max_grid_dims: (u32, u32, u32),
    /// Shared memory a block gets without opting in (static + dynamic), typically 48 KiB.
    pub max_shared_memory_per_block: u32,
    /// Shared memory a block may use after opting in (per-function attribute), e.g. 227 KiB on
    /// sm_90. Zero on devices without opt-in; then `max_shared_memory_per_block` is the limit.
    pub max_shared_memory_per_block_optin: u32,
    /// Shared memory per SM, shared by all resident blocks.
    pub shared_memory_per_multiprocessor: u32,
    /// 32-bit registers available to one block.
    pub registers_per_block: u32,
    /// 32-bit registers per SM.
    pub registers_per_multiprocessor: u32,
    /// Threads per warp (32 on every NVIDIA GPU so far).
    pub warp_size: u32,
    /// Most resident threads per SM.
    pub max_threads_per_multiprocessor: u32,
    /// Most resident blocks per SM.
    pub max_blocks_per_multiprocessor: u32,
    /// L2 cache size in bytes.
    pub l2_cache_bytes: u32,
    /// Peak SM clock in kHz.
    pub clock_rate_khz: u32,
    /// Peak memory clock in kHz.
    pub memory_clock_rate_khz: u32,
    /// Global memory bus width in bits.
    pub memory_bus_width_bits: u32,
}

impl DeviceProperties {
    /// The shared memory (static + dynamic) one block can use at most on this device, after
    /// opting in where the device supports it.
    #[inline]
    pub fn shared_memory_limit_per_block(&self) -> u32 {
        self.max_shared_memory_per_block_optin
            .max(self.max_shared_memory_per_block)
    }

    /// Most resident warps per SM (the denominator of occupancy).
    pub fn max_warps_per_multiprocessor(&self) -> u32 {
        self.max_threads_per_multiprocessor / self.warp_size.max(1)
    }

    fn read(ctx: &Arc<CudaContext>) -> Result<DeviceProperties> {
        let ordinal = ctx.ordinal();
        let attr = |a: CUdevice_attribute, what: &str| -> Result<u32> {
            let v = ctx.attribute(a).map_err(Error::driver_with(|| {
                format!("reading device attribute {what} of device {ordinal}")
            }))?;
            // Attributes are non-negative counts and sizes; a negative one would be a driver bug.
            Ok(u32::try_from(v).unwrap_or(0))
        };
        use CUdevice_attribute::*;
        let name = ctx.name().map_err(Error::driver_with(|| {
            format!("reading the name of device {ordinal}")
        }))?;
        let total_memory = ctx.total_mem().map_err(Error::driver_with(|| {
            format!("reading the memory size of device {ordinal}")
        }))?;
        Ok(DeviceProperties {
            ordinal,
            name,
            compute_capability: (
                attr(
                    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                    "COMPUTE_CAPABILITY_MAJOR",
                )?,
                attr(
                    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                    "COMPUTE_CAPABILITY_MINOR",
                )?,
            ),
            multiprocessor_count: attr(
                CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                "MULTIPROCESSOR_COUNT",
            )?,
            total_memory,
            max_threads_per_block: attr(
                CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                "MAX_THREADS_PER_BLOCK",
            )?,
            max_block_dims: (
                attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, "MAX_BLOCK_DIM_X")?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, "MAX_BLOCK_DIM_Y")?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, "MAX_BLOCK_DIM_Z")?,
            ),
            max_grid_dims: (
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "MAX_GRID_DIM_X")?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "MAX_GRID_DIM_Y")?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "MAX_GRID_DIM_Z")?,
            ),
            max_shared_memory_per_block: attr(
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                "MAX_SHARED_MEMORY_PER_BLOCK",
            )?,
            max_shared_memory_per_block_optin: attr(
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
            )?,
            shared_memory_per_multiprocessor: attr(
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
            )?,
            registers_per_block: attr(
                CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
                "MAX_REGISTERS_PER_BLOCK",
            )?,
            registers_per_multiprocessor: attr(
                CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
                "MAX_REGISTERS_PER_MULTIPROCESSOR",
            )?,
            warp_size: attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "WARP_SIZE")?,
            max_threads_per_multiprocessor: attr(
                CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                "MAX_THREADS_PER_MULTIPROCESSOR",
            )?,
            max_blocks_per_multiprocessor: attr(
                CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
                "MAX_BLOCKS_PER_MULTIPROCESSOR",
            )?,
            l2_cache_bytes: attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE")?,
            clock_rate_khz: attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "CLOCK_RATE")?,
            memory_clock_rate_khz: attr(
                CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
                "MEMORY_CLOCK_RATE",
            )?,
            memory_bus_width_bits: attr(
                CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
                "GLOBAL_MEMORY_BUS_WIDTH",
            )?,
        })
    }
}

/// Checks that libcuda can be loaded, and initializes the driver.
///
/// cudarc (with dynamic loading) panics on the first driver call when libcuda is missing, so
/// this must run before any of them; every path into the driver starts at [`Gpu`], which calls
/// this first.
fn init_driver() -> Result<()> {
    // SAFETY: `is_culib_present` only tries `dlopen` on the library's candidate names and closes
    // what it opened; it calls no CUDA function.
    let present = unsafe { sys::is_culib_present() };
    if !present {
        return Err(Error::NoDriver {
            detail: "the CUDA driver library (libcuda.so / nvcuda.dll) could not be loaded. \
                     Install the NVIDIA driver, or add the directory holding libcuda.so.1 to \
                     LD_LIBRARY_PATH"
                .to_string(),
        });
    }
    mark_driver_loaded();
    match cudarc::driver::result::init() {
        Ok(()) => Ok(()),
        Err(DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)) => Err(Error::NoDevice),
        Err(source) => Err(Error::Driver {
            context: "initializing the CUDA driver (cuInit)".to_string(),
            source,
        }),
    }
}

/// What runs a [`Gpu`]'s work.
#[derive(Clone, Debug)]
enum Backend {
    /// A CUDA device through its primary context.
    Cuda(Arc<CudaContext>),
    /// The CPU simulator (`gpu::sim`): buffers are host memory, launches run to completion on
    /// the calling thread's call. `ordinal` tells simulated devices apart
    /// ([`Gpu::simulator_device`]), so mixing their objects is refused as on GPUs.
    Sim { ordinal: usize },
}

/// Which device an object belongs to, for refusing to mix objects of different devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeviceKey {
    /// A CUDA context (its handle) of device `ordinal`.
    Cuda { ctx: usize, ordinal: usize },
    /// Simulated device `ordinal` of the CPU simulator.
    Sim { ordinal: usize },
}

impl DeviceKey {
    pub(crate) fn of_context(ctx: &CudaContext) -> DeviceKey {
        DeviceKey::Cuda {
            ctx: ctx.cu_ctx() as usize,
            ordinal: ctx.ordinal(),
        }
    }
}

impl std::fmt::Display for DeviceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceKey::Cuda { ordinal, .. } => write!(f, "device {ordinal}"),
            DeviceKey::Sim { ordinal: 0 } => write!(f, "the CPU simulator"),
            DeviceKey::Sim { ordinal } => write!(f, "simulated device {ordinal}"),
        }
    }
}

/// The environment variable [`Gpu::from_env`] reads: `sim` or `cuda`.
pub const BACKEND_ENV: &str = "GPU_BACKEND";

impl DeviceProperties {
    /// The limits the CPU simulator enforces: those of an H100 (sm_90), so a launch that breaks
    /// a GPU limit fails the same way on the simulator. The SM count is the number of worker
    /// threads running blocks (`GPU_SIM_WORKERS`), the memory size the host's.
    pub fn simulator() -> DeviceProperties {
        let workers = gpu::sim::SimOptions::from_env().workers;
        DeviceProperties {
            ordinal: 0,
            name: "CPU simulator".to_string(),
            compute_capability: (9, 0),
            multiprocessor_count: u32::try_from(workers).unwrap_or(u32::MAX).max(1),
            total_memory: host_memory().map_or(0, |(_, total)| total),
            max_threads_per_block: 1024,
            max_block_dims: (1024, 1024, 64),
            max_grid_dims: (2_147_483_647, 65_535, 65_535),
            max_shared_memory_per_block: 48 * 1024,
            max_shared_memory_per_block_optin: 227 * 1024,
            shared_memory_per_multiprocessor: 228 * 1024,
            registers_per_block: 65_536,
            registers_per_multiprocessor: 65_536,
            warp_size: 32,
            max_threads_per_multiprocessor: 2048,
            max_blocks_per_multiprocessor: 32,
            l2_cache_bytes: 50 << 20,
            clock_rate_khz: 0,
            memory_clock_rate_khz: 0,
            memory_bus_width_bits: 0,
        }
    }
}

/// Available and total host memory in bytes (`/proc/meminfo`), when the host says.
pub(crate) fn host_memory() -> Option<(usize, usize)> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<usize> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: usize = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        kib.checked_mul(1024)
    };
    Some((field("MemAvailable:")?, field("MemTotal:")?))
}

/// One CUDA device, opened through its primary context, with a default stream — or the CPU
/// simulator ([`Gpu::simulator`]), which runs the same kernels through the same API.
///
/// Cheap to clone (shared handles). All work submitted through the `Gpu` itself (allocations,
/// uploads, launches given [`Gpu::default_stream`]) runs in order on the default stream.
///
/// After a kernel panics or faults the device is unusable until [`Gpu::recover`]; see
/// [`crate::fault`].
#[derive(Clone, Debug)]
pub struct Gpu {
    backend: Backend,
    stream: Stream,
    properties: Arc<DeviceProperties>,
    epoch: Epoch,
}

impl Gpu {
    /// Opens device `ordinal`.
    ///
    /// Errors: [`Error::NoDriver`] when libcuda is not loadable (checked before any driver call,
    /// so this never panics on a machine without a GPU), [`Error::NoDevice`] when there is no
    /// device at all, [`Error::InvalidOrdinal`] when `ordinal` is out of range.
    pub fn new(ordinal: usize) -> Result<Gpu> {
        let count = Gpu::count()?;
        if count == 0 {
            return Err(Error::NoDevice);
        }
        if ordinal >= count {
            return Err(Error::InvalidOrdinal { ordinal, count });
        }
        let state = fault::device_state(ordinal);
        let what = || format!("opening device {ordinal}");
        if let Some(e) = state.fatal_error(what) {
            return Err(e);
        }
        let ctx = CudaContext::new(ordinal).map_err(|source| {
            if fault::is_sticky(source.0) {
                // Only a kernel fault earlier in this process makes context creation fail
                // with a sticky code: the driver keeps it for the whole process.
                state.mark_fatal(source, None, what())
            } else {
                Error::Driver {
                    context: format!("creating the primary context of device {ordinal}"),
                    source,
                }
            }
        })?;
        // SAFETY: no buffer exists on this new context object yet; gpu-host orders every
        // buffer across streams itself (`buffer_uses`), so cudarc's per-buffer events would
        // only double the work (two driver calls per buffer per launch).
        unsafe { ctx.disable_event_tracking() };
        let properties = Arc::new(DeviceProperties::read(&ctx)?);
        let epoch = state.epoch();
        let stream = Stream::from_cuda(ctx.default_stream(), epoch.clone());
        Ok(Gpu {
            backend: Backend::Cuda(ctx),
            stream,
            properties,
            epoch,
        })
    }

    /// Resets the device after a kernel panic or fault, so that later work runs, where the
    /// driver allows it.
    ///
    /// A panicking or faulting kernel leaves CUDA's context in a sticky error state in which
    /// every call fails ([`Error::needs_recovery`]). This resets the device's primary context
    /// (`cuDevicePrimaryCtxReset`) and gives this handle a fresh one. Returns the error that
    /// caused the reset, if one was pending (a [`Error::KernelPanic`] or [`Error::KernelFault`]).
    ///
    /// # When the driver keeps the fault for the whole process
    /// Some drivers refuse every new context after a fault, whatever is released or reset
    /// first: measured with driver 580.159 (CUDA 13.0) on H200 and H100,
    /// `cuDevicePrimaryCtxRetain` after the reset, and even `cuCtxCreate` of a brand-new context,
    /// fail with the fault's own code (`CUDA_ERROR_ILLEGAL_ADDRESS`, `CUDA_ERROR_LAUNCH_FAILED`);
    /// the probe is `gpu-tests/src/bin/recovery_probe.rs`. Then this returns [`Error::ProcessPoisoned`]
    /// ([`Error::needs_restart`]), and so does every later use of the device in this process,
    /// including [`Gpu::new`]. Only a new process can use the GPU again: run work that may
    /// fault in a child process with [`crate::isolate`], so that the fault ends the child and
    /// the parent reports it and goes on.
    ///
    /// # What a successful recovery costs
    /// Everything made on this device before is gone. Buffers, modules, kernels, streams and
    /// events from before, and other clones of this `Gpu`, return [`Error::Stale`] when used,
    /// and dropping them is harmless (their dead driver handles are leaked, never freed twice).
    /// Load modules and allocate buffers again from this handle.
    ///
    /// Calling it on a healthy device resets it all the same. Other threads must not use the
    /// device during the call, and handles taken out through the cudarc escape hatches
    /// ([`Gpu::cuda_context`], [`Stream::cuda_stream`], [`crate::DeviceBuffer::as_cuda_slice`])
    /// are not protected: drop them before recovering.
    ///
    /// On the simulator there is nothing to reset (a simulated panic stops only its launch, and
    /// the device stays usable): this returns `Ok(None)` and leaves every object valid.
    pub fn recover(&mut self) -> Result<Option<Error>> {
        let Backend::Cuda(old_ctx) = &self.backend else {
            return Ok(None);
        };
        let ordinal = self.ordinal();
        let state = self.epoch.state().clone();
        let what = || format!("recovering device {ordinal} (Gpu::recover)");
        if let Some(e) = state.fatal_error(what) {
            return Err(e);
        }
        let fault = state.reset(old_ctx).map_err(|source| Error::Driver {
            context: format!("resetting device {ordinal} (cuDevicePrimaryCtxReset)"),
            source,
        })?;
        let ctx = match CudaContext::new(ordinal) {
            Ok(ctx) => ctx,
            Err(source) if fault::is_sticky(source.0) => {
                let report = fault.as_ref().map(|f| f.summary());
                return Err(state.mark_fatal(source, report, what()));
            }
            Err(source) => {
                return Err(Error::Driver {
                    context: format!(
                        "creating the primary context of device {ordinal} after a reset"
                    ),
                    source,
                });
            }
        };
        // SAFETY: as in `Gpu::new`: no buffer exists on this new context object yet.
        unsafe { ctx.disable_event_tracking() };
        let epoch = state.epoch();
        self.stream = Stream::from_cuda(ctx.default_stream(), epoch.clone());
        self.backend = Backend::Cuda(ctx);
        self.epoch = epoch;
        Ok(fault.map(|f| {
            f.error(format!(
                "the kernel fault that Gpu::recover reset device {ordinal} for"
            ))
        }))
    }

    pub(crate) fn epoch(&self) -> &Epoch {
        &self.epoch
    }

    /// `Ok` when this handle may be used (not stale, device not poisoned).
    pub(crate) fn check(&self, what: impl FnOnce() -> String) -> Result<()> {
        self.epoch.check(what)
    }

    /// Opens device 0.
    pub fn first() -> Result<Gpu> {
        Gpu::new(0)
    }

    /// The CPU simulator (`gpu::sim`): runs kernels compiled for the host with CUDA's execution
    /// semantics, through the same buffers, streams, modules and typed launchers as a GPU.
    /// Needs no driver and never fails.
    ///
    /// What differs from a GPU: buffers are zeroed host memory (256-byte aligned); copies are
    /// synchronous; a launch runs to completion before it returns (so its errors — a kernel
    /// panic as [`Error::KernelPanic`], a barrier deadlock as [`Error::KernelDivergence`], a
    /// kernel that never ends as [`Error::KernelTimeout`] — come from the launch itself, and the
    /// device stays usable); event timings are host wall time; the launch limits are an H100's
    /// ([`DeviceProperties::simulator`]); occupancy and kernel attributes are nominal. Modules
    /// must be loaded with their simulator entries ([`Gpu::load_module`], which generated
    /// launchers use). The cudarc escape hatches return `None`.
    pub fn simulator() -> Result<Gpu> {
        Gpu::simulator_device(0)
    }

    /// Simulated device `ordinal` of the CPU simulator: like [`Gpu::simulator`] (which is
    /// device 0), but a distinct device, so buffers, streams and modules of one are refused on
    /// another ([`Error::DeviceMismatch`]) as they are between GPUs. Several of them stand in
    /// for several GPUs in tests of multi-device code (e.g. one per rank of a simulated
    /// communicator). Copies between them work ([`crate::DeviceBuffer::copy_from_device`]).
    pub fn simulator_device(ordinal: usize) -> Result<Gpu> {
        let epoch = fault::simulator_state().epoch();
        let mut properties = DeviceProperties::simulator();
        properties.ordinal = ordinal;
        Ok(Gpu {
            backend: Backend::Sim { ordinal },
            stream: Stream::new_sim_default(ordinal, epoch.clone()),
            properties: Arc::new(properties),
            epoch,
        })
    }

    /// A simulated device that reports `properties` instead of an H100's limits (its ordinal
    /// is `properties.ordinal`): launch validation, occupancy arithmetic and what libraries pick
    /// from the limits (tile policies, block counts) then behave as on that GPU, e.g. an A100
    /// or an RTX 4090 (`gpu_test_kit::devices` has presets). Kernels still run on the CPU.
    pub fn simulator_with_properties(properties: DeviceProperties) -> Result<Gpu> {
        let epoch = fault::simulator_state().epoch();
        let ordinal = properties.ordinal;
        Ok(Gpu {
            backend: Backend::Sim { ordinal },
            stream: Stream::new_sim_default(ordinal, epoch.clone()),
            properties: Arc::new(properties),
            epoch,
        })
    }

    /// Opens every CUDA device, in ordinal order (one [`Gpu`] each, with its own primary
    /// context, default stream and modules). `Ok` of an empty list when the driver finds no
    /// device; [`Error::NoDriver`] without a driver.
    pub fn all() -> Result<Vec<Gpu>> {
        (0..Gpu::count()?).map(Gpu::new).collect()
    }

    /// The device the environment asks for: `GPU_BACKEND=sim` gives the CPU simulator
    /// ([`Gpu::simulator`]); `GPU_BACKEND=cuda`, empty or unset gives the first GPU
    /// ([`Gpu::first`], with its errors when there is none). Any other value is an error.
    pub fn from_env() -> Result<Gpu> {
        Gpu::from_backend_name(&std::env::var(BACKEND_ENV).unwrap_or_default())
    }

    /// [`Gpu::from_env`] for a given `GPU_BACKEND` value.
    pub(crate) fn from_backend_name(value: &str) -> Result<Gpu> {
        match value.trim().to_ascii_lowercase().as_str() {
            "sim" | "simulator" | "cpu" => Gpu::simulator(),
            "" | "cuda" | "gpu" => Gpu::first(),
            other => Err(Error::InvalidBackend {
                value: other.to_string(),
            }),
        }
    }

    /// Whether this is the CPU simulator rather than a CUDA device.
    pub fn is_simulator(&self) -> bool {
        matches!(self.backend, Backend::Sim { .. })
    }

    pub(crate) fn device_key(&self) -> DeviceKey {
        match &self.backend {
            Backend::Cuda(ctx) => DeviceKey::of_context(ctx),
            Backend::Sim { ordinal } => DeviceKey::Sim { ordinal: *ordinal },
        }
    }

    /// How many CUDA devices the driver reports; `Ok(0)` when the driver is installed but
    /// finds none, [`Error::NoDriver`] when there is no driver.
    pub fn count() -> Result<usize> {
        match init_driver() {
            Ok(()) => {}
            Err(Error::NoDevice) => return Ok(0),
            Err(e) => return Err(e),
        }
        let n = CudaContext::device_count()
            .map_err(Error::driver("counting CUDA devices (cuDeviceGetCount)"))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// The device's identity and limits, read once when the `Gpu` was opened.
    pub fn properties(&self) -> &DeviceProperties {
        &self.properties
    }

    pub(crate) fn properties_arc(&self) -> &Arc<DeviceProperties> {
        &self.properties
    }

    /// The device ordinal (for the simulator, the simulated device's: 0 for
    /// [`Gpu::simulator`]).
    pub fn ordinal(&self) -> usize {
        match &self.backend {
            Backend::Cuda(ctx) => ctx.ordinal(),
            Backend::Sim { ordinal } => *ordinal,
        }
    }

    /// The stream that the `Gpu`'s own methods use (the context's legacy default stream, which
    /// orders itself with every other blocking stream).
    pub fn default_stream(&self) -> &Stream {
        &self.stream
    }

    /// Creates a new independent (non-blocking) stream.
    ///
    /// From the first extra stream on, cudarc tracks every buffer's reads and writes with events,
    /// so a buffer written on one stream and read on another is ordered correctly.
    ///
    /// Buffers used before the first extra stream existed carry no such events, so the first
    /// call waits for all queued work first (`cuCtxSynchronize`): their pending uses are then
    /// finished, and a later use on the new stream cannot race them.
    pub fn new_stream(&self) -> Result<Stream> {
        self.create_stream(false)
    }

    /// Creates a new independent (non-blocking) stream whose kernels the GPU schedules ahead
    /// of those of normal streams ([`Gpu::new_stream`], the default stream) whenever both have
    /// blocks waiting for an SM: for short work that must not queue behind a long kernel
    /// running beside it (e.g. a transfer overlapping a merge). Blocks already running are not
    /// preempted. On a device without stream priorities, and on the simulator, it is a normal
    /// stream.
    pub fn new_high_priority_stream(&self) -> Result<Stream> {
        self.create_stream(true)
    }

    /// [`Gpu::new_stream`], at the device's greatest priority if `high`.
    fn create_stream(&self, high: bool) -> Result<Stream> {
        let kind = if high {
            "high-priority stream"
        } else {
            "stream"
        };
        let what = || format!("creating a {kind} on device {}", self.ordinal());
        self.check(what)?;
        let ctx = match &self.backend {
            Backend::Cuda(ctx) => ctx,
            Backend::Sim { ordinal } => return Ok(Stream::new_sim(*ordinal, self.epoch.clone())),
        };
        if !ctx.is_in_multi_stream_mode() {
            self.synchronize()?;
        }
        let s = if high {
            ctx.bind_to_thread().map_err(self.epoch.driver(what))?;
            // Numerically lower is higher: (least, greatest), e.g. (0, -5).
            let (_, greatest) = cudarc::driver::result::stream::get_priority_range()
                .map_err(self.epoch.driver(what))?;
            ctx.new_stream_with_priority(greatest)
        } else {
            ctx.new_stream()
        };
        Ok(Stream::from_cuda(
            s.map_err(self.epoch.driver(what))?,
            self.epoch.clone(),
        ))
    }

    /// A stream that another library created on this device (torch's current stream,
    /// `torch.cuda.current_stream().cuda_stream`; a CuPy stream's `ptr`), by its raw
    /// `CUstream` handle, so that work submitted here is ordered with that library's work on
    /// it without synchronizing the device. Dropping it (and its clones) never destroys the
    /// stream. Handle 0 is the legacy default stream, 2 the per-thread default stream.
    ///
    /// Buffers allocated on it are freed in order on it, and the algorithms' cached
    /// temporary storage for it keeps a handle to it for as long as their cache lives.
    ///
    /// Errors: [`Error::Unsupported`] on the simulator (it has no CUDA streams: use its
    /// default stream), a stale or poisoned device.
    ///
    /// # Safety
    /// `handle` is 0, 2, or a live stream of this device's primary context (the context the
    /// CUDA runtime, and so torch and CuPy, use), and it stays alive as long as the returned
    /// stream, its clones, and anything queued or allocated on them.
    pub unsafe fn borrow_stream(&self, handle: usize) -> Result<Stream> {
        let what = || format!("borrowing stream {handle:#x} of device {}", self.ordinal());
        self.check(what)?;
        match &self.backend {
            Backend::Cuda(ctx) => {
                // SAFETY: forwarded from the caller; the wrapper does not own the stream.
                let s = unsafe { ctx.wrap_borrowed_stream(handle as sys::CUstream) };
                Ok(Stream::from_cuda(s, self.epoch.clone()))
            }
            Backend::Sim { .. } => Err(Error::Unsupported {
                what: format!(
                    "{} (the CPU simulator has no CUDA streams; use its default stream)",
                    what()
                ),
            }),
        }
    }

    /// Blocks until all work on every stream of this device's context has finished, and reports
    /// errors from earlier asynchronous work (e.g. a kernel that faulted).
    pub fn synchronize(&self) -> Result<()> {
        let what = || format!("synchronizing device {}", self.ordinal());
        self.check(what)?;
        let Backend::Cuda(ctx) = &self.backend else {
            // Simulated work is finished when the call that submitted it returns.
            return Ok(());
        };
        ctx.synchronize().map_err(self.epoch.driver(what))?;
        self.epoch.state().all_synchronized();
        Ok(())
    }

    /// Free and total device memory in bytes (`cuMemGetInfo`), e.g. to check that buffers were
    /// given back.
    ///
    /// On the simulator, whose buffers are host memory: the host's available and total memory
    /// (`/proc/meminfo`), or [`Error::Unsupported`] where the host does not say.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        let what = || format!("reading the memory use of device {}", self.ordinal());
        self.check(what)?;
        match &self.backend {
            Backend::Cuda(ctx) => ctx.mem_get_info().map_err(self.epoch.driver(what)),
            Backend::Sim { .. } => host_memory().ok_or_else(|| Error::Unsupported {
                what: "reading the memory use (the host's /proc/meminfo is not readable)"
                    .to_string(),
            }),
        }
    }

    /// Whether kernels and copies on this device can read and write `peer`'s memory directly
    /// (over NVLink or PCIe; `cuDeviceCanAccessPeer`). `true` for the same device, and between
    /// simulated devices (all host memory).
    pub fn can_access_peer(&self, peer: &Gpu) -> Result<bool> {
        let what = || {
            format!(
                "asking whether device {} can access device {} (cuDeviceCanAccessPeer)",
                self.ordinal(),
                peer.ordinal()
            )
        };
        self.check(what)?;
        peer.check(what)?;
        match (&self.backend, &peer.backend) {
            (Backend::Sim { .. }, Backend::Sim { .. }) => Ok(true),
            (Backend::Cuda(a), Backend::Cuda(b)) if a.ordinal() == b.ordinal() => Ok(true),
            (Backend::Cuda(a), Backend::Cuda(b)) => {
                let mut can = 0;
                // SAFETY: both handles are live devices of the loaded driver; `can` outlives
                // the call.
                unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.cu_device(), b.cu_device()) }
                    .result()
                    .map_err(self.epoch.driver(what))?;
                Ok(can != 0)
            }
            _ => Err(Error::DeviceMismatch {
                context: format!("{}: one is the CPU simulator", what()),
            }),
        }
    }

    /// Lets this device's kernels and copies access `peer`'s memory directly
    /// (`cuCtxEnablePeerAccess` from this device's context to `peer`'s), which makes copies from
    /// `peer` ([`crate::DeviceBuffer::copy_from_device`]) direct instead of staged. Access is
    /// one-way: call it on both devices for both directions. Enabling it again is a no-op; so
    /// is the same device and the simulator. [`Error::Unsupported`] when the devices cannot
    /// access each other ([`Gpu::can_access_peer`]).
    pub fn enable_peer_access(&self, peer: &Gpu) -> Result<()> {
        let what = || {
            format!(
                "enabling access from device {} to device {} (cuCtxEnablePeerAccess)",
                self.ordinal(),
                peer.ordinal()
            )
        };
        if !self.can_access_peer(peer)? {
            return Err(Error::Unsupported {
                what: format!(
                    "{}: the devices cannot access each other's memory (copies between them \
                     are staged through the host)",
                    what()
                ),
            });
        }
        let (Backend::Cuda(a), Backend::Cuda(b)) = (&self.backend, &peer.backend) else {
            return Ok(());
        };
        if a.ordinal() == b.ordinal() {
            return Ok(());
        }
        a.bind_to_thread().map_err(self.epoch.driver(what))?;
        // SAFETY: `a`'s context is current on this thread and `b`'s context is live (held by
        // `peer`); the flags must be 0.
        match unsafe { sys::cuCtxEnablePeerAccess(b.cu_ctx(), 0) } {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
                Ok(())
            }
            code => Err(self.epoch.driver(what)(DriverError(code))),
        }
    }

    /// The underlying cudarc context, for anything this crate does not wrap; `None` on the
    /// simulator.
    pub fn cuda_context(&self) -> Option<&Arc<CudaContext>> {
        match &self.backend {
            Backend::Cuda(ctx) => Some(ctx),
            Backend::Sim { .. } => None,
        }
    }
}
