//! The dense kernels from Python: `softmax`, `layernorm`, `gemm`, `attention` and
//! `attention_backward` over `gpu-dense`, on any array the protocols in [`crate::array`]
//! describe. As for the built-ins, every check (dtype, device, shape, contiguity, alignment,
//! writable and separate outputs) happens before anything is launched, and outputs not given are
//! made by the inputs' library.

use gpu_dense::{AttentionShape, Dense};
use half::{bf16, f16};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::array::{ArrayArg, Call};
use crate::builtins::output;
use crate::dtype::DType;
use crate::runtime::{borrow, device, py_err};

const ROW_TYPES: &[DType] = &[DType::F32, DType::BF16];
const GEMM_TYPES: &[DType] = &[DType::BF16, DType::F16];

/// The dense kernels move 16-byte vectors (and copy 16-byte chunks asynchronously): an array
/// must start on a 16-byte boundary. Every allocation does; a view into one may not.
const ALIGN: u64 = 16;

fn expect_aligned(a: &ArrayArg<'_>, what: &str) -> PyResult<()> {
    if a.numel() == 0 || a.ptr.is_multiple_of(ALIGN) {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "{what}: argument `{}` starts at {:#x}, not on a {ALIGN}-byte boundary (the kernels read \
         16-byte vectors); pass a freshly allocated array (.clone() in torch, .copy() in NumPy)",
        a.name, a.ptr
    )))
}

/// A dense input: its dtype one of `allowed`, contiguous and aligned.
fn input<'py>(
    call: &mut Call<'py>,
    obj: &Bound<'py, PyAny>,
    name: &str,
    what: &str,
    allowed: &[DType],
) -> PyResult<ArrayArg<'py>> {
    let a = call.array(obj, name)?;
    a.expect_dtype(what, allowed)?;
    a.expect_contiguous(what)?;
    expect_aligned(&a, what)?;
    Ok(a)
}

/// `TypeError` unless `a` has the dtype of `like` (the argument the kernel's type comes from).
fn same_dtype(a: &ArrayArg<'_>, like: &ArrayArg<'_>, what: &str) -> PyResult<()> {
    if a.dtype == like.dtype {
        return Ok(());
    }
    Err(PyTypeError::new_err(format!(
        "{what}: argument `{}` has dtype {}; it must match `{}` ({})",
        a.name,
        a.dtype.name(),
        like.name,
        like.dtype.name()
    )))
}

/// `ValueError` unless `a` has `ndim` dimensions.
fn expect_ndim(a: &ArrayArg<'_>, ndim: usize, layout: &str, what: &str) -> PyResult<()> {
    if a.shape.len() == ndim {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "{what}: argument `{}` has shape {:?}; it must be {ndim}-dimensional ({layout})",
        a.name, a.shape
    )))
}

/// `ValueError` unless `a` has exactly `shape`.
fn expect_shape(a: &ArrayArg<'_>, shape: &[i64], why: &str, what: &str) -> PyResult<()> {
    if a.shape == shape {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "{what}: argument `{}` has shape {:?}; it must have shape {shape:?} ({why})",
        a.name, a.shape
    )))
}

/// The rows and columns of a row-wise kernel's input: the last dimension is the row.
fn rows_cols(x: &ArrayArg<'_>, what: &str) -> PyResult<(usize, usize)> {
    let Some(&cols) = x.shape.last() else {
        return Err(PyValueError::new_err(format!(
            "{what}: argument `{}` is 0-dimensional; it needs at least one dimension (the rows \
             are along the last)",
            x.name
        )));
    };
    let cols = cols.max(0) as usize;
    let rows = x.shape[..x.shape.len() - 1]
        .iter()
        .map(|&d| d.max(0) as usize)
        .product();
    Ok((rows, cols))
}

/// `softmax(x, *, out=None, stream=None)`: softmax along the last dimension of `x` (float32 or
/// bfloat16, any shape, contiguous), math in float32, into a new array of `x`'s shape (or `out`).
#[pyfunction]
#[pyo3(signature = (x, *, out=None, stream=None))]
pub fn softmax<'py>(
    x: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    const WHAT: &str = "softmax";
    let mut call = Call::new(x.py(), stream)?;
    let x = input(&mut call, x, "x", WHAT, ROW_TYPES)?;
    let (rows, cols) = rows_cols(&x, WHAT)?;
    let shape = x.shape.clone();
    let out = output(&mut call, out, "out", WHAT, &x, x.dtype, &shape, &[&x])?;
    expect_aligned(&out, WHAT)?;
    let dev = device(x.place)?;
    let dense = dev.dense()?;
    let s = dev.stream(&call)?;
    match x.dtype {
        DType::F32 => dense.softmax(
            &s,
            &borrow::<f32>(&s, &x)?,
            &mut borrow(&s, &out)?,
            rows,
            cols,
        ),
        _ => dense.softmax(
            &s,
            &borrow::<bf16>(&s, &x)?,
            &mut borrow(&s, &out)?,
            rows,
            cols,
        ),
    }
    .map_err(py_err)?;
    Ok(out.obj)
}

/// `layernorm(x, gamma, beta, eps=1e-5, *, out=None, stream=None)`: layer normalization along
/// the last dimension of `x` (float32 or bfloat16, contiguous): `(x - mean) / sqrt(var + eps) *
/// gamma + beta` with each row's mean and biased variance, math in float32; `gamma` and `beta`
/// are 1-D with one value per column, of `x`'s dtype.
#[pyfunction]
#[pyo3(signature = (x, gamma, beta, eps=1e-5, *, out=None, stream=None))]
pub fn layernorm<'py>(
    x: &Bound<'py, PyAny>,
    gamma: &Bound<'py, PyAny>,
    beta: &Bound<'py, PyAny>,
    eps: f64,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    const WHAT: &str = "layernorm";
    let mut call = Call::new(x.py(), stream)?;
    let x = input(&mut call, x, "x", WHAT, ROW_TYPES)?;
    let (rows, cols) = rows_cols(&x, WHAT)?;
    let gamma = input(&mut call, gamma, "gamma", WHAT, ROW_TYPES)?;
    let beta = input(&mut call, beta, "beta", WHAT, ROW_TYPES)?;
    for p in [&gamma, &beta] {
        same_dtype(p, &x, WHAT)?;
        expect_shape(p, &[cols as i64], "one value per column of `x`", WHAT)?;
    }
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "{WHAT}: eps = {eps}; it must be finite and >= 0"
        )));
    }
    let shape = x.shape.clone();
    let out = output(
        &mut call,
        out,
        "out",
        WHAT,
        &x,
        x.dtype,
        &shape,
        &[&x, &gamma, &beta],
    )?;
    expect_aligned(&out, WHAT)?;
    let dev = device(x.place)?;
    let dense = dev.dense()?;
    let s = dev.stream(&call)?;
    let eps = eps as f32;
    macro_rules! run {
        ($T:ty) => {
            dense.layernorm(
                &s,
                &borrow::<$T>(&s, &x)?,
                &borrow(&s, &gamma)?,
                &borrow(&s, &beta)?,
                &mut borrow(&s, &out)?,
                rows,
                cols,
                eps,
            )
        };
    }
    match x.dtype {
        DType::F32 => run!(f32),
        _ => run!(bf16),
    }
    .map_err(py_err)?;
    Ok(out.obj)
}

/// `gemm(a, b, *, out=None, stream=None)`: `C = A · Bᵀ` on tensor cores (torch's `a @ b.T`,
/// `b` laid out as an `nn.Linear` weight): `a` is M×K, `b` N×K, both bfloat16 or both float16,
/// contiguous, K a multiple of 8; C is M×N of the same dtype, accumulated in float32.
#[pyfunction]
#[pyo3(signature = (a, b, *, out=None, stream=None))]
pub fn gemm<'py>(
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    const WHAT: &str = "gemm";
    let mut call = Call::new(a.py(), stream)?;
    let a = input(&mut call, a, "a", WHAT, GEMM_TYPES)?;
    let b = input(&mut call, b, "b", WHAT, GEMM_TYPES)?;
    expect_ndim(&a, 2, "M×K", WHAT)?;
    expect_ndim(&b, 2, "N×K: C = A·Bᵀ", WHAT)?;
    same_dtype(&b, &a, WHAT)?;
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[0]);
    if b.shape[1] != k {
        return Err(PyValueError::new_err(format!(
            "{WHAT}: `a` is {m}×{k} and `b` is {:?}; `b` must be N×{k} (C = A·Bᵀ: both hold \
             rows of length K)",
            b.shape
        )));
    }
    let out = output(&mut call, out, "out", WHAT, &a, a.dtype, &[m, n], &[&a, &b])?;
    expect_aligned(&out, WHAT)?;
    let dev = device(a.place)?;
    let dense = dev.dense()?;
    let s = dev.stream(&call)?;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    match a.dtype {
        DType::BF16 => {
            let (ab, bb) = (borrow::<bf16>(&s, &a)?, borrow(&s, &b)?);
            dense.gemm(&s, &ab, &bb, &mut borrow(&s, &out)?, m, n, k)
        }
        _ => {
            let (ab, bb) = (borrow::<f16>(&s, &a)?, borrow(&s, &b)?);
            dense.gemm(&s, &ab, &bb, &mut borrow(&s, &out)?, m, n, k)
        }
    }
    .map_err(py_err)?;
    Ok(out.obj)
}

const BHSD: &str = "[batch, heads, seq, head_dim]";

/// The attention shape of `q` `[batch, heads, seq_q, head_dim]` and `k`, `v` `[batch,
/// kv_heads, seq_k, head_dim]`, checked against each other.
fn attention_shape(
    q: &ArrayArg<'_>,
    k: &ArrayArg<'_>,
    v: &ArrayArg<'_>,
    what: &str,
) -> PyResult<AttentionShape> {
    for a in [q, k, v] {
        expect_ndim(a, 4, BHSD, what)?;
    }
    expect_shape(v, &k.shape, "`v` has the shape of `k`", what)?;
    let (qs, ks) = (&q.shape, &k.shape);
    if ks[0] != qs[0] || ks[3] != qs[3] {
        return Err(PyValueError::new_err(format!(
            "{what}: `q` has shape {qs:?} and `k` {ks:?}; they must agree in batch (dim 0) and \
             head_dim (dim 3)"
        )));
    }
    if ks[1] == 0 || qs[1] % ks[1] != 0 {
        return Err(PyValueError::new_err(format!(
            "{what}: `k` has {} heads for the {} of `q`; they must divide them (grouped-query \
             attention)",
            ks[1], qs[1]
        )));
    }
    let u = |d: i64| d.max(0) as usize;
    Ok(
        AttentionShape::new(u(qs[0]), u(qs[1]), u(qs[2]), u(ks[2]), u(qs[3]))
            .with_kv_heads(u(ks[1])),
    )
}

/// `attention(q, k, v, *, causal=False, return_lse=False, out=None, lse=None, stream=None)`:
/// flash attention, `softmax(q·kᵀ / sqrt(head_dim) [causal]) · v`, on bfloat16 (or, on an
/// H100-class GPU, float16) `q` `[batch, heads, seq_q, head_dim]` and `k`, `v` `[batch,
/// kv_heads, seq_k, head_dim]` of the same dtype (contiguous, head_dim 64 or 128, or 256 on an
/// H100-class GPU, `kv_heads` dividing `heads`). `causal` masks key `j` for query `i` when
/// `j > i` (top-left, as torch's `is_causal=True`). Returns `o` (the shape of `q`), or `(o, lse)`
/// with `return_lse`: each query row's float32 logsumexp `[batch, heads, seq_q]`, what
/// `attention_backward` takes. `lse=` given is written too.
#[pyfunction]
#[pyo3(signature = (q, k, v, *, causal=false, return_lse=false, out=None, lse=None, stream=None))]
#[allow(clippy::too_many_arguments)] // the Python signature
pub fn attention<'py>(
    q: &Bound<'py, PyAny>,
    k: &Bound<'py, PyAny>,
    v: &Bound<'py, PyAny>,
    causal: bool,
    return_lse: bool,
    out: Option<&Bound<'py, PyAny>>,
    lse: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    const WHAT: &str = "attention";
    let py = q.py();
    let mut call = Call::new(py, stream)?;
    let q = input(&mut call, q, "q", WHAT, &[DType::BF16, DType::F16])?;
    let k = input(&mut call, k, "k", WHAT, &[q.dtype])?;
    let v = input(&mut call, v, "v", WHAT, &[q.dtype])?;
    let shape = attention_shape(&q, &k, &v, WHAT)?;
    let o_shape = q.shape.clone();
    let o = output(
        &mut call,
        out,
        "out",
        WHAT,
        &q,
        q.dtype,
        &o_shape,
        &[&q, &k, &v],
    )?;
    expect_aligned(&o, WHAT)?;
    let want_lse = return_lse || lse.is_some_and(|l| !l.is_none());
    let lse = if want_lse {
        let lse_shape = &o_shape[..3];
        Some(output(
            &mut call,
            lse,
            "lse",
            WHAT,
            &q,
            DType::F32,
            lse_shape,
            &[&q, &k, &v, &o],
        )?)
    } else {
        None
    };
    let dev = device(q.place)?;
    let dense = dev.dense()?;
    let s = dev.stream(&call)?;
    let mut lb = lse.as_ref().map(|l| borrow::<f32>(&s, l)).transpose()?;
    let arrays = [&q, &k, &v, &o];
    if q.dtype == DType::F16 {
        attention_on::<f16>(dense, &s, arrays, lb.as_mut(), shape, causal)?;
    } else {
        attention_on::<bf16>(dense, &s, arrays, lb.as_mut(), shape, causal)?;
    }
    match lse {
        Some(l) if return_lse => Ok(PyTuple::new(py, [o.obj, l.obj])?.into_any()),
        _ => Ok(o.obj),
    }
}

/// Runs `Dense::attention_with_lse` on `[q, k, v, o]` of element type `T`.
fn attention_on<T: gpu_dense::AttentionElement>(
    dense: &Dense,
    s: &gpu_host::Stream,
    [q, k, v, o]: [&ArrayArg<'_>; 4],
    lse: Option<&mut gpu_host::DeviceBuffer<f32>>,
    shape: AttentionShape,
    causal: bool,
) -> PyResult<()> {
    let (qb, kb, vb) = (borrow::<T>(s, q)?, borrow::<T>(s, k)?, borrow::<T>(s, v)?);
    let mut ob = borrow::<T>(s, o)?;
    dense
        .attention_with_lse(s, &qb, &kb, &vb, &mut ob, lse, shape, causal)
        .map_err(py_err)
}

/// `attention_backward(q, k, v, o, lse, d_o, *, causal=False, deterministic=False, dq=None,
/// dk=None, dv=None, stream=None)`: the gradients `(dq, dk, dv)` of `attention` from its
/// inputs, its output `o` and logsumexp `lse` (`attention(..., return_lse=True)`) and the
/// output gradient `d_o` (the shape of `o`); `causal` must be the forward's. The fastest
/// kernels by default (`Dense::attention_backward`: on an H100 dQ's last bits can differ
/// between runs); `deterministic=True` gives the same bits every run. bfloat16, except `lse`
/// (float32).
#[pyfunction]
#[pyo3(signature = (q, k, v, o, lse, d_o, *, causal=false, deterministic=false, dq=None, dk=None, dv=None, stream=None))]
#[allow(clippy::too_many_arguments)] // the Python signature
pub fn attention_backward<'py>(
    q: &Bound<'py, PyAny>,
    k: &Bound<'py, PyAny>,
    v: &Bound<'py, PyAny>,
    o: &Bound<'py, PyAny>,
    lse: &Bound<'py, PyAny>,
    d_o: &Bound<'py, PyAny>,
    causal: bool,
    deterministic: bool,
    dq: Option<&Bound<'py, PyAny>>,
    dk: Option<&Bound<'py, PyAny>>,
    dv: Option<&Bound<'py, PyAny>>,
    stream: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    const WHAT: &str = "attention_backward";
    let py = q.py();
    let mut call = Call::new(py, stream)?;
    let q = input(&mut call, q, "q", WHAT, &[DType::BF16])?;
    let k = input(&mut call, k, "k", WHAT, &[DType::BF16])?;
    let v = input(&mut call, v, "v", WHAT, &[DType::BF16])?;
    let shape = attention_shape(&q, &k, &v, WHAT)?;
    let o = input(&mut call, o, "o", WHAT, &[DType::BF16])?;
    expect_shape(&o, &q.shape, "the forward's output: the shape of `q`", WHAT)?;
    let lse = input(&mut call, lse, "lse", WHAT, &[DType::F32])?;
    expect_shape(
        &lse,
        &q.shape[..3],
        "the forward's logsumexp: [batch, heads, seq_q]",
        WHAT,
    )?;
    let d_o = input(&mut call, d_o, "d_o", WHAT, &[DType::BF16])?;
    expect_shape(
        &d_o,
        &q.shape,
        "the gradient of `o`: the shape of `q`",
        WHAT,
    )?;
    let inputs = [&q, &k, &v, &o, &lse, &d_o];
    let dq = output(
        &mut call,
        dq,
        "dq",
        WHAT,
        &q,
        DType::BF16,
        &q.shape,
        &inputs,
    )?;
    let dk = output(
        &mut call,
        dk,
        "dk",
        WHAT,
        &k,
        DType::BF16,
        &k.shape,
        &inputs,
    )?;
    let dv = output(
        &mut call,
        dv,
        "dv",
        WHAT,
        &v,
        DType::BF16,
        &v.shape,
        &inputs,
    )?;
    for (g, others) in [(&dq, [&dk, &dv]), (&dk, [&dq, &dv])] {
        for other in others {
            if g.overlaps(other) {
                return Err(PyValueError::new_err(format!(
                    "{WHAT}: `{}` overlaps `{}` in memory; the gradients must be separate",
                    g.name, other.name
                )));
            }
        }
    }
    for g in [&dq, &dk, &dv] {
        expect_aligned(g, WHAT)?;
    }
    let dev = device(q.place)?;
    let dense = dev.dense()?;
    let s = dev.stream(&call)?;
    let (qb, kb, vb) = (borrow(&s, &q)?, borrow(&s, &k)?, borrow(&s, &v)?);
    let (ob, lb, dob) = (borrow(&s, &o)?, borrow::<f32>(&s, &lse)?, borrow(&s, &d_o)?);
    let (mut dqb, mut dkb, mut dvb) = (borrow(&s, &dq)?, borrow(&s, &dk)?, borrow(&s, &dv)?);
    let backward = if deterministic {
        Dense::attention_backward_deterministic
    } else {
        Dense::attention_backward
    };
    backward(
        dense,
        &s,
        (&qb, &kb, &vb),
        &ob,
        &lb,
        &dob,
        (&mut dqb, &mut dkb, &mut dvb),
        shape,
        causal,
    )
    .map_err(py_err)?;
    PyTuple::new(py, [dq.obj, dk.obj, dv.obj])
}
