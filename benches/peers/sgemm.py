"""Peer timings for `sgemm-bench`: torch.matmul in fp32 with TF32 off (cuBLAS SGEMM on the CUDA
cores), square sizes, timed with CUDA events like the Rust side (`timing.time_us`). Prints JSON:
{"sgemm_f32": {"torch.matmul": {size: microseconds}}}. Run on the GPU machine in the same call
as the bench. `--sizes 1024,4096` picks sizes."""
import json
import sys

import torch

from timing import time_us

torch.backends.cuda.matmul.allow_tf32 = False
torch.set_float32_matmul_precision("highest")


def sizes():
    for i, a in enumerate(sys.argv):
        if a == "--sizes":
            return [int(s) for s in sys.argv[i + 1].split(",")]
    return [1024, 2048, 4096, 8192]


def main():
    gen = torch.Generator(device="cuda").manual_seed(1)
    out = {}
    for n in sizes():
        a = torch.rand(n, n, device="cuda", generator=gen) * 2 - 1
        b = torch.rand(n, n, device="cuda", generator=gen) * 2 - 1
        c = torch.empty(n, n, device="cuda")
        us = time_us(lambda: torch.matmul(a, b, out=c))
        out.setdefault("sgemm_f32", {}).setdefault("torch.matmul", {})[str(n)] = us
        print(f"torch.matmul fp32 {n}: {us:.1f} us, {2 * n**3 / us / 1e6:.1f} TFLOP/s",
              file=sys.stderr)
        del a, b, c
        torch.cuda.empty_cache()
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
