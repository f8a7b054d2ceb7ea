"""Python-side cost per call of the bindings against torch's own dispatch, on tiny inputs where
the call path, not the kernel, decides: wall time per call over many back-to-back calls (the
device synchronized only before and after each batch), best of several batches.

    python3 host/gpu-python/benches/overhead.py [--calls N] [--json FILE]

Rows: gk.reduce vs torch.sum on 1024 float32 (torch tensors through the attribute path, and
through DLPack); a user kernel (saxpy, 1024 elements) vs torch.add(..., alpha=, out=); CuPy
arrays when CuPy is installed. Each result is checked against the peer's first."""
import argparse
import json
import time

import torch

import gpu_kernels as gk


def per_call_us(fn, calls, batches=7):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--json")
    args = ap.parse_args()
    n = 1024
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    s_out = torch.empty((), device="cuda")
    k = gk.load_kernels("example_kernels")
    grid, block = gk.launch_1d(n)

    assert abs(float(gk.reduce(x)) - float(torch.sum(x))) < 1e-5 * n
    k.saxpy(grid, block, 2.0, x, y, out)
    torch.testing.assert_close(out, torch.add(y, x, alpha=2.0))

    rows = []

    def row(name, ours, peer_name, peer):
        t_ours = per_call_us(ours, args.calls)
        t_peer = per_call_us(peer, args.calls)
        r = {"case": name, "ours_us": round(t_ours, 2), "peer": peer_name,
             "peer_us": round(t_peer, 2), "ratio": round(t_ours / t_peer, 2)}
        rows.append(r)
        print(f"| {r['case']} | {r['ours_us']} | {r['peer']} | {r['peer_us']} | {r['ratio']}x |",
              flush=True)

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"{args.calls} calls per batch, best of 7 batches, microseconds per call")
    print("| case | ours | peer | peer time | ratio |")
    print("| --- | --- | --- | --- | --- |", flush=True)

    row("gk.reduce(x) sum, 1024 f32, torch", lambda: gk.reduce(x), "torch.sum(x)",
        lambda: torch.sum(x))
    row("gk.reduce(x, out=o), torch", lambda: gk.reduce(x, out=s_out), "torch.sum(x)",
        lambda: torch.sum(x))
    row("k.saxpy(grid, block, 2.0, x, y, out), 1024 f32",
        lambda: k.saxpy(grid, block, 2.0, x, y, out),
        "torch.add(y, x, alpha=2.0, out=out)", lambda: torch.add(y, x, alpha=2.0, out=out))
    try:
        import cupy
        xc = cupy.asarray(x)
        assert abs(float(gk.reduce(xc)) - float(xc.sum())) < 1e-3 * n
        row("gk.reduce(x), CuPy", lambda: gk.reduce(xc), "cupy.sum(x)", lambda: cupy.sum(xc))
    except ImportError:
        pass
    gk._set_fast_torch(False)  # last: the DLPack route for torch tensors
    assert abs(float(gk.reduce(x)) - float(torch.sum(x))) < 1e-5 * n
    row("gk.reduce(x), torch via DLPack", lambda: gk.reduce(x), "torch.sum(x)",
        lambda: torch.sum(x))

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
