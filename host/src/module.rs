//! PTX modules and their kernels, with the per-kernel limits the driver reports.

use std::ffi::{CString, c_void};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use cudarc::driver::sys::{self, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, DriverError};
use cudarc::nvrtc::Ptx;

use crate::device::{DeviceProperties, Gpu};
use crate::error::{Error, Result};
use crate::ptx;

/// What the driver reports about one compiled kernel (function attributes).
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
}

/// One kernel (PTX `.entry`) of a loaded [`Module`].
#[derive(Debug)]
pub struct Kernel {
    name: String,
    module: String,
    func: CudaFunction,
    attributes: KernelAttributes,
    /// Parameter sizes in bytes read from the PTX header; `None` when not understood.
    param_sizes: Option<Vec<usize>>,
    device: Arc<DeviceProperties>,
    ctx: Arc<CudaContext>,
    /// The function's current `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`, so a launch
    /// only sets it when it must grow.
    dynamic_shared_limit: AtomicU32,
}

impl Kernel {
    /// The kernel's entry-point name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name of the module it was loaded from.
    pub fn module_name(&self) -> &str {
        &self.module
    }

    /// The driver's figures for this kernel (registers, shared and local memory, limits).
    pub fn attributes(&self) -> &KernelAttributes {
        &self.attributes
    }

    /// Sizes in bytes of the kernel's parameters as declared in the PTX, when they could be read.
    /// Launches check the pushed arguments against them.
    pub fn param_sizes(&self) -> Option<&[usize]> {
        self.param_sizes.as_deref()
    }

    /// The properties of the device the kernel was loaded on.
    pub fn device(&self) -> &DeviceProperties {
        &self.device
    }

    /// The underlying cudarc function, for anything this crate does not wrap.
    pub fn cuda_function(&self) -> &CudaFunction {
        &self.func
    }

    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub(crate) fn device_arc(&self) -> &Arc<DeviceProperties> {
        &self.device
    }

    /// Raises the function's dynamic shared memory limit to `bytes` if it is lower (needed for
    /// more than the default 48 KiB per block). Validation has already checked `bytes` against
    /// the device's opt-in maximum.
    pub(crate) fn ensure_dynamic_shared(&self, bytes: u32) -> Result<()> {
        if bytes <= self.dynamic_shared_limit.load(Ordering::Acquire) {
            return Ok(());
        }
        let value = i32::try_from(bytes).map_err(|_| Error::LaunchConfig {
            kernel: self.name.clone(),
            message: format!(
                "dynamic shared memory of {bytes} bytes does not fit the driver's i32"
            ),
        })?;
        self.ctx
            .bind_to_thread()
            .and_then(|()| {
                self.func.set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    value,
                )
            })
            .map_err(Error::driver_with(|| {
                format!(
                    "raising the dynamic shared memory limit of kernel `{}` to {bytes} bytes \
                     (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                    self.name
                )
            }))?;
        self.dynamic_shared_limit.fetch_max(bytes, Ordering::AcqRel);
        Ok(())
    }
}

/// A loaded PTX module and the kernels looked up in it.
#[derive(Debug)]
pub struct Module {
    name: String,
    kernels: Vec<Kernel>,
    inner: Arc<CudaModule>,
}

impl Module {
    /// The name given when loading.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel called `name`; [`Error::KernelNotFound`] if it was not among the names looked
    /// up at load time.
    pub fn kernel(&self, name: &str) -> Result<&Kernel> {
        self.kernels
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| Error::KernelNotFound {
                module: self.name.clone(),
                kernel: name.to_string(),
            })
    }

    /// All kernels looked up at load time.
    pub fn kernels(&self) -> impl Iterator<Item = &Kernel> {
        self.kernels.iter()
    }

    /// The underlying cudarc module.
    pub fn cuda_module(&self) -> &Arc<CudaModule> {
        &self.inner
    }
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
    })
}

impl Gpu {
    /// Loads PTX text (JIT-compiled by the driver for this device) and looks up `kernel_names`.
    ///
    /// `module_name` only labels errors and [`Module::name`]. A name that is not an entry point
    /// gives [`Error::KernelNotFound`]; PTX the driver rejects gives [`Error::InvalidPtx`] with
    /// the JIT compiler's log.
    pub fn load_ptx(&self, module_name: &str, ptx: &str, kernel_names: &[&str]) -> Result<Module> {
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
        let ctx = self.cuda_context();
        let inner = match ctx.load_module(Ptx::from_src(text)) {
            Ok(m) => m,
            Err(e) if is_jit_rejection(&e) => {
                let log = jit_error_log(&c_text);
                let log = if log.is_empty() {
                    "(the JIT compiler left no log)".to_string()
                } else {
                    log
                };
                return Err(Error::InvalidPtx {
                    module: module_name.to_string(),
                    message: format!(
                        "the driver's JIT compiler rejected it for device {} ({}, sm_{}{}) with \
                         {:?}; log:\n{log}",
                        self.ordinal(),
                        self.properties().name,
                        self.properties().compute_capability.0,
                        self.properties().compute_capability.1,
                        e.0
                    ),
                });
            }
            Err(source) => {
                return Err(Error::Driver {
                    context: format!("loading PTX module `{module_name}`"),
                    source,
                });
            }
        };
        ctx.bind_to_thread().map_err(Error::driver_with(|| {
            format!("binding device {} to this thread", self.ordinal())
        }))?;
        let mut kernels = Vec::with_capacity(kernel_names.len());
        for &name in kernel_names {
            let not_found = || Error::KernelNotFound {
                module: module_name.to_string(),
                kernel: name.to_string(),
            };
            if name.contains('\0') {
                return Err(not_found());
            }
            let func = match inner.load_function(name) {
                Ok(f) => f,
                Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => return Err(not_found()),
                Err(source) => {
                    return Err(Error::Driver {
                        context: format!("looking up kernel `{name}` in module `{module_name}`"),
                        source,
                    });
                }
            };
            let attributes = function_attributes(&func, name)?;
            kernels.push(Kernel {
                name: name.to_string(),
                module: module_name.to_string(),
                param_sizes: ptx::entry_param_sizes(text, name),
                device: self.properties_arc().clone(),
                ctx: ctx.clone(),
                dynamic_shared_limit: AtomicU32::new(attributes.max_dynamic_shared_bytes),
                attributes,
                func,
            });
        }
        Ok(Module {
            name: module_name.to_string(),
            kernels,
            inner,
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
