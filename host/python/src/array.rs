//! Arrays in, zero-copy: what an argument's memory is (address, element type, shape, device,
//! writability), read through the protocols array libraries speak, and the stream a call's
//! work goes on.
//!
//! Protocols, first match wins:
//! 1. torch tensors: their attributes (`data_ptr()`, `dtype`, `shape`, ...), the cheapest path;
//! 2. DLPack (`__dlpack__`/`__dlpack_device__`, through `dlpark`), including the C exchange
//!    API of producers that publish one: CuPy, JAX, NumPy, newer torch;
//! 3. `__cuda_array_interface__` (Numba, CuPy, ...);
//! 4. `__array_interface__`: NumPy's host arrays (the CPU simulator's inputs). The stable ABI
//!    this module is built for (CPython >= 3.9) has no buffer protocol before 3.11, so host
//!    memory comes through this interface, the buffer protocol's Python-level twin.
//!
//! Which stream: the `stream=` argument when given; else the current stream of the first CUDA
//! argument's library (torch's `current_stream`, CuPy's `get_current_stream()`, a DLPack
//! exchange producer's work stream), so work orders with that library's own without a sync.
//! An argument whose producer works on another stream is waited for with an event.

use std::ffi::c_void;

use dlpark::ffi::{DLDevice, DLDeviceType, DLTensor};
use dlpark::python::consumer::exchange::ExchangeApi;
use dlpark::python::consumer::{DlpackStream, ImportedDlpack, StreamArg, from_dlpack};
use dlpark::tensor::TensorRef;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use crate::dtype::DType;

/// Where an array lives: host memory (run on the CPU simulator) or CUDA device `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Cpu,
    Cuda(i32),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Cpu => write!(f, "the CPU"),
            Place::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

/// Which library made an array: outputs the caller did not give are made by the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Producer {
    Torch,
    NumPy,
    CuPy,
    Other,
}

/// One array argument of a call, described.
pub struct ArrayArg<'py> {
    /// The argument's name, for error messages.
    pub name: String,
    /// Address of element 0 (byte offsets applied).
    pub ptr: u64,
    pub dtype: DType,
    pub shape: Vec<i64>,
    pub contiguous: bool,
    pub readonly: bool,
    pub place: Place,
    pub producer: Producer,
    pub obj: Bound<'py, PyAny>,
    /// The DLPack export, released (its deleter called) when the call is over.
    _export: Option<ImportedDlpack>,
}

impl ArrayArg<'_> {
    pub fn numel(&self) -> usize {
        self.shape.iter().map(|&d| d.max(0) as usize).product()
    }

    pub fn nbytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }

    /// `TypeError` unless the element type is one of `allowed`.
    pub fn expect_dtype(&self, what: &str, allowed: &[DType]) -> PyResult<()> {
        if allowed.contains(&self.dtype) {
            return Ok(());
        }
        let names: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
        Err(PyTypeError::new_err(format!(
            "{what}: argument `{}` has dtype {}; supported: {}",
            self.name,
            self.dtype.name(),
            names.join(", ")
        )))
    }

    /// `ValueError` unless contiguous (row-major, any shape).
    pub fn expect_contiguous(&self, what: &str) -> PyResult<()> {
        if self.contiguous {
            return Ok(());
        }
        Err(PyValueError::new_err(format!(
            "{what}: argument `{}` is not contiguous (shape {:?}); pass a contiguous array \
             (.contiguous() in torch, numpy.ascontiguousarray)",
            self.name, self.shape
        )))
    }

    /// `ValueError` unless one-dimensional.
    pub fn expect_1d(&self, what: &str) -> PyResult<()> {
        if self.shape.len() == 1 {
            return Ok(());
        }
        Err(PyValueError::new_err(format!(
            "{what}: argument `{}` has shape {:?}; it must be one-dimensional",
            self.name, self.shape
        )))
    }

    /// `ValueError` when the memory is read-only.
    pub fn expect_writable(&self, what: &str) -> PyResult<()> {
        if !self.readonly {
            return Ok(());
        }
        Err(PyValueError::new_err(format!(
            "{what}: output `{}` is read-only",
            self.name
        )))
    }

    /// Whether the two arrays' memory overlaps.
    pub fn overlaps(&self, other: &ArrayArg<'_>) -> bool {
        let (a, b) = (self.nbytes() as u64, other.nbytes() as u64);
        a > 0
            && b > 0
            && self.place == other.place
            && self.ptr < other.ptr + b
            && other.ptr < self.ptr + a
    }
}

/// Row-major contiguity of `shape` with element `strides` (dimensions of size 1 may have any
/// stride; an empty array is contiguous).
fn is_contiguous(shape: &[i64], strides: Option<&[i64]>) -> bool {
    let Some(strides) = strides else { return true };
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1i64;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 && s != expected {
            return false;
        }
        expected *= d;
    }
    true
}

/// The torch objects the fast path compares against, looked up once.
struct TorchInfo {
    tensor_type: Py<PyAny>,
    /// `(torch.float32, DType::F32)`, ... for every dtype this torch has.
    dtypes: Vec<(Py<PyAny>, DType)>,
    /// `torch._C._cuda_getCurrentRawStream` when present (returns the raw handle).
    raw_stream: Option<Py<PyAny>>,
    /// `torch.cuda.current_stream` (fallback).
    current_stream: Option<Py<PyAny>>,
}

static TORCH: PyOnceLock<Option<TorchInfo>> = PyOnceLock::new();

/// Torch's objects, if torch has been imported by the program (never imported here).
fn torch(py: Python<'_>) -> Option<&'static TorchInfo> {
    if let Some(t) = TORCH.get(py) {
        return t.as_ref();
    }
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let torch = modules.get_item("torch").ok()?;
    let info = (|| -> PyResult<TorchInfo> {
        let mut dtypes = Vec::new();
        for d in DType::ALL {
            if let Ok(obj) = torch.getattr(d.name()) {
                dtypes.push((obj.unbind(), d));
            }
        }
        let raw_stream = torch
            .getattr("_C")
            .and_then(|c| c.getattr("_cuda_getCurrentRawStream"))
            .ok()
            .map(Bound::unbind);
        let current_stream = torch
            .getattr("cuda")
            .and_then(|c| c.getattr("current_stream"))
            .ok()
            .map(Bound::unbind);
        Ok(TorchInfo {
            tensor_type: torch.getattr("Tensor")?.unbind(),
            dtypes,
            raw_stream,
            current_stream,
        })
    })()
    .ok();
    let _ = TORCH.set(py, info);
    TORCH.get(py).and_then(Option::as_ref)
}

impl TorchInfo {
    fn dtype_of(&self, dtype: &Bound<'_, PyAny>) -> Option<DType> {
        self.dtypes
            .iter()
            .find(|(d, _)| d.bind(dtype.py()).is(dtype))
            .map(|&(_, t)| t)
    }

    fn torch_dtype<'py>(&self, py: Python<'py>, d: DType) -> Option<Bound<'py, PyAny>> {
        self.dtypes
            .iter()
            .find(|&&(_, t)| t == d)
            .map(|(o, _)| o.bind(py).clone())
    }

    /// Torch's current stream on device `index`, as a raw handle.
    fn current_stream(&self, py: Python<'_>, index: i32) -> PyResult<usize> {
        if let Some(f) = &self.raw_stream {
            return f.bind(py).call1((index,))?.extract();
        }
        match &self.current_stream {
            Some(f) => f
                .bind(py)
                .call1((index,))?
                .getattr(intern!(py, "cuda_stream"))?
                .extract(),
            None => Ok(0),
        }
    }
}

/// The root package of an object's type (`torch`, `numpy`, `cupy`, `jaxlib`, ...).
fn producer_of(obj: &Bound<'_, PyAny>) -> Producer {
    let module = obj
        .get_type()
        .getattr(intern!(obj.py(), "__module__"))
        .and_then(|m| m.extract::<String>())
        .unwrap_or_default();
    match module.split('.').next().unwrap_or("") {
        "torch" => Producer::Torch,
        "numpy" => Producer::NumPy,
        "cupy" | "cupy_backends" => Producer::CuPy,
        _ => Producer::Other,
    }
}

/// Our consumer stream, as `__dlpack__(stream=...)` takes it.
struct ConsumerStream(usize);

// SAFETY: `as_python_arg` encodes the handle by the protocol's rules (dlpark's `cuda`
// encoder); `wait_for_producer` declines (returns false), so dlpark falls back to the Python
// protocol, where the producer orders its work before our stream.
unsafe impl DlpackStream for ConsumerStream {
    fn as_python_arg(&self, _py: Python<'_>, device: DLDevice) -> PyResult<StreamArg> {
        Ok(if device.device_type == DLDeviceType::CUDA {
            dlpark::python::consumer::stream::cuda(self.0 as *mut c_void)
        } else {
            dlpark::python::consumer::stream::none()
        })
    }
}

/// The state of one call: its device and stream, decided by the first arrays.
pub struct Call<'py> {
    py: Python<'py>,
    place: Option<Place>,
    /// The raw CUDA stream the work goes on, once known.
    stream: Option<usize>,
    /// Producer streams the work must wait for (other than `stream`).
    pub waits: Vec<usize>,
    /// Whether the torch attribute path may be used (the benchmark turns it off to time DLPack).
    fast_torch: bool,
}

static FAST_TORCH: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns the torch attribute path off or on (for measuring the DLPack path on torch tensors).
pub fn set_fast_torch(on: bool) {
    FAST_TORCH.store(on, std::sync::atomic::Ordering::Relaxed);
}

impl<'py> Call<'py> {
    /// A call whose work goes on `stream` (a raw handle, an object with `cuda_stream` like
    /// `torch.cuda.Stream`, or with `ptr` like a CuPy stream) when given.
    pub fn new(py: Python<'py>, stream: Option<&Bound<'py, PyAny>>) -> PyResult<Call<'py>> {
        let stream = match stream {
            None => None,
            Some(s) if s.is_none() => None,
            Some(s) => Some(stream_handle(s)?),
        };
        Ok(Call {
            py,
            place: None,
            stream,
            waits: Vec::new(),
            fast_torch: FAST_TORCH.load(std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// The device of the call (of its first array).
    pub fn place(&self) -> Option<Place> {
        self.place
    }

    /// The raw stream the work goes on (0, the legacy default stream, when nothing chose one).
    pub fn stream(&self) -> usize {
        self.stream.unwrap_or(0)
    }

    fn set_place(&mut self, name: &str, place: Place) -> PyResult<()> {
        match self.place {
            None => {
                self.place = Some(place);
                Ok(())
            }
            Some(p) if p == place => Ok(()),
            Some(p) => Err(PyValueError::new_err(format!(
                "argument `{name}` is on {place}, but the call's earlier arrays are on {p}; \
                 move them to one device"
            ))),
        }
    }

    /// Notes that the producer of argument data works on `producer`: it becomes the call's
    /// stream if none was chosen yet, else the call waits for it.
    fn producer_stream(&mut self, producer: usize) {
        match self.stream {
            None => self.stream = Some(producer),
            Some(s) if s == producer => {}
            Some(_) => {
                if !self.waits.contains(&producer) {
                    self.waits.push(producer);
                }
            }
        }
    }

    /// Describes the array `obj` (argument `name`).
    pub fn array(&mut self, obj: &Bound<'py, PyAny>, name: &str) -> PyResult<ArrayArg<'py>> {
        let arg = self.describe(obj, name)?;
        self.set_place(name, arg.place)?;
        if arg.numel() > 0 && !arg.ptr.is_multiple_of(arg.dtype.size() as u64) {
            return Err(PyValueError::new_err(format!(
                "argument `{name}`: address {:#x} is not aligned to its {}-byte elements",
                arg.ptr,
                arg.dtype.size()
            )));
        }
        Ok(arg)
    }

    fn describe(&mut self, obj: &Bound<'py, PyAny>, name: &str) -> PyResult<ArrayArg<'py>> {
        let py = self.py;
        if self.fast_torch
            && let Some(t) = torch(py)
            && obj.is_instance(t.tensor_type.bind(py))?
        {
            return self.read_torch(t, obj, name);
        }
        if let Some(api) = ExchangeApi::from_object(obj.as_borrowed())? {
            return self.read_exchange(&api, obj, name);
        }
        let has = |attr: &Bound<'py, pyo3::types::PyString>| obj.hasattr(attr);
        if has(intern!(py, "__dlpack__"))? {
            match self.read_dlpack(obj, name) {
                Ok(arg) => return Ok(arg),
                // A producer that cannot export this array (e.g. a read-only NumPy array for
                // an older DLPack version): the interfaces below may still describe it.
                Err(e) if e.is_instance_of::<PyBufferError>(py) => {}
                Err(e) => return Err(e),
            }
        }
        if let Ok(cai) = obj.getattr(intern!(py, "__cuda_array_interface__")) {
            return self.read_interface(obj, name, cai.cast_into::<PyDict>()?, true);
        }
        if let Ok(ai) = obj.getattr(intern!(py, "__array_interface__")) {
            return self.read_interface(obj, name, ai.cast_into::<PyDict>()?, false);
        }
        Err(PyTypeError::new_err(format!(
            "argument `{name}` is a {}, not an array: pass a torch tensor, a CuPy, JAX or \
             NumPy array, or anything with __dlpack__, __cuda_array_interface__ or \
             __array_interface__",
            obj.get_type().name()?
        )))
    }

    fn read_torch(
        &mut self,
        t: &TorchInfo,
        obj: &Bound<'py, PyAny>,
        name: &str,
    ) -> PyResult<ArrayArg<'py>> {
        let py = self.py;
        let dtype_obj = obj.getattr(intern!(py, "dtype"))?;
        let dtype = t.dtype_of(&dtype_obj).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "argument `{name}` has dtype {}, which the kernels do not take",
                dtype_obj.str().map(|s| s.to_string()).unwrap_or_default()
            ))
        })?;
        let index: i32 = obj.call_method0(intern!(py, "get_device"))?.extract()?;
        let place = if index >= 0 {
            Place::Cuda(index)
        } else {
            let kind: String = obj
                .getattr(intern!(py, "device"))?
                .getattr(intern!(py, "type"))?
                .extract()?;
            if kind != "cpu" {
                return Err(PyValueError::new_err(format!(
                    "argument `{name}` is on torch device `{kind}`; only CUDA and CPU tensors \
                     are supported"
                )));
            }
            Place::Cpu
        };
        let shape: Vec<i64> = obj.getattr(intern!(py, "shape"))?.extract()?;
        let contiguous: bool = obj.call_method0(intern!(py, "is_contiguous"))?.extract()?;
        let ptr: u64 = obj.call_method0(intern!(py, "data_ptr"))?.extract()?;
        if let (Place::Cuda(i), None) = (place, self.stream) {
            let s = t.current_stream(py, i)?;
            self.producer_stream(s);
        }
        Ok(ArrayArg {
            name: name.to_string(),
            ptr,
            dtype,
            shape,
            contiguous,
            readonly: false,
            place,
            producer: Producer::Torch,
            obj: obj.clone(),
            _export: None,
        })
    }

    fn read_exchange(
        &mut self,
        api: &ExchangeApi,
        obj: &Bound<'py, PyAny>,
        name: &str,
    ) -> PyResult<ArrayArg<'py>> {
        let producer = producer_of(obj);
        let (desc, stream) = api.with_tensor_view_no_sync(obj.as_borrowed(), |t, stream| {
            (describe_dltensor(t, name), stream as usize)
        })?;
        let (ptr, dtype, shape, contiguous, place) = desc?;
        if let Place::Cuda(_) = place {
            self.producer_stream(stream);
        }
        Ok(ArrayArg {
            name: name.to_string(),
            ptr,
            dtype,
            shape,
            contiguous,
            readonly: false,
            place,
            producer,
            obj: obj.clone(),
            _export: None,
        })
    }

    fn read_dlpack(&mut self, obj: &Bound<'py, PyAny>, name: &str) -> PyResult<ArrayArg<'py>> {
        let py = self.py;
        let (kind, id): (i32, i32) = obj
            .call_method0(intern!(py, "__dlpack_device__"))?
            .extract()?;
        if kind == DLDeviceType::CUDA.0 as i32 && self.stream.is_none() {
            // The consumer names the stream; the producer orders its work before it.
            let s = library_stream(obj, id)?;
            self.stream = Some(s);
        }
        let consumer = ConsumerStream(self.stream.unwrap_or(0));
        let imported = from_dlpack(obj.as_borrowed(), Some(&consumer), None)?;
        let readonly = imported.flags().contains(dlpark::DlpackFlags::READ_ONLY);
        let tensor = imported
            .validate()
            .map_err(|e| PyValueError::new_err(format!("argument `{name}`: {e}")))?;
        let (ptr, dtype, shape, contiguous, place) = describe_ref(&tensor, name)?;
        Ok(ArrayArg {
            name: name.to_string(),
            ptr,
            dtype,
            shape,
            contiguous,
            readonly,
            place,
            producer: producer_of(obj),
            obj: obj.clone(),
            _export: Some(imported),
        })
    }

    fn read_interface(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: &str,
        d: Bound<'py, PyDict>,
        cuda: bool,
    ) -> PyResult<ArrayArg<'py>> {
        let py = self.py;
        let bad = |what: &str| {
            PyValueError::new_err(format!(
                "argument `{name}`: its {} has no valid `{what}`",
                if cuda {
                    "__cuda_array_interface__"
                } else {
                    "__array_interface__"
                }
            ))
        };
        let (ptr, readonly): (u64, bool) = d
            .get_item("data")?
            .ok_or_else(|| bad("data"))?
            .extract()
            .map_err(|_| bad("data"))?;
        let typestr: String = d
            .get_item("typestr")?
            .ok_or_else(|| bad("typestr"))?
            .extract()?;
        let dtype = DType::from_typestr(&typestr).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "argument `{name}` has element type `{typestr}`, which the kernels do not take"
            ))
        })?;
        let shape: Vec<i64> = d
            .get_item("shape")?
            .ok_or_else(|| bad("shape"))?
            .extract()?;
        let strides = match d.get_item("strides")? {
            Some(s) if !s.is_none() => {
                let bytes: Vec<i64> = s.extract()?;
                let size = dtype.size() as i64;
                if bytes.iter().any(|b| b % size != 0) {
                    Some(vec![i64::MAX; bytes.len()]) // not element-aligned: not contiguous
                } else {
                    Some(bytes.iter().map(|b| b / size).collect())
                }
            }
            _ => None,
        };
        if d.get_item("mask")?.is_some_and(|m| !m.is_none()) {
            return Err(PyValueError::new_err(format!(
                "argument `{name}` is a masked array; pass its data"
            )));
        }
        let place = if cuda {
            let id = cuda_device_of_pointer(py, obj, ptr)?;
            if let Some(s) = d.get_item("stream")?
                && !s.is_none()
            {
                let s: usize = s.extract()?;
                // The interface's legacy-default sentinel is 1, per-thread 2.
                self.producer_stream(if s == 1 { 0 } else { s });
            }
            Place::Cuda(id)
        } else {
            Place::Cpu
        };
        Ok(ArrayArg {
            name: name.to_string(),
            ptr,
            dtype,
            contiguous: is_contiguous(&shape, strides.as_deref()),
            shape,
            readonly,
            place,
            producer: producer_of(obj),
            obj: obj.clone(),
            _export: None,
        })
    }

    /// A new array of `dtype` and `shape` made by the library of `like` (on its device).
    pub fn empty_like(
        &mut self,
        like: &ArrayArg<'py>,
        name: &str,
        dtype: DType,
        shape: &[i64],
    ) -> PyResult<ArrayArg<'py>> {
        let py = self.py;
        let shape_tuple = PyTuple::new(py, shape)?;
        let np_name = dtype.name();
        let made = match (like.producer, like.place) {
            (Producer::Torch, _) => {
                let t = torch(py).ok_or_else(|| PyTypeError::new_err("torch is not loaded"))?;
                let td = t.torch_dtype(py, dtype).ok_or_else(|| {
                    PyTypeError::new_err(format!("this torch has no dtype {np_name}"))
                })?;
                let kwargs = PyDict::new(py);
                kwargs.set_item("dtype", td)?;
                like.obj
                    .call_method(intern!(py, "new_empty"), (shape_tuple,), Some(&kwargs))?
            }
            (Producer::CuPy, Place::Cuda(i)) => {
                let cupy = py.import("cupy")?;
                let device = cupy.getattr("cuda")?.getattr("Device")?.call1((i,))?;
                device.call_method0("__enter__")?;
                let made = cupy.call_method1("empty", (shape_tuple, np_name));
                device.call_method1("__exit__", (py.None(), py.None(), py.None()))?;
                made?
            }
            (_, Place::Cpu) => {
                if dtype == DType::BF16 {
                    return Err(PyTypeError::new_err(format!(
                        "`{name}`: NumPy has no bfloat16; pass `{name}=` yourself"
                    )));
                }
                py.import("numpy")?
                    .call_method1("empty", (shape_tuple, np_name))?
            }
            (_, Place::Cuda(i)) => {
                // Other producers (JAX's arrays are immutable): a torch tensor if torch is
                // loaded, else a CuPy array.
                if let Some(t) = torch(py) {
                    let td = t.torch_dtype(py, dtype).ok_or_else(|| {
                        PyTypeError::new_err(format!("this torch has no dtype {np_name}"))
                    })?;
                    let kwargs = PyDict::new(py);
                    kwargs.set_item("dtype", td)?;
                    kwargs.set_item("device", format!("cuda:{i}"))?;
                    py.import("torch")?
                        .call_method("empty", (shape_tuple,), Some(&kwargs))?
                } else {
                    return Err(PyTypeError::new_err(format!(
                        "`{name}`: cannot allocate an output like a {} (import torch, or pass \
                         `{name}=`)",
                        like.obj.get_type().name()?
                    )));
                }
            }
        };
        self.array(&made, name)
    }
}

/// The raw handle of a stream argument: an int, or an object with `cuda_stream` (torch) or
/// `ptr` (CuPy).
fn stream_handle(s: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(v) = s.extract::<usize>() {
        return Ok(v);
    }
    for attr in ["cuda_stream", "ptr"] {
        if let Ok(v) = s.getattr(attr) {
            return v.extract();
        }
    }
    Err(PyTypeError::new_err(format!(
        "stream: expected a raw CUDA stream handle (int), a torch.cuda.Stream or a CuPy \
         stream, got a {}",
        s.get_type().name()?
    )))
}

/// The current stream of the library that made `obj`, for a DLPack import on device `id`.
fn library_stream(obj: &Bound<'_, PyAny>, id: i32) -> PyResult<usize> {
    let py = obj.py();
    match producer_of(obj) {
        Producer::Torch => match torch(py) {
            Some(t) => t.current_stream(py, id),
            None => Ok(0),
        },
        Producer::CuPy => py
            .import("cupy")?
            .getattr("cuda")?
            .call_method0("get_current_stream")?
            .getattr("ptr")?
            .extract(),
        _ => Ok(0),
    }
}

/// The device a `__cuda_array_interface__` pointer belongs to (the interface does not say):
/// the producer's `device` attribute when it has one (CuPy: `.device.id`; torch:
/// `.device.index`), else device 0.
fn cuda_device_of_pointer(py: Python<'_>, obj: &Bound<'_, PyAny>, _ptr: u64) -> PyResult<i32> {
    if let Ok(dev) = obj.getattr(intern!(py, "device")) {
        for attr in ["id", "index"] {
            if let Ok(v) = dev.getattr(attr)
                && let Ok(i) = v.extract::<i32>()
            {
                return Ok(i);
            }
        }
    }
    Ok(0)
}

type Desc = (u64, DType, Vec<i64>, bool, Place);

fn place_of(device: DLDevice, name: &str) -> PyResult<Place> {
    match device.device_type {
        DLDeviceType::CPU | DLDeviceType::CUDAHOST => Ok(Place::Cpu),
        DLDeviceType::CUDA | DLDeviceType::CUDAMANAGED => Ok(Place::Cuda(device.device_id)),
        other => Err(PyValueError::new_err(format!(
            "argument `{name}` is on DLPack device type {}; only CUDA and CPU memory are \
             supported",
            other.0
        ))),
    }
}

fn dtype_of(t: dlpark::ffi::DLDataType, name: &str) -> PyResult<DType> {
    DType::from_dlpack(t).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "argument `{name}` has DLPack type (code {}, {} bits, {} lanes), which the kernels \
             do not take",
            t.code.0, t.bits, t.lanes
        ))
    })
}

fn describe_ref(t: &TensorRef<'_>, name: &str) -> PyResult<Desc> {
    let shape = t.shape().to_vec();
    let contiguous = is_contiguous(&shape, t.strides());
    let ptr = t.data_ptr() as u64 + t.byte_offset();
    Ok((
        ptr,
        dtype_of(t.dtype(), name)?,
        shape,
        contiguous,
        place_of(t.device(), name)?,
    ))
}

fn describe_dltensor(t: &DLTensor, name: &str) -> PyResult<Desc> {
    // SAFETY: the producer's exchange API filled `t` for the duration of the callback this
    // runs in; `from_raw` validates the descriptor before anything is read through it.
    let r = unsafe { TensorRef::from_raw(t) }
        .map_err(|e| PyValueError::new_err(format!("argument `{name}`: {e}")))?;
    describe_ref(&r, name)
}
