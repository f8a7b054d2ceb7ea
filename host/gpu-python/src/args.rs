//! A user kernel's arguments as the launch takes them: launch dimensions, borrowed buffers of
//! every element type, and numbers converted to the parameter's type.

use gpu_host::{DeviceBuffer, KernelLaunch, Stream};
use half::{bf16, f16};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::array::ArrayArg;
use crate::builtins::Elem;
use crate::dtype::DType;
use crate::runtime::borrow;

/// A launch dimension from Python: an int or a tuple of 1 to 3 ints.
pub(crate) fn dim3(v: &Bound<'_, PyAny>, what: &str) -> PyResult<gpu_host::Dim3> {
    if let Ok(x) = v.extract::<u32>() {
        return Ok(x.into());
    }
    let t: Vec<u32> = v.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}: expected an int or a tuple of 1 to 3 non-negative ints"
        ))
    })?;
    match t.as_slice() {
        [x] => Ok((*x).into()),
        [x, y] => Ok((*x, *y).into()),
        [x, y, z] => Ok((*x, *y, *z).into()),
        _ => Err(PyValueError::new_err(format!(
            "{what}: {} dimensions; at most 3",
            t.len()
        ))),
    }
}

/// A borrowed buffer of any element type the bindings pass.
pub(crate) enum AnyBuf {
    U8(DeviceBuffer<u8>),
    U16(DeviceBuffer<u16>),
    U32(DeviceBuffer<u32>),
    U64(DeviceBuffer<u64>),
    I8(DeviceBuffer<i8>),
    I16(DeviceBuffer<i16>),
    I32(DeviceBuffer<i32>),
    I64(DeviceBuffer<i64>),
    F16(DeviceBuffer<f16>),
    BF16(DeviceBuffer<bf16>),
    F32(DeviceBuffer<f32>),
    F64(DeviceBuffer<f64>),
}

macro_rules! each_buf {
    ($self:expr, $b:ident => $body:expr) => {
        match $self {
            AnyBuf::U8($b) => $body,
            AnyBuf::U16($b) => $body,
            AnyBuf::U32($b) => $body,
            AnyBuf::U64($b) => $body,
            AnyBuf::I8($b) => $body,
            AnyBuf::I16($b) => $body,
            AnyBuf::I32($b) => $body,
            AnyBuf::I64($b) => $body,
            AnyBuf::F16($b) => $body,
            AnyBuf::BF16($b) => $body,
            AnyBuf::F32($b) => $body,
            AnyBuf::F64($b) => $body,
        }
    };
}

impl AnyBuf {
    pub(crate) fn borrow(s: &Stream, a: &ArrayArg<'_>) -> PyResult<AnyBuf> {
        Ok(match a.dtype {
            DType::U8 | DType::Bool => AnyBuf::U8(borrow(s, a)?),
            DType::U16 => AnyBuf::U16(borrow(s, a)?),
            DType::U32 => AnyBuf::U32(borrow(s, a)?),
            DType::U64 => AnyBuf::U64(borrow(s, a)?),
            DType::I8 => AnyBuf::I8(borrow(s, a)?),
            DType::I16 => AnyBuf::I16(borrow(s, a)?),
            DType::I32 => AnyBuf::I32(borrow(s, a)?),
            DType::I64 => AnyBuf::I64(borrow(s, a)?),
            DType::F16 => AnyBuf::F16(borrow(s, a)?),
            DType::BF16 => AnyBuf::BF16(borrow(s, a)?),
            DType::F32 => AnyBuf::F32(borrow(s, a)?),
            DType::F64 => AnyBuf::F64(borrow(s, a)?),
        })
    }

    pub(crate) fn push_input<'a>(&'a self, l: &mut KernelLaunch<'a>, name: &'static str) {
        each_buf!(self, b => { l.input(name, b); })
    }

    pub(crate) fn push_output<'a>(&'a mut self, l: &mut KernelLaunch<'a>, name: &'static str) {
        each_buf!(self, b => { l.output(name, b); })
    }
}

/// A scalar argument, converted to the parameter's type.
pub(crate) enum Scalar {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    F16(f16),
    BF16(bf16),
    F32(f32),
    F64(f64),
}

impl Scalar {
    pub(crate) fn from_py(d: DType, v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
        let small_int = |v: &Bound<'_, PyAny>| -> PyResult<i64> { v.extract::<i64>() };
        Ok(match d {
            DType::U8 | DType::Bool => Scalar::U8(<u8 as Elem>::from_py(v)?),
            DType::U16 => Scalar::U16(<u16 as Elem>::from_py(v)?),
            DType::U32 => Scalar::U32(<u32 as Elem>::from_py(v)?),
            DType::U64 => Scalar::U64(<u64 as Elem>::from_py(v)?),
            DType::I8 => Scalar::I8(
                i8::try_from(small_int(v)?)
                    .map_err(|_| PyValueError::new_err("the value does not fit i8"))?,
            ),
            DType::I16 => Scalar::I16(
                i16::try_from(small_int(v)?)
                    .map_err(|_| PyValueError::new_err("the value does not fit i16"))?,
            ),
            DType::I32 => Scalar::I32(<i32 as Elem>::from_py(v)?),
            DType::I64 => Scalar::I64(<i64 as Elem>::from_py(v)?),
            DType::F16 => Scalar::F16(<f16 as Elem>::from_py(v)?),
            DType::BF16 => Scalar::BF16(<bf16 as Elem>::from_py(v)?),
            DType::F32 => Scalar::F32(<f32 as Elem>::from_py(v)?),
            DType::F64 => Scalar::F64(<f64 as Elem>::from_py(v)?),
        })
    }

    pub(crate) fn push(&self, l: &mut KernelLaunch<'_>, name: &'static str) {
        match self {
            Scalar::U8(v) => l.value(name, v),
            Scalar::U16(v) => l.value(name, v),
            Scalar::U32(v) => l.value(name, v),
            Scalar::U64(v) => l.value(name, v),
            Scalar::I8(v) => l.value(name, v),
            Scalar::I16(v) => l.value(name, v),
            Scalar::I32(v) => l.value(name, v),
            Scalar::I64(v) => l.value(name, v),
            Scalar::F16(v) => l.value(name, v),
            Scalar::BF16(v) => l.value(name, v),
            Scalar::F32(v) => l.value(name, v),
            Scalar::F64(v) => l.value(name, v),
        };
    }
}
