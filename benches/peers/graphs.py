"""Peer timing for `graph-bench`: the same launch-bound work in torch, eager and captured into
a `torch.cuda.CUDAGraph`, timed like the Rust side (timing.time_us). Prints JSON:
{"launch_1000": {"torch_eager"|"torch_graph": {256: us per kernel}},
 "heat_step": {"torch_eager"|"torch_graph": {n: us per step}}}.

launch_1000: 1000 in-place `y.add_(x, alpha=2)` on 256 floats (one kernel each).
heat_step: 100 explicit steps of the 1-D heat equation, each written as
`v[1:-1] = u[1:-1] + a * (u[:-2] - 2 u[1:-1] + u[2:])` with `torch.add`/`mul` into preallocated
buffers (several kernels per step: that is what eager torch launches for it)."""
import json

import torch

from timing import time_us

KERNELS = 1000
STEPS = 100
ALPHA = 0.25


def graphed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # warm-up outside the graph (allocator, kernels)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def main():
    out = {"launch_1000": {}, "heat_step": {}}
    x = torch.ones(256, device="cuda")
    y = torch.full((256,), 2.0, device="cuda")

    def launches():
        for _ in range(KERNELS):
            y.add_(x, alpha=2.0)

    out["launch_1000"]["torch_eager"] = {"256": time_us(launches) / KERNELS}
    out["launch_1000"]["torch_graph"] = {"256": time_us(graphed(launches)) / KERNELS}

    for log2 in (12, 16, 20):
        n = 1 << log2
        u = torch.arange(n, device="cuda", dtype=torch.float32) % 17
        v = u.clone()
        tmp = torch.empty(n - 2, device="cuda")

        def step(a, b):
            # tmp = a[:-2] - 2 a[1:-1] + a[2:]; b[1:-1] = a[1:-1] + ALPHA * tmp
            torch.add(a[:-2], a[2:], out=tmp)
            tmp.add_(a[1:-1], alpha=-2.0)
            torch.add(a[1:-1], tmp, alpha=ALPHA, out=b[1:-1])

        def steps():
            for _ in range(STEPS // 2):
                step(u, v)
                step(v, u)

        out["heat_step"].setdefault("torch_eager", {})[str(n)] = time_us(steps) / STEPS
        out["heat_step"].setdefault("torch_graph", {})[str(n)] = time_us(graphed(steps)) / STEPS
    print(json.dumps(out))


if __name__ == "__main__":
    main()
