//! Your own kernels from Python: a kernel crate's PTX and manifest (what `cargo xtask
//! build-kernels` writes under `target/ptx/<arch>/`), or a crate embedded in this build, as an
//! object with one callable per `#[kernel]`, whose arguments are checked against the kernel's
//! Rust signature (recorded in the manifest) before anything is launched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gpu_host::{CodeUnit, LaunchConfig, Module, SimEntry};
use pyo3::exceptions::{PyAttributeError, PyFileNotFoundError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use serde::Deserialize;

use crate::args::{AnyBuf, Scalar, dim3};
use crate::array::{ArrayArg, Call, Place};
use crate::dtype::DType;
use crate::runtime::{device, py_err};

mod embedded {
    gpu_host::include_kernels!("example_kernels");
}

/// A kernel crate built into this module: launchers' code units, simulator entries, manifest.
struct Embedded {
    name: &'static str,
    manifest: &'static str,
    units: &'static [CodeUnit],
    sim_entries: &'static [(&'static str, SimEntry)],
}

const EMBEDDED: &[Embedded] = &[Embedded {
    name: "example_kernels",
    manifest: include_str!(concat!(env!("OUT_DIR"), "/example_kernels.manifest.json")),
    units: embedded::example_kernels::UNITS,
    sim_entries: embedded::example_kernels::SIM_ENTRIES,
}];

/// The part of the builder's manifest (`gpu_builder::Manifest`) the bindings read.
#[derive(Deserialize)]
struct Manifest {
    crate_name: String,
    arch: String,
    ptx_file: String,
    kernels: Vec<KernelInfo>,
}

#[derive(Deserialize, Clone, PartialEq)]
struct KernelInfo {
    name: String,
    rust_module: Option<String>,
    params: Vec<ParamInfo>,
    #[serde(default, rename = "unsafe")]
    is_unsafe: bool,
}

#[derive(Deserialize, Clone, PartialEq)]
struct ParamInfo {
    name: String,
    kind: String,
    ty: String,
}

/// How one parameter is passed from Python.
#[derive(Clone)]
enum Param {
    /// `&[T]`: an array of `T`, read.
    Slice(DType),
    /// `DisjointSlice<T>`: an array of `T`, written.
    Output(DType),
    /// A number by value.
    Scalar(DType),
    /// Anything else (a struct by value, a slice of structs): not callable from Python yet.
    Unsupported(String),
}

/// One `#[kernel]`, typed from the manifest.
struct KernelSig {
    name: String,
    /// Parameter names, leaked once per loaded kernel set (launches name arguments with
    /// `&'static str`).
    names: Vec<&'static str>,
    params: Vec<Param>,
    is_unsafe: bool,
}

impl KernelSig {
    fn new(k: &KernelInfo) -> KernelSig {
        let params = k
            .params
            .iter()
            .map(|p| {
                let dtype = DType::from_rust(&p.ty).filter(|&d| d != DType::Bool);
                match (p.kind.as_str(), dtype) {
                    ("slice", Some(d)) => Param::Slice(d),
                    ("output", Some(d)) => Param::Output(d),
                    ("scalar", Some(d)) => Param::Scalar(d),
                    (kind, _) => Param::Unsupported(format!("{kind} of {}", p.ty)),
                }
            })
            .collect();
        KernelSig {
            name: k.name.clone(),
            names: k
                .params
                .iter()
                .map(|p| &*Box::leak(p.name.clone().into_boxed_str()))
                .collect(),
            params,
            is_unsafe: k.is_unsafe,
        }
    }

    fn signature(&self) -> String {
        let args: Vec<String> = self
            .names
            .iter()
            .zip(&self.params)
            .map(|(n, p)| match p {
                Param::Slice(d) => format!("{n}: &[{}]", d.rust_name()),
                Param::Output(d) => format!("{n}: DisjointSlice<{}>", d.rust_name()),
                Param::Scalar(d) => format!("{n}: {}", d.rust_name()),
                Param::Unsupported(t) => format!("{n}: {t}"),
            })
            .collect();
        format!("{}({})", self.name, args.join(", "))
    }
}

/// Where a kernel set's code comes from.
enum Source {
    Embedded(&'static Embedded),
    /// PTX text read from disk, and the embedded crate of the same name when there is one with
    /// the same signatures (the simulator runs its host build).
    Files {
        ptx: String,
        sim: Option<&'static Embedded>,
    },
}

/// The kernels of one crate: `k = gk.load_kernels(...)`, then `k.saxpy(grid, block, ...)`.
#[pyclass(module = "gpu_kernels", frozen)]
pub struct Kernels {
    crate_name: String,
    arch: String,
    source: Source,
    sigs: Vec<Arc<KernelSig>>,
    modules: Mutex<HashMap<PlaceKey, Arc<Module>>>,
}

type PlaceKey = (bool, i32);

fn key(p: Place) -> PlaceKey {
    match p {
        Place::Cpu => (false, 0),
        Place::Cuda(i) => (true, i),
    }
}

impl Kernels {
    fn new(manifest: Manifest, source: Source) -> Kernels {
        let sigs = manifest
            .kernels
            .iter()
            .filter(|k| k.rust_module.is_some())
            .map(|k| Arc::new(KernelSig::new(k)))
            .collect();
        Kernels {
            crate_name: manifest.crate_name,
            arch: manifest.arch,
            source,
            sigs,
            modules: Mutex::new(HashMap::new()),
        }
    }

    /// The module on the device of `place`, made on first use.
    fn module(&self, place: Place) -> PyResult<Arc<Module>> {
        let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = modules.get(&key(place)) {
            return Ok(m.clone());
        }
        let dev = device(place)?;
        let gpu = &dev.gpu;
        let module = match (&self.source, place) {
            (Source::Embedded(e), _) => gpu.load_units(e.name, e.units, e.sim_entries),
            (Source::Files { ptx, .. }, Place::Cuda(_)) => {
                let names: Vec<&str> = self.sigs.iter().map(|s| s.name.as_str()).collect();
                gpu.load_module(&self.crate_name, ptx, &names, &[])
            }
            (Source::Files { ptx, sim: Some(e) }, Place::Cpu) => {
                let names: Vec<&str> = self.sigs.iter().map(|s| s.name.as_str()).collect();
                gpu.load_module(&self.crate_name, ptx, &names, e.sim_entries)
            }
            (Source::Files { sim: None, .. }, Place::Cpu) => {
                let built: Vec<&str> = EMBEDDED.iter().map(|e| e.name).collect();
                return Err(PyValueError::new_err(format!(
                    "kernel crate `{}` cannot run on the CPU simulator (host arrays): the \
                     simulator runs a crate's host build, and this extension was built with \
                     only {built:?} (with matching signatures). Pass CUDA arrays to run its PTX \
                     on a GPU, or embed the crate in host/gpu-python/build.rs",
                    self.crate_name
                )));
            }
        }
        .map_err(py_err)?;
        let module = Arc::new(module);
        modules.insert(key(place), module.clone());
        Ok(module)
    }

    fn sig(&self, name: &str) -> Option<&Arc<KernelSig>> {
        self.sigs.iter().find(|s| s.name == name)
    }
}

#[pymethods]
impl Kernels {
    /// The crate's name (`example_kernels`).
    #[getter]
    fn name(&self) -> &str {
        &self.crate_name
    }

    /// The architecture the PTX was built for (`sm_80`).
    #[getter]
    fn arch(&self) -> &str {
        &self.arch
    }

    /// The `#[kernel]` functions, with their Rust signatures.
    #[getter]
    fn kernels(&self) -> HashMap<String, String> {
        self.sigs
            .iter()
            .map(|s| (s.name.clone(), s.signature()))
            .collect()
    }

    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<Kernel> {
        let this = slf.get();
        let sig = this.sig(name).ok_or_else(|| {
            let names: Vec<&str> = this.sigs.iter().map(|s| s.name.as_str()).collect();
            PyAttributeError::new_err(format!(
                "kernel crate `{}` has no #[kernel] `{name}`; it has {names:?}",
                this.crate_name
            ))
        })?;
        Ok(Kernel {
            set: slf.clone().unbind(),
            sig: sig.clone(),
        })
    }

    fn __dir__(&self) -> Vec<String> {
        let mut names: Vec<String> = self.sigs.iter().map(|s| s.name.clone()).collect();
        names.extend(["name", "arch", "kernels"].map(String::from));
        names
    }

    fn __repr__(&self) -> String {
        format!(
            "<gpu_kernels.Kernels {} ({}), {} kernels>",
            self.crate_name,
            self.arch,
            self.sigs.len()
        )
    }
}

/// One kernel of a [`Kernels`] set, callable: `k.saxpy(grid, block, 2.0, x, y, out)`.
#[pyclass(module = "gpu_kernels", frozen)]
pub struct Kernel {
    set: Py<Kernels>,
    sig: Arc<KernelSig>,
}

/// One checked argument, in parameter order.
enum Arg<'py> {
    Array(ArrayArg<'py>),
    Scalar(Scalar),
}

#[pymethods]
impl Kernel {
    /// `kernel(grid, block, *args, shared_mem=0, stream=None, allow_unsafe=False)`: launches the
    /// kernel asynchronously on the arrays' stream (torch's current stream for torch tensors) or
    /// `stream`. `grid` and `block` are ints or tuples of up to 3 ints (see `launch_1d`,
    /// `launch_2d`). Each argument is checked against the kernel's Rust signature first:
    /// `&[T]` takes a contiguous array of dtype `T` (any shape, passed flat), `DisjointSlice<T>`
    /// a writable one that overlaps no other argument, a number a Python int or float.
    #[pyo3(signature = (grid, block, *args, shared_mem=0, stream=None, allow_unsafe=false))]
    #[allow(clippy::too_many_arguments)] // the Python signature
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        grid: &Bound<'py, PyAny>,
        block: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        shared_mem: u32,
        stream: Option<&Bound<'py, PyAny>>,
        allow_unsafe: bool,
    ) -> PyResult<()> {
        let sig = &*self.sig;
        let kernel_name = &sig.name;
        let what = |m: String| {
            format!(
                "kernel `{kernel_name}`: {m} (signature {})",
                sig.signature()
            )
        };
        if sig.is_unsafe && !allow_unsafe {
            return Err(PyValueError::new_err(what(
                "is an `unsafe fn` with a safety contract the bindings cannot check; pass \
                 allow_unsafe=True once you have made sure the arguments keep it"
                    .to_string(),
            )));
        }
        if args.len() != sig.params.len() {
            return Err(PyTypeError::new_err(what(format!(
                "takes {} arguments after grid and block, got {}",
                sig.params.len(),
                args.len()
            ))));
        }
        let cfg = LaunchConfig::new(dim3(grid, "grid")?, dim3(block, "block")?)
            .with_shared_mem(shared_mem);
        let mut call = Call::new(py, stream)?;
        let mut checked: Vec<Arg<'py>> = Vec::with_capacity(args.len());
        for ((value, param), &name) in args.iter().zip(&sig.params).zip(&sig.names) {
            checked.push(match param {
                Param::Slice(d) | Param::Output(d) => {
                    let a = call.array(&value, name)?;
                    if a.dtype != *d {
                        return Err(PyTypeError::new_err(what(format!(
                            "argument `{name}` has dtype {}; the kernel takes {}",
                            a.dtype.name(),
                            d.name()
                        ))));
                    }
                    if !a.contiguous {
                        return Err(PyValueError::new_err(what(format!(
                            "argument `{name}` is not contiguous (shape {:?})",
                            a.shape
                        ))));
                    }
                    if matches!(param, Param::Output(_)) && a.readonly {
                        return Err(PyValueError::new_err(what(format!(
                            "argument `{name}` is written by the kernel but is read-only"
                        ))));
                    }
                    Arg::Array(a)
                }
                Param::Scalar(d) => Arg::Scalar(Scalar::from_py(*d, &value).map_err(|e| {
                    PyTypeError::new_err(what(format!("argument `{name}` ({}): {e}", d.name())))
                })?),
                Param::Unsupported(t) => {
                    return Err(PyTypeError::new_err(what(format!(
                        "parameter `{name}` is a {t}, which Python calls cannot pass yet"
                    ))));
                }
            });
        }
        // An output may not share memory with any other array argument: the kernel would
        // read (or write) memory another thread writes.
        for (i, (a, p)) in checked.iter().zip(&sig.params).enumerate() {
            let (Arg::Array(a), Param::Output(_)) = (a, p) else {
                continue;
            };
            for (j, b) in checked.iter().enumerate() {
                if let Arg::Array(b) = b
                    && i != j
                    && a.overlaps(b)
                {
                    return Err(PyValueError::new_err(what(format!(
                        "output `{}` overlaps argument `{}` in memory",
                        a.name, b.name
                    ))));
                }
            }
        }
        let place = call.place().unwrap_or(Place::Cpu);
        let set = self.set.get();
        let module = set.module(place)?;
        let dev = device(place)?;
        let s = dev.stream(&call)?;
        let mut bufs: Vec<Option<AnyBuf>> = Vec::with_capacity(checked.len());
        for a in &checked {
            bufs.push(match a {
                Arg::Array(a) => Some(AnyBuf::borrow(&s, a)?),
                Arg::Scalar(_) => None,
            });
        }
        let kernel = module.kernel(kernel_name).map_err(py_err)?;
        let mut launch = kernel.prepare(&s, cfg).map_err(py_err)?;
        for (((arg, buf), param), &name) in checked
            .iter()
            .zip(bufs.iter_mut())
            .zip(&sig.params)
            .zip(&sig.names)
        {
            match (arg, buf, param) {
                (Arg::Scalar(v), _, _) => v.push(&mut launch, name),
                (Arg::Array(_), Some(b), Param::Output(_)) => b.push_output(&mut launch, name),
                (Arg::Array(_), Some(b), _) => b.push_input(&mut launch, name),
                (Arg::Array(_), None, _) => unreachable!("every array argument was borrowed"),
            }
        }
        // SAFETY: the arguments were pushed in the order of the kernel's `#[kernel]` signature
        // as its manifest records it, each as its kind lowers (a slice or output as pointer and
        // length, a scalar by value) with exactly the element or value type the signature names
        // (checked above); the launch also checks the pushed sizes against the PTX entry.
        // Outputs overlap no other argument. A kernel that is an `unsafe fn` runs only with
        // `allow_unsafe=True`, by which the caller states its contract holds.
        unsafe { launch.launch_foreign() }.map_err(py_err)?;
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!("<gpu_kernels.Kernel {}>", self.sig.signature())
    }

    /// The kernel's Rust signature.
    #[getter]
    fn signature(&self) -> String {
        self.sig.signature()
    }
}

fn read(path: &Path) -> PyResult<String> {
    std::fs::read_to_string(path)
        .map_err(|e| PyFileNotFoundError::new_err(format!("reading {}: {e}", path.display())))
}

fn parse(text: &str, origin: &str) -> PyResult<Manifest> {
    serde_json::from_str(text)
        .map_err(|e| PyValueError::new_err(format!("{origin} is not a kernel manifest: {e}")))
}

/// The manifest file a path names: the file itself, the manifest beside a `.ptx`, or the one
/// manifest (or `crate_name`'s) in a directory.
fn manifest_path(path: &Path, crate_name: Option<&str>) -> PyResult<PathBuf> {
    if path.is_file() {
        let s = path.to_string_lossy();
        if s.ends_with(".manifest.json") {
            return Ok(path.to_path_buf());
        }
        if let Some(stem) = s.strip_suffix(".ptx") {
            return Ok(PathBuf::from(format!("{stem}.manifest.json")));
        }
        return Err(PyValueError::new_err(format!(
            "{}: expected a directory, a .ptx or a .manifest.json file",
            path.display()
        )));
    }
    if !path.is_dir() {
        return Err(PyFileNotFoundError::new_err(format!(
            "{} does not exist, and no kernel crate of that name is built into this module \
             (built in: {:?})",
            path.display(),
            EMBEDDED.iter().map(|e| e.name).collect::<Vec<_>>()
        )));
    }
    if let Some(c) = crate_name {
        return Ok(path.join(format!("{}.manifest.json", c.replace('-', "_"))));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| PyFileNotFoundError::new_err(format!("{}: {e}", path.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".manifest.json"))
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(PyFileNotFoundError::new_err(format!(
            "{} holds no kernel manifest (*.manifest.json): build the crate with `cargo xtask \
             build-kernels CRATE` and pass target/ptx/<arch>",
            path.display()
        ))),
        _ => Err(PyValueError::new_err(format!(
            "{} holds several kernel crates ({}); name one: load_kernels(path, kernel_crate=\"...\")",
            path.display(),
            found
                .iter()
                .filter_map(|p| p.file_name())
                .map(|n| n
                    .to_string_lossy()
                    .trim_end_matches(".manifest.json")
                    .to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `load_kernels(name_or_path, kernel_crate=None)`: a kernel crate's kernels, one callable per
/// `#[kernel]`. `name_or_path` is the name of a crate built into this module (`example_kernels`),
/// or a path: `target/ptx/sm_80` (with `kernel_crate=` when it holds several crates), a `.ptx` file,
/// or a `.manifest.json` file. On the CPU simulator (host arrays) only built-in crates run.
#[pyfunction]
#[pyo3(signature = (name_or_path, kernel_crate=None))]
pub fn load_kernels(name_or_path: &str, kernel_crate: Option<&str>) -> PyResult<Kernels> {
    let as_crate = name_or_path.replace('-', "_");
    if let Some(e) = EMBEDDED.iter().find(|e| e.name == as_crate) {
        let m = parse(e.manifest, &format!("the built-in manifest of {}", e.name))?;
        return Ok(Kernels::new(m, Source::Embedded(e)));
    }
    let mpath = manifest_path(Path::new(name_or_path), kernel_crate)?;
    let m = parse(&read(&mpath)?, &mpath.display().to_string())?;
    let ptx_path = mpath.with_file_name(&m.ptx_file);
    let ptx = read(&ptx_path)?;
    // The simulator can run the crate only through a built-in host build with the same kernels.
    let sim = EMBEDDED.iter().find(|e| {
        e.name == m.crate_name
            && parse(e.manifest, e.name)
                .is_ok_and(|b| m.kernels.iter().all(|k| b.kernels.iter().any(|bk| bk == k)))
    });
    Ok(Kernels::new(m, Source::Files { ptx, sim }))
}

/// `launch_1d(n, block=256)`: `(grid, block)` with one thread per element for `n` elements.
#[pyfunction]
#[pyo3(signature = (n, block=256))]
pub fn launch_1d(n: usize, block: u32) -> PyResult<(u32, u32)> {
    if block == 0 {
        return Err(PyValueError::new_err("launch_1d: block must be at least 1"));
    }
    let cfg = LaunchConfig::for_elements(n, block);
    Ok((cfg.grid.x, block))
}

/// `launch_2d(width, height, block=(16, 16))`: `((gx, gy), (bx, by))` with one thread per
/// element of a `width` x `height` array (x along the width).
#[pyfunction]
#[pyo3(signature = (width, height, block=(16, 16)))]
pub fn launch_2d(width: u32, height: u32, block: (u32, u32)) -> PyResult<((u32, u32), (u32, u32))> {
    if block.0 == 0 || block.1 == 0 {
        return Err(PyValueError::new_err(
            "launch_2d: block extents must be at least 1",
        ));
    }
    let cfg = LaunchConfig::tiles_2d(width, height, block);
    Ok(((cfg.grid.x, cfg.grid.y), block))
}

/// The names of the kernel crates built into this module.
#[pyfunction]
pub fn builtin_kernel_crates(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, EMBEDDED.iter().map(|e| e.name))
}
