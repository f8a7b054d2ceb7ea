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

use dlpark::python::consumer::ImportedDlpack;
use dlpark::python::consumer::exchange::ExchangeApi;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::dtype::DType;
use crate::protocols::{cupy, torch};

/// Where an array lives: host memory (run on the CPU simulator) or CUDA device `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Cpu,
    Cuda(i32),
}

impl Place {
    /// The DLPack device of this place (host memory as `kDLCPU`).
    pub fn dlpack(self) -> dlpark::ffi::DLDevice {
        match self {
            Place::Cpu => dlpark::ffi::DLDevice {
                device_type: dlpark::ffi::DLDeviceType::CPU,
                device_id: 0,
            },
            Place::Cuda(i) => dlpark::ffi::DLDevice {
                device_type: dlpark::ffi::DLDeviceType::CUDA,
                device_id: i,
            },
        }
    }
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
    pub(crate) _export: Option<ImportedDlpack>,
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
pub(crate) fn is_contiguous(shape: &[i64], strides: Option<&[i64]>) -> bool {
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

/// The state of one call: its device and stream, decided by the first arrays.
pub struct Call<'py> {
    pub(crate) py: Python<'py>,
    place: Option<Place>,
    /// The raw CUDA stream the work goes on, once known.
    pub(crate) stream: Option<usize>,
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
    pub(crate) fn producer_stream(&mut self, producer: usize) {
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
        if let Some(arg) = self.read_cupy(obj, name) {
            return arg;
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

    /// A new array of `dtype` and `shape` made by the library of `like` (on its device).
    pub fn empty_like(
        &mut self,
        like: &ArrayArg<'py>,
        name: &str,
        dtype: DType,
        shape: &[i64],
    ) -> PyResult<ArrayArg<'py>> {
        let py = self.py;
        // Made only on the Python routes (the exchange tables take the shape as it is).
        let shape_tuple = || PyTuple::new(py, shape);
        let np_name = dtype.name();
        let made = match (like.producer, like.place) {
            (Producer::Torch, _) => {
                let t = torch(py).ok_or_else(|| PyTypeError::new_err("torch is not loaded"))?;
                // torch's exchange table allocates with two C calls; where it is missing or
                // refuses (a dtype this torch cannot hold), `new_empty` below.
                if let Some(x) = t.exchange()
                    && let Ok((made, ptr)) =
                        x.empty(py, like.place.dlpack(), dtype.to_dlpack(), shape)
                {
                    return Ok(ArrayArg {
                        name: name.to_string(),
                        ptr,
                        dtype,
                        shape: shape.to_vec(),
                        contiguous: true,
                        readonly: false,
                        place: like.place,
                        producer: Producer::Torch,
                        obj: made,
                        _export: None,
                    });
                }
                // Torch before 2.3 has no uint32: counts then come as int32 (same bits).
                let td = t
                    .torch_dtype(py, dtype)
                    .or_else(|| (dtype == DType::U32).then(|| t.torch_dtype(py, DType::I32))?)
                    .ok_or_else(|| {
                        PyTypeError::new_err(format!("this torch has no dtype {np_name}"))
                    })?;
                let kwargs = PyDict::new(py);
                kwargs.set_item(intern!(py, "dtype"), td)?;
                let made = like.obj.call_method(
                    intern!(py, "new_empty"),
                    (shape_tuple()?,),
                    Some(&kwargs),
                )?;
                // A new tensor of known dtype, shape and device, contiguous: only its address
                // is asked (this is on every call's path).
                let ptr: u64 = made.call_method0(intern!(py, "data_ptr"))?.extract()?;
                return Ok(ArrayArg {
                    name: name.to_string(),
                    ptr,
                    dtype,
                    shape: shape.to_vec(),
                    contiguous: true,
                    readonly: false,
                    place: like.place,
                    producer: Producer::Torch,
                    obj: made,
                    _export: None,
                });
            }
            (Producer::CuPy, Place::Cuda(i)) => {
                let c = cupy(py).ok_or_else(|| PyTypeError::new_err("CuPy is not loaded"))?;
                if let Some(x) = &c.exchange
                    && let Ok((made, ptr)) =
                        x.empty(py, like.place.dlpack(), dtype.to_dlpack(), shape)
                {
                    return Ok(ArrayArg {
                        name: name.to_string(),
                        ptr,
                        dtype,
                        shape: shape.to_vec(),
                        contiguous: true,
                        readonly: false,
                        place: like.place,
                        producer: Producer::CuPy,
                        obj: made,
                        _export: None,
                    });
                }
                // `cupy.empty` allocates on the current device: switch only when it differs.
                let current: i32 = c.get_device.bind(py).call0()?.extract()?;
                let made = if current == i {
                    c.empty.bind(py).call1((shape_tuple()?, np_name))?
                } else {
                    let device = c.device.bind(py).call1((i,))?;
                    device.call_method0(intern!(py, "__enter__"))?;
                    let made = c.empty.bind(py).call1((shape_tuple()?, np_name));
                    device
                        .call_method1(intern!(py, "__exit__"), (py.None(), py.None(), py.None()))?;
                    made?
                };
                // A new array of known dtype, shape and device, contiguous: only its address.
                let ptr: u64 = made
                    .getattr(intern!(py, "data"))?
                    .getattr(intern!(py, "ptr"))?
                    .extract()?;
                return Ok(ArrayArg {
                    name: name.to_string(),
                    ptr,
                    dtype,
                    shape: shape.to_vec(),
                    contiguous: true,
                    readonly: false,
                    place: like.place,
                    producer: Producer::CuPy,
                    obj: made,
                    _export: None,
                });
            }
            (_, Place::Cpu) => {
                if dtype == DType::BF16 {
                    return Err(PyTypeError::new_err(format!(
                        "`{name}`: NumPy has no bfloat16; pass `{name}=` yourself"
                    )));
                }
                py.import("numpy")?
                    .call_method1("empty", (shape_tuple()?, np_name))?
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
                        .call_method("empty", (shape_tuple()?,), Some(&kwargs))?
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
