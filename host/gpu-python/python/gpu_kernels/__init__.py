"""Rust GPU kernels on torch, CuPy, JAX and NumPy arrays, zero-copy.

The functions live in the extension module ``gpu_kernels._gpu_kernels`` (built from
host/gpu-python/src) and are re-exported here. ``import gpu_kernels.torch`` registers them as
torch operators (``torch.ops.gpu_kernels.*``: torch.compile, autograd for attention); importing
``gpu_kernels`` alone never imports torch.
"""
from ._gpu_kernels import *  # noqa: F401,F403 (the extension's public names, its __all__)
from ._gpu_kernels import (  # noqa: F401 (the benchmark's switches)
    __doc__ as _native_doc, _set_fast_torch, _set_torch_exchange, _torch_exchange)

__doc__ = (__doc__ or "") + "\n" + (_native_doc or "")
