//! DLPack's C exchange table, the array library's own C functions published on its array type
//! (`torch.Tensor.__dlpack_c_exchange_api__` in recent torch): describe an array, name the
//! library's current stream, and allocate a new array, each one plain C call where the Python
//! route costs a method call (with its argument parsing) per attribute. The bindings read torch
//! tensors and make torch outputs through it when torch has it, and fall back to Python calls
//! when it does not (or a call through it fails).
//!
//! The raw table is touched only here; [`Table`] is the small safe API the rest uses.

use std::ffi::{CStr, c_char, c_void};
use std::ptr::NonNull;

use dlpark::ffi::{
    DLDataType, DLDevice, DLManagedTensorVersioned, DLPACK_MAJOR_VERSION, DLPackExchangeAPI,
    DLPackExchangeAPIHeader, DLTensor,
};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// One array library's exchange table, with every function the bindings call present.
pub(crate) struct Table {
    raw: NonNull<DLPackExchangeAPI>,
}

// SAFETY: per the DLPack specification the table is the producer's static, alive and unchanged
// for the rest of the process; its functions are only called with the GIL held (every method
// takes a `Python` token or a bound object).
unsafe impl Send for Table {}
// SAFETY: as above; `Table` is never mutated after it is made.
unsafe impl Sync for Table {}

/// What the exchange table says about one array (copied out of its borrowed view).
pub(crate) struct View {
    pub ptr: u64,
    pub dtype: DLDataType,
    pub shape: Vec<i64>,
    /// Element strides; `None` means row-major contiguous.
    pub strides: Option<Vec<i64>>,
    pub device: DLDevice,
    /// The library's current stream on the array's device (0 for host memory).
    pub stream: usize,
}

impl Table {
    /// The exchange table of array type `ty`, when it has one of DLPack major version 1 with
    /// every function the bindings use.
    pub(crate) fn of_type(ty: &Bound<'_, PyAny>) -> Option<Table> {
        let capsule = ty.getattr("__dlpack_c_exchange_api__").ok()?;
        let capsule = capsule.cast::<PyCapsule>().ok()?;
        let ptr = capsule.pointer_checked(Some(c"dlpack_exchange_api")).ok()?;
        let mut header = ptr.as_ptr().cast::<DLPackExchangeAPIHeader>();
        // A newer major version may chain to an older table we read; the depth bound guards
        // against a cyclic chain.
        for _ in 0..16 {
            let h = NonNull::new(header)?;
            // SAFETY: the capsule holds a pointer to a table that begins with its header, and
            // every `prev_api` points to another such table (the DLPack specification).
            let h = unsafe { h.as_ref() };
            if h.version.major == DLPACK_MAJOR_VERSION {
                let raw = NonNull::new(header.cast::<DLPackExchangeAPI>())?;
                // SAFETY: a table of this major version has this layout.
                let t = unsafe { raw.as_ref() };
                let complete = t.managed_tensor_allocator.is_some()
                    && t.managed_tensor_to_py_object_no_sync.is_some()
                    && t.dltensor_from_py_object_no_sync.is_some()
                    && t.current_work_stream.is_some();
                return complete.then_some(Table { raw });
            }
            header = h.prev_api;
        }
        None
    }

    /// Describes `obj` (an array of this table's type) and its library's current stream.
    pub(crate) fn view(&self, obj: &Bound<'_, PyAny>) -> PyResult<View> {
        let py = obj.py();
        // SAFETY: the table is alive for the process (see `Table`).
        let t = unsafe { self.raw.as_ref() };
        let (Some(describe), Some(current_stream)) =
            (t.dltensor_from_py_object_no_sync, t.current_work_stream)
        else {
            return Err(PyRuntimeError::new_err(
                "the exchange table has no view function",
            ));
        };
        let failed = |what: &str| {
            PyErr::take(py).unwrap_or_else(|| {
                PyRuntimeError::new_err(format!("the exchange table could not {what}"))
            })
        };
        let mut v = DLTensor::default();
        // SAFETY: `obj` is a live object of the table's type (the caller checked), and `v` is
        // a DLTensor for the producer to fill with a view that borrows `obj`'s metadata.
        if unsafe { describe(obj.as_ptr().cast(), &mut v) } != 0 {
            return Err(failed("describe the array"));
        }
        let n = v.ndim.max(0) as usize;
        let read = |p: *const i64| -> Option<Vec<i64>> {
            // SAFETY: the producer filled `shape` (and `strides`, when not null) with `ndim`
            // values, valid while `obj` is alive and unchanged (it is held, with the GIL).
            (!p.is_null() && n > 0).then(|| unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
        };
        let mut stream: *mut c_void = std::ptr::null_mut();
        if v.device.device_type != dlpark::ffi::DLDeviceType::CPU {
            // SAFETY: asks for the current stream of the array's device, written to `stream`.
            let rc =
                unsafe { current_stream(v.device.device_type, v.device.device_id, &mut stream) };
            if rc != 0 {
                return Err(failed("name the current stream"));
            }
        }
        Ok(View {
            ptr: v.data as u64 + v.byte_offset,
            dtype: v.dtype,
            shape: read(v.shape).unwrap_or_default(),
            strides: read(v.strides),
            device: v.device,
            stream: stream as usize,
        })
    }

    /// A new contiguous array of `dtype` and `shape` on `device`, made by the library (torch's
    /// caching allocator, ordered on its current stream), and the address of its element 0.
    pub(crate) fn empty<'py>(
        &self,
        py: Python<'py>,
        device: DLDevice,
        dtype: DLDataType,
        shape: &[i64],
    ) -> PyResult<(Bound<'py, PyAny>, u64)> {
        // SAFETY: the table is alive for the process (see `Table`).
        let t = unsafe { self.raw.as_ref() };
        let (Some(allocate), Some(to_python)) = (
            t.managed_tensor_allocator,
            t.managed_tensor_to_py_object_no_sync,
        ) else {
            return Err(PyRuntimeError::new_err(
                "the exchange table has no allocator",
            ));
        };
        let mut dims = shape.to_vec();
        let mut prototype = DLTensor {
            data: std::ptr::null_mut(),
            device,
            ndim: dims.len() as i32,
            dtype,
            shape: dims.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        let mut message = String::new();
        let mut managed: *mut DLManagedTensorVersioned = std::ptr::null_mut();
        // SAFETY: `prototype` describes the wanted array (its `shape` has `ndim` values and
        // outlives the call; data and strides are not read); `set_error` writes only into
        // `message`, the context passed with it.
        let rc = unsafe {
            allocate(
                &mut prototype,
                &mut managed,
                (&mut message as *mut String).cast(),
                Some(set_error),
            )
        };
        if rc != 0 || managed.is_null() {
            let _ = PyErr::take(py); // the allocator may have set one too; ours says more
            return Err(PyRuntimeError::new_err(format!(
                "allocating a {shape:?} array through the exchange table: {message}"
            )));
        }
        // SAFETY: a successful allocation returns a valid managed tensor, ours to own.
        let ptr = unsafe { (*managed).dl_tensor.data as u64 + (*managed).dl_tensor.byte_offset };
        let mut obj: *mut c_void = std::ptr::null_mut();
        // SAFETY: hands the managed tensor (ownership included, freed by the producer on
        // failure as the contract says) to the library, which wraps it in a Python object.
        let rc = unsafe { to_python(managed, &mut obj) };
        if rc != 0 || obj.is_null() {
            return Err(PyErr::take(py).unwrap_or_else(|| {
                PyRuntimeError::new_err("the exchange table could not wrap a new array")
            }));
        }
        // SAFETY: `obj` is a new (owned) reference to the array object.
        let obj = unsafe { Bound::from_owned_ptr(py, obj.cast()) };
        Ok((obj, ptr))
    }
}

/// The allocator's error callback: keeps the kind and message in the `String` at `ctx`.
unsafe extern "C" fn set_error(ctx: *mut c_void, kind: *const c_char, message: *const c_char) {
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: the producer passes NUL-terminated strings valid during the callback.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    // SAFETY: `ctx` is the `&mut String` `Table::empty` passed with this callback.
    let out = unsafe { &mut *ctx.cast::<String>() };
    *out = format!("{}: {}", text(kind), text(message));
}
