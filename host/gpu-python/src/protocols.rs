//! The array protocols [`Call::array`] reads, one function each: torch's attributes, DLPack
//! (its C exchange API, then `__dlpack__`), `__cuda_array_interface__`, `__array_interface__`;
//! and the current stream of the library that made an array.

use std::ffi::c_void;

use dlpark::ffi::{DLDevice, DLDeviceType};
use dlpark::python::consumer::exchange::ExchangeApi;
use dlpark::python::consumer::{DlpackStream, ImportedDlpack, StreamArg, from_dlpack};
use dlpark::tensor::TensorRef;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use crate::array::{ArrayArg, Call, Place, Producer, is_contiguous};
use crate::dtype::DType;
use crate::exchange::{Table, View};

/// The torch objects the fast path compares against, looked up once.
pub(crate) struct TorchInfo {
    pub(crate) tensor_type: Py<PyAny>,
    /// `(torch.float32, DType::F32)`, ... for every dtype this torch has.
    dtypes: Vec<(Py<PyAny>, DType)>,
    /// `torch._C._cuda_getCurrentRawStream` when present (returns the raw handle).
    raw_stream: Option<Py<PyAny>>,
    /// `torch.cuda.current_stream` (fallback).
    current_stream: Option<Py<PyAny>>,
    /// torch's DLPack exchange table, when this torch has one: tensors are read and outputs
    /// made through it (plain C calls), else through the attributes above.
    exchange: Option<Table>,
}

static TORCH: PyOnceLock<Option<TorchInfo>> = PyOnceLock::new();

/// Whether torch's exchange table is used (the benchmark turns it off to time the attributes).
static TORCH_EXCHANGE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns the use of torch's exchange table off (tensors are then read through their attributes
/// and outputs made with `new_empty`) or back on.
pub fn set_torch_exchange(on: bool) {
    TORCH_EXCHANGE.store(on, std::sync::atomic::Ordering::Relaxed);
}

impl TorchInfo {
    /// torch's exchange table, when it has one and it is not turned off.
    pub(crate) fn exchange(&self) -> Option<&Table> {
        self.exchange
            .as_ref()
            .filter(|_| TORCH_EXCHANGE.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Torch's objects, if torch has been imported by the program (never imported here).
pub(crate) fn torch(py: Python<'_>) -> Option<&'static TorchInfo> {
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
        let tensor_type = torch.getattr("Tensor")?;
        Ok(TorchInfo {
            exchange: Table::of_type(&tensor_type),
            tensor_type: tensor_type.unbind(),
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

    pub(crate) fn torch_dtype<'py>(&self, py: Python<'py>, d: DType) -> Option<Bound<'py, PyAny>> {
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

/// CuPy's objects the bindings call, looked up once (CuPy is never imported here: only once a
/// CuPy array has come in).
pub(crate) struct CupyInfo {
    /// `cupy.empty`.
    pub(crate) empty: Py<PyAny>,
    /// `cupy.cuda.Device`.
    pub(crate) device: Py<PyAny>,
    /// `cupy.cuda.runtime.getDevice`: the current device, which `cupy.empty` allocates on.
    pub(crate) get_device: Py<PyAny>,
    /// `cupy.cuda.get_current_stream`.
    current_stream: Py<PyAny>,
    /// CuPy's DLPack exchange table, when it has one.
    pub(crate) exchange: Option<Table>,
    /// `cupy.ndarray`.
    ndarray: Py<PyAny>,
}

static CUPY: PyOnceLock<Option<CupyInfo>> = PyOnceLock::new();

/// CuPy's objects, if CuPy has been imported by the program.
pub(crate) fn cupy(py: Python<'_>) -> Option<&'static CupyInfo> {
    if let Some(c) = CUPY.get(py) {
        return c.as_ref();
    }
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let cupy = modules.get_item("cupy").ok()?;
    let info = (|| -> PyResult<CupyInfo> {
        let cuda = cupy.getattr("cuda")?;
        Ok(CupyInfo {
            empty: cupy.getattr("empty")?.unbind(),
            device: cuda.getattr("Device")?.unbind(),
            get_device: cuda.getattr("runtime")?.getattr("getDevice")?.unbind(),
            current_stream: cuda.getattr("get_current_stream")?.unbind(),
            exchange: Table::of_type(&cupy.getattr("ndarray")?),
            ndarray: cupy.getattr("ndarray")?.unbind(),
        })
    })()
    .ok();
    let _ = CUPY.set(py, info);
    CUPY.get(py).and_then(Option::as_ref)
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

impl<'py> Call<'py> {
    pub(crate) fn read_torch(
        &mut self,
        t: &TorchInfo,
        obj: &Bound<'py, PyAny>,
        name: &str,
    ) -> PyResult<ArrayArg<'py>> {
        // The exchange table when torch has one; its errors (a tensor it cannot describe)
        // leave the attributes to say what is wrong.
        if let Some(x) = t.exchange()
            && let Ok(v) = x.view(obj)
            && let Some(dtype) = DType::from_dlpack(v.dtype)
        {
            return self.read_view(v, dtype, obj, name, Producer::Torch);
        }
        self.read_torch_attributes(t, obj, name)
    }

    /// A CuPy array, through CuPy's exchange table when CuPy has one and has been seen (`None`:
    /// not read here, the general protocols follow).
    pub(crate) fn read_cupy(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: &str,
    ) -> Option<PyResult<ArrayArg<'py>>> {
        let py = self.py;
        let c = CUPY.get(py)?.as_ref()?;
        let x = c.exchange.as_ref()?;
        if !obj.get_type().is(c.ndarray.bind(py)) {
            return None;
        }
        let v = x.view(obj).ok()?;
        let dtype = DType::from_dlpack(v.dtype)?;
        Some(self.read_view(v, dtype, obj, name, Producer::CuPy))
    }

    /// An array its library's exchange table described. Torch tensors follow torch's current
    /// stream only when the call has none yet (as through their attributes); other arrays are
    /// waited for when their library works on another stream.
    fn read_view(
        &mut self,
        v: View,
        dtype: DType,
        obj: &Bound<'py, PyAny>,
        name: &str,
        producer: Producer,
    ) -> PyResult<ArrayArg<'py>> {
        let place = place_of(v.device, name)?;
        if let Place::Cuda(_) = place
            && (producer != Producer::Torch || self.stream.is_none())
        {
            self.producer_stream(v.stream);
        }
        Ok(ArrayArg {
            name: name.to_string(),
            ptr: v.ptr,
            dtype,
            contiguous: is_contiguous(&v.shape, v.strides.as_deref()),
            shape: v.shape,
            readonly: false,
            place,
            producer,
            obj: obj.clone(),
            _export: None,
        })
    }

    /// [`Call::read_torch`] through the tensor's Python attributes.
    fn read_torch_attributes(
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

    pub(crate) fn read_exchange(
        &mut self,
        api: &ExchangeApi,
        obj: &Bound<'py, PyAny>,
        name: &str,
    ) -> PyResult<ArrayArg<'py>> {
        // The owning export (rather than the borrowed view some producers offer) carries the
        // read-only flag, which JAX's immutable arrays set.
        let producer = producer_of(obj);
        if producer == Producer::CuPy {
            cupy(self.py); // CuPy's objects, for its next arrays and outputs
        }
        let (tensor, stream) = api.import_managed_no_sync(obj.as_borrowed())?.into_parts();
        let readonly = tensor.flags().contains(dlpark::DlpackFlags::READ_ONLY);
        let view = tensor
            .validate()
            .map_err(|e| PyValueError::new_err(format!("argument `{name}`: {e}")))?;
        let (ptr, dtype, shape, contiguous, place) = describe_ref(&view, name)?;
        if let Place::Cuda(_) = place {
            self.producer_stream(stream as usize);
        }
        Ok(ArrayArg {
            name: name.to_string(),
            ptr,
            dtype,
            shape,
            contiguous,
            readonly,
            place,
            producer,
            obj: obj.clone(),
            _export: Some(ImportedDlpack::Versioned(tensor)),
        })
    }

    pub(crate) fn read_dlpack(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: &str,
    ) -> PyResult<ArrayArg<'py>> {
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
        let imported = match from_dlpack(obj.as_borrowed(), Some(&consumer), None) {
            Ok(t) => t,
            // Producers older than DLPack 1.0 take no `max_version`: ask for a legacy capsule
            // with the stream alone, and consume that.
            Err(e) if e.is_instance_of::<PyTypeError>(py) => {
                let kwargs = PyDict::new(py);
                if kind == DLDeviceType::CUDA.0 as i32 {
                    let s = match self.stream.unwrap_or(0) {
                        0 => 1, // the protocol's name for the legacy default stream
                        s => s,
                    };
                    kwargs.set_item("stream", s)?;
                }
                let capsule = obj.call_method(intern!(py, "__dlpack__"), (), Some(&kwargs))?;
                from_dlpack(capsule.as_borrowed(), None, None)?
            }
            Err(e) => return Err(e),
        };
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

    pub(crate) fn read_interface(
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
}

/// The current stream of the library that made `obj`, for a DLPack import on device `id`.
fn library_stream(obj: &Bound<'_, PyAny>, id: i32) -> PyResult<usize> {
    let py = obj.py();
    match producer_of(obj) {
        Producer::Torch => match torch(py) {
            Some(t) => t.current_stream(py, id),
            None => Ok(0),
        },
        Producer::CuPy => match cupy(py) {
            Some(c) => c
                .current_stream
                .bind(py)
                .call0()?
                .getattr(intern!(py, "ptr"))?
                .extract(),
            None => Ok(0),
        },
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
