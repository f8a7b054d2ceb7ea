"""Python-side cost per call of the bindings against torch's own dispatch, on tiny inputs where
the call path, not the kernel, decides: wall time per call over many back-to-back calls (the
device synchronized only before and after each batch), best of several batches.

    python3 host/gpu-python/benches/overhead.py [--calls N] [--json FILE]

Rows: gk.reduce vs torch.sum on 1024 float32 (torch tensors through torch's DLPack exchange
table, the default where torch has one; through their Python attributes; through DLPack's
Python protocol); a user kernel (saxpy, 1024 elements) vs torch.add(..., alpha=, out=); softmax
of 4x256 float32 vs torch.softmax, called directly and as the torch operator
(torch.ops.gpu_kernels.softmax, torch.library's dispatch); CuPy arrays when CuPy is installed.
Each result is checked against the peer's first. `--parts` adds what single torch calls on
the bindings' Python path cost (making a 0-d tensor, reading an attribute)."""
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
    ap.add_argument("--parts", action="store_true")
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

    exchange = gk._torch_exchange()
    via = "exchange table" if exchange else "attributes (no exchange table)"
    row(f"gk.reduce(x) sum, 1024 f32, torch ({via})", lambda: gk.reduce(x), "torch.sum(x)",
        lambda: torch.sum(x))
    row("gk.reduce(x, out=o), torch", lambda: gk.reduce(x, out=s_out), "torch.sum(x)",
        lambda: torch.sum(x))
    row(f"k.saxpy(grid, block, 2.0, x, y, out), 1024 f32 ({via})",
        lambda: k.saxpy(grid, block, 2.0, x, y, out),
        "torch.add(y, x, alpha=2.0, out=out)", lambda: torch.add(y, x, alpha=2.0, out=out))
    xs = torch.rand(4, 256, device="cuda")
    torch.testing.assert_close(gk.softmax(xs), torch.softmax(xs, -1))
    row("gk.softmax(x), 4x256 f32", lambda: gk.softmax(xs), "torch.softmax(x, -1)",
        lambda: torch.softmax(xs, -1))
    import gpu_kernels.torch as gkt
    row("gkt.softmax(x) (torch.library op, with autograd), 4x256 f32", lambda: gkt.softmax(xs),
        "torch.softmax(x, -1)", lambda: torch.softmax(xs, -1))
    row("gkt.reduce(x) (torch.library op), 1024 f32", lambda: gkt.reduce(x), "torch.sum(x)",
        lambda: torch.sum(x))
    if exchange:
        gk._set_torch_exchange(False)
        row("gk.reduce(x), torch (attributes, new_empty)", lambda: gk.reduce(x), "torch.sum(x)",
            lambda: torch.sum(x))
        row("k.saxpy(...), torch (attributes)", lambda: k.saxpy(grid, block, 2.0, x, y, out),
            "torch.add(y, x, alpha=2.0, out=out)", lambda: torch.add(y, x, alpha=2.0, out=out))
        gk._set_torch_exchange(True)
    try:
        import cupy
        xc = cupy.asarray(x)
        print("| (CuPy exchange table: "
              f"{hasattr(cupy.ndarray, '__dlpack_c_exchange_api__')}) | | | | |")
        assert abs(float(gk.reduce(xc)) - float(xc.sum())) < 1e-3 * n
        row("gk.reduce(x), CuPy", lambda: gk.reduce(xc), "cupy.sum(x)", lambda: cupy.sum(xc))
    except ImportError:
        pass
    gk._set_fast_torch(False)  # last: the DLPack route for torch tensors
    assert abs(float(gk.reduce(x)) - float(torch.sum(x))) < 1e-5 * n
    row("gk.reduce(x), torch via DLPack", lambda: gk.reduce(x), "torch.sum(x)",
        lambda: torch.sum(x))
    gk._set_fast_torch(True)

    if args.parts:
        print("\n| torch call on the Python path | us per call |\n| --- | --- |")
        f32, dev = torch.float32, x.device
        raw_stream = torch._C._cuda_getCurrentRawStream
        for name, fn in [
            ("x.new_empty(())", lambda: x.new_empty(())),
            ("x.new_empty((), dtype=torch.float32)", lambda: x.new_empty((), dtype=f32)),
            ("torch.empty((), dtype=torch.float32, device=x.device)",
             lambda: torch.empty((), dtype=f32, device=dev)),
            ("x.data_ptr()", lambda: x.data_ptr()),
            ("x.is_contiguous()", lambda: x.is_contiguous()),
            ("x.shape", lambda: x.shape),
            ("torch._C._cuda_getCurrentRawStream(0)", lambda: raw_stream(0)),
        ]:
            t = per_call_us(fn, args.calls)
            rows.append({"case": name, "ours_us": round(t, 3)})
            print(f"| `{name}` | {t:.3f} |", flush=True)

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
