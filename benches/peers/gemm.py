"""Peer timings for `gemm-bench`: `torch.matmul(a, b.T)` (cuBLAS) for bf16 and f16 square
GEMMs, timed with CUDA events like the Rust side (benches/peers/timing.py). Prints JSON
{case: {peer: {size: microseconds}}}. Usage: gemm.py [--sizes 4096,8192]."""
import json
import sys

import torch

from timing import time_us

SIZES = [4096, 8192]
if "--sizes" in sys.argv:
    SIZES = [int(s) for s in sys.argv[sys.argv.index("--sizes") + 1].split(",")]


def main():
    out = {}
    gen = torch.Generator(device="cuda").manual_seed(1)
    for name, dtype in (("gemm_bf16", torch.bfloat16), ("gemm_f16", torch.float16)):
        for n in SIZES:
            a = (torch.rand(n, n, device="cuda", generator=gen) * 2 - 1).to(dtype)
            b = (torch.rand(n, n, device="cuda", generator=gen) * 2 - 1).to(dtype)
            c = torch.empty(n, n, device="cuda", dtype=dtype)
            bt = b.T
            us = time_us(lambda: torch.matmul(a, bt, out=c))
            out.setdefault(name, {}).setdefault("torch.matmul", {})[str(n)] = us
            del a, b, c, bt
            torch.cuda.empty_cache()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
