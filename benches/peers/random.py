"""Peer timings for `random-bench`: torch and cupy random fills (Philox in torch, cupy's default
generator), timed with CUDA events exactly like the Rust side (see timing.py). torch fills a
preallocated tensor in place (`uniform_`, `normal_`, `random_`); cupy allocates its result from
its memory pool. Prints JSON: {case: {peer: {size: microseconds}}}. Run on the GPU machine in
the same call as the bench; sizes are elements: --quick gives 2^20, 2^24, 2^26, 2^28."""
import json
import sys

import torch

from timing import Results

try:
    import cupy
except Exception:  # cupy is optional
    cupy = None

if "--quick" in sys.argv:
    SIZES = [1 << k for k in (20, 24, 26, 28)]
else:
    SIZES = [1 << k for k in range(16, 29, 2)]


def cases():
    out = Results(SIZES)
    add = out.add
    gen = torch.Generator(device="cuda").manual_seed(1)

    def torch_fill(dtype, method):
        def make(n):
            x = torch.empty(n, device="cuda", dtype=dtype)
            fill = getattr(x, method)
            return lambda: fill(generator=gen)
        return make

    add("fill_uniform_u32", "torch.int32.random_", torch_fill(torch.int32, "random_"))
    add("fill_uniform_f32", "torch.rand (uniform_)", torch_fill(torch.float32, "uniform_"))
    add("fill_uniform_f64", "torch.rand (uniform_)", torch_fill(torch.float64, "uniform_"))
    add("fill_normal_f32", "torch.randn (normal_)", torch_fill(torch.float32, "normal_"))
    add("fill_normal_f64", "torch.randn (normal_)", torch_fill(torch.float64, "normal_"))
    if cupy is not None:
        rs = cupy.random.RandomState(1)

        def cupy_fill(fn, dtype):
            return lambda n: (lambda: fn(size=n, dtype=dtype))

        add("fill_uniform_f32", "cupy.random.random", cupy_fill(rs.random_sample, cupy.float32))
        add("fill_uniform_f64", "cupy.random.random", cupy_fill(rs.random_sample, cupy.float64))
        add("fill_normal_f32", "cupy.random.standard_normal",
            cupy_fill(rs.standard_normal, cupy.float32))
        add("fill_normal_f64", "cupy.random.standard_normal",
            cupy_fill(rs.standard_normal, cupy.float64))
    return out


if __name__ == "__main__":
    json.dump(cases(), sys.stdout, indent=1)
