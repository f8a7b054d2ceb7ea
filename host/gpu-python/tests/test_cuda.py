"""The bindings on CUDA arrays (torch, CuPy): results against torch, outputs of the caller's
type, ordering with torch's work on its current stream without a sync, argument errors, and a
kernel panic. Skipped, with the reason, where there is no GPU or no torch."""
import os
import subprocess
import sys

import pytest

import gpu_kernels as gk

torch = pytest.importorskip("torch", reason="SKIPPED: torch is not installed")
if not (gk.cuda_available() and torch.cuda.is_available()):
    pytest.skip("SKIPPED: needs a CUDA GPU", allow_module_level=True)

DEV = "cuda:0"


def rand(n, dtype=torch.float32, lo=0, hi=1000):
    g = torch.Generator(device=DEV).manual_seed(n)
    if dtype.is_floating_point:
        return (torch.rand(n, device=DEV, generator=g) * (hi - lo) + lo).to(dtype)
    return torch.randint(lo, hi, (n,), device=DEV, generator=g, dtype=torch.int64).to(dtype)


EPS = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24,
       torch.float64: 2.0**-53}


@pytest.mark.parametrize("n", [0, 1, 1000, 1 << 20, (1 << 22) + 17])
def test_reduce_matches_torch(n):
    for dtype in [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16,
                  torch.bfloat16]:
        x = rand(n, dtype, -1000, 1000) if not dtype.is_floating_point else rand(n, dtype, -1, 1)
        s = gk.reduce(x)
        assert isinstance(s, torch.Tensor) and s.device == x.device and s.shape == ()
        assert s.dtype == dtype
        if dtype.is_floating_point:
            # The documented bound, with the fewest blocks an H100 launches (one per SM):
            # (n / (blocks * 256) + 20) * eps * sum|x| (f16/bf16 accumulate in their precision).
            ref = float(x.double().sum())
            bound = (n / (132 * 256) + 20) * EPS[dtype] * float(x.double().abs().sum()) + 1e-6
            assert abs(float(s) - ref) <= bound, (dtype, float(s), ref, bound)
        else:
            assert int(s) == int(x.sum()), dtype  # small values: no wrap-around
        if n:
            assert float(gk.reduce(x, "max")) == float(x.max())
            assert float(gk.reduce(x, "min")) == float(x.min())


def test_scans_sort_histogram_match_torch():
    n = (1 << 21) + 5
    x = rand(n, torch.int64, -100, 100)
    assert torch.equal(gk.inclusive_scan(x), torch.cumsum(x, 0))
    e = gk.exclusive_scan(x)
    assert e[0] == 0 and torch.equal(e[1:], torch.cumsum(x, 0)[:-1])
    f = rand(n, torch.int32, 0, 8).float()  # integer values: every prefix is exact in float32
    assert torch.equal(gk.inclusive_scan(f), torch.cumsum(f.double(), 0).float())
    i = rand(n, torch.int32, -10**6, 10**6)
    assert torch.equal(gk.inclusive_scan(i, op="max"), torch.cummax(i, 0).values)
    for dtype in [torch.float32, torch.int32, torch.int64, torch.float64]:
        k = rand(n, dtype, -10**6, 10**6)
        assert torch.equal(gk.sort(k), torch.sort(k).values), dtype
    k = rand(n, torch.int32, 0, 1000)  # many equal keys: stability matters
    v = torch.arange(n, device=DEV, dtype=torch.int64)
    ks, vs = gk.sort_pairs(k, v)
    ref = torch.sort(k, stable=True)
    assert torch.equal(ks, ref.values) and torch.equal(vs, ref.indices)
    h = rand(n, torch.int32, 0, 1000)
    counts = gk.histogram_even(h, 100, 0, 1000)
    assert torch.equal(counts.to(torch.int64), torch.bincount((h // 10).long(), minlength=100))


def test_select_if_matches_torch():
    x = rand(1 << 20, torch.float32, -1, 1)
    sel, count = gk.select_if(x, ">", 0.25)
    assert isinstance(sel, torch.Tensor) and sel.device == x.device
    assert torch.equal(sel[: int(count[0])], x[x > 0.25])


def test_work_orders_with_torch_on_its_current_stream():
    """torch ops and ours in one chain on a side stream, with no synchronization in between:
    each step must see the previous one's result."""
    n = 1 << 24
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for trial in range(3):
            stale = torch.full((n,), 2.0, device=DEV)
            del stale  # its block returns to the allocator: the next tensor may reuse it
            x = torch.empty(n, device=DEV)
            x.fill_(1.0)                     # torch, queued on `side`
            total = gk.reduce(x)             # ours, on `side` after the fill (2^24: exact)
            y = (x * 3).to(torch.int32)      # torch
            prefix = gk.inclusive_scan(y)    # ours, after the multiply
            last = prefix[-1].double() + total.double()  # torch, after both
            assert float(last) == 3.0 * n + n, trial
    torch.cuda.synchronize()


def test_explicit_stream_argument():
    s = torch.cuda.Stream()
    x = rand(100000)
    torch.cuda.synchronize()
    out = torch.empty((), device=DEV)
    gk.reduce(x, out=out, stream=s)           # a torch.cuda.Stream
    s.synchronize()
    assert float(out) == pytest.approx(float(x.double().sum()), rel=1e-5)
    gk.reduce(x, out=out, stream=s.cuda_stream)  # a raw handle
    s.synchronize()


def test_user_kernel_on_torch_tensors():
    k = gk.load_kernels("example_kernels")
    n = 1 << 20
    x, y = rand(n), rand(n + 1)[:n]
    out = torch.empty_like(x)
    k.saxpy(*gk.launch_1d(n), 2.0, x, y, out)
    torch.testing.assert_close(out, 2.0 * x + y)
    # A grid-stride kernel with a small grid.
    k.saxpy(8, 128, -1.0, x, y, out)
    torch.testing.assert_close(out, y - x)


def test_user_kernel_from_ptx_files():
    root = os.environ.get("GK_PTX_DIR") or os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "target", "ptx", "sm_80")
    if not os.path.exists(os.path.join(root, "example_kernels.manifest.json")):
        pytest.skip(f"SKIPPED: no example_kernels manifest in {root}")
    k = gk.load_kernels(root, kernel_crate="example_kernels")
    x = rand(5000)
    out = torch.empty_like(x)
    k.vector_add(*gk.launch_1d(5000), x, x, out)
    torch.testing.assert_close(out, 2 * x)


def test_wrong_dtype_device_shape_raise():
    k = gk.load_kernels("example_kernels")
    x = rand(1000)
    with pytest.raises(TypeError, match="int8"):
        gk.reduce(x.to(torch.int8))
    with pytest.raises(ValueError, match="on cuda:0, but"):
        k.saxpy(1, 256, 1.0, x.cpu(), x, torch.empty_like(x))
    with pytest.raises(ValueError, match="on the CPU, but"):
        k.saxpy(1, 256, 1.0, x, x.cpu(), torch.empty_like(x))
    with pytest.raises(ValueError, match="shape"):
        gk.inclusive_scan(x, out=torch.empty(999, device=DEV))
    with pytest.raises(ValueError, match="not contiguous"):
        gk.reduce(rand(2000)[::2])
    with pytest.raises(ValueError, match="one-dimensional"):
        gk.sort(x.view(10, 100))
    with pytest.raises(TypeError, match="float64"):
        k.saxpy(1, 256, 1.0, x.double(), x, torch.empty_like(x))


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy", reason="SKIPPED: CuPy is not installed")
    x = (cupy.arange(100000) % 7).astype(cupy.float32)  # small integers: exact sums
    s = gk.reduce(x)
    assert isinstance(s, cupy.ndarray)
    assert float(s) == float(x.sum())
    k = gk.load_kernels("example_kernels")
    out = cupy.empty_like(x)
    k.saxpy(*gk.launch_1d(x.size), 2.0, x, x, out)
    assert bool((out == 3 * x).all())
    keys = cupy.random.randint(0, 1 << 30, 100000).astype(cupy.uint32)
    assert bool((gk.sort(keys) == cupy.sort(keys)).all())


PANIC = """
import torch, gpu_kernels as gk
k = gk.load_kernels("example_kernels")
x = torch.ones(10, device="cuda")
y = torch.ones(256, device="cuda")
out = torch.empty(256, device="cuda")
k.saxpy(1, 256, 2.0, x, y, out)
try:
    gk.synchronize()
except (gk.KernelPanic, gk.KernelFault) as e:
    print("CAUGHT", type(e).__name__, e)
"""


def test_kernel_panic_raises_on_the_gpu():
    # In a child process: a GPU trap leaves the CUDA context (torch's too) unusable.
    r = subprocess.run([sys.executable, "-c", PANIC], capture_output=True, text=True, timeout=120)
    assert "CAUGHT" in r.stdout, r.stdout + r.stderr
    # The default `checks = "trap"` build names the kernel in flight; `report` adds the message.
    assert "saxpy" in r.stdout, r.stdout


DLPACK_TORCH = """
import torch, gpu_kernels as gk
gk._set_fast_torch(False)  # torch tensors through DLPack (its C exchange API where torch has it)
x = torch.randint(0, 8, (1 << 20,), device="cuda").float()
assert float(gk.reduce(x)) == float(x.sum())
assert torch.equal(gk.inclusive_scan(x), torch.cumsum(x.double(), 0).float())
out = torch.empty_like(x)
gk.load_kernels("example_kernels").saxpy(*gk.launch_1d(x.numel()), 2.0, x, x, out)
assert torch.equal(out, 3 * x)
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    y = torch.empty_like(x)
    y.fill_(2.0)
    assert float(gk.reduce(y)) == 2.0 * y.numel()
print("DLPACK OK", hasattr(torch.Tensor, "__dlpack_c_exchange_api__"))
"""


def test_torch_tensors_through_dlpack():
    # In a child process, so that a failure of the protocol path cannot take the others down.
    r = subprocess.run([sys.executable, "-c", DLPACK_TORCH], capture_output=True, text=True,
                       timeout=120)
    assert "DLPACK OK" in r.stdout, r.stdout + r.stderr
    print(r.stdout.strip())
