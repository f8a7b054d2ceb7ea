"""The dense bindings (softmax, layernorm, gemm, attention) on host (NumPy) arrays, which run on
the CPU simulator: results against NumPy, and every argument check. NumPy has no bfloat16, so
the float32 row kernels and the float16 GEMM run here; attention (bfloat16, or float16 on an H100-class GPU) is
checked for its errors (tests/test_torch.py runs it on torch tensors). Small sizes: the simulator is slow."""
import numpy as np
import pytest

import gpu_kernels as gk

RNG = np.random.default_rng(11)


def test_softmax_matches_numpy():
    for shape in [(3, 5), (4, 1000), (2, 3, 130), (7,)]:
        x = (RNG.standard_normal(shape) * 4).astype(np.float32)
        y = gk.softmax(x)
        assert isinstance(y, np.ndarray) and y.shape == x.shape and y.dtype == np.float32
        e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    out = np.empty((4, 64), np.float32)
    assert gk.softmax(np.zeros((4, 64), np.float32), out=out) is out
    np.testing.assert_allclose(out, 1 / 64, rtol=1e-6)


def test_layernorm_matches_numpy():
    x = (RNG.standard_normal((6, 300)) * 3 + 1).astype(np.float32)
    gamma = RNG.standard_normal(300).astype(np.float32)
    beta = RNG.standard_normal(300).astype(np.float32)
    for eps in [1e-5, 0.5]:
        y = gk.layernorm(x, gamma, beta, eps)
        xd = x.astype(np.float64)
        mean, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
        ref = (xd - mean) / np.sqrt(var + eps) * gamma + beta
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_gemm_float16_matches_numpy():
    for m, n, k in [(33, 40, 64), (1, 1, 8), (130, 20, 24)]:
        a = (RNG.standard_normal((m, k))).astype(np.float16)
        b = (RNG.standard_normal((n, k))).astype(np.float16)
        c = gk.gemm(a, b)
        assert c.shape == (m, n) and c.dtype == np.float16
        ref = a.astype(np.float64) @ b.astype(np.float64).T
        # f32 accumulation, one rounding to f16 (2^-11 relative) of values of size ~sqrt(k).
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-3, atol=2e-3 * np.sqrt(k))


def test_dense_arguments_raise_before_launching():
    x = np.ones((4, 16), np.float32)
    with pytest.raises(TypeError, match=r"softmax: argument `x` has dtype float64; supported: float32, bfloat16"):
        gk.softmax(np.ones((4, 16)))
    with pytest.raises(ValueError, match="0-dimensional"):
        gk.softmax(np.ones((), np.float32))
    with pytest.raises(ValueError, match="not contiguous"):
        gk.softmax(np.ones((4, 32), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="16-byte boundary"):
        gk.softmax(np.ones(65, np.float32)[1:])
    with pytest.raises(ValueError, match=r"`out` has shape \[4, 15\]"):
        gk.softmax(x, out=np.empty((4, 15), np.float32))
    with pytest.raises(ValueError, match="overlaps"):
        gk.softmax(x, out=x)
    with pytest.raises(ValueError, match=r"`gamma` has shape \[15\]; it must have shape \[16\]"):
        gk.layernorm(x, np.ones(15, np.float32), np.ones(16, np.float32))
    with pytest.raises(TypeError, match="`beta` has dtype float16; supported"):
        gk.layernorm(x, np.ones(16, np.float32), np.ones(16, np.float16))
    with pytest.raises(ValueError, match="eps"):
        gk.layernorm(x, np.ones(16, np.float32), np.ones(16, np.float32), -1.0)
    a = np.ones((8, 16), np.float16)
    with pytest.raises(TypeError, match="`a` has dtype float32; supported: bfloat16, float16"):
        gk.gemm(np.ones((8, 16), np.float32), a)
    with pytest.raises(ValueError, match="`b` must be N×16"):
        gk.gemm(a, np.ones((8, 24), np.float16))
    with pytest.raises(ValueError, match="`b` has shape \\[16\\]; it must be 2-dimensional"):
        gk.gemm(a, np.ones(16, np.float16))
    with pytest.raises(ValueError, match="K = 12 is not a multiple of 8"):
        gk.gemm(np.ones((8, 12), np.float16), np.ones((8, 12), np.float16))
    q = np.ones((1, 2, 8, 64), np.float32)
    with pytest.raises(TypeError, match="attention: argument `q` has dtype float32; supported: bfloat16, float16"):
        gk.attention(q, q, q)
    # float16 attention is the Hopper (wgmma) kernel's; the simulator runs the mma.sync kernel.
    h = np.ones((1, 2, 8, 64), np.float16)
    with pytest.raises(ValueError, match="f16 attention needs a compute capability 9.0 GPU"):
        gk.attention(h, h, h)
    with pytest.raises(TypeError, match="argument `k` has dtype float32; supported: float16"):
        gk.attention(h, q, h)
    with pytest.raises(TypeError, match="`q` has dtype float32"):
        gk.attention_backward(q, q, q, q, q[..., 0], q)
