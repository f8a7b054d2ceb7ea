//! The devices behind the module: the CPU simulator for host arrays, CUDA device `n` for arrays
//! on it, each opened once with its algorithm kernels; and Rust errors as Python exceptions.

use std::sync::{Arc, Mutex, OnceLock};

use gpu_algorithms::Algorithms;
use gpu_dense::Dense;
use gpu_host::{DeviceBuffer, DeviceCopy, Error, Gpu, Stream};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::array::{ArrayArg, Call, Place};

pyo3::create_exception!(
    gpu_kernels,
    KernelPanic,
    PyRuntimeError,
    "A kernel panicked (an index out of bounds, a failed assertion): the message names the \
     kernel, block, thread and source line. On a GPU the CUDA context is then unusable for the \
     rest of the process (torch's too); on the CPU simulator the device stays usable."
);
pyo3::create_exception!(
    gpu_kernels,
    KernelFault,
    PyRuntimeError,
    "A kernel trapped or faulted on the GPU (a panic in a crate built with the default \
     `checks = \"trap\"`, an illegal address): the message names the kernels in flight. The \
     CUDA context is unusable for the rest of the process (torch's too)."
);
pyo3::create_exception!(
    gpu_kernels,
    GpuError,
    PyRuntimeError,
    "A device or driver error from the Rust runtime (no GPU, a fault, a poisoned context)."
);

/// A Rust error as the Python exception that fits it.
pub fn py_err(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::KernelPanic { .. }
        | Error::KernelDivergence { .. }
        | Error::KernelTimeout { .. } => KernelPanic::new_err(msg),
        Error::Argument { .. }
        | Error::SizeMismatch { .. }
        | Error::LaunchConfig { .. }
        | Error::DeviceMismatch { .. } => PyValueError::new_err(msg),
        Error::KernelFault { .. } => KernelFault::new_err(msg),
        Error::SizeOverflow { .. } => PyValueError::new_err(msg),
        Error::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        Error::KernelNotFound { .. } | Error::NoSimulatorEntry { .. } => PyTypeError::new_err(msg),
        _ => GpuError::new_err(msg),
    }
}

/// One device: its handle and the algorithm kernels on it (loaded per kernel on first use), and
/// the dense kernels, made ready on the first dense call (a program that only reduces or sorts
/// never touches them).
pub struct Device {
    pub gpu: Gpu,
    pub algos: Algorithms,
    dense: OnceLock<Dense>,
    /// The streams borrowed lately (torch's and CuPy's current streams, mostly the same one
    /// call after call), most recent first: a call reuses the wrapper instead of making one.
    streams: Mutex<Vec<(usize, Stream)>>,
}

/// How many borrowed stream wrappers a device keeps.
const STREAM_CACHE: usize = 8;

static SIMULATOR: OnceLock<Arc<Device>> = OnceLock::new();
static CUDA: Mutex<Vec<Option<Arc<Device>>>> = Mutex::new(Vec::new());

/// The device for arrays on `place`, opened on first use.
pub fn device(place: Place) -> PyResult<Arc<Device>> {
    match place {
        Place::Cpu => {
            if let Some(d) = SIMULATOR.get() {
                return Ok(d.clone());
            }
            let gpu = Gpu::simulator().map_err(py_err)?;
            let algos = Algorithms::load(&gpu).map_err(py_err)?;
            Ok(SIMULATOR
                .get_or_init(|| {
                    Arc::new(Device {
                        gpu,
                        algos,
                        dense: OnceLock::new(),
                        streams: Mutex::new(Vec::new()),
                    })
                })
                .clone())
        }
        Place::Cuda(i) => {
            let i = usize::try_from(i)
                .map_err(|_| PyValueError::new_err(format!("invalid CUDA device {i}")))?;
            let mut all = CUDA.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(Some(d)) = all.get(i) {
                return Ok(d.clone());
            }
            let gpu = Gpu::new(i).map_err(py_err)?;
            if let Some(ctx) = gpu.cuda_context() {
                // SAFETY: this module never creates a cudarc-managed stream on this context
                // (every call runs on one borrowed stream), so cudarc never records or waits
                // on per-buffer events here anyway; turning their creation off only saves
                // two event creations per borrowed buffer. Ordering is the stream's.
                unsafe { ctx.disable_event_tracking() };
            }
            let algos = Algorithms::load(&gpu).map_err(py_err)?;
            let d = Arc::new(Device {
                gpu,
                algos,
                dense: OnceLock::new(),
                streams: Mutex::new(Vec::new()),
            });
            if all.len() <= i {
                all.resize(i + 1, None);
            }
            all[i] = Some(d.clone());
            Ok(d)
        }
    }
}

impl Device {
    /// The dense kernels on this device (`gpu-dense`), made ready on first use.
    pub fn dense(&self) -> PyResult<&Dense> {
        if let Some(d) = self.dense.get() {
            return Ok(d);
        }
        let d = Dense::load(&self.gpu).map_err(py_err)?;
        Ok(self.dense.get_or_init(|| d))
    }

    /// The stream a call's work goes on: the call's (borrowed) stream on a GPU, made to wait
    /// for the producers' streams; the simulator's default stream.
    pub fn stream(&self, call: &Call<'_>) -> PyResult<Stream> {
        if self.gpu.is_simulator() {
            return Ok(self.gpu.default_stream().clone());
        }
        let s = self.borrowed_stream(call.stream())?;
        for &w in &call.waits {
            let producer = self.borrowed_stream(w)?;
            let event = producer.record_event().map_err(py_err)?;
            s.wait_event(&event).map_err(py_err)?;
        }
        Ok(s)
    }
}

impl Device {
    /// The wrapper of CUDA stream `handle`, made on first use and kept (a wrapper only names
    /// the stream: it never destroys it).
    fn borrowed_stream(&self, handle: usize) -> PyResult<Stream> {
        let mut cache = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = cache.iter().position(|(h, _)| *h == handle) {
            let hit = cache.remove(i);
            let s = hit.1.clone();
            cache.insert(0, hit);
            return Ok(s);
        }
        // SAFETY: the handle came from the array library that owns the arrays (its current
        // stream), or from the caller's `stream=` argument; both are live streams of this
        // device's primary context, which torch and CuPy use. The wrapper does not own it.
        let s = unsafe { self.gpu.borrow_stream(handle) }.map_err(py_err)?;
        cache.insert(0, (handle, s.clone()));
        cache.truncate(STREAM_CACHE);
        Ok(s)
    }
}

/// The array's memory as a buffer of `T` on `stream`, borrowed (no copy, never freed here).
/// The caller checked the element type (`T` has the array's element size and kind).
pub fn borrow<T: DeviceCopy>(stream: &Stream, a: &ArrayArg<'_>) -> PyResult<DeviceBuffer<T>> {
    debug_assert_eq!(std::mem::size_of::<T>(), a.dtype.size());
    // SAFETY: `a` describes `numel` contiguous elements of this size at `ptr` on the stream's
    // device (the array protocols said so, and the caller checked dtype and contiguity); the
    // Python object `a.obj` is held for the whole call, and its library frees memory in order
    // on the stream the work is queued on (torch, CuPy) or, on the simulator, the work is
    // finished when the call returns. Overlaps between written and other arrays are refused
    // by the callers before launching.
    unsafe { stream.borrow_external::<T>(a.ptr, a.numel()) }.map_err(py_err)
}
