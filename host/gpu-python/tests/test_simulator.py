"""The bindings on host (NumPy) arrays, which run on the CPU simulator: results against NumPy,
and every argument check. Runs in CI without a GPU; sizes stay small (the simulator is slow)."""
import numpy as np
import pytest

import gpu_kernels as gk

RNG = np.random.default_rng(7)


def test_reduce_matches_numpy():
    for dtype in [np.float32, np.float64, np.int32, np.uint32, np.int64, np.uint64]:
        x = (RNG.random(5000) * 1000).astype(dtype)
        for op, ref in [("sum", x.sum()), ("min", x.min()), ("max", x.max())]:
            got = gk.reduce(x, op=op)
            assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == x.dtype
            if np.issubdtype(dtype, np.floating):
                assert got == pytest.approx(ref, rel=1e-5), (dtype, op)
            else:
                assert got == ref, (dtype, op)


def test_reduce_float16_and_shapes():
    x = RNG.random((30, 40)).astype(np.float16)  # any contiguous shape: all elements
    assert float(gk.reduce(x)) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-2)
    assert gk.reduce(np.zeros(0, np.float32)) == 0  # the identity
    assert gk.reduce(np.zeros(0, np.int32), op="min") == np.iinfo(np.int32).max
    out = np.zeros((), np.float32)
    assert gk.reduce(np.ones(100, np.float32), out=out) is out and out == 100


def test_scans_match_numpy():
    for dtype in [np.float32, np.float64, np.int32, np.uint32, np.int64, np.uint64]:
        x = (RNG.random(3000) * 100).astype(dtype)
        inc = gk.inclusive_scan(x)
        exc = gk.exclusive_scan(x)
        ref = np.cumsum(x, dtype=dtype)
        if np.issubdtype(dtype, np.floating):
            np.testing.assert_allclose(inc, ref, rtol=1e-4)
            np.testing.assert_allclose(exc[1:], ref[:-1], rtol=1e-4)
        else:
            np.testing.assert_array_equal(inc, ref)
            np.testing.assert_array_equal(exc[1:], ref[:-1])
        assert exc[0] == 0
    x = RNG.integers(-1000, 1000, 2000).astype(np.int32)
    np.testing.assert_array_equal(gk.inclusive_scan(x, op="max"), np.maximum.accumulate(x))
    np.testing.assert_array_equal(gk.inclusive_scan(x, op="min"), np.minimum.accumulate(x))
    e = gk.exclusive_scan(x, op="sum", init=5)
    assert e[0] == 5 and e[-1] == 5 + x[:-1].sum()
    f = RNG.random(1000).astype(np.float32)
    np.testing.assert_array_equal(gk.inclusive_scan(f, op="max"), np.maximum.accumulate(f))


def test_sort_matches_numpy():
    for dtype in [np.uint32, np.int32, np.float32, np.uint64, np.int64, np.float64]:
        if np.issubdtype(dtype, np.floating):
            k = (RNG.standard_normal(10000) * 1e3).astype(dtype)
        else:
            info = np.iinfo(dtype)
            k = RNG.integers(info.min, info.max, 10000, dtype=dtype, endpoint=True)
        s = gk.sort(k)
        np.testing.assert_array_equal(s, np.sort(k))
    assert gk.sort(np.zeros(0, np.uint32)).shape == (0,)


def test_sort_pairs_is_stable():
    k = RNG.integers(0, 50, 9000).astype(np.int32)  # many equal keys
    for vdtype in [np.uint32, np.int64, np.float32]:
        v = np.arange(9000).astype(vdtype)
        ks, vs = gk.sort_pairs(k, v)
        order = np.argsort(k, kind="stable")
        np.testing.assert_array_equal(ks, k[order])
        np.testing.assert_array_equal(vs, v[order])
        assert vs.dtype == vdtype


def test_histogram_matches_numpy():
    x = RNG.integers(0, 1000, 20000).astype(np.int32)
    counts = gk.histogram_even(x, 10, 0, 1000)
    ref, _ = np.histogram(x, bins=10, range=(0, 1000))
    assert counts.dtype == np.uint32
    np.testing.assert_array_equal(counts, ref)
    # Samples outside [lower, upper) are not counted.
    f = np.array([-1.0, 0.0, 0.5, 0.99, 1.0, 2.0], np.float32)
    np.testing.assert_array_equal(gk.histogram_even(f, 2, 0.0, 1.0), [1, 2])


def test_select_if_matches_numpy():
    x = RNG.integers(-100, 100, 7000).astype(np.int64)
    for op, keep in [(">", x > 5), ("<=", x <= -3), ("==", x == 0), ("!=", x != 0)]:
        sel, count = gk.select_if(x, op, {">": 5, "<=": -3}.get(op, 0))
        assert sel.shape == x.shape and count.shape == (1,) and count.dtype == np.uint32
        np.testing.assert_array_equal(sel[: int(count[0])], x[keep])
    f = RNG.random(3000).astype(np.float32)
    sel, count = gk.select_if(f, ">=", 0.5)
    np.testing.assert_array_equal(sel[: int(count[0])], f[f >= 0.5])
    with pytest.raises(ValueError, match="op="):
        gk.select_if(x, "~", 0)


def test_wrong_arguments_raise_before_launching():
    x = np.arange(100, dtype=np.float32)
    with pytest.raises(TypeError, match="dtype int8"):
        gk.reduce(x.astype(np.int8))
    with pytest.raises(ValueError, match="not contiguous"):
        gk.reduce(x[::2])
    with pytest.raises(ValueError, match="op="):
        gk.reduce(x, op="prod")
    with pytest.raises(TypeError, match="not an array"):
        gk.reduce([1.0, 2.0])
    with pytest.raises(ValueError, match="one-dimensional"):
        gk.inclusive_scan(x.reshape(10, 10))
    with pytest.raises(TypeError, match="float64"):
        gk.inclusive_scan(x.astype(np.float64), op="max")  # min/max scans: float32, int32
    with pytest.raises(ValueError, match="shape"):
        gk.inclusive_scan(x, out=np.zeros(99, np.float32))
    with pytest.raises(TypeError, match="dtype"):
        gk.inclusive_scan(x, out=np.zeros(100, np.float64))
    ro = np.zeros(100, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gk.inclusive_scan(x, out=ro)
    with pytest.raises(ValueError, match="overlaps"):
        gk.inclusive_scan(x, out=x)
    with pytest.raises(ValueError, match="one value per key"):
        gk.sort_pairs(x.astype(np.uint32), np.zeros(5, np.uint32))
    with pytest.raises(ValueError, match="bins"):
        gk.histogram_even(x, 0, 0.0, 1.0)
    with pytest.raises(ValueError, match="lower must be below upper"):
        gk.histogram_even(x, 4, 1.0, 0.0)


def test_builtin_kernel_crate():
    k = gk.load_kernels("example_kernels")
    assert "saxpy" in k.kernels and k.name == "example_kernels"
    assert "saxpy" in dir(k)
    n = 3000
    x = RNG.random(n).astype(np.float32)
    y = RNG.random(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    grid, block = gk.launch_1d(n, block=128)
    assert (grid, block) == (24, 128)
    k.saxpy(grid, block, 2.0, x, y, out)
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6)
    # A 2-D array passes flat; a grid smaller than the data is fine for a grid-stride loop.
    k.vector_add(*gk.launch_1d(n), x.reshape(30, 100), y, out)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
    assert gk.launch_2d(100, 50, block=(16, 8)) == ((7, 7), (16, 8))


def test_kernel_arguments_are_checked():
    k = gk.load_kernels("example_kernels")
    x = np.ones(256, np.float32)
    out = np.zeros(256, np.float32)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        k.saxpy(1, 256, 2.0, x, out)
    with pytest.raises(TypeError, match="float64; the kernel takes float32"):
        k.saxpy(1, 256, 2.0, x.astype(np.float64), x, out)
    with pytest.raises(TypeError, match="alpha"):
        k.saxpy(1, 256, "two", x, x, out)
    ro = np.zeros(256, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        k.saxpy(1, 256, 2.0, x, x, ro)
    with pytest.raises(ValueError, match="overlaps"):
        k.saxpy(1, 256, 2.0, x, x, x)
    with pytest.raises(ValueError, match="not contiguous"):
        k.saxpy(1, 256, 2.0, np.ones(512, np.float32)[::2], x, out)
    with pytest.raises(TypeError, match="MatDims"):
        k.matmul_naive(1, 1, x, x, out, 3)
    with pytest.raises(ValueError, match="block"):
        k.saxpy(1, 2048, 2.0, x, x, out)  # over the 1024-thread limit
    with pytest.raises(AttributeError, match="no #\\[kernel\\] `nope`"):
        k.nope


def test_kernel_panic_raises_with_the_message():
    k = gk.load_kernels("example_kernels")
    x = np.ones(10, np.float32)  # shorter than out: x[10] is out of bounds
    y = np.ones(256, np.float32)
    out = np.zeros(256, np.float32)
    with pytest.raises(gk.KernelPanic, match=r"saxpy.*index out of bounds"):
        k.saxpy(1, 256, 2.0, x, y, out)
    # The simulated device stays usable.
    k.saxpy(1, 256, 2.0, y, y, out)
    assert (out == 3.0).all()


def test_load_kernels_from_a_path(tmp_path):
    import json, os
    with pytest.raises(FileNotFoundError, match="built into this module"):
        gk.load_kernels(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="no kernel manifest"):
        gk.load_kernels(str(tmp_path))
    # A crate that is not built in: callable on CUDA arrays only.
    manifest = {
        "crate_name": "other_kernels", "arch": "sm_80", "ptx_version": "7.0",
        "ptx_file": "other_kernels.ptx", "shared": [],
        "kernels": [{"name": "fill", "rust_module": "other_kernels",
                     "params": [{"name": "out", "kind": "output", "ty": "f32"}],
                     "ptx_params": [], "static_shared_bytes": 0, "uses_dynamic_shared": False}],
    }
    (tmp_path / "other_kernels.manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "other_kernels.ptx").write_text("// no entries\n")
    k = gk.load_kernels(str(tmp_path))
    assert k.kernels == {"fill": "fill(out: DisjointSlice<f32>)"}
    with pytest.raises(ValueError, match="cannot run on the CPU simulator"):
        k.fill(1, 32, np.zeros(32, np.float32))
    # The real build output, when `cargo xtask build-kernels` has run (CI runs it first).
    root = os.environ.get("GK_PTX_DIR") or os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "target", "ptx", "sm_80")
    if not os.path.exists(os.path.join(root, "example_kernels.manifest.json")):
        pytest.skip(f"SKIPPED: no example_kernels manifest in {root} (cargo xtask build-kernels example-kernels)")
    k = gk.load_kernels(root, kernel_crate="example_kernels")
    out = np.zeros(100, np.float32)
    k.saxpy(1, 128, 3.0, np.ones(100, np.float32), np.ones(100, np.float32), out)
    assert (out == 4.0).all()


def test_other_producers():
    """Arrays of libraries the bindings do not know, through the protocols alone."""

    class OldDlpack:  # a producer from before DLPack 1.0: no max_version, legacy capsules
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    class InterfaceOnly:  # only NumPy's array interface
        def __init__(self, a):
            self.__array_interface__ = a.__array_interface__

    x = np.arange(10, dtype=np.float32)
    assert gk.reduce(OldDlpack(x)) == 45  # its output is a NumPy array (host memory)
    assert gk.reduce(InterfaceOnly(x)) == 45
    with pytest.raises(TypeError, match=">f4"):
        gk.reduce(InterfaceOnly(x.astype(">f4")))
    # A read-only NumPy array (which DLPack before 1.0 cannot export) is still an input.
    ro = x.copy()
    ro.flags.writeable = False
    assert gk.reduce(ro) == 45


def test_jax_arrays():
    jnp = pytest.importorskip("jax.numpy", reason="SKIPPED: JAX is not installed")
    import jax

    # Host memory (the simulator), also where JAX's default device is a GPU.
    x = jax.device_put(jnp.arange(100, dtype=jnp.float32), jax.devices("cpu")[0])
    assert gk.reduce(x) == 4950  # JAX arrays are immutable: outputs come as NumPy arrays
    np.testing.assert_array_equal(gk.inclusive_scan(x), np.cumsum(np.arange(100), dtype=np.float32))
    out = np.zeros(100, np.float32)
    gk.load_kernels("example_kernels").saxpy(1, 128, 2.0, x, x, out)
    np.testing.assert_array_equal(out, 3 * np.asarray(x))
