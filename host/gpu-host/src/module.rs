//! Modules and their kernels, loaded on first use, with the per-kernel limits the driver
//! reports.

use std::ffi::{CString, c_void};
use std::mem::ManuallyDrop;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys::{self, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, DriverError};
use cudarc::nvrtc::Ptx;

use crate::code::{CodeUnit, KernelCode, select_sass};
use crate::device::{DeviceKey, DeviceProperties, Gpu};
use crate::error::{Error, Result};
use crate::fault::Epoch;
use crate::ptx;

/// What the driver reports about one compiled kernel (function attributes).
///
/// On the CPU simulator the values are nominal: the device's thread and shared memory limits,
/// 0 registers, 0 static shared memory (the simulator enforces the 48 KiB static limit itself),
/// and the PTX ISA version of the module's header.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct KernelAttributes {
    /// Most threads per block this kernel can be launched with; below the device's limit when
    /// the kernel uses many registers.
    pub max_threads_per_block: u32,
    /// Statically declared shared memory per block, in bytes.
    pub static_shared_bytes: u32,
    /// Constant memory used, in bytes.
    pub const_bytes: u32,
    /// Local memory (stack, register spills) per thread, in bytes.
    pub local_bytes_per_thread: u32,
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// PTX ISA version the kernel was compiled from, times 10 (e.g. 80 for PTX 8.0).
    pub ptx_version: u32,
    /// Compute capability of the binary the driver built, times 10 (e.g. 90 for sm_90).
    pub binary_version: u32,
    /// Dynamic shared memory the kernel may be launched with before opting in to more
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` when loaded; launches raise it as
    /// needed).
    pub max_dynamic_shared_bytes: u32,
    /// The only block shape the kernel may be launched with (`.reqntid` in its PTX, from
    /// `#[kernel(block(x, y, z))]`); `None` when any shape within the limits is allowed.
    pub required_block: Option<[u32; 3]>,
    /// The most grid dimensions the kernel may be launched with, 1 or 2 (from
    /// `#[kernel(grid_dims(N))]`); `None` when any grid within the limits is allowed.
    pub required_grid_dims: Option<u32>,
}

/// A kernel's entry point on the CPU simulator: the `__gpu_sim_entry_<kernel>` function that
/// `#[kernel]` generates next to the kernel (for host builds). Generated launchers pass them to
/// [`Gpu::load_module`].
pub type SimEntry = gpu::sim::Entry;

/// One kernel (PTX `.entry`) of a loaded [`Module`].
#[derive(Debug)]
pub struct Kernel {
    name: String,
    /// The name's id in the device's launch log (see `launch_log`).
    log_id: u32,
    module: String,
    code: KernelCode,
    backend: KernelBackend,
    epoch: Epoch,
    attributes: KernelAttributes,
    /// Parameter sizes in bytes read from the PTX header; `None` when not understood.
    param_sizes: Option<Vec<usize>>,
    device: Arc<DeviceProperties>,
    device_key: DeviceKey,
    /// The function's current `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`, so a launch
    /// only sets it when it must grow.
    dynamic_shared_limit: AtomicU32,
}

/// What runs a kernel.
pub(crate) enum KernelBackend {
    Cuda {
        /// Not dropped when stale: after a device reset the module handle may be reused.
        func: ManuallyDrop<CudaFunction>,
        ctx: Arc<CudaContext>,
    },
    /// The simulator entry, when the module was loaded with one for this kernel.
    Sim { entry: Option<SimEntry> },
}

impl std::fmt::Debug for KernelBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelBackend::Cuda { func, .. } => f.debug_tuple("Cuda").field(&**func).finish(),
            KernelBackend::Sim { entry } => f
                .debug_struct("Sim")
                .field("has_entry", &entry.is_some())
                .finish(),
        }
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        if !self.epoch.is_stale()
            && let KernelBackend::Cuda { func, .. } = &mut self.backend
        {
            // SAFETY: dropped once, here; `func` is not used afterwards.
            unsafe { ManuallyDrop::drop(func) };
        }
    }
}

impl Kernel {
    #[inline]
    pub(crate) fn epoch(&self) -> &Epoch {
        &self.epoch
    }

    /// `Ok` when the kernel may be launched: loaded since the last recovery, device healthy.
    #[inline]
    pub(crate) fn check(&self, what: impl FnOnce() -> String) -> Result<()> {
        self.epoch.check(what)
    }

    /// The kernel's entry-point name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.name
    }

    #[inline]
    pub(crate) fn log_id(&self) -> u32 {
        self.log_id
    }

    /// The name of the module it was loaded from.
    pub fn module_name(&self) -> &str {
        &self.module
    }

    /// Which code the kernel runs: SASS assembled at build time, PTX the driver compiled at
    /// load, or the simulator.
    pub fn code(&self) -> &KernelCode {
        &self.code
    }

    /// The driver's figures for this kernel (registers, shared and local memory, limits).
    #[inline]
    pub fn attributes(&self) -> &KernelAttributes {
        &self.attributes
    }

    /// Sizes in bytes of the kernel's parameters as declared in the PTX, when they could be read.
    /// Launches check the pushed arguments against them.
    #[inline]
    pub fn param_sizes(&self) -> Option<&[usize]> {
        self.param_sizes.as_deref()
    }

    /// The properties of the device the kernel was loaded on.
    #[inline]
    pub fn device(&self) -> &DeviceProperties {
        &self.device
    }

    /// The underlying cudarc function, for anything this crate does not wrap; `None` on the
    /// simulator.
    pub fn cuda_function(&self) -> Option<&CudaFunction> {
        match &self.backend {
            KernelBackend::Cuda { func, .. } => Some(func),
            KernelBackend::Sim { .. } => None,
        }
    }

    /// Whether the kernel was loaded on the CPU simulator.
    #[inline]
    pub fn is_simulator(&self) -> bool {
        matches!(self.backend, KernelBackend::Sim { .. })
    }

    #[inline]
    pub(crate) fn backend(&self) -> &KernelBackend {
        &self.backend
    }

    #[inline]
    pub(crate) fn device_key(&self) -> DeviceKey {
        self.device_key
    }

    #[inline]
    pub(crate) fn device_arc(&self) -> &Arc<DeviceProperties> {
        &self.device
    }

    /// Raises the function's dynamic shared memory limit to `bytes` if it is lower (needed for
    /// more than the default 48 KiB per block). Validation has already checked `bytes` against
    /// the device's opt-in maximum.
    pub(crate) fn ensure_dynamic_shared(&self, bytes: u32) -> Result<()> {
        let KernelBackend::Cuda { func, ctx } = &self.backend else {
            return Ok(());
        };
        if bytes <= self.dynamic_shared_limit.load(Ordering::Acquire) {
            return Ok(());
        }
        let what = || {
            format!(
                "raising the dynamic shared memory limit of kernel `{}` to {bytes} bytes \
                 (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                self.name
            )
        };
        self.check(what)?;
        let value = i32::try_from(bytes).map_err(|_| Error::LaunchConfig {
            kernel: self.name.clone(),
            message: format!(
                "dynamic shared memory of {bytes} bytes does not fit the driver's i32"
            ),
        })?;
        ctx.bind_to_thread()
            .and_then(|()| {
                func.set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    value,
                )
            })
            .map_err(self.epoch.driver(what))?;
        self.dynamic_shared_limit.fetch_max(bytes, Ordering::AcqRel);
        Ok(())
    }
}

/// A kernel crate's module (or a PTX module) on one device: its kernels, loaded on first use.
///
/// A module made by generated launchers ([`Gpu::load_units`]) holds the crate's code units
/// (see [`crate::code`]); each unit is loaded (its cubin, or its PTX JIT-compiled) the first
/// time one of its kernels is asked for, so a program pays only for the kernels it runs. A
/// module from PTX text ([`Gpu::load_module`], [`Gpu::load_ptx`]) is loaded whole at once.
///
/// Loading a unit copies to the device and may compile; do it before capturing a stream into a
/// CUDA graph ([`Module::load_all`]), and before timing a first launch.
#[derive(Debug)]
pub struct Module {
    name: String,
    gpu: Gpu,
    epoch: Epoch,
    parts: Vec<Part>,
    /// Every kernel, in module order: the index of [`Module::kernel_at`].
    index: Vec<IndexEntry>,
    reports_panics: bool,
}

/// Where a kernel of a [`Module`] lives: its name, its part, and its position in that part's
/// kernels once loaded (parts load their kernels in the order they list them).
#[derive(Debug)]
struct IndexEntry {
    name: String,
    part: usize,
    slot: usize,
    /// The index of this kernel's 32-bit index variant (`k$idx32`, see
    /// [`gpu_abi::index32`]), when the module has one; `None` for the variants themselves.
    variant: Option<usize>,
}

/// Links each kernel of `index` to its 32-bit index variant.
fn link_variants(index: &mut [IndexEntry]) {
    for v in 0..index.len() {
        let Some(kernel) = gpu_abi::index32::kernel_of_variant(&index[v].name) else {
            continue;
        };
        if let Some(k) = index.iter().position(|e| e.name == kernel) {
            index[k].variant = Some(v);
        }
    }
}

/// One separately loaded piece of a [`Module`].
#[derive(Debug)]
struct Part {
    /// The unit to load on first use; `None` for a part loaded when the module was made.
    unit: Option<&'static CodeUnit>,
    sim_entries: &'static [(&'static str, SimEntry)],
    loaded: OnceLock<LoadedPart>,
    /// Held while loading, so two threads asking at once load the unit once.
    loading: Mutex<()>,
}

/// A loaded driver module (or simulator entries) and the kernels looked up in it.
#[derive(Debug)]
struct LoadedPart {
    kernels: Vec<Kernel>,
    /// Not dropped when stale (see [`Kernel`]); `None` on the simulator.
    inner: ManuallyDrop<Option<Arc<CudaModule>>>,
    epoch: Epoch,
}

impl Drop for LoadedPart {
    fn drop(&mut self) {
        if !self.epoch.is_stale() {
            // SAFETY: dropped once, here; `inner` is not used afterwards.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
        }
    }
}

impl Module {
    /// Whether the module's kernels report panics to the host: its code defines the `gpu`
    /// crate's `__gpu_panic_record` global (in every unit whose kernels can panic), which each
    /// load points at this device's record.
    pub fn reports_panics(&self) -> bool {
        self.reports_panics
    }

    /// Whether [`Gpu::recover`] reset the device since this module was made (its kernels can
    /// no longer be launched or loaded; load the module again).
    pub fn is_stale(&self) -> bool {
        self.epoch.is_stale()
    }

    /// The name given when loading.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel called `name`, loading its code unit if this is its first use;
    /// [`Error::KernelNotFound`] if the module has no such kernel.
    ///
    /// This searches the module's kernels by name; code that launches often resolves the name
    /// once ([`Module::kernel_index`]) and then uses [`Module::kernel_at`], as generated
    /// launchers do.
    pub fn kernel(&self, name: &str) -> Result<&Kernel> {
        let i = self.kernel_index(name)?;
        self.kernel_at(i)
    }

    /// The position of the kernel called `name` in module order (the order of
    /// [`Module::kernel_names`]: the units' kernels, unit by unit); loads nothing.
    /// [`Error::KernelNotFound`] if the module has no such kernel.
    pub fn kernel_index(&self, name: &str) -> Result<usize> {
        self.index
            .iter()
            .position(|e| e.name == name)
            .ok_or_else(|| Error::KernelNotFound {
                module: self.name.clone(),
                kernel: name.to_string(),
                available: self.kernel_names().map(str::to_string).collect(),
            })
    }

    /// The kernel at position `index` in module order, loading its code unit if this is its
    /// first use. No name is compared: after the first use this is two array reads, which is
    /// what a launch pays (generated launchers know each kernel's position at build time).
    /// [`Error::KernelNotFound`] when `index` is past the module's kernels.
    #[inline]
    pub fn kernel_at(&self, index: usize) -> Result<&Kernel> {
        // Parts hold their kernels in the order they were listed (see `IndexEntry`).
        if let Some(entry) = self.index.get(index)
            && let Some(loaded) = self.parts[entry.part].loaded.get()
            && let Some(kernel) = loaded.kernels.get(entry.slot)
        {
            return Ok(kernel);
        }
        self.kernel_at_slow(index)
    }

    /// [`Module::kernel_at`] when the kernel's part is not loaded yet, or `index` is wrong.
    #[cold]
    #[inline(never)]
    fn kernel_at_slow(&self, index: usize) -> Result<&Kernel> {
        let Some(entry) = self.index.get(index) else {
            return Err(Error::KernelNotFound {
                module: self.name.clone(),
                kernel: format!("#{index}"),
                available: self.kernel_names().map(str::to_string).collect(),
            });
        };
        let loaded = self.part(entry.part)?;
        loaded
            .kernels
            .get(entry.slot)
            .ok_or_else(|| Error::KernelNotFound {
                module: self.name.clone(),
                kernel: entry.name.clone(),
                available: loaded.kernels.iter().map(|k| k.name.clone()).collect(),
            })
    }

    /// The names of the module's kernels, in module order; loads nothing. The kernels' 32-bit
    /// index variants (see [`Module::index32_variant`]) are not listed.
    pub fn kernel_names(&self) -> impl Iterator<Item = &str> {
        self.index
            .iter()
            .map(|e| e.name.as_str())
            .filter(|n| gpu_abi::index32::kernel_of_variant(n).is_none())
    }

    /// The position of the 32-bit index variant of the kernel at `index` (see
    /// [`gpu_abi::index32`]): the copy of its code that assumes fewer than 2^31 threads and
    /// slices below 2 GiB, which generated launchers run for launches that keep those limits.
    /// `None` when the kernel has none (or on the simulator, which runs the Rust code).
    #[inline]
    pub fn index32_variant(&self, index: usize) -> Option<usize> {
        self.index.get(index)?.variant
    }

    /// Loads every kernel not loaded yet (for a program that wants all load costs up front, or
    /// before capturing a CUDA graph).
    pub fn load_all(&self) -> Result<()> {
        (0..self.parts.len()).try_for_each(|p| self.part(p).map(|_| ()))
    }

    /// The kernels loaded so far, in module order; loads nothing.
    pub fn loaded_kernels(&self) -> impl Iterator<Item = &Kernel> {
        self.index
            .iter()
            .filter(|e| gpu_abi::index32::kernel_of_variant(&e.name).is_none())
            .filter_map(|e| self.parts[e.part].loaded.get()?.kernels.get(e.slot))
    }

    /// Every kernel, in module order, loading those not loaded yet (their 32-bit index
    /// variants not included).
    pub fn kernels(&self) -> Result<Vec<&Kernel>> {
        (0..self.index.len())
            .filter(|&i| gpu_abi::index32::kernel_of_variant(&self.index[i].name).is_none())
            .map(|i| self.kernel_at(i))
            .collect()
    }

    /// Part `p`, loaded.
    fn part(&self, p: usize) -> Result<&LoadedPart> {
        let part = &self.parts[p];
        if let Some(loaded) = part.loaded.get() {
            return Ok(loaded);
        }
        let _guard = part
            .loading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(loaded) = part.loaded.get() {
            return Ok(loaded);
        }
        let Some(unit) = part.unit else {
            unreachable!("parts without a unit are loaded when the module is made");
        };
        self.epoch.check(|| {
            format!(
                "loading kernels {:?} of module `{}`",
                unit.kernels, self.name
            )
        })?;
        crate::graph::refuse_load_while_capturing(&self.name, unit.kernels)?;
        let loaded = self.gpu.load_part(
            &self.name,
            Source::Unit(unit),
            unit.kernels,
            part.sim_entries,
        )?;
        Ok(part.loaded.get_or_init(|| loaded))
    }
}

/// The code a part is loaded from.
enum Source<'a> {
    /// PTX text, JIT-compiled.
    Ptx(&'a str),
    /// A code unit: its cubin for the device if it has one, else its PTX.
    Unit(&'static CodeUnit),
}

/// The `.version` and `.target` of a PTX module's header (e.g. `("8.0", "sm_90")`).
pub(crate) fn ptx_header(text: &str) -> (Option<String>, Option<String>) {
    let mut version = None;
    let mut target = None;
    for line in text.lines().take(200) {
        let line = line.trim();
        if let Some(v) = line.strip_prefix(".version") {
            version = v.split_whitespace().next().map(str::to_string);
        } else if let Some(t) = line.strip_prefix(".target") {
            target = t
                .split([',', ' ', '\t'])
                .map(str::trim)
                .find(|s| s.starts_with("sm_"))
                .map(str::to_string);
        }
        if version.is_some() && target.is_some() {
            break;
        }
    }
    (version, target)
}

/// Refuses PTX whose `.target sm_XY` is newer than the device's compute capability: the driver
/// can JIT PTX forward to newer GPUs, never back to older ones. Runs before loading so the
/// error says what to do instead of a bare `CUDA_ERROR_INVALID_PTX`.
pub(crate) fn check_ptx_target(module: &str, text: &str, device_cc: (u32, u32)) -> Result<()> {
    let (_, Some(target)) = ptx_header(text) else {
        return Ok(());
    };
    let digits: String = target[3..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let Ok(sm) = digits.parse::<u32>() else {
        return Ok(());
    };
    let (major, minor) = (sm / 10, sm % 10);
    if (major, minor) > device_cc {
        return Err(Error::PtxTooNew {
            module: module.to_string(),
            message: format!(
                "it was built for {target} (compute capability {major}.{minor}), but the device \
                 is sm_{}{} (compute capability {}.{}); the driver compiles PTX forward to newer \
                 GPUs, never back. Rebuild it for this GPU: `cargo xtask build-kernels --arch \
                 sm_{}{}` (or GPU_ARCH=sm_{}{} for build scripts)",
                device_cc.0,
                device_cc.1,
                device_cc.0,
                device_cc.1,
                device_cc.0,
                device_cc.1,
                device_cc.0,
                device_cc.1
            ),
        });
    }
    Ok(())
}

/// Driver errors that mean "this PTX cannot be compiled for this device", as opposed to a
/// failing driver.
fn is_jit_rejection(e: &DriverError) -> bool {
    use sys::CUresult::*;
    matches!(
        e.0,
        CUDA_ERROR_INVALID_PTX
            | CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            | CUDA_ERROR_INVALID_IMAGE
            | CUDA_ERROR_NO_BINARY_FOR_GPU
            | CUDA_ERROR_INVALID_SOURCE
            | CUDA_ERROR_JIT_COMPILER_NOT_FOUND
    )
}

/// Loads the PTX a second time with the JIT error log requested, to say *why* the driver
/// rejected it (cudarc's loader does not ask for the log). The context must be current.
fn jit_error_log(ptx: &CString) -> String {
    let mut log = vec![0u8; 16 * 1024];
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    // The driver takes option values as pointer-sized words: the buffer, then its size.
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: `ptx` is a NUL-terminated image that outlives the call; `options` and `values`
    // have the two entries announced, and the log buffer is `log.len()` writable bytes that
    // outlive the call. A module that loads after all is unloaded at once.
    unsafe {
        let status = sys::cuModuleLoadDataEx(
            &mut module,
            ptx.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        );
        if status == sys::CUresult::CUDA_SUCCESS && !module.is_null() {
            let _ = sys::cuModuleUnload(module);
        }
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    String::from_utf8_lossy(&log[..end]).trim().to_string()
}

fn function_attributes(func: &CudaFunction, kernel: &str) -> Result<KernelAttributes> {
    let get = |a: CUfunction_attribute, what: &str| -> Result<u32> {
        let v = func.get_attribute(a).map_err(Error::driver_with(|| {
            format!("reading attribute {what} of kernel `{kernel}`")
        }))?;
        Ok(u32::try_from(v).unwrap_or(0))
    };
    use CUfunction_attribute::*;
    Ok(KernelAttributes {
        max_threads_per_block: get(
            CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            "MAX_THREADS_PER_BLOCK",
        )?,
        static_shared_bytes: get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES")?,
        const_bytes: get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "CONST_SIZE_BYTES")?,
        local_bytes_per_thread: get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES")?,
        registers_per_thread: get(CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS")?,
        ptx_version: get(CU_FUNC_ATTRIBUTE_PTX_VERSION, "PTX_VERSION")?,
        binary_version: get(CU_FUNC_ATTRIBUTE_BINARY_VERSION, "BINARY_VERSION")?,
        max_dynamic_shared_bytes: get(
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            "MAX_DYNAMIC_SHARED_SIZE_BYTES",
        )?,
        required_block: None,
        required_grid_dims: None,
    })
}

impl Gpu {
    /// Loads PTX text (JIT-compiled by the driver for this device) and looks up `kernel_names`.
    ///
    /// `module_name` only labels errors and [`Module::name`]. A name that is not an entry point
    /// gives [`Error::KernelNotFound`]; PTX the driver rejects gives [`Error::InvalidPtx`] with
    /// the JIT compiler's log.
    ///
    /// On the simulator, which runs the kernels' Rust code rather than PTX, a module loaded
    /// this way has no simulator entries: launching its kernels gives
    /// [`Error::NoSimulatorEntry`]. Use [`Gpu::load_module`] (generated launchers do).
    pub fn load_ptx(&self, module_name: &str, ptx: &str, kernel_names: &[&str]) -> Result<Module> {
        self.load_module(module_name, ptx, kernel_names, &[])
    }

    /// Loads a module that can run on every backend, all at once: the PTX text for a GPU (as
    /// [`Gpu::load_ptx`]) and, for the CPU simulator, each kernel's simulator entry
    /// (`__gpu_sim_entry_<kernel>`, generated by `#[kernel]` next to the kernel), by kernel
    /// name. Entries are ignored on a GPU.
    ///
    /// On the simulator the PTX is read only for the kernels' parameter sizes (launches are
    /// checked against them as on a GPU). A name that the PTX does not define as an entry point
    /// gives [`Error::KernelNotFound`] on both backends (unless the text defines no entry point
    /// at all, which the simulator accepts).
    pub fn load_module(
        &self,
        module_name: &str,
        ptx: &str,
        kernel_names: &[&str],
        sim_entries: &[(&str, SimEntry)],
    ) -> Result<Module> {
        let loaded = self.load_part(module_name, Source::Ptx(ptx), kernel_names, sim_entries)?;
        let reports_panics = ptx.contains(crate::fault::RECORD_SYMBOL);
        Ok(Module {
            name: module_name.to_string(),
            gpu: self.clone(),
            epoch: self.epoch().clone(),
            index: kernel_names
                .iter()
                .enumerate()
                .map(|(slot, n)| IndexEntry {
                    name: n.to_string(),
                    part: 0,
                    slot,
                    variant: None,
                })
                .collect(),
            parts: vec![Part {
                unit: None,
                sim_entries: &[],
                loaded: OnceLock::from(loaded),
                loading: Mutex::new(()),
            }],
            reports_panics,
        })
    }

    /// Makes a module of a kernel crate's code units (generated launchers call this with the
    /// crate's `UNITS` and `SIM_ENTRIES`). Nothing is loaded yet: each unit is loaded when one
    /// of its kernels is first asked for ([`Module::kernel`]), from its cubin for this device
    /// when it has one, else from its PTX (see [`crate::code`]).
    pub fn load_units(
        &self,
        module_name: &str,
        units: &'static [CodeUnit],
        sim_entries: &'static [(&'static str, SimEntry)],
    ) -> Result<Module> {
        self.check(|| format!("loading module `{module_name}`"))?;
        let mut index = Vec::new();
        for (p, unit) in units.iter().enumerate() {
            index.extend(unit.kernels.iter().enumerate().map(|(slot, k)| IndexEntry {
                name: k.to_string(),
                part: p,
                slot,
                variant: None,
            }));
        }
        // The simulator runs each kernel's Rust code: no variants there.
        if !self.is_simulator() {
            link_variants(&mut index);
        }
        Ok(Module {
            name: module_name.to_string(),
            gpu: self.clone(),
            epoch: self.epoch().clone(),
            index,
            parts: units
                .iter()
                .map(|unit| Part {
                    unit: Some(unit),
                    sim_entries,
                    loaded: OnceLock::new(),
                    loading: Mutex::new(()),
                })
                .collect(),
            // Units whose kernels cannot panic leave the record out.
            reports_panics: units
                .iter()
                .any(|u| u.ptx.contains(crate::fault::RECORD_SYMBOL)),
        })
    }

    /// Loads one part: `source` on this device (or the simulator entries), and `kernel_names`
    /// looked up in it.
    fn load_part(
        &self,
        module_name: &str,
        source: Source<'_>,
        kernel_names: &[&str],
        sim_entries: &[(&str, SimEntry)],
    ) -> Result<LoadedPart> {
        let ptx = match source {
            Source::Ptx(text) => text,
            Source::Unit(unit) => unit.ptx,
        };
        if self.is_simulator() {
            return self.load_sim_part(module_name, ptx, kernel_names, sim_entries);
        }
        // Text from `include_bytes!`-style sources may carry a terminating NUL; any other NUL
        // would silently truncate the module, so it is an error.
        let text = ptx.trim_end_matches('\0');
        let c_text = CString::new(text).map_err(|e| Error::InvalidPtx {
            module: module_name.to_string(),
            message: format!(
                "the text contains a NUL byte at offset {}",
                e.nul_position()
            ),
        })?;
        let what = || format!("loading module `{module_name}`");
        self.check(what)?;
        check_ptx_target(module_name, text, self.properties().compute_capability)?;
        let Some(ctx) = self.cuda_context() else {
            unreachable!("the simulator returned above");
        };
        let sass = match source {
            Source::Unit(unit) => select_sass(
                unit.sass,
                self.properties().compute_capability,
                crate::code::force_ptx_from_env(),
            ),
            Source::Ptx(_) => None,
        };
        let (loaded, code) = match sass {
            Some(sass) => (
                ctx.load_module(Ptx::from_binary(sass.cubin.to_vec())),
                KernelCode::Sass {
                    arch: sass.arch.to_string(),
                },
            ),
            None => (ctx.load_module(Ptx::from_src(text)), KernelCode::Ptx),
        };
        let inner = match loaded {
            Ok(m) => m,
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => {
                let (version, _) = ptx_header(text);
                return Err(Error::PtxTooNew {
                    module: module_name.to_string(),
                    message: format!(
                        "it uses PTX ISA {}, newer than this driver's JIT compiler accepts \
                         (CUDA_ERROR_UNSUPPORTED_PTX_VERSION). Update the NVIDIA driver, or build \
                         the kernels for an older architecture (cargo xtask build-kernels --arch \
                         sm_80), which uses an older PTX ISA",
                        version.unwrap_or_else(|| "(unknown)".to_string())
                    ),
                });
            }
            Err(e) if is_jit_rejection(&e) => {
                let log = match &code {
                    KernelCode::Ptx => jit_error_log(&c_text),
                    _ => String::new(),
                };
                let log = if log.is_empty() {
                    "(the JIT compiler left no log)".to_string()
                } else {
                    log
                };
                return Err(Error::InvalidPtx {
                    module: module_name.to_string(),
                    message: format!(
                        "the driver rejected its {code} for device {} ({}, sm_{}{}) with \
                         {:?}; log:\n{log}",
                        self.ordinal(),
                        self.properties().name,
                        self.properties().compute_capability.0,
                        self.properties().compute_capability.1,
                        e.0
                    ),
                });
            }
            Err(source) => return Err(self.epoch().driver(what)(source)),
        };
        ctx.bind_to_thread().map_err(
            self.epoch()
                .driver(|| format!("binding device {} to this thread", self.ordinal())),
        )?;
        let Some(default_stream) = self.default_stream().cuda_stream() else {
            unreachable!("a CUDA device has a CUDA default stream");
        };
        self.epoch()
            .state()
            .attach_record(ctx, &inner, default_stream)
            .map_err(
                self.epoch()
                    .driver(|| format!("setting up the panic record of module `{module_name}`")),
            )?;
        let mut kernels = Vec::with_capacity(kernel_names.len());
        let mut param_sizes = ptx::all_entry_param_sizes(text);
        let required_blocks = ptx::required_block_shapes(text);
        let grid_dims = ptx::required_grid_dims(text);
        for &name in kernel_names {
            let not_found = || Error::KernelNotFound {
                module: module_name.to_string(),
                kernel: name.to_string(),
                available: ptx::entry_names(text),
            };
            if name.contains('\0') {
                return Err(not_found());
            }
            let func = match inner.load_function(name) {
                Ok(f) => f,
                Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => return Err(not_found()),
                Err(source) => {
                    return Err(self.epoch().driver(|| {
                        format!("looking up kernel `{name}` in module `{module_name}`")
                    })(source));
                }
            };
            let mut attributes = function_attributes(&func, name)?;
            attributes.required_block = required_blocks.get(name).copied();
            attributes.required_grid_dims = grid_dims.get(name).copied();
            // A 32-bit index variant answers to its kernel's name in errors, fault reports and
            // launch logs: it is the same kernel.
            let shown = gpu_abi::index32::kernel_of_variant(name).unwrap_or(name);
            kernels.push(Kernel {
                name: shown.to_string(),
                log_id: self.epoch().state().log.intern(shown),
                module: module_name.to_string(),
                code: code.clone(),
                param_sizes: param_sizes.remove(name).flatten(),
                device: self.properties_arc().clone(),
                device_key: self.device_key(),
                dynamic_shared_limit: AtomicU32::new(attributes.max_dynamic_shared_bytes),
                attributes,
                backend: KernelBackend::Cuda {
                    func: ManuallyDrop::new(func),
                    ctx: ctx.clone(),
                },
                epoch: self.epoch().clone(),
            });
        }
        Ok(LoadedPart {
            kernels,
            inner: ManuallyDrop::new(Some(inner)),
            epoch: self.epoch().clone(),
        })
    }

    /// [`Gpu::load_part`] on the simulator: kernels with their entries and the PTX's parameter
    /// sizes, nominal attributes.
    fn load_sim_part(
        &self,
        module_name: &str,
        ptx: &str,
        kernel_names: &[&str],
        sim_entries: &[(&str, SimEntry)],
    ) -> Result<LoadedPart> {
        self.check(|| format!("loading module `{module_name}` on the CPU simulator"))?;
        let text = ptx.trim_end_matches('\0');
        let entry_names = ptx::entry_names(text);
        let mut param_sizes = ptx::all_entry_param_sizes(text);
        let required_blocks = ptx::required_block_shapes(text);
        let grid_dims = ptx::required_grid_dims(text);
        let ptx_version = ptx_header(text)
            .0
            .and_then(|v| {
                let (major, minor) = v.split_once('.')?;
                Some(major.parse::<u32>().ok()? * 10 + minor.parse::<u32>().ok()?)
            })
            .unwrap_or(0);
        let device = self.properties();
        let mut kernels = Vec::with_capacity(kernel_names.len());
        for &name in kernel_names {
            if !entry_names.is_empty() && !entry_names.iter().any(|e| e == name) {
                return Err(Error::KernelNotFound {
                    module: module_name.to_string(),
                    kernel: name.to_string(),
                    available: entry_names,
                });
            }
            let entry = sim_entries
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, e)| e);
            let attributes = KernelAttributes {
                max_threads_per_block: device.max_threads_per_block,
                static_shared_bytes: 0,
                const_bytes: 0,
                local_bytes_per_thread: 0,
                registers_per_thread: 0,
                ptx_version,
                binary_version: 0,
                max_dynamic_shared_bytes: device.shared_memory_limit_per_block(),
                required_block: required_blocks.get(name).copied(),
                required_grid_dims: grid_dims.get(name).copied(),
            };
            // A 32-bit index variant answers to its kernel's name in errors, fault reports and
            // launch logs: it is the same kernel.
            let shown = gpu_abi::index32::kernel_of_variant(name).unwrap_or(name);
            kernels.push(Kernel {
                name: shown.to_string(),
                log_id: self.epoch().state().log.intern(shown),
                module: module_name.to_string(),
                code: KernelCode::Simulator,
                param_sizes: param_sizes.remove(name).flatten(),
                device: self.properties_arc().clone(),
                device_key: self.device_key(),
                dynamic_shared_limit: AtomicU32::new(attributes.max_dynamic_shared_bytes),
                attributes,
                backend: KernelBackend::Sim { entry },
                epoch: self.epoch().clone(),
            });
        }
        Ok(LoadedPart {
            kernels,
            inner: ManuallyDrop::new(None),
            epoch: self.epoch().clone(),
        })
    }

    /// Loads a `.ptx` file and every kernel in it (found by scanning its `.entry NAME(` lines).
    /// The module is named after the file stem.
    pub fn load_ptx_file(&self, path: impl AsRef<Path>) -> Result<Module> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let names = ptx::entry_names(&text);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let module_name = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        self.load_ptx(&module_name, &text, &names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER_80: &str = "//\n.version 7.0\n.target sm_80\n.address_size 64\n";

    #[test]
    fn reads_the_ptx_header() {
        assert_eq!(
            ptx_header(HEADER_80),
            (Some("7.0".to_string()), Some("sm_80".to_string()))
        );
        assert_eq!(
            ptx_header(".version 8.0\n.target sm_90a, debug\n")
                .1
                .as_deref(),
            Some("sm_90a")
        );
        assert_eq!(ptx_header("garbage"), (None, None));
    }

    #[test]
    fn refuses_ptx_for_a_newer_gpu_with_a_fix() {
        assert!(check_ptx_target("m", HEADER_80, (8, 0)).is_ok());
        assert!(check_ptx_target("m", HEADER_80, (9, 0)).is_ok());
        let err = check_ptx_target("m", ".version 8.0\n.target sm_90\n", (8, 6)).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::PtxTooNew { .. }), "{text}");
        assert!(
            text.contains("sm_90") && text.contains("sm_86") && text.contains("--arch sm_86"),
            "{text}"
        );
        // Unparsable targets are left to the driver.
        assert!(check_ptx_target("m", ".target sm_xx\n", (8, 0)).is_ok());
        assert!(check_ptx_target("m", "", (8, 0)).is_ok());
    }
}
