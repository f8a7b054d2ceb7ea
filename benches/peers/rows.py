"""Peer timings for `rows-bench`: torch.softmax and torch.nn.functional.layer_norm over the
rows of a matrix, f32 and bf16, timed like the Rust side (timing.time_us). Prints JSON:
{case: {peer: {"ROWSxCOLS": microseconds}}}. Run on the GPU machine in the same call as the
bench."""
import json
import sys

import torch

from timing import time_us

SHAPES = [(16384, 8192), (4096, 4096), (16384, 1024), (1024, 32768), (256, 100000)]
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def main():
    out = {}
    gen = torch.Generator(device="cuda").manual_seed(1)
    for name, dt in DTYPES.items():
        for rows, cols in SHAPES:
            key = f"{rows}x{cols}"
            x = (torch.randn(rows, cols, device="cuda", generator=gen) * 4).to(dt)
            g = (torch.rand(cols, device="cuda", generator=gen) + 0.5).to(dt)
            b = torch.randn(cols, device="cuda", generator=gen).to(dt)
            y = torch.empty_like(x)
            out.setdefault(f"softmax_{name}", {}).setdefault("torch.softmax", {})[key] = time_us(
                lambda: torch.softmax(x, dim=-1))
            out.setdefault(f"layernorm_{name}", {}).setdefault("F.layer_norm", {})[key] = time_us(
                lambda: torch.nn.functional.layer_norm(x, (cols,), g, b, 1e-5))
            del x, g, b, y
            torch.cuda.empty_cache()
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
