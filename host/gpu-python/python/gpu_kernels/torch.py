"""The toolkit's kernels as torch operators, ``torch.ops.gpu_kernels.<name>``, registered with
``torch.library``: torch.compile traces through them (each has a fake implementation
that gives its outputs' shapes and dtypes, so ``fullgraph=True`` holds), and attention is one
autograd-aware operator whose backward is the toolkit's backward kernel (softmax is
differentiable too, its backward in torch ops; the others are not).

    import torch, gpu_kernels.torch as gkt
    o = gkt.attention(q, k, v, causal=True)    # bf16 [batch, heads, seq, head_dim]
    o.float().square().sum().backward()         # q.grad, k.grad, v.grad from attention_backward

The operators take torch tensors (CUDA tensors on torch's current stream; CPU tensors on the
CPU simulator) and, unlike the plain ``gpu_kernels`` functions, accept non-contiguous inputs
(copied with ``.contiguous()`` first, as torch's own operators would). Importing this module
imports torch and registers the operators (once per process).
"""
import torch
from torch import Tensor

from . import _gpu_kernels as _gk

__all__ = [
    "reduce", "inclusive_scan", "exclusive_scan", "sort", "sort_pairs", "histogram_even",
    "select_if", "softmax", "layernorm", "gemm", "attention", "attention_backward",
]


def _c(t: Tensor) -> Tensor:
    return t if t.is_contiguous() else t.contiguous()


def _number(x: Tensor, v: float):
    """A schema float as the kernel's element type takes it: an int for integer tensors."""
    return v if x.is_floating_point() else int(v)


# The operators are defined with torch.library.Library and implemented for the CPU and CUDA
# dispatch keys directly: the dispatcher then calls the Python function with no wrapper in between
# (a `torch.library.custom_op` costs several microseconds more per call). Each has a fake
# implementation for torch.compile; attention and softmax have autograd formulas.
_lib = torch.library.Library("gpu_kernels", "DEF")


def _define(schema: str, fake):
    """Defines `gpu_kernels::<schema>`; the decorated function is its CPU and CUDA kernel and
    `fake` its fake (meta) implementation. Returns the operator (`torch.ops.gpu_kernels.<name>`)."""
    name = schema.split("(", 1)[0]
    _lib.define(schema)

    def register(impl):
        _lib.impl(name, impl, "CPU")
        _lib.impl(name, impl, "CUDA")
        torch.library.register_fake(f"gpu_kernels::{name}", fake, lib=_lib)
        return getattr(torch.ops.gpu_kernels, name).default

    return register


def _like(t: Tensor) -> Tensor:
    return torch.empty_like(t, memory_format=torch.contiguous_format)


def _count_dtype():
    # torch before 2.3 has no uint32: counts then come as int32 (the same bits).
    return getattr(torch, "uint32", torch.int32)


# ---- the built-in algorithms ---------------------------------------------------------------

@_define("reduce(Tensor x, str op='sum') -> Tensor", lambda x, op="sum": x.new_empty(()))
def _reduce(x, op="sum"):
    return _gk.reduce(_c(x), op)


@_define("inclusive_scan(Tensor x, str op='sum') -> Tensor", lambda x, op="sum": _like(x))
def _inclusive_scan(x, op="sum"):
    return _gk.inclusive_scan(_c(x), op)


@_define("exclusive_scan(Tensor x, str op='sum', float? init=None) -> Tensor",
         lambda x, op="sum", init=None: _like(x))
def _exclusive_scan(x, op="sum", init=None):
    return _gk.exclusive_scan(_c(x), op, None if init is None else _number(x, init))


@_define("sort(Tensor keys) -> Tensor", _like)
def _sort(keys):
    return _gk.sort(_c(keys))


@_define("sort_pairs(Tensor keys, Tensor values) -> (Tensor, Tensor)",
         lambda keys, values: (_like(keys), _like(values)))
def _sort_pairs(keys, values):
    return _gk.sort_pairs(_c(keys), _c(values))


@_define("histogram_even(Tensor x, int bins, float lower, float upper) -> Tensor",
         lambda x, bins, lower, upper: x.new_empty((bins,), dtype=_count_dtype()))
def _histogram_even(x, bins, lower, upper):
    return _gk.histogram_even(_c(x), bins, _number(x, lower), _number(x, upper))


@_define("select_if(Tensor x, str op, float threshold) -> (Tensor, Tensor)",
         lambda x, op, threshold: (_like(x), x.new_empty((1,), dtype=_count_dtype())))
def _select_if(x, op, threshold):
    return _gk.select_if(_c(x), op, _number(x, threshold))


# ---- the dense kernels ---------------------------------------------------------------------

@_define("softmax(Tensor x) -> Tensor", _like)
def _softmax(x):
    return _gk.softmax(_c(x))


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _softmax_backward(ctx, grad):
    # d x = y * (g - sum(g * y)) along the rows, in float32 (torch ops).
    (y,) = ctx.saved_tensors
    yf, gf = y.float(), grad.float()
    return (yf * (gf - (gf * yf).sum(-1, keepdim=True))).to(y.dtype)


torch.library.register_autograd("gpu_kernels::softmax", _softmax_backward,
                                setup_context=_softmax_setup, lib=_lib)


@_define("layernorm(Tensor x, Tensor gamma, Tensor beta, float eps=1e-05) -> Tensor",
         lambda x, gamma, beta, eps=1e-5: _like(x))
def _layernorm(x, gamma, beta, eps=1e-5):
    return _gk.layernorm(_c(x), _c(gamma), _c(beta), eps)


@_define("gemm(Tensor a, Tensor b) -> Tensor", lambda a, b: a.new_empty((a.shape[0], b.shape[0])))
def _gemm(a, b):
    return _gk.gemm(_c(a), _c(b))


@_define("attention(Tensor q, Tensor k, Tensor v, bool causal=False) -> (Tensor, Tensor)",
         lambda q, k, v, causal=False: (_like(q), q.new_empty(q.shape[:3], dtype=torch.float32)))
def _attention(q, k, v, causal=False):
    return tuple(_gk.attention(_c(q), _c(k), _c(v), causal=causal, return_lse=True))


@_define("attention_backward(Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, Tensor d_o, "
         "bool causal=False) -> (Tensor, Tensor, Tensor)",
         lambda q, k, v, o, lse, d_o, causal=False: (_like(q), _like(k), _like(v)))
def _attention_backward(q, k, v, o, lse, d_o, causal=False):
    return tuple(_gk.attention_backward(_c(q), _c(k), _c(v), _c(o), _c(lse), _c(d_o),
                                        causal=causal))


def _attention_setup(ctx, inputs, output):
    q, k, v, causal = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal = causal
    # The logsumexp is a by-product the backward kernel reads, not a differentiable output.
    ctx.mark_non_differentiable(lse)


def _attention_bwd(ctx, d_o, _d_lse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = _attention_backward(q, k, v, o, lse, d_o, ctx.causal)
    return dq, dk, dv, None


torch.library.register_autograd("gpu_kernels::attention", _attention_bwd,
                                setup_context=_attention_setup, lib=_lib)


# ---- the public names: the operators, and attention with the plain API's options -----------

reduce = _reduce
inclusive_scan = _inclusive_scan
exclusive_scan = _exclusive_scan
sort = _sort
sort_pairs = _sort_pairs
histogram_even = _histogram_even
select_if = _select_if
softmax = _softmax
layernorm = _layernorm
gemm = _gemm
attention_backward = _attention_backward


def attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False, return_lse: bool = False):
    """Flash attention as ``torch.ops.gpu_kernels.attention``, differentiable in q, k, v:
    bf16 ``q [batch, heads, seq_q, head_dim]``, ``k``, ``v [batch, kv_heads, seq_k,
    head_dim]`` (head_dim 64 or 128), ``causal`` top-left aligned as torch's ``is_causal``.
    Returns ``o``, or ``(o, lse)`` with ``return_lse`` (float32 logsumexp per query row, not
    differentiable)."""
    o, lse = _attention(q, k, v, causal)
    return (o, lse) if return_lse else o
