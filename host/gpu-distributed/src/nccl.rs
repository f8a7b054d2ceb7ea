//! The raw NCCL layer: finding `libnccl.so.2` at run time and calling it. Nothing above this
//! module touches an NCCL symbol.
//!
//! Why not cudarc's `nccl` feature: its loader only tries the names `libnccl.so`,
//! `libnccl.so.{9..12}` and the like on the default library path, never `libnccl.so.2` (NCCL's
//! soname) nor the `nvidia-nccl` Python wheel's directory, which is where the GPU machines keep
//! NCCL; and a missing library panics on the first call. Here the library is looked up in the
//! places users have it, and its absence is an error that says what to install.
//!
//! Safety model: the function pointers are resolved once from a library that stays loaded for
//! the life of the process; every call passes handles NCCL gave out and device addresses of
//! live buffers, which the safe layer above guarantees.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `ncclComm_t`.
pub(crate) type CommHandle = *mut c_void;
/// `ncclResult_t`.
pub(crate) type NcclResult = c_int;

pub(crate) const SUCCESS: NcclResult = 0;
pub(crate) const IN_PROGRESS: NcclResult = 7;

/// `ncclUniqueId`: 128 opaque bytes that rank 0 makes and every rank needs.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct UniqueId {
    pub(crate) internal: [c_char; 128],
}

/// `ncclConfig_t` as NCCL 2.17 laid it out. NCCL reads a config by its `size` and `version`
/// fields and fills what an older layout lacks with its defaults, so this prefix is accepted
/// by every NCCL since 2.17 and names the one field we set (`blocking`).
#[repr(C)]
pub(crate) struct Config {
    size: usize,
    magic: u32,
    version: u32,
    blocking: c_int,
    cga_cluster_size: c_int,
    min_ctas: c_int,
    max_ctas: c_int,
    net_name: *const c_char,
    split_share: c_int,
}

/// `NCCL_CONFIG_UNDEF_INT`: "use NCCL's default".
const UNDEF_INT: c_int = i32::MIN;

impl Config {
    /// A configuration for a blocking or a non-blocking communicator (see
    /// [`crate::CommOptions::non_blocking`]).
    pub(crate) fn new(blocking: bool) -> Config {
        Config {
            size: size_of::<Config>(),
            magic: 0xcafe_beef,
            version: 21700,
            blocking: blocking.into(),
            cga_cluster_size: UNDEF_INT,
            min_ctas: UNDEF_INT,
            max_ctas: UNDEF_INT,
            net_name: std::ptr::null(),
            split_share: UNDEF_INT,
        }
    }
}

type Stream = *mut c_void;

/// NCCL's entry points, resolved once.
pub(crate) struct Nccl {
    /// Where the library was loaded from.
    pub(crate) path: String,
    /// `ncclGetVersion`, e.g. 22809 for 2.28.9.
    pub(crate) version: i32,
    pub(crate) get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> NcclResult,
    pub(crate) comm_init_rank_config:
        unsafe extern "C" fn(*mut CommHandle, c_int, UniqueId, c_int, *mut Config) -> NcclResult,
    pub(crate) comm_abort: unsafe extern "C" fn(CommHandle) -> NcclResult,
    pub(crate) comm_finalize: unsafe extern "C" fn(CommHandle) -> NcclResult,
    pub(crate) comm_destroy: unsafe extern "C" fn(CommHandle) -> NcclResult,
    pub(crate) comm_get_async_error:
        unsafe extern "C" fn(CommHandle, *mut NcclResult) -> NcclResult,
    pub(crate) get_error_string: unsafe extern "C" fn(NcclResult) -> *const c_char,
    pub(crate) get_last_error: unsafe extern "C" fn(CommHandle) -> *const c_char,
    pub(crate) all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        CommHandle,
        Stream,
    ) -> NcclResult,
    pub(crate) reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        c_int,
        CommHandle,
        Stream,
    ) -> NcclResult,
    pub(crate) broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        CommHandle,
        Stream,
    ) -> NcclResult,
    pub(crate) all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        CommHandle,
        Stream,
    ) -> NcclResult,
    pub(crate) reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        CommHandle,
        Stream,
    ) -> NcclResult,
    pub(crate) send:
        unsafe extern "C" fn(*const c_void, usize, c_int, c_int, CommHandle, Stream) -> NcclResult,
    pub(crate) recv:
        unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, CommHandle, Stream) -> NcclResult,
    pub(crate) group_start: unsafe extern "C" fn() -> NcclResult,
    pub(crate) group_end: unsafe extern "C" fn() -> NcclResult,
    /// Keeps the symbols above valid: never unloaded.
    _lib: libloading::Library,
}

/// The environment variable naming the NCCL library file to load, ahead of the search.
pub const NCCL_LIBRARY_ENV: &str = "GPU_NCCL_LIBRARY";

/// The NCCL this process uses: its version (`"NCCL 2.28.9"`) and the file it was loaded
/// from; or why it cannot be loaded (what was tried, what to install).
pub fn nccl_info() -> Result<(String, String), String> {
    nccl().map(|n| (n.version_string(), n.path.clone()))
}

/// The loaded library, or why it could not be loaded (the same answer for the whole process).
pub(crate) fn nccl() -> Result<&'static Nccl, String> {
    static NCCL: OnceLock<Result<Nccl, String>> = OnceLock::new();
    NCCL.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Nccl, String> {
    crate::disable_nvls_unless_set();
    let mut tried = Vec::new();
    for candidate in candidates() {
        // SAFETY: loading NCCL runs its initializers, which only set up NCCL's own state.
        match unsafe { libloading::Library::new(&candidate) } {
            Ok(lib) => return resolve(lib, candidate.to_string_lossy().into_owned()),
            Err(e) => tried.push(format!("{}: {e}", candidate.display())),
        }
    }
    Err(format!(
        "NCCL (libnccl.so.2) could not be loaded; tried:\n  {}\n\
         Install it with `pip install nvidia-nccl-cu12` (CUDA 12) or `nvidia-nccl-cu13` \
         (CUDA 13) for the `python3` on PATH, add the directory holding libnccl.so.2 to \
         LD_LIBRARY_PATH, or name the file in {NCCL_LIBRARY_ENV}",
        tried.join("\n  ")
    ))
}

/// Where NCCL may be: `$GPU_NCCL_LIBRARY`; the loader's search (`LD_LIBRARY_PATH`, the cache,
/// the system directories) for the soname; then `nvidia/nccl/lib/` in the site-packages of
/// the `python3` on PATH (the `nvidia-nccl-cu*` wheels, which torch installs).
fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(path) = std::env::var_os(NCCL_LIBRARY_ENV).filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(path));
        return out;
    }
    out.push(PathBuf::from("libnccl.so.2"));
    out.push(PathBuf::from("libnccl.so"));
    for dir in python_package_dirs() {
        let lib = dir
            .join("nvidia")
            .join("nccl")
            .join("lib")
            .join("libnccl.so.2");
        if lib.exists() && !out.contains(&lib) {
            out.push(lib);
        }
    }
    out
}

/// The `sys.path` entries of `python3` (or `$PYTHON`), when there is one.
fn python_package_dirs() -> Vec<PathBuf> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    let Ok(out) = std::process::Command::new(python)
        .args([
            "-c",
            "import sys; print('\\n'.join(p for p in sys.path if p))",
        ])
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| Path::new(l.trim()).to_path_buf())
        .filter(|p| p.is_dir())
        .collect()
}

fn resolve(lib: libloading::Library, path: String) -> Result<Nccl, String> {
    macro_rules! sym {
        ($name:literal) => {{
            // SAFETY: the symbol's type is the one declared in nccl.h for this name.
            let s = unsafe { lib.get($name.as_bytes()) }
                .map_err(|e| format!("{path} has no `{}`: {e}", $name))?;
            *s
        }};
    }
    let get_version: unsafe extern "C" fn(*mut c_int) -> NcclResult = sym!("ncclGetVersion");
    let mut version = 0;
    // SAFETY: writes one int.
    unsafe { get_version(&mut version) };
    if version < 21700 {
        return Err(format!(
            "{path} is NCCL {version}; non-blocking communicators need NCCL 2.17 or newer"
        ));
    }
    Ok(Nccl {
        version,
        get_unique_id: sym!("ncclGetUniqueId"),
        comm_init_rank_config: sym!("ncclCommInitRankConfig"),
        comm_abort: sym!("ncclCommAbort"),
        comm_finalize: sym!("ncclCommFinalize"),
        comm_destroy: sym!("ncclCommDestroy"),
        comm_get_async_error: sym!("ncclCommGetAsyncError"),
        get_error_string: sym!("ncclGetErrorString"),
        get_last_error: sym!("ncclGetLastError"),
        all_reduce: sym!("ncclAllReduce"),
        reduce: sym!("ncclReduce"),
        broadcast: sym!("ncclBroadcast"),
        all_gather: sym!("ncclAllGather"),
        reduce_scatter: sym!("ncclReduceScatter"),
        send: sym!("ncclSend"),
        recv: sym!("ncclRecv"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
        path,
        _lib: lib,
    })
}

impl Nccl {
    /// `"NCCL 2.28.9"`.
    pub(crate) fn version_string(&self) -> String {
        let v = self.version;
        format!("NCCL {}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    }

    /// NCCL's words for `code`, plus its last error message for `comm` when there is one.
    pub(crate) fn describe(&self, code: NcclResult, comm: Option<CommHandle>) -> String {
        // SAFETY: NCCL returns static NUL-terminated strings (or null).
        let text = |p: *const c_char| unsafe {
            (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
        };
        // SAFETY: plain lookups; `comm` is a live handle or null.
        let name = text(unsafe { (self.get_error_string)(code) }).unwrap_or_default();
        let last = text(unsafe { (self.get_last_error)(comm.unwrap_or(std::ptr::null_mut())) })
            .filter(|s| !s.is_empty());
        match last {
            Some(last) => format!("{name} (code {code}): {last}"),
            None => format!("{name} (code {code})"),
        }
    }
}
