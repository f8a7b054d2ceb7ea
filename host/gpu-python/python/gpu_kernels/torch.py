"""The toolkit's kernels as torch operators, ``torch.ops.gpu_kernels.<name>``, registered with
``torch.library.custom_op``: torch.compile traces through them (each has a fake implementation
that gives its outputs' shapes and dtypes, so ``fullgraph=True`` holds), and attention is one
autograd-aware operator whose backward is the toolkit's backward kernel.

    import torch, gpu_kernels.torch as gkt
    o = gkt.attention(q, k, v, causal=True)    # bf16 [batch, heads, seq, head_dim]
    o.float().square().sum().backward()         # q.grad, k.grad, v.grad from attention_backward

The operators take torch tensors (CUDA tensors on torch's current stream; CPU tensors on the
CPU simulator) and, unlike the plain ``gpu_kernels`` functions, accept non-contiguous inputs
(copied with ``.contiguous()`` first, as torch's own operators would). Importing this module
imports torch and registers the operators (once per process).
"""
from typing import Optional, Tuple

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


def _op(name: str):
    return torch.library.custom_op(f"gpu_kernels::{name}", mutates_args=())


# ---- the built-in algorithms ---------------------------------------------------------------

@_op("reduce")
def _reduce(x: Tensor, op: str = "sum") -> Tensor:
    return _gk.reduce(_c(x), op)


@_reduce.register_fake
def _(x, op="sum"):
    return x.new_empty(())


@_op("inclusive_scan")
def _inclusive_scan(x: Tensor, op: str = "sum") -> Tensor:
    return _gk.inclusive_scan(_c(x), op)


@_inclusive_scan.register_fake
def _(x, op="sum"):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@_op("exclusive_scan")
def _exclusive_scan(x: Tensor, op: str = "sum", init: Optional[float] = None) -> Tensor:
    return _gk.exclusive_scan(_c(x), op, None if init is None else _number(x, init))


@_exclusive_scan.register_fake
def _(x, op="sum", init=None):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@_op("sort")
def _sort(keys: Tensor) -> Tensor:
    return _gk.sort(_c(keys))


@_sort.register_fake
def _(keys):
    return torch.empty_like(keys, memory_format=torch.contiguous_format)


@_op("sort_pairs")
def _sort_pairs(keys: Tensor, values: Tensor) -> Tuple[Tensor, Tensor]:
    return _gk.sort_pairs(_c(keys), _c(values))


@_sort_pairs.register_fake
def _(keys, values):
    return (torch.empty_like(keys, memory_format=torch.contiguous_format),
            torch.empty_like(values, memory_format=torch.contiguous_format))


def _count_dtype():
    # torch before 2.3 has no uint32: counts then come as int32 (the same bits).
    return getattr(torch, "uint32", torch.int32)


@_op("histogram_even")
def _histogram_even(x: Tensor, bins: int, lower: float, upper: float) -> Tensor:
    return _gk.histogram_even(_c(x), bins, _number(x, lower), _number(x, upper))


@_histogram_even.register_fake
def _(x, bins, lower, upper):
    return x.new_empty((bins,), dtype=_count_dtype())


@_op("select_if")
def _select_if(x: Tensor, op: str, threshold: float) -> Tuple[Tensor, Tensor]:
    return _gk.select_if(_c(x), op, _number(x, threshold))


@_select_if.register_fake
def _(x, op, threshold):
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            x.new_empty((1,), dtype=_count_dtype()))


# ---- the dense kernels ---------------------------------------------------------------------

@_op("softmax")
def _softmax(x: Tensor) -> Tensor:
    return _gk.softmax(_c(x))


@_softmax.register_fake
def _(x):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _softmax_backward(ctx, grad):
    # d x = y * (g - sum(g * y)) along the rows, in float32 (torch ops).
    (y,) = ctx.saved_tensors
    yf, gf = y.float(), grad.float()
    return (yf * (gf - (gf * yf).sum(-1, keepdim=True))).to(y.dtype)


_softmax.register_autograd(_softmax_backward, setup_context=_softmax_setup)


@_op("layernorm")
def _layernorm(x: Tensor, gamma: Tensor, beta: Tensor, eps: float = 1e-5) -> Tensor:
    return _gk.layernorm(_c(x), _c(gamma), _c(beta), eps)


@_layernorm.register_fake
def _(x, gamma, beta, eps=1e-5):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@_op("gemm")
def _gemm(a: Tensor, b: Tensor) -> Tensor:
    return _gk.gemm(_c(a), _c(b))


@_gemm.register_fake
def _(a, b):
    return a.new_empty((a.shape[0], b.shape[0]))


@_op("attention")
def _attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> Tuple[Tensor, Tensor]:
    return _gk.attention(_c(q), _c(k), _c(v), causal=causal, return_lse=True)


@_attention.register_fake
def _(q, k, v, causal=False):
    return (torch.empty_like(q, memory_format=torch.contiguous_format),
            q.new_empty(q.shape[:3], dtype=torch.float32))


@_op("attention_backward")
def _attention_backward(q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor, d_o: Tensor,
                        causal: bool = False) -> Tuple[Tensor, Tensor, Tensor]:
    return _gk.attention_backward(_c(q), _c(k), _c(v), _c(o), _c(lse), _c(d_o), causal=causal)


@_attention_backward.register_fake
def _(q, k, v, o, lse, d_o, causal=False):
    return tuple(torch.empty_like(t, memory_format=torch.contiguous_format) for t in (q, k, v))


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


_attention.register_autograd(_attention_bwd, setup_context=_attention_setup)


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
