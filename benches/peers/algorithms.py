"""Peer timings for `algorithms-bench`: torch and cupy equivalents of our device-wide
algorithms, timed with CUDA events exactly like the Rust side (warm-up, then the best of five
trials of the mean over enough repetitions to take >= 20 ms). Prints JSON:
{case: {peer: {size: microseconds}}}. Run on the GPU machine in the same call as the bench."""
import json
import sys

import torch

from timing import Results, sizes

try:
    import cupy
except Exception:  # cupy is optional
    cupy = None

SIZES = sizes(28)


def cases():
    out = Results(SIZES)
    add = out.add
    gen = torch.Generator(device="cuda").manual_seed(1)

    def f32(n):
        return torch.rand(n, device="cuda", generator=gen, dtype=torch.float32)

    def torch_sum(n):
        x = f32(n)
        return lambda: torch.sum(x)

    def torch_cumsum(n):
        x, y = f32(n), torch.empty(n, device="cuda", dtype=torch.float32)
        return lambda: torch.cumsum(x, 0, out=y)

    def torch_select(n):
        x = f32(n)
        return lambda: torch.masked_select(x, x > 0.5)

    def torch_histc(n):
        x = f32(n)
        return lambda: torch.histc(x, bins=256, min=0.0, max=1.0)

    def torch_to_bf16(n):
        x = f32(n)
        y = torch.empty(n, device="cuda", dtype=torch.bfloat16)
        return lambda: y.copy_(x)

    def torch_copy_u32(n):
        # No library here merges two sorted runs; a copy of the same bytes (n keys read, n
        # written) is the bound a merge can approach.
        x = torch.randint(0, 2**31 - 1, (n,), device="cuda", generator=gen, dtype=torch.int32)
        y = torch.empty_like(x)
        return lambda: y.copy_(x)

    add("merge_u32", "copy (bound)", torch_copy_u32)
    add("convert_f32_bf16", "torch copy_ to bf16", torch_to_bf16)
    add("select_if_f32", "torch.masked_select", torch_select)
    add("histogram_even_f32_256", "torch.histc", torch_histc)
    add("reduce_sum_f32", "torch.sum", torch_sum)

    def torch_sum_f64(n):
        x = f32(n).double()
        return lambda: torch.sum(x)

    def torch_sum_i32(n):
        x = (f32(n) * 1000).int()
        return lambda: torch.sum(x, dtype=torch.int32)

    def torch_sum_f16(n):
        x = f32(n).half()
        return lambda: torch.sum(x)

    def torch_sum_bf16(n):
        x = f32(n).bfloat16()
        return lambda: torch.sum(x)

    add("reduce_sum_f16", "torch.sum", torch_sum_f16)
    add("reduce_sum_bf16", "torch.sum", torch_sum_bf16)
    add("reduce_sum_f64", "torch.sum", torch_sum_f64)
    add("reduce_sum_i32", "torch.sum", torch_sum_i32)
    add("inclusive_scan_sum_f32", "torch.cumsum", torch_cumsum)
    if cupy is not None:
        def cupy_sum(n):
            x = cupy.random.rand(n, dtype=cupy.float32)
            return lambda: cupy.sum(x)

        def cupy_cumsum(n):
            x = cupy.random.rand(n, dtype=cupy.float32)
            y = cupy.empty(n, dtype=cupy.float32)
            return lambda: cupy.cumsum(x, out=y)

        def cupy_select(n):
            x = cupy.random.rand(n, dtype=cupy.float32)
            return lambda: x[x > 0.5]

        def cupy_hist(n):
            x = cupy.random.rand(n, dtype=cupy.float32)
            return lambda: cupy.histogram(x, bins=256, range=(0.0, 1.0))

        add("select_if_f32", "cupy[x>t]", cupy_select)
        add("histogram_even_f32_256", "cupy.histogram", cupy_hist)
        add("reduce_sum_f32", "cupy.sum", cupy_sum)

        def cupy_sum_f64(n):
            x = cupy.random.rand(n, dtype=cupy.float64)
            return lambda: cupy.sum(x)

        def cupy_sum_i32(n):
            x = (cupy.random.rand(n, dtype=cupy.float32) * 1000).astype(cupy.int32)
            return lambda: cupy.sum(x, dtype=cupy.int32)

        def cupy_max_u32(n):
            x = (cupy.random.rand(n, dtype=cupy.float32) * 1e9).astype(cupy.uint32)
            return lambda: cupy.max(x)

        add("reduce_sum_f64", "cupy.sum", cupy_sum_f64)
        add("reduce_sum_i32", "cupy.sum", cupy_sum_i32)
        add("reduce_max_u32", "cupy.max", cupy_max_u32)
        add("inclusive_scan_sum_f32", "cupy.cumsum", cupy_cumsum)
    return out


if __name__ == "__main__":
    json.dump(cases(), sys.stdout, indent=1)
