"""Peer timings for `hopper-gemm-bench`: torch.matmul(a, b.T) (cuBLAS) in bf16 and f16 for square
sizes (4096 and 8192, or the sizes given as arguments), timed with CUDA events exactly like the
Rust side. Prints JSON: {case: {peer: {size: microseconds}}}. Run on the GPU machine in the
same call as the bench."""
import json
import sys

import torch

from timing import time_us

SIZES = [int(a) for a in sys.argv[1:]] or [4096, 8192]


def cases():
    out = {}
    for case, dtype in (("gemm_bf16", torch.bfloat16), ("gemm_f16", torch.float16)):
        for n in SIZES:
            a = torch.rand(n, n, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dtype)
            b = torch.rand(n, n, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dtype)
            c = torch.empty(n, n, device="cuda", dtype=dtype)
            us = time_us(lambda: torch.matmul(a, b.T, out=c))
            out.setdefault(case, {}).setdefault("torch.matmul", {})[str(n)] = us
            del a, b, c
            torch.cuda.empty_cache()
    return out


if __name__ == "__main__":
    json.dump(cases(), sys.stdout, indent=1)
