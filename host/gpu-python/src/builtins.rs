//! The library's algorithms from Python: `reduce`, `inclusive_scan`, `exclusive_scan`, `sort`,
//! `sort_pairs`, `histogram_even`, `select_if` over `gpu-algorithms`, on any array the protocols in
//! [`crate::array`] describe. Every check happens before anything is launched.

use gpu_host::gpu::ops::{Max, Min, Sum};
use half::{bf16, f16};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::array::{ArrayArg, Call};
use crate::dtype::DType;
use crate::runtime::{borrow, device, py_err};

/// A number type the built-ins take, with its operator identities and conversion from Python.
pub trait Elem: gpu_host::DeviceCopy + Copy + Send + 'static {
    const ZERO: Self;
    /// The identity of `max` (the lowest value, -inf for floats).
    const LOWEST: Self;
    /// The identity of `min`.
    const HIGHEST: Self;
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self>;
}

macro_rules! int_elem {
    ($($t:ty),*) => { $(
        impl Elem for $t {
            const ZERO: Self = 0;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self> {
                v.extract::<$t>().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "expected an integer that fits {}, got {}",
                        stringify!($t),
                        v.repr().map(|r| r.to_string()).unwrap_or_default()
                    ))
                })
            }
        }
    )* };
}
int_elem!(u8, u16, u32, u64, i32, i64);

macro_rules! float_elem {
    ($($t:ty: $zero:expr, $from:expr;)*) => { $(
        impl Elem for $t {
            const ZERO: Self = $zero;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self> {
                let x: f64 = v.extract()?;
                Ok($from(x))
            }
        }
    )* };
}
float_elem! {
    f32: 0.0, |x: f64| x as f32;
    f64: 0.0, |x: f64| x;
    f16: f16::ZERO, f16::from_f64;
    bf16: bf16::ZERO, bf16::from_f64;
}

/// Runs `$body` with `$T` the Rust type of `$dtype`, for the listed types.
macro_rules! with_type {
    ($dtype:expr, $T:ident => $body:expr, [$($variant:ident: $ty:ty),* $(,)?]) => {
        match $dtype {
            $(DType::$variant => {
                type $T = $ty;
                $body
            })*
            other => unreachable!("dtype {other:?} was checked"),
        }
    };
}

/// The three operators the built-ins take by name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Sum,
    Min,
    Max,
}

fn op(name: &str, what: &str) -> PyResult<Op> {
    match name {
        "sum" | "add" => Ok(Op::Sum),
        "min" => Ok(Op::Min),
        "max" => Ok(Op::Max),
        other => Err(PyValueError::new_err(format!(
            "{what}: op={other:?}; expected \"sum\", \"min\" or \"max\""
        ))),
    }
}

const REDUCE_TYPES: &[DType] = &[
    DType::F32,
    DType::F64,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
    DType::F16,
    DType::BF16,
];
const SCAN_SUM_TYPES: &[DType] = &[
    DType::F32,
    DType::F64,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
];
const SCAN_MINMAX_TYPES: &[DType] = &[DType::F32, DType::I32];
const SORT_TYPES: &[DType] = &[
    DType::U32,
    DType::I32,
    DType::F32,
    DType::U64,
    DType::I64,
    DType::F64,
];
const HISTOGRAM_TYPES: &[DType] = &[
    DType::F32,
    DType::F64,
    DType::I32,
    DType::U32,
    DType::U8,
    DType::U16,
];

/// An output argument: the given array, checked (dtype, shape, writable, contiguous, no
/// overlap with the inputs), or a new one like `like`.
#[allow(clippy::too_many_arguments)] // one output's every property, named at each call
pub(crate) fn output<'py>(
    call: &mut Call<'py>,
    given: Option<&Bound<'py, PyAny>>,
    name: &str,
    what: &str,
    like: &ArrayArg<'py>,
    dtype: DType,
    shape: &[i64],
    inputs: &[&ArrayArg<'py>],
) -> PyResult<ArrayArg<'py>> {
    let out = match given {
        Some(o) if !o.is_none() => call.array(o, name)?,
        _ => return call.empty_like(like, name, dtype, shape),
    };
    out.expect_dtype(what, &[dtype])?;
    if out.shape != shape {
        return Err(PyValueError::new_err(format!(
            "{what}: `{name}` has shape {:?}; it must have shape {shape:?}",
            out.shape
        )));
    }
    out.expect_contiguous(what)?;
    out.expect_writable(what)?;
    for i in inputs {
        if out.overlaps(i) {
            return Err(PyValueError::new_err(format!(
                "{what}: `{name}` overlaps `{}` in memory; the output must be separate",
                i.name
            )));
        }
    }
    Ok(out)
}

/// `reduce(x, op="sum", *, out=None, stream=None)`: `op` over all elements of `x` (any shape,
/// contiguous) into a 0-d array of `x`'s kind, asynchronously on the stream (as `torch.sum`).
/// Types: float32/64, int32/64, uint32/64, float16, bfloat16; an empty `x` gives the identity.
#[pyfunction]
#[pyo3(signature = (x, op="sum", *, out=None, stream=None))]
pub fn reduce<'py>(
    x: &Bound<'py, PyAny>,
    op: &str,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    const WHAT: &str = "reduce";
    let op = self::op(op, WHAT)?;
    let mut call = Call::new(x.py(), stream)?;
    let x = call.array(x, "x")?;
    x.expect_dtype(WHAT, REDUCE_TYPES)?;
    x.expect_contiguous(WHAT)?;
    let out = output(&mut call, out, "out", WHAT, &x, x.dtype, &[], &[&x])?;
    let dev = device(x.place)?;
    let s = dev.stream(&call)?;
    with_type!(x.dtype, T => {
        let input = borrow::<T>(&s, &x)?;
        let mut result = borrow::<T>(&s, &out)?;
        let a = &dev.algos;
        match op {
            Op::Sum => a.reduce_into(&s, &input, Sum, T::ZERO, &mut result),
            Op::Min => a.reduce_into(&s, &input, Min, T::HIGHEST, &mut result),
            Op::Max => a.reduce_into(&s, &input, Max, T::LOWEST, &mut result),
        }
        .map_err(py_err)?;
    }, [F32: f32, F64: f64, I32: i32, U32: u32, I64: i64, U64: u64, F16: f16, BF16: bf16]);
    Ok(out.obj)
}

fn scan<'py>(
    what: &str,
    exclusive: bool,
    x: &Bound<'py, PyAny>,
    op_name: &str,
    init: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let op = self::op(op_name, what)?;
    let mut call = Call::new(x.py(), stream)?;
    let x = call.array(x, "x")?;
    x.expect_dtype(
        &format!("{what} with op={op_name:?}"),
        if op == Op::Sum {
            SCAN_SUM_TYPES
        } else {
            SCAN_MINMAX_TYPES
        },
    )?;
    x.expect_1d(what)?;
    x.expect_contiguous(what)?;
    let shape = x.shape.clone();
    let out = output(&mut call, out, "out", what, &x, x.dtype, &shape, &[&x])?;
    let dev = device(x.place)?;
    let s = dev.stream(&call)?;
    let a = &dev.algos;
    macro_rules! run {
        ($T:ty, $op:expr, $identity:expr) => {{
            let input = borrow::<$T>(&s, &x)?;
            let mut result = borrow::<$T>(&s, &out)?;
            if exclusive {
                let init = match init {
                    Some(v) if !v.is_none() => <$T as Elem>::from_py(v)?,
                    _ => $identity,
                };
                a.exclusive_scan(&s, &input, &mut result, $op, init)
            } else {
                a.inclusive_scan(&s, &input, &mut result, $op)
            }
            .map_err(py_err)?;
        }};
    }
    match op {
        Op::Sum => with_type!(x.dtype, T => run!(T, Sum, T::ZERO),
            [F32: f32, F64: f64, I32: i32, U32: u32, I64: i64, U64: u64]),
        Op::Min => with_type!(x.dtype, T => run!(T, Min, T::HIGHEST), [F32: f32, I32: i32]),
        Op::Max => with_type!(x.dtype, T => run!(T, Max, T::LOWEST), [F32: f32, I32: i32]),
    }
    Ok(out.obj)
}

/// `inclusive_scan(x, op="sum", *, out=None, stream=None)`: `out[i] = x[0] op ... op x[i]` for a
/// 1-D contiguous `x` (sum: float32/64, int32/64, uint32/64; min/max: float32, int32).
#[pyfunction]
#[pyo3(signature = (x, op="sum", *, out=None, stream=None))]
pub fn inclusive_scan<'py>(
    x: &Bound<'py, PyAny>,
    op: &str,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    scan("inclusive_scan", false, x, op, None, out, stream)
}

/// `exclusive_scan(x, op="sum", init=None, *, out=None, stream=None)`: `out[0] = init`,
/// `out[i] = init op x[0] op ... op x[i-1]`; `init` defaults to the operator's identity.
#[pyfunction]
#[pyo3(signature = (x, op="sum", init=None, *, out=None, stream=None))]
pub fn exclusive_scan<'py>(
    x: &Bound<'py, PyAny>,
    op: &str,
    init: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    scan("exclusive_scan", true, x, op, init, out, stream)
}

/// `sort(keys, *, out=None, stream=None)`: the 1-D `keys` sorted ascending into a new array (or
/// `out`); keys float32/64, int32/64, uint32/64. `keys` is not modified.
#[pyfunction]
#[pyo3(signature = (keys, *, out=None, stream=None))]
pub fn sort<'py>(
    keys: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    const WHAT: &str = "sort";
    let mut call = Call::new(keys.py(), stream)?;
    let k = call.array(keys, "keys")?;
    k.expect_dtype(WHAT, SORT_TYPES)?;
    k.expect_1d(WHAT)?;
    k.expect_contiguous(WHAT)?;
    let shape = k.shape.clone();
    let out = output(&mut call, out, "out", WHAT, &k, k.dtype, &shape, &[&k])?;
    let dev = device(k.place)?;
    let s = dev.stream(&call)?;
    with_type!(k.dtype, T => {
        let input = borrow::<T>(&s, &k)?;
        let mut result = borrow::<T>(&s, &out)?;
        dev.algos.sort_keys(&s, &input, &mut result).map_err(py_err)?;
    }, [U32: u32, I32: i32, F32: f32, U64: u64, I64: i64, F64: f64]);
    Ok(out.obj)
}

/// `sort_pairs(keys, values, *, keys_out=None, values_out=None, stream=None)`: the pairs sorted
/// by key (stable), returned as `(keys_out, values_out)`. Values of any 4- or 8-byte type
/// (int32/64, uint32/64, float32/64) are moved as bits.
#[pyfunction]
#[pyo3(signature = (keys, values, *, keys_out=None, values_out=None, stream=None))]
pub fn sort_pairs<'py>(
    keys: &Bound<'py, PyAny>,
    values: &Bound<'py, PyAny>,
    keys_out: Option<&Bound<'py, PyAny>>,
    values_out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    const WHAT: &str = "sort_pairs";
    let py = keys.py();
    let mut call = Call::new(py, stream)?;
    let k = call.array(keys, "keys")?;
    k.expect_dtype(WHAT, SORT_TYPES)?;
    k.expect_1d(WHAT)?;
    k.expect_contiguous(WHAT)?;
    let v = call.array(values, "values")?;
    v.expect_dtype(WHAT, SORT_TYPES)?;
    v.expect_contiguous(WHAT)?;
    if v.shape != k.shape {
        return Err(PyValueError::new_err(format!(
            "{WHAT}: `values` has shape {:?}, `keys` {:?}; one value per key",
            v.shape, k.shape
        )));
    }
    let shape = k.shape.clone();
    let ko = output(
        &mut call,
        keys_out,
        "keys_out",
        WHAT,
        &k,
        k.dtype,
        &shape,
        &[&k, &v],
    )?;
    let vo = output(
        &mut call,
        values_out,
        "values_out",
        WHAT,
        &v,
        v.dtype,
        &shape,
        &[&k, &v, &ko],
    )?;
    let dev = device(k.place)?;
    let s = dev.stream(&call)?;
    macro_rules! run {
        ($V:ty) => {
            with_type!(k.dtype, K => {
                let ki = borrow::<K>(&s, &k)?;
                let vi = borrow::<$V>(&s, &v)?;
                let mut kr = borrow::<K>(&s, &ko)?;
                let mut vr = borrow::<$V>(&s, &vo)?;
                dev.algos.sort_pairs(&s, &ki, &vi, &mut kr, &mut vr).map_err(py_err)?;
            }, [U32: u32, I32: i32, F32: f32, U64: u64, I64: i64, F64: f64])
        };
    }
    // Values are only moved: any type of the size sorts as the unsigned integer of its bits.
    if v.dtype.size() == 4 {
        run!(u32)
    } else {
        run!(u64)
    }
    PyTuple::new(py, [ko.obj, vo.obj])
}

/// `histogram_even(x, bins, lower, upper, *, out=None, stream=None)`: counts of `x`'s elements in
/// `bins` equal-width bins over `[lower, upper)` (elements outside, and NaN, are not counted),
/// as a uint32 array of length `bins` (int32 from torch before 2.3, which has no uint32).
/// Samples float32/64, int32, uint32, uint8, uint16.
#[pyfunction]
#[pyo3(signature = (x, bins, lower, upper, *, out=None, stream=None))]
pub fn histogram_even<'py>(
    x: &Bound<'py, PyAny>,
    bins: usize,
    lower: &Bound<'py, PyAny>,
    upper: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    const WHAT: &str = "histogram_even";
    let mut call = Call::new(x.py(), stream)?;
    let x = call.array(x, "x")?;
    x.expect_dtype(WHAT, HISTOGRAM_TYPES)?;
    x.expect_contiguous(WHAT)?;
    if bins == 0 {
        return Err(PyValueError::new_err(format!(
            "{WHAT}: bins must be at least 1"
        )));
    }
    let out = output(
        &mut call,
        out,
        "out",
        WHAT,
        &x,
        DType::U32,
        &[bins as i64],
        &[&x],
    )?;
    let dev = device(x.place)?;
    let s = dev.stream(&call)?;
    with_type!(x.dtype, T => {
        let (lo, hi) = (T::from_py(lower)?, T::from_py(upper)?);
        let samples = borrow::<T>(&s, &x)?;
        let mut counts = borrow::<u32>(&s, &out)?;
        dev.algos.histogram_even(&s, &samples, lo, hi, &mut counts).map_err(py_err)?;
    }, [F32: f32, F64: f64, I32: i32, U32: u32, U8: u8, U16: u16]);
    Ok(out.obj)
}

const SELECT_TYPES: &[DType] = REDUCE_TYPES;

/// `select_if(x, op, threshold, *, out=None, count=None, stream=None)`: the elements `v` of the
/// 1-D `x` with `v <op> threshold` (`op` one of `<`, `<=`, `>`, `>=`, `==`, `!=`), in order, at
/// the front of `out` (as long as `x`; what follows the selected ones is unspecified), and their
/// number in the 1-element uint32 array `count` (int32 from torch before 2.3). Asynchronous:
/// `out[:int(count[0])]` reads the count. Types as `reduce`.
#[pyfunction]
#[pyo3(signature = (x, op, threshold, *, out=None, count=None, stream=None))]
pub fn select_if<'py>(
    x: &Bound<'py, PyAny>,
    op: &str,
    threshold: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    count: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    use gpu_host::gpu::ops::CompareOp;
    const WHAT: &str = "select_if";
    let cmp = match op {
        "<" | "lt" => CompareOp::Less,
        "<=" | "le" => CompareOp::LessEqual,
        ">" | "gt" => CompareOp::Greater,
        ">=" | "ge" => CompareOp::GreaterEqual,
        "==" | "eq" => CompareOp::Equal,
        "!=" | "ne" => CompareOp::NotEqual,
        other => {
            return Err(PyValueError::new_err(format!(
                "{WHAT}: op={other:?}; expected one of \"<\", \"<=\", \">\", \">=\", \"==\", \"!=\""
            )));
        }
    };
    let py = x.py();
    let mut call = Call::new(py, stream)?;
    let x = call.array(x, "x")?;
    x.expect_dtype(WHAT, SELECT_TYPES)?;
    x.expect_1d(WHAT)?;
    x.expect_contiguous(WHAT)?;
    let shape = x.shape.clone();
    let out = output(&mut call, out, "out", WHAT, &x, x.dtype, &shape, &[&x])?;
    let count = output(
        &mut call,
        count,
        "count",
        WHAT,
        &x,
        DType::U32,
        &[1],
        &[&x, &out],
    )?;
    let dev = device(x.place)?;
    let s = dev.stream(&call)?;
    with_type!(x.dtype, T => {
        let t = T::from_py(threshold)?;
        let input = borrow::<T>(&s, &x)?;
        let mut selected = borrow::<T>(&s, &out)?;
        let mut n = borrow::<u32>(&s, &count)?;
        dev.algos.select_if(&s, &input, cmp, t, &mut selected, &mut n).map_err(py_err)?;
    }, [F32: f32, F64: f64, I32: i32, U32: u32, I64: i64, U64: u64, F16: f16, BF16: bf16]);
    PyTuple::new(py, [out.obj, count.obj])
}
