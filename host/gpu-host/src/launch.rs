//! Launch configurations, their validation against device and kernel limits, and the argument
//! builder that generated launchers use.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

use cudarc::driver::sys;
use gpu::DeviceCopy;

use crate::buffer::{Bytes, CudaBytes, DeviceBuffer};
use crate::device::{DeviceProperties, Gpu};
use crate::error::{Error, Result};
use crate::launch_args::{ArgList, MAX_PARAM_BYTES, Param, Role};
use crate::module::{Kernel, KernelAttributes, KernelBackend};
use crate::stream::Stream;

/// Three-dimensional extent of a grid (in blocks) or a block (in threads): the ABI crate's type,
/// the one the device library and the simulator use too.
pub use gpu_abi::Dim3;

/// Grid and block shape of one launch, and its dynamic shared memory.
///
/// # Empty launches
/// A grid with a zero extent (what [`LaunchConfig::for_elements`] gives for zero elements) is an
/// *empty launch*: it passes validation and launching it does nothing and returns `Ok(())`, so
/// code processing possibly-empty inputs needs no special case. A zero *block* extent is always
/// an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Number of blocks along x, y, z.
    pub grid: Dim3,
    /// Threads per block along x, y, z.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes (on top of the kernel's static shared memory).
    pub shared_mem_bytes: u32,
    /// A cooperative launch ([`LaunchConfig::cooperative`]): all blocks resident at once, so
    /// they may wait for each other (`gpu::grid::sync`).
    pub cooperative: bool,
    /// Thread-block cluster shape, in blocks ([`LaunchConfig::with_cluster`]; sm_90 and later):
    /// the blocks of a cluster run at once on one GPU processing cluster and can access each
    /// other's shared memory.
    pub cluster: Option<Dim3>,
}

impl LaunchConfig {
    /// A configuration with the given grid and block shapes and no dynamic shared memory.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem_bytes: 0,
            cooperative: false,
            cluster: None,
        }
    }

    /// One thread per element: blocks of `block_size` threads along x, `ceil(n / block_size)`
    /// blocks. `n == 0` gives an empty launch (a no-op). A grid that would need more than
    /// `u32::MAX` blocks saturates, and validation then reports the grid limit; a `block_size`
    /// of 0 gives a zero block, which validation rejects.
    pub fn for_elements(n: usize, block_size: u32) -> LaunchConfig {
        let blocks = if block_size == 0 {
            0
        } else {
            u32::try_from(n.div_ceil(block_size as usize)).unwrap_or(u32::MAX)
        };
        LaunchConfig::new(blocks, block_size)
    }

    /// One thread per pixel of a `width` x `height` image: blocks of `bx` x `by` threads and
    /// enough blocks to cover the image (`ceil(width / bx)` x `ceil(height / by)`). An empty image
    /// gives an empty launch; a zero tile extent gives a zero block, which validation rejects.
    pub fn tiles_2d(width: u32, height: u32, (bx, by): (u32, u32)) -> LaunchConfig {
        let gx = if bx == 0 { 0 } else { width.div_ceil(bx) };
        let gy = if by == 0 { 0 } else { height.div_ceil(by) };
        LaunchConfig::new((gx, gy), (bx, by))
    }

    /// The same configuration with `bytes` of dynamic shared memory per block. More than the
    /// default 48 KiB is allowed up to the device's opt-in limit; the launch opts in for you.
    pub fn with_shared_mem(self, bytes: u32) -> LaunchConfig {
        LaunchConfig {
            shared_mem_bytes: bytes,
            ..self
        }
    }

    /// The same configuration launched cooperatively (`cuLaunchKernelEx` with
    /// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`): every block is resident at once, which a grid-wide
    /// barrier (`gpu::grid::sync`) needs. [`Kernel::prepare`] refuses a grid larger than what
    /// fits on the device at once (the kernel's occupancy x the SM count). On the simulator
    /// that is one block per worker thread (`GPU_SIM_WORKERS`).
    pub fn cooperative(self) -> LaunchConfig {
        LaunchConfig {
            cooperative: true,
            ..self
        }
    }

    /// The same configuration in thread-block clusters of `dims` blocks
    /// (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`; compute capability 9.0 and later). Validation
    /// requires at most 8 blocks per cluster (the portable limit) and a grid divisible by the
    /// cluster shape along every axis. Not available on the simulator.
    pub fn with_cluster(self, dims: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig {
            cluster: Some(dims.into()),
            ..self
        }
    }

    /// Whether this is an empty launch (a zero grid extent): launching it does nothing.
    pub fn is_empty(&self) -> bool {
        self.grid.is_empty()
    }

    /// Threads per block.
    pub fn threads_per_block(&self) -> u64 {
        self.block.volume()
    }

    /// Total threads launched.
    pub fn total_threads(&self) -> u64 {
        self.grid.volume().saturating_mul(self.block.volume())
    }
}

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "grid {} x block {}, {} bytes dynamic shared memory",
            self.grid, self.block, self.shared_mem_bytes
        )?;
        if self.cooperative {
            write!(f, ", cooperative")?;
        }
        if let Some(c) = self.cluster {
            write!(f, ", clusters of {c} blocks")?;
        }
        Ok(())
    }
}

/// Checks `cfg` against the limits of `device` and of the kernel (`attrs`), without touching a
/// GPU. Every error names the kernel, the limit, the requested value and the limit's value.
///
/// Checks, in order: every block extent is at least 1 and at most the device's block dimension
/// limit; threads per block are within the device's and the kernel's limit (the latter is lower
/// when the kernel uses many registers); every grid extent is within the device's grid dimension
/// limit (zero is allowed: an empty launch); static + dynamic shared memory fits the device's
/// opt-in limit per block; the block equals the kernel's required shape, when it has one. A zero
/// `attrs.max_threads_per_block` means "unknown" and is skipped.
pub fn validate_launch(
    kernel: &str,
    cfg: &LaunchConfig,
    device: &DeviceProperties,
    attrs: &KernelAttributes,
) -> Result<()> {
    if launch_fits(cfg, device, attrs) {
        return Ok(());
    }
    explain_launch(kernel, cfg, device, attrs)
}

/// Whether `cfg` passes every check of [`validate_launch`] but the cluster shape's: the
/// compares only, so the launch path stays short; [`explain_launch`] finds what is wrong.
#[inline]
fn launch_fits(cfg: &LaunchConfig, device: &DeviceProperties, attrs: &KernelAttributes) -> bool {
    let (b, g) = (cfg.block, cfg.grid);
    let (mb, mg) = (device.max_block_dims, device.max_grid_dims);
    let shape_fits = cfg.cluster.is_none()
        && attrs.required_block.is_none()
        && b.x != 0
        && b.y != 0
        && b.z != 0
        && b.x <= mb.0
        && b.y <= mb.1
        && b.z <= mb.2
        && g.x <= mg.0
        && g.y <= mg.1
        && g.z <= mg.2
        && gpu_abi::grid_dims_allow(attrs.required_grid_dims, g);
    if !shape_fits {
        return false;
    }
    // Within the per-axis limits, so the product cannot overflow.
    let threads = b.volume();
    let shared = u64::from(attrs.static_shared_bytes) + u64::from(cfg.shared_mem_bytes);
    threads <= u64::from(device.max_threads_per_block)
        && (attrs.max_threads_per_block == 0 || threads <= u64::from(attrs.max_threads_per_block))
        && shared <= u64::from(device.shared_memory_limit_per_block())
}

/// [`validate_launch`]'s full check: the error that says what is wrong with `cfg`, or `Ok`.
#[cold]
#[inline(never)]
fn explain_launch(
    kernel: &str,
    cfg: &LaunchConfig,
    device: &DeviceProperties,
    attrs: &KernelAttributes,
) -> Result<()> {
    let fail = |message: String| {
        Err(Error::LaunchConfig {
            kernel: kernel.to_string(),
            message,
        })
    };
    let axes = ["x", "y", "z"];
    let block = [cfg.block.x, cfg.block.y, cfg.block.z];
    let max_block = [
        device.max_block_dims.0,
        device.max_block_dims.1,
        device.max_block_dims.2,
    ];
    for i in 0..3 {
        if block[i] == 0 {
            return fail(format!(
                "block dimension {} is 0 (block {}); every block dimension must be at least 1",
                axes[i], cfg.block
            ));
        }
        if block[i] > max_block[i] {
            return fail(format!(
                "block dimension {} is {}, above the device's limit of {} (max block dims {:?}, \
                 CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_{})",
                axes[i],
                block[i],
                max_block[i],
                device.max_block_dims,
                axes[i].to_uppercase()
            ));
        }
    }
    if let Some([x, y, z]) = attrs.required_block
        && block != [x, y, z]
    {
        return fail(format!(
            "block {} differs from the block shape ({x}, {y}, {z}) the kernel requires \
             (#[kernel(block({x}, {y}, {z}))], PTX .reqntid): its code relies on that shape",
            cfg.block
        ));
    }
    if let Some(dims) = attrs.required_grid_dims
        && !gpu_abi::grid_dims_allow(Some(dims), cfg.grid)
    {
        let (g, extra) = (cfg.grid, if dims == 1 { "gridDim.y and " } else { "" });
        return fail(format!(
            "grid {g} has more than the {dims} dimension(s) the kernel allows \
             (#[kernel(grid_dims({dims}))]): its code relies on {extra}gridDim.z being 1"
        ));
    }
    let threads = cfg.block.volume();
    if threads > u64::from(device.max_threads_per_block) {
        return fail(format!(
            "block {} has {threads} threads, above the device's limit of {} threads per block \
             (max threads per block)",
            cfg.block, device.max_threads_per_block
        ));
    }
    if attrs.max_threads_per_block > 0 && threads > u64::from(attrs.max_threads_per_block) {
        return fail(format!(
            "block {} has {threads} threads, above this kernel's limit of {} threads per block \
             (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK; it uses {} registers per thread, and \
             the device has {} registers per block)",
            cfg.block,
            attrs.max_threads_per_block,
            attrs.registers_per_thread,
            device.registers_per_block
        ));
    }
    let grid = [cfg.grid.x, cfg.grid.y, cfg.grid.z];
    let max_grid = [
        device.max_grid_dims.0,
        device.max_grid_dims.1,
        device.max_grid_dims.2,
    ];
    for i in 0..3 {
        if grid[i] > max_grid[i] {
            return fail(format!(
                "grid dimension {} is {} blocks, above the device's limit of {} (max grid dims \
                 {:?}, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_{}); use more threads per block, another \
                 grid axis, or a loop in the kernel",
                axes[i],
                grid[i],
                max_grid[i],
                device.max_grid_dims,
                axes[i].to_uppercase()
            ));
        }
    }
    if let Some(cluster) = cfg.cluster {
        validate_cluster(cfg, cluster, device).map_err(|message| Error::LaunchConfig {
            kernel: kernel.to_string(),
            message,
        })?;
    }
    let shared = u64::from(attrs.static_shared_bytes) + u64::from(cfg.shared_mem_bytes);
    let limit = device.shared_memory_limit_per_block();
    if shared > u64::from(limit) {
        return fail(format!(
            "shared memory per block is {shared} bytes ({} static + {} dynamic), above the \
             device's limit of {limit} bytes per block (max shared memory per block opt-in, \
             CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
            attrs.static_shared_bytes, cfg.shared_mem_bytes
        ));
    }
    Ok(())
}

/// The most blocks per cluster every sm_90 device supports (larger needs an opt-in per kernel).
pub const MAX_PORTABLE_CLUSTER_BLOCKS: u64 = 8;

/// Checks the cluster shape of `cfg`; the message says what is wrong.
fn validate_cluster(
    cfg: &LaunchConfig,
    cluster: Dim3,
    device: &DeviceProperties,
) -> std::result::Result<(), String> {
    if device.compute_capability < (9, 0) {
        return Err(format!(
            "thread-block clusters need compute capability 9.0 or later; this device has {}.{}",
            device.compute_capability.0, device.compute_capability.1
        ));
    }
    if cfg.cooperative {
        return Err(
            "a launch cannot be both cooperative and in clusters here: use \
                    cluster barriers within a cluster, or a cooperative launch without \
                    clusters"
                .to_string(),
        );
    }
    if cluster.is_empty() {
        return Err(format!(
            "cluster {cluster} has a zero extent; every cluster dimension must be at least 1"
        ));
    }
    if cluster.volume() > MAX_PORTABLE_CLUSTER_BLOCKS {
        return Err(format!(
            "cluster {cluster} has {} blocks, above the portable limit of \
             {MAX_PORTABLE_CLUSTER_BLOCKS} blocks per cluster",
            cluster.volume()
        ));
    }
    let (g, c) = (
        [cfg.grid.x, cfg.grid.y, cfg.grid.z],
        [cluster.x, cluster.y, cluster.z],
    );
    for (i, axis) in ["x", "y", "z"].iter().enumerate() {
        if g[i] % c[i] != 0 {
            return Err(format!(
                "grid dimension {axis} ({} blocks) is not a multiple of the cluster dimension \
                 {axis} ({}): the grid must be made of whole clusters (grid {}, cluster {cluster})",
                g[i], c[i], cfg.grid
            ));
        }
    }
    Ok(())
}

/// `GPU_INDEX32=0` makes generated launchers always run the kernels as built, never their
/// 32-bit index variants (see [`gpu_abi::index32`]; for comparing the two, or ruling the
/// variants out when a kernel misbehaves). Read once per process.
pub const INDEX32_ENV: &str = "GPU_INDEX32";

/// Whether launches may run 32-bit index variants ([`INDEX32_ENV`] is not `0`).
pub fn index32_enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var(INDEX32_ENV).map_or(true, |v| v.trim() != "0"))
}

/// A validated launch being given its arguments; made by [`Kernel::prepare`].
///
/// Generated launchers push one call per kernel parameter, in the kernel's order, then call
/// [`KernelLaunch::launch`]:
///
/// ```ignore
/// let mut l = kernel.prepare(&stream, LaunchConfig::for_elements(n, 256))?;
/// l.input("a", &a).input("b", &b).output("out", &mut out).value("scale", &2.0f32);
/// unsafe { l.launch() }?;
/// ```
///
/// # Untyped use (RAW)
/// Without a generated launcher, this same builder is the escape hatch: push arguments by hand
/// so they match the PTX entry's parameters, in order and size. Nothing but the size check
/// (when the PTX signature was readable) protects a hand-written argument list, which is why
/// [`KernelLaunch::launch`] is `unsafe`.
///
/// Argument errors (e.g. a buffer from another device, an oversized value) are remembered and
/// returned by `launch`, so the builder calls can be chained; nothing is launched then.
pub struct KernelLaunch<'a> {
    kernel: &'a Kernel,
    stream: &'a Stream,
    cfg: LaunchConfig,
    args: ArgList,
    /// The pushed buffers stay borrowed while their records are in `args` (shared for inputs,
    /// exclusive for outputs): see `launch_args`.
    borrows: PhantomData<&'a mut CudaBytes>,
    error: Option<Box<Error>>,
    /// The largest buffer pushed with [`KernelLaunch::input`] or [`KernelLaunch::output`]: its
    /// bytes and its elements (whether the kernel's 32-bit index variant may run).
    largest_slice: (u64, u64),
}

impl fmt::Debug for KernelLaunch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelLaunch")
            .field("kernel", &self.kernel.name())
            .field("cfg", &self.cfg)
            .field(
                "params",
                &self
                    .args
                    .entries()
                    .iter()
                    .map(|p| (p.name, p.role.as_str(), p.size))
                    .collect::<Vec<_>>(),
            )
            .field("error", &self.error)
            .finish()
    }
}

impl Kernel {
    /// Checks `cfg` against this kernel's and `gpu`'s limits; see [`validate_launch`].
    pub fn validate(&self, cfg: LaunchConfig, gpu: &Gpu) -> Result<()> {
        self.check(|| format!("validating a launch of kernel `{}`", self.name()))?;
        if gpu.device_key() != self.device_key() {
            return Err(Error::DeviceMismatch {
                context: format!(
                    "kernel `{}` was loaded on {}, validated against {}",
                    self.name(),
                    self.device_key(),
                    gpu.device_key()
                ),
            });
        }
        validate_launch(self.name(), &cfg, gpu.properties(), self.attributes())
    }

    /// Validates `cfg` for a launch on `stream` and starts collecting the arguments.
    ///
    /// Errors (nothing is launched): [`Error::LaunchConfig`] for a limit violation,
    /// [`Error::DeviceMismatch`] when `stream` belongs to another device than the kernel.
    #[inline]
    pub fn prepare<'a>(
        &'a self,
        stream: &'a Stream,
        cfg: LaunchConfig,
    ) -> Result<KernelLaunch<'a>> {
        let what = || format!("preparing a launch of kernel `{}`", self.name());
        self.check(what)?;
        stream.check(|| format!("{} (its stream)", what()))?;
        if !stream.epoch().surely_same_device(self.epoch()) {
            self.check_stream_device(stream)?;
        }
        validate_launch(self.name(), &cfg, self.device_arc(), self.attributes())?;
        if cfg.cooperative || cfg.cluster.is_some() {
            self.check_launch_kind(&cfg)?;
        }
        let n = self.param_sizes().map_or(8, <[usize]>::len);
        Ok(KernelLaunch {
            kernel: self,
            stream,
            cfg,
            args: ArgList::with_capacity(n),
            borrows: PhantomData,
            error: None,
            largest_slice: (0, 0),
        })
    }
}

impl Kernel {
    /// [`Kernel::prepare`]'s device check when the cheap test (one device state) cannot tell:
    /// compares the device keys of the stream and the kernel.
    #[cold]
    #[inline(never)]
    fn check_stream_device(&self, stream: &Stream) -> Result<()> {
        if stream.device_key() == self.device_key() {
            return Ok(());
        }
        Err(Error::DeviceMismatch {
            context: format!(
                "kernel `{}` was loaded on {}, but the launch stream belongs to {}",
                self.name(),
                self.device_key(),
                stream.device_key()
            ),
        })
    }

    /// [`Kernel::prepare`]'s checks of a cooperative or cluster launch.
    #[inline(never)]
    fn check_launch_kind(&self, cfg: &LaunchConfig) -> Result<()> {
        if cfg.cooperative && !cfg.is_empty() {
            self.check_co_residency(cfg)?;
        }
        if cfg.cluster.is_some() && self.is_simulator() {
            return Err(Error::Unsupported {
                what: format!(
                    "launching kernel `{}` in thread-block clusters ({cfg})",
                    self.name()
                ),
            });
        }
        Ok(())
    }

    /// Refuses a cooperative launch whose blocks do not all fit on the device at once.
    fn check_co_residency(&self, cfg: &LaunchConfig) -> Result<()> {
        let block = u32::try_from(cfg.threads_per_block()).unwrap_or(u32::MAX);
        let occupancy = self.occupancy(block, cfg.shared_mem_bytes as usize)?;
        let sms = self.device().multiprocessor_count;
        let limit = u64::from(occupancy.active_blocks_per_sm) * u64::from(sms);
        let blocks = cfg.grid.volume();
        if blocks > limit {
            return Err(Error::LaunchConfig {
                kernel: self.name().to_string(),
                message: format!(
                    "a cooperative launch needs all its blocks resident at once, but grid {} \
                     has {blocks} blocks and at most {limit} fit ({} per SM at {block} threads \
                     and {} bytes of dynamic shared memory x {sms} SMs{}); use fewer blocks \
                     (a grid-stride loop covers any size)",
                    cfg.grid,
                    occupancy.active_blocks_per_sm,
                    cfg.shared_mem_bytes,
                    if self.is_simulator() {
                        ": the simulator runs one block per worker thread, GPU_SIM_WORKERS"
                    } else {
                        ""
                    }
                ),
            });
        }
        Ok(())
    }
}

impl<'a> KernelLaunch<'a> {
    #[cold]
    #[inline(never)]
    fn record_error(&mut self, argument: &str, message: String) {
        if self.error.is_none() {
            self.error = Some(Box::new(Error::Argument {
                kernel: self.kernel.name().to_string(),
                argument: argument.to_string(),
                message,
            }));
        }
    }

    /// Checks that `buf` lives in the launch's context; records an error if not.
    #[inline]
    fn check_buffer_device<T: DeviceCopy>(
        &mut self,
        name: &'static str,
        buf: &DeviceBuffer<T>,
    ) -> bool {
        if buf.is_stale() {
            let message = "the buffer was allocated before Gpu::recover() reset the device; its \
                           memory is gone: allocate it again"
                .to_string();
            self.record_error(name, message);
            return false;
        }
        if buf.stream().epoch().surely_same_device(self.stream.epoch()) {
            return true;
        }
        self.check_other_device(name, buf)
    }

    /// [`KernelLaunch::check_buffer_device`] for a buffer whose device state is not the
    /// launch's: compares the device keys.
    #[cold]
    #[inline(never)]
    fn check_other_device<T: DeviceCopy>(
        &mut self,
        name: &'static str,
        buf: &DeviceBuffer<T>,
    ) -> bool {
        let (buf_device, launch_device) = (buf.stream().device_key(), self.stream.device_key());
        if buf_device == launch_device {
            return true;
        }
        let message = format!("the buffer lives on {buf_device}, the launch on {launch_device}");
        self.record_error(name, message);
        false
    }

    #[inline]
    fn push_len<T>(&mut self, name: &'static str, len: usize) {
        let bytes = (len as u64).saturating_mul(size_of::<T>() as u64);
        self.largest_slice = (
            self.largest_slice.0.max(bytes),
            self.largest_slice.1.max(len as u64),
        );
        self.args.push(Param::Word(len as u64), name, Role::Length);
    }

    /// Whether this launch keeps the limits of a kernel's 32-bit index variant and variants are
    /// not switched off ([`INDEX32_ENV`]) (see
    /// [`gpu_abi::index32`]): fewer than 2^31 threads, every buffer below 2 GiB.
    #[inline]
    pub(crate) fn fits_index32(&self) -> bool {
        index32_enabled()
            && gpu_abi::index32::launch_fits(
                self.cfg.total_threads(),
                self.largest_slice.0,
                self.largest_slice.1,
            )
    }

    /// Makes the launch run `kernel` (a variant of the kernel it was prepared for, with the
    /// same parameters) when `cfg` fits `kernel`'s own limits; otherwise leaves it as it is.
    #[inline]
    pub(crate) fn retarget(&mut self, kernel: &'a Kernel) {
        // Co-residency (cooperative) and cluster checks were made for the kernel prepared;
        // those launches keep it.
        if self.cfg.cooperative || self.cfg.cluster.is_some() {
            return;
        }
        if validate_launch(
            kernel.name(),
            &self.cfg,
            kernel.device_arc(),
            kernel.attributes(),
        )
        .is_ok()
        {
            self.kernel = kernel;
        }
    }

    /// Pushes a buffer the kernel reads (`&[T]` in the kernel): its device pointer, then its
    /// length in elements as a `u64` — two PTX parameters. An empty buffer passes a null
    /// pointer and length 0.
    #[inline]
    pub fn input<T: DeviceCopy>(
        &mut self,
        name: &'static str,
        buf: &'a DeviceBuffer<T>,
    ) -> &mut Self {
        if self.input_ptr(name, buf).error.is_none() {
            self.push_len::<T>(name, buf.len());
        }
        self
    }

    /// Pushes a buffer the kernel writes (`DisjointSlice<T>` in the kernel): its device
    /// pointer, then its length in elements as a `u64`. Later uses of the buffer (on any stream)
    /// wait for the kernel's writes.
    #[inline]
    pub fn output<T: DeviceCopy>(
        &mut self,
        name: &'static str,
        buf: &'a mut DeviceBuffer<T>,
    ) -> &mut Self {
        let len = buf.len();
        if self.output_ptr(name, buf).error.is_none() {
            self.push_len::<T>(name, len);
        }
        self
    }

    /// Pushes only the device pointer of a buffer the kernel reads: one PTX parameter, for
    /// kernels written in CUDA C++ (`const T*`) rather than with `#[kernel]` (whose `&[T]` is a
    /// pointer and a length, see [`KernelLaunch::input`]).
    #[inline]
    pub fn input_ptr<T: DeviceCopy>(
        &mut self,
        name: &'static str,
        buf: &'a DeviceBuffer<T>,
    ) -> &mut Self {
        if !self.check_buffer_device(name, buf) {
            return self;
        }
        let param = match buf.bytes() {
            Some(Bytes::Cuda(slice)) => Param::Read(NonNull::from(slice)),
            Some(Bytes::Host(host)) => Param::Word(host.addr()),
            None => Param::Word(0),
        };
        self.args.push(param, name, Role::Pointer);
        self
    }

    /// Pushes only the device pointer of a buffer the kernel writes (`T*` in CUDA C++); later
    /// uses of the buffer wait for the kernel's writes, as with [`KernelLaunch::output`].
    #[inline]
    pub fn output_ptr<T: DeviceCopy>(
        &mut self,
        name: &'static str,
        buf: &'a mut DeviceBuffer<T>,
    ) -> &mut Self {
        if !self.check_buffer_device(name, buf) {
            return self;
        }
        let param = match buf.bytes_mut() {
            Some(Bytes::Cuda(slice)) => Param::Write(NonNull::from(slice)),
            Some(Bytes::Host(host)) => Param::Word(host.addr()),
            None => Param::Word(0),
        };
        self.args.push(param, name, Role::Pointer);
        self
    }

    /// Pushes a by-value parameter: `v`'s bytes are copied now (so `v` need not outlive the
    /// launch) into owned, 16-byte aligned storage.
    #[inline]
    pub fn value<T: DeviceCopy>(&mut self, name: &'static str, v: &T) -> &mut Self {
        let size = size_of::<T>();
        if size > MAX_PARAM_BYTES {
            self.record_error(
                name,
                format!(
                    "{} is {size} bytes; CUDA passes at most {MAX_PARAM_BYTES} bytes of kernel \
                     parameters: put it in a DeviceBuffer instead",
                    std::any::type_name::<T>()
                ),
            );
            return self;
        }
        // SAFETY: `T: DeviceCopy` is padding-free plain data, so all `size` bytes behind `v` are
        // initialized; the view borrows `v` only for the copy below.
        let bytes = unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size) };
        self.args.push_bytes(bytes, name);
        self
    }

    /// The configuration this launch was validated with.
    pub fn config(&self) -> &LaunchConfig {
        &self.cfg
    }

    /// Number of PTX parameters pushed so far (a buffer counts two: pointer and length).
    pub fn param_count(&self) -> usize {
        self.args.len()
    }

    /// Compares the pushed parameters with the sizes the PTX entry declares.
    #[inline]
    fn check_signature(&self) -> Result<()> {
        let Some(expected) = self.kernel.param_sizes() else {
            return Ok(());
        };
        let pushed = self.args.entries();
        if pushed.len() == expected.len()
            && pushed
                .iter()
                .zip(expected)
                .all(|(p, &want)| p.size as usize == want)
        {
            return Ok(());
        }
        self.signature_error(expected)
    }

    /// [`KernelLaunch::check_signature`]'s error: the count, or the first size, that differs.
    #[cold]
    #[inline(never)]
    fn signature_error(&self, expected: &[usize]) -> Result<()> {
        let kernel = || self.kernel.name().to_string();
        let info = self.args.entries();
        if expected.len() != info.len() {
            let pushed: Vec<String> = info
                .iter()
                .map(|p| format!("{} ({}, {} B)", p.name, p.role, p.size))
                .collect();
            return Err(Error::Argument {
                kernel: kernel(),
                argument: "(argument list)".to_string(),
                message: format!(
                    "{} PTX parameters were pushed [{}], but the kernel's PTX entry declares {} \
                     with sizes {:?} (a buffer is two parameters: pointer and length)",
                    info.len(),
                    pushed.join(", "),
                    expected.len(),
                    expected
                ),
            });
        }
        for (i, (p, &want)) in info.iter().zip(expected).enumerate() {
            if p.size as usize != want {
                return Err(Error::Argument {
                    kernel: kernel(),
                    argument: p.name.to_string(),
                    message: format!(
                        "PTX parameter {i} ({}) is {want} bytes in the kernel, but {} bytes were \
                         pushed",
                        p.role, p.size
                    ),
                });
            }
        }
        Ok(())
    }

    /// [`KernelLaunch::launch`] for a kernel whose signature the calling Rust code does not
    /// know at compile time: foreign PTX (e.g. CUDA C++ compiled by nvcc, as `gpu-twins` runs),
    /// or a `#[kernel]` typed only at run time from its crate's manifest (the Python bindings'
    /// user kernels), whose arguments can only be pushed by hand after checking them against
    /// that signature. This is the one escape hatch outside `gpu-host`; Rust code launches
    /// `#[kernel]` functions through their generated launchers, which check the argument types
    /// at compile time.
    ///
    /// # Safety
    /// As for [`KernelLaunch::launch`]: the pushed parameters must match the kernel's PTX
    /// signature in order, type and layout, and the kernel must stay within the buffers it is
    /// given and only write those pushed with [`KernelLaunch::output`].
    pub unsafe fn launch_foreign(self) -> Result<()> {
        // SAFETY: the caller upholds `launch`'s contract (this function's own).
        unsafe { self.launch() }
    }

    /// Submits the kernel to the stream (asynchronously) with the pushed arguments.
    ///
    /// Returns an argument error recorded while building, a signature mismatch (count or size of
    /// the pushed parameters against the PTX entry, when readable) or a driver error; nothing is
    /// launched in those cases. An empty launch (zero grid extent) does nothing and returns
    /// `Ok(())`. Errors the kernel hits while running surface at the next synchronization.
    ///
    /// # Safety
    /// The pushed parameters must match the kernel's PTX signature in order and type (a pointer
    /// where it takes a pointer, a `u64` length where it takes one, a value of the right type
    /// and layout), and the kernel must stay within the buffers it is given and only write the
    /// ones pushed with [`KernelLaunch::output`]. Generated launchers guarantee this for
    /// `#[kernel]` functions; hand-written argument lists are the caller's responsibility.
    #[inline]
    pub unsafe fn launch(self) -> Result<()> {
        if self.error.is_some() {
            return self.recorded_error();
        }
        self.check_signature()?;
        if self.cfg.is_empty() {
            return Ok(());
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.submit() }
    }

    /// The argument error recorded while pushing (the launch's result).
    #[cold]
    #[inline(never)]
    fn recorded_error(self) -> Result<()> {
        self.error.map_or(Ok(()), |e| Err(*e))
    }

    /// [`KernelLaunch::launch`] once the arguments are checked and the grid is not empty:
    /// records the launch into a capture, or submits it.
    ///
    /// # Safety
    /// As for [`KernelLaunch::launch`].
    unsafe fn submit(self) -> Result<()> {
        if crate::graph::capturing(self.stream) {
            if self.cfg.cooperative || self.cfg.cluster.is_some() {
                return Err(Error::Capture {
                    context: format!(
                        "capturing a launch of kernel `{}` with {}",
                        self.kernel.name(),
                        self.cfg
                    ),
                    message: "cooperative and cluster launches are not captured into graphs; \
                              launch them outside the capture"
                        .to_string(),
                });
            }
            // SAFETY: forwarded from the caller.
            return unsafe { self.capture() };
        }
        let KernelLaunch {
            kernel,
            stream,
            cfg,
            mut args,
            error,
            ..
        } = self;
        // `launch` returned a recorded error already; testing here spares an out-of-line drop.
        if let Some(e) = error {
            return Err(*e);
        }
        let (func, cuda_stream) = match (kernel.backend(), stream.cuda_stream()) {
            (KernelBackend::Cuda { func, .. }, Some(cuda_stream)) => (&**func, cuda_stream),
            (KernelBackend::Sim { entry }, None) => {
                // SAFETY: forwarded from the caller (see `sim_launch`).
                return unsafe { sim_launch(kernel, *entry, &cfg, &mut args) };
            }
            _ => unreachable!("`prepare` checked that the stream and kernel share a device"),
        };
        if cfg.shared_mem_bytes > 0 {
            kernel.ensure_dynamic_shared(cfg.shared_mem_bytes)?;
        }
        if cfg.cooperative || cfg.cluster.is_some() {
            let what = || format!("launching kernel `{}` with {cfg}", kernel.name());
            kernel.check(what)?;
            // SAFETY: forwarded from the caller; the configuration was validated.
            unsafe { launch_ex(func, cuda_stream, &cfg, &mut args) }
                .map_err(kernel.epoch().driver(what))?;
            kernel
                .epoch()
                .state()
                .launched(kernel.log_id(), cuda_stream, &cfg);
            return Ok(());
        }
        let what = || format!("launching kernel `{}` with {cfg}", kernel.name());
        kernel.check(what)?;
        // SAFETY: the caller guarantees the parameters match the kernel's signature (see above);
        // the configuration was validated against the device's and kernel's limits.
        let launched = unsafe { launch_direct(func, cuda_stream, &cfg, &mut args) };
        match launched {
            Ok(_) => {}
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => {
                let attrs = kernel.attributes();
                return Err(Error::LaunchConfig {
                    kernel: kernel.name().to_string(),
                    message: format!(
                        "the driver refused {cfg}: too many resources requested \
                         (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES). The block needs {} threads x {} \
                         registers = {} registers (device: {} per block), {} bytes of shared \
                         memory; use smaller blocks",
                        cfg.threads_per_block(),
                        attrs.registers_per_thread,
                        cfg.threads_per_block() * u64::from(attrs.registers_per_thread),
                        kernel.device().registers_per_block,
                        u64::from(attrs.static_shared_bytes) + u64::from(cfg.shared_mem_bytes)
                    ),
                });
            }
            Err(e) => return Err(kernel.epoch().driver(what)(e)),
        }
        kernel
            .epoch()
            .state()
            .launched(kernel.log_id(), cuda_stream, &cfg);
        Ok(())
    }
}

/// Orders the launch about to be queued on `stream` after the conflicting earlier uses of its
/// buffers on other streams (see `buffer_uses`): one or two atomic loads per buffer while
/// every use is on one stream (or, for a read, on streams that waited for the last write
/// already). `covered`: a stream whose queued work `stream` already waits for (no
/// event is recorded there; see `capture`).
fn order_buffers(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    args: &ArgList,
    covered: Option<&cudarc::driver::CudaStream>,
) -> std::result::Result<(), cudarc::driver::DriverError> {
    for e in args.entries() {
        let (bytes, write) = match e.param {
            Param::Read(b) => (b, false),
            Param::Write(b) => (b, true),
            Param::Word(_) | Param::Bytes { .. } => continue,
        };
        // SAFETY: the launch borrows the buffer while it is in `args` (see `launch_args`).
        let uses = unsafe { &bytes.as_ref().uses };
        match covered {
            Some(c) => uses.before_use_covering(stream, write, c)?,
            None if write => uses.before_write(stream)?,
            None => uses.before_read(stream)?,
        }
    }
    Ok(())
}

/// `cuLaunchKernel` with `args`, after ordering the buffers (see [`order_buffers`]).
///
/// # Safety
/// As for [`KernelLaunch::launch`]: `args` match the kernel's parameters and `cfg` was
/// validated.
unsafe fn launch_direct(
    func: &cudarc::driver::CudaFunction,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    cfg: &LaunchConfig,
    args: &mut ArgList,
) -> std::result::Result<(), cudarc::driver::DriverError> {
    stream.context().bind_to_thread()?;
    order_buffers(stream, args, None)?;
    // SAFETY: the caller's contract; every pointer points at a parameter value that lives
    // until after the call (in `args`, or a buffer record the launch borrows); the function
    // belongs to the stream's context, made current above.
    unsafe {
        cudarc::driver::result::launch_kernel(
            func.cu_function(),
            (cfg.grid.x, cfg.grid.y, cfg.grid.z),
            (cfg.block.x, cfg.block.y, cfg.block.z),
            cfg.shared_mem_bytes,
            stream.cu_stream(),
            args.pointers(),
        )
    }
}

impl KernelLaunch<'_> {
    /// Records the launch into the capture of its stream (see [`crate::graph`]) instead of
    /// running it.
    ///
    /// On a GPU the kernel is launched with `cuLaunchKernel` directly: cudarc's launch would
    /// wait on and record the buffers' events inside the capture, and an event recorded in a
    /// capture cannot be waited on afterwards (`CUDA_ERROR_CAPTURED_EVENT`). The graph keeps
    /// its buffers borrowed instead (see [`crate::Graph`]).
    ///
    /// # Safety
    /// As for [`KernelLaunch::launch`].
    unsafe fn capture(self) -> Result<()> {
        let KernelLaunch {
            kernel,
            stream,
            cfg,
            mut args,
            ..
        } = self;
        let what = || {
            format!(
                "capturing a launch of kernel `{}` with {cfg}",
                kernel.name()
            )
        };
        kernel.check(what)?;
        let node = crate::graph::Node {
            kernel: kernel.name().to_string(),
            module: kernel.module_name().to_string(),
            params: args.entries().iter().map(|p| p.size as usize).collect(),
            cfg,
        };
        match (kernel.backend(), stream.cuda_stream()) {
            (KernelBackend::Sim { entry }, None) => {
                let Some(entry) = *entry else {
                    return Err(Error::NoSimulatorEntry {
                        module: kernel.module_name().to_string(),
                        kernel: kernel.name().to_string(),
                    });
                };
                let params = args
                    .entries()
                    .iter()
                    .map(|e| match e.param {
                        Param::Word(w) => crate::graph::SimOp::param(&w.to_ne_bytes()),
                        Param::Bytes { at } => {
                            crate::graph::SimOp::param(args.value_bytes(at, e.size as usize))
                        }
                        Param::Read(_) | Param::Write(_) => {
                            unreachable!("simulator buffers are pushed as addresses")
                        }
                    })
                    .collect();
                let op = crate::graph::SimOp {
                    kernel: kernel.name().to_string(),
                    entry,
                    cfg,
                    params,
                };
                crate::graph::record(node, Some(op));
                Ok(())
            }
            (KernelBackend::Cuda { func, .. }, Some(cuda_stream)) => {
                if cfg.shared_mem_bytes > 0 {
                    kernel.ensure_dynamic_shared(cfg.shared_mem_bytes)?;
                }
                // The context's legacy default stream waits for the buffers' conflicting
                // uses (their writes; for outputs also their reads), on any stream: the replay
                // waits for an event recorded there after the capture (see `graph`). It waited
                // for the captured stream's earlier work when the capture began, so no event
                // is recorded on that one (it would be captured). The captured stream is a
                // non-blocking stream, unaffected by the legacy stream.
                let legacy = cuda_stream.context().default_stream();
                order_buffers(&legacy, &args, Some(cuda_stream))
                    .map_err(kernel.epoch().driver(what))?;
                // SAFETY: the caller guarantees the parameters match the kernel's signature;
                // the configuration was validated; every pointer points into `args` or a
                // borrowed buffer record, alive until after the call (the driver copies the
                // parameters when it records the launch); the buffers stay borrowed by the
                // graph.
                unsafe {
                    cudarc::driver::result::launch_kernel(
                        func.cu_function(),
                        (cfg.grid.x, cfg.grid.y, cfg.grid.z),
                        (cfg.block.x, cfg.block.y, cfg.block.z),
                        cfg.shared_mem_bytes,
                        cuda_stream.cu_stream(),
                        args.pointers(),
                    )
                }
                .map_err(kernel.epoch().driver(what))?;
                crate::graph::record(node, None);
                Ok(())
            }
            _ => unreachable!("`prepare` checked that the stream and kernel share a device"),
        }
    }
}

/// Launches with `cuLaunchKernelEx` and the launch attributes of `cfg` (cooperative, cluster
/// shape), after ordering the buffers as [`launch_direct`] does.
///
/// # Safety
/// As for [`KernelLaunch::launch`]; `cfg` was validated.
unsafe fn launch_ex(
    func: &cudarc::driver::CudaFunction,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    cfg: &LaunchConfig,
    args: &mut ArgList,
) -> std::result::Result<(), cudarc::driver::DriverError> {
    stream.context().bind_to_thread()?;
    order_buffers(stream, args, None)?;
    let mut attrs = Vec::new();
    if cfg.cooperative {
        // SAFETY: an all-zero attribute is valid plain data; the fields are set below.
        let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        a.value.cooperative = 1;
        attrs.push(a);
    }
    if let Some(c) = cfg.cluster {
        // SAFETY: as above.
        let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        a.value.clusterDim.x = c.x;
        a.value.clusterDim.y = c.y;
        a.value.clusterDim.z = c.z;
        attrs.push(a);
    }
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid.x,
        gridDimY: cfg.grid.y,
        gridDimZ: cfg.grid.z,
        blockDimX: cfg.block.x,
        blockDimY: cfg.block.y,
        blockDimZ: cfg.block.z,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len() as u32,
    };
    // SAFETY: the caller guarantees the parameters match the kernel's signature; every
    // pointer points into `args` or a borrowed buffer record, alive until after the call;
    // `attrs` outlives the call; the function belongs to the stream's context, made current
    // above.
    unsafe {
        sys::cuLaunchKernelEx(
            &config,
            func.cu_function(),
            args.pointers().as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
}

/// Runs a validated launch on the CPU simulator to completion and maps its fault to this crate's
/// errors.
///
/// # Safety
/// As for [`KernelLaunch::launch`]: `params` match the kernel's parameters; every buffer
/// address among them is a simulator buffer borrowed for the launch.
unsafe fn sim_launch(
    kernel: &Kernel,
    entry: Option<crate::module::SimEntry>,
    cfg: &LaunchConfig,
    args: &mut ArgList,
) -> Result<()> {
    let Some(entry) = entry else {
        return Err(Error::NoSimulatorEntry {
            module: kernel.module_name().to_string(),
            kernel: kernel.name().to_string(),
        });
    };
    kernel.check(|| format!("launching kernel `{}` with {cfg}", kernel.name()))?;
    if args
        .entries()
        .iter()
        .any(|e| matches!(e.param, Param::Read(_) | Param::Write(_)))
    {
        unreachable!("simulator buffers are pushed as addresses");
    }
    // One pointer per PTX parameter to the parameter's bytes, exactly as for cuLaunchKernel.
    let pointers = args.pointers();
    let dim = |d: Dim3| gpu::thread::Dim3 {
        x: d.x,
        y: d.y,
        z: d.z,
    };
    let launch = gpu::sim::Launch {
        kernel: kernel.name(),
        entry,
        grid: dim(cfg.grid),
        block: dim(cfg.block),
        dynamic_shared_bytes: cfg.shared_mem_bytes,
        params: pointers,
    };
    // SAFETY: the caller guarantees the parameters match the kernel's signature; `pointers`
    // point into `args`, alive until after the call, and buffer addresses point at host
    // allocations borrowed (inputs shared, outputs exclusively) for the launch.
    let result = unsafe { gpu::sim::launch(&launch) };
    result.map_err(|fault| sim_fault_error(fault, cfg))
}

/// This crate's error for a simulated launch's fault: a panic is [`Error::KernelPanic`] as on
/// a GPU, a deadlock [`Error::KernelDivergence`], a timeout [`Error::KernelTimeout`].
pub(crate) fn sim_fault_error(fault: gpu::sim::Fault, cfg: &LaunchConfig) -> Error {
    use gpu::sim::Fault;
    let message = fault.to_string();
    let t = |d: gpu::thread::Dim3| (d.x, d.y, d.z);
    match fault {
        Fault::Panic {
            kernel,
            block,
            thread,
            location,
            message: text,
        } => {
            // "file:line:col"; the file may itself hold colons (Windows drives).
            let (file, line, column) = match location.as_deref().map(|l| l.rsplitn(3, ':')) {
                Some(mut parts) => {
                    let column = parts.next().and_then(|c| c.parse().ok());
                    let line = parts.next().and_then(|l| l.parse().ok());
                    match (parts.next(), line, column) {
                        (Some(file), Some(line), Some(column)) => {
                            (Some(file.to_string()), line, column)
                        }
                        _ => (location.clone(), 0, 0),
                    }
                }
                None => (None, 0, 0),
            };
            Error::KernelPanic {
                context: format!("launching kernel `{kernel}` with {cfg}"),
                panic: Box::new(crate::KernelPanic {
                    kernel: format!("`{kernel}`"),
                    file,
                    line,
                    column,
                    message: Some(text),
                    truncated: false,
                    block: t(block),
                    thread: t(thread),
                    grid_dim: (cfg.grid.x, cfg.grid.y, cfg.grid.z),
                    block_dim: (cfg.block.x, cfg.block.y, cfg.block.z),
                }),
                source: None,
            }
        }
        Fault::Divergence { kernel, .. } => Error::KernelDivergence { kernel, message },
        Fault::Timeout { kernel, .. } => Error::KernelTimeout { kernel, message },
        Fault::InvalidLaunch { kernel, detail } => Error::LaunchConfig {
            kernel,
            message: format!("{detail} (refused by the CPU simulator)"),
        },
    }
}

/// How many blocks of a kernel fit on one SM at once, and the resulting occupancy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Occupancy {
    /// Threads per block asked about.
    pub block_size: u32,
    /// Dynamic shared memory per block asked about, in bytes.
    pub dynamic_shared_bytes: usize,
    /// Blocks resident per SM at once (limited by registers, shared memory, threads, blocks).
    pub active_blocks_per_sm: u32,
    /// Warps resident per SM at once.
    pub active_warps_per_sm: u32,
    /// Most warps an SM can hold.
    pub max_warps_per_sm: u32,
    /// `active_warps_per_sm / max_warps_per_sm`, in 0..=1.
    pub fraction: f32,
}

impl Occupancy {
    /// Derives warps and the occupancy fraction from the driver's active-blocks figure.
    pub fn from_active_blocks(
        active_blocks_per_sm: u32,
        block_size: u32,
        dynamic_shared_bytes: usize,
        device: &DeviceProperties,
    ) -> Occupancy {
        let warps_per_block = block_size.div_ceil(device.warp_size.max(1));
        let active_warps_per_sm = active_blocks_per_sm.saturating_mul(warps_per_block);
        let max_warps_per_sm = device.max_warps_per_multiprocessor();
        let fraction = if max_warps_per_sm == 0 {
            0.0
        } else {
            (active_warps_per_sm as f32 / max_warps_per_sm as f32).min(1.0)
        };
        Occupancy {
            block_size,
            dynamic_shared_bytes,
            active_blocks_per_sm,
            active_warps_per_sm,
            max_warps_per_sm,
            fraction,
        }
    }
}

/// The block size that maximizes occupancy, per the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockSizeSuggestion {
    /// Threads per block that reach the highest occupancy.
    pub block_size: u32,
    /// Fewest blocks that fill the whole device at that occupancy.
    pub min_grid_size: u32,
}

impl Kernel {
    /// Occupancy of this kernel at `block_size` threads and `dynamic_shared` bytes of dynamic
    /// shared memory per block (cuOccupancyMaxActiveBlocksPerMultiprocessor). Nominal on the
    /// simulator: one block per worker thread (its "SM") at a time.
    pub fn occupancy(&self, block_size: u32, dynamic_shared: usize) -> Result<Occupancy> {
        let ctx = || {
            format!(
                "computing the occupancy of kernel `{}` at {block_size} threads per block and \
                 {dynamic_shared} bytes of dynamic shared memory",
                self.name()
            )
        };
        if block_size == 0 {
            return Err(Error::LaunchConfig {
                kernel: self.name().to_string(),
                message: "occupancy asked for a block size of 0".to_string(),
            });
        }
        self.check(ctx)?;
        let KernelBackend::Cuda { func, ctx: cuda } = self.backend() else {
            // The simulator runs one block per worker thread (its "SM") at a time.
            return Ok(Occupancy::from_active_blocks(
                1,
                block_size,
                dynamic_shared,
                self.device(),
            ));
        };
        cuda.bind_to_thread().map_err(self.epoch().driver(ctx))?;
        let blocks = func
            .occupancy_max_active_blocks_per_multiprocessor(block_size, dynamic_shared, None)
            .map_err(self.epoch().driver(ctx))?;
        Ok(Occupancy::from_active_blocks(
            blocks,
            block_size,
            dynamic_shared,
            self.device(),
        ))
    }

    /// The block size with the highest occupancy when the kernel uses no dynamic shared memory
    /// (cuOccupancyMaxPotentialBlockSize). Nominal on the simulator: 256 threads, one block per
    /// worker thread.
    pub fn suggested_block_size(&self) -> Result<BlockSizeSuggestion> {
        self.suggested_block_size_with_shared(0)
    }

    /// The block size with the highest occupancy when every block uses `dynamic_shared` bytes
    /// of dynamic shared memory.
    pub fn suggested_block_size_with_shared(
        &self,
        dynamic_shared: usize,
    ) -> Result<BlockSizeSuggestion> {
        let ctx = || {
            format!(
                "asking the driver for the best block size of kernel `{}` \
                 (cuOccupancyMaxPotentialBlockSize)",
                self.name()
            )
        };
        self.check(ctx)?;
        let KernelBackend::Cuda { func, ctx: cuda } = self.backend() else {
            // Nominal on the simulator: a common block size, one block per worker thread.
            return Ok(BlockSizeSuggestion {
                block_size: 256,
                min_grid_size: self.device().multiprocessor_count.max(1),
            });
        };
        cuda.bind_to_thread().map_err(self.epoch().driver(ctx))?;
        let mut min_grid: std::ffi::c_int = 0;
        let mut block: std::ffi::c_int = 0;
        // SAFETY: both out-pointers are valid for writes; the function handle belongs to a
        // module kept alive by `self`, whose context was just made current; no callback is
        // passed, so the driver uses the constant `dynamic_shared`; 0 means no block size limit.
        unsafe {
            sys::cuOccupancyMaxPotentialBlockSize(
                &mut min_grid,
                &mut block,
                func.cu_function(),
                None,
                dynamic_shared,
                0,
            )
        }
        .result()
        .map_err(self.epoch().driver(ctx))?;
        Ok(BlockSizeSuggestion {
            block_size: u32::try_from(block).unwrap_or(0),
            min_grid_size: u32::try_from(min_grid).unwrap_or(0),
        })
    }
}
