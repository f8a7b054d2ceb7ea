"""The torch operators (`gpu_kernels.torch`, torch.library): results against torch, attention's
gradients through autograd against scaled_dot_product_attention's, torch.library.opcheck of the
registrations (schema, fake tensors, autograd), and torch.compile(fullgraph=True) against eager.
CUDA tensors on a GPU; without one, CPU tensors on the CPU simulator (small sizes). Skipped,
with the reason, where torch is not installed."""
import pytest

torch = pytest.importorskip("torch", reason="SKIPPED: torch is not installed")

import gpu_kernels as gk  # noqa: E402
import gpu_kernels.torch as gkt  # noqa: E402

CUDA = gk.cuda_available() and torch.cuda.is_available()
DEV = "cuda:0" if CUDA else "cpu"
F = torch.nn.functional


def rand(*shape, dtype=torch.float32, seed=0, scale=1.0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    return (torch.randn(*shape, device=DEV, generator=g) * scale).to(dtype)


def rel_err(got, ref):
    got, ref = got.double(), ref.double()
    return float((got - ref).norm() / ref.norm().clamp_min(1e-30))


def test_builtin_ops_match_torch():
    n = (1 << 20) + 3 if CUDA else 3000
    x = rand(n, seed=1)
    assert torch.ops.gpu_kernels.reduce(x).item() == pytest.approx(x.double().sum().item(),
                                                                      abs=1e-3 * n ** 0.5)
    assert gkt.reduce(x, "max").item() == x.max().item()
    i = torch.randint(-100, 100, (n,), device=DEV, dtype=torch.int64)
    assert torch.equal(gkt.inclusive_scan(i), torch.cumsum(i, 0))
    e = gkt.exclusive_scan(i, "sum", 5.0)
    assert e[0] == 5 and torch.equal(e[1:], 5 + torch.cumsum(i, 0)[:-1])
    assert torch.equal(gkt.sort(x), torch.sort(x).values)
    k = torch.randint(0, 50, (n,), device=DEV, dtype=torch.int32)
    v = torch.arange(n, device=DEV, dtype=torch.int64)
    ks, vs = gkt.sort_pairs(k, v)
    ref = torch.sort(k, stable=True)
    assert torch.equal(ks, ref.values) and torch.equal(vs, ref.indices)
    h = torch.randint(0, 1000, (n,), device=DEV, dtype=torch.int32)
    counts = gkt.histogram_even(h, 10, 0.0, 1000.0)
    assert torch.equal(counts.to(torch.int64), torch.bincount((h // 100).long(), minlength=10))
    sel, count = gkt.select_if(x, ">", 0.5)
    assert torch.equal(sel[: int(count[0])], x[x > 0.5])
    # Non-contiguous inputs are copied (as torch's own operators would), not refused.
    assert torch.equal(gkt.sort(x[::2]), torch.sort(x[::2]).values)


def test_dense_ops_match_torch():
    rows, cols = (64, 4096) if CUDA else (6, 300)
    for dtype, tol in [(torch.float32, 1e-5), (torch.bfloat16, 1e-2)]:
        x = rand(rows, cols, dtype=dtype, seed=2, scale=3)
        assert rel_err(gkt.softmax(x), torch.softmax(x.float(), -1)) < tol, dtype
        assert rel_err(gkt.softmax(x.t()), torch.softmax(x.t().float(), -1)) < tol, dtype
        gamma, beta = rand(cols, dtype=dtype, seed=3), rand(cols, dtype=dtype, seed=4)
        ref = F.layer_norm(x.float(), (cols,), gamma.float(), beta.float(), 1e-5)
        assert rel_err(gkt.layernorm(x, gamma, beta, 1e-5), ref) < tol, dtype
    m, n, k = (1000, 768, 512) if CUDA else (70, 40, 64)
    for dtype in [torch.bfloat16, torch.float16]:
        a, b = rand(m, k, dtype=dtype, seed=5), rand(n, k, dtype=dtype, seed=6)
        c = gkt.gemm(a, b)
        assert c.dtype == dtype and c.shape == (m, n)
        assert rel_err(c, a.double() @ b.double().T) < (8e-3 if dtype == torch.bfloat16 else 1e-3)


def attention_case(b, h, kvh, sq, sk, d, causal, seed):
    """Our attention and its gradients against scaled_dot_product_attention's (float32 from
    the same bf16 inputs), through autograd, with one random output gradient."""
    q = rand(b, h, sq, d, dtype=torch.bfloat16, seed=seed).requires_grad_()
    k = rand(b, kvh, sk, d, dtype=torch.bfloat16, seed=seed + 1).requires_grad_()
    v = rand(b, kvh, sk, d, dtype=torch.bfloat16, seed=seed + 2).requires_grad_()
    g = rand(b, h, sq, d, seed=seed + 3)
    o = gkt.attention(q, k, v, causal=causal)
    assert o.dtype == torch.bfloat16 and o.shape == q.shape
    (o.float() * g).sum().backward()
    ours = [o.detach(), q.grad, k.grad, v.grad]
    qr, kr, vr = (t.detach().float().requires_grad_() for t in (q, k, v))
    group = h // kvh
    ref = F.scaled_dot_product_attention(qr, kr.repeat_interleave(group, 1),
                                         vr.repeat_interleave(group, 1), is_causal=causal)
    (ref * g).sum().backward()
    refs = [ref.detach(), qr.grad, kr.grad, vr.grad]
    for name, got, want in zip(["o", "dq", "dk", "dv"], ours, refs):
        assert got.dtype == torch.bfloat16 and got.shape == want.shape, name
        # bf16 inputs, outputs and (in the backward) P and dS: a few 2^-8 of relative error.
        err = rel_err(got, want)
        assert err < 2e-2, (name, (b, h, kvh, sq, sk, d, causal), err)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_gradients_match_sdpa(causal):
    shapes = ([(2, 4, 4, 300, 300, 128), (1, 8, 2, 129, 500, 64), (2, 2, 2, 77, 77, 64)]
              if CUDA else [(1, 2, 2, 70, 90, 64), (1, 4, 2, 40, 40, 64)])
    for seed, shape in enumerate(shapes):
        attention_case(*shape, causal, seed * 10)


def test_attention_lse_and_errors():
    q = rand(1, 2, 33, 64, dtype=torch.bfloat16, seed=9)
    o, lse = gkt.attention(q, q, q, return_lse=True)
    assert lse.dtype == torch.float32 and lse.shape == (1, 2, 33) and not lse.requires_grad
    s = (q.float() @ q.float().transpose(-1, -2)) / 8.0
    torch.testing.assert_close(lse, torch.logsumexp(s, -1), rtol=1e-3, atol=1e-3)
    with pytest.raises(TypeError, match="`k` has dtype float32; supported: bfloat16"):
        gkt.attention(q, q.float(), q)
    with pytest.raises(ValueError, match="head_dim 32 is not supported"):
        gkt.attention(q[..., :32].contiguous(), q[..., :32].contiguous(), q[..., :32].contiguous())
    with pytest.raises(ValueError, match="`v` has shape"):
        gkt.attention(q, q, q[:, :1].contiguous())


def hopper():
    return CUDA and torch.cuda.get_device_capability() == (9, 0)


def test_attention_float16_and_head_dim_256():
    """float16 and head_dim 256 run the Hopper kernel: against float32 SDPA on an H100-class
    GPU, and a clear error (nothing launched) elsewhere."""
    cases = [(torch.float16, 64), (torch.float16, 128), (torch.bfloat16, 256), (torch.float16, 256)]
    for seed, (dtype, d) in enumerate(cases):
        q = rand(2, 4, 200, d, dtype=dtype, seed=seed)
        k = rand(2, 2, 300, d, dtype=dtype, seed=seed + 1)
        v = rand(2, 2, 300, d, dtype=dtype, seed=seed + 2)
        if not hopper():
            with pytest.raises(ValueError, match="compute capability 9.0"):
                gk.attention(q, k, v)
            continue
        for causal in [False, True]:
            o, lse = gk.attention(q, k, v, causal=causal, return_lse=True)
            assert o.dtype == dtype and o.shape == q.shape and lse.dtype == torch.float32
            ref = F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(2, 1),
                                                 v.float().repeat_interleave(2, 1),
                                                 is_causal=causal)
            err = rel_err(o, ref)
            assert err < (1e-2 if dtype == torch.float16 else 2e-2), (dtype, d, causal, err)


def test_opcheck():
    """torch.library's own check of each registration: schema, fake (meta) implementation
    against the real one, autograd registration, AOT dispatch."""
    x = rand(8, 64, seed=12)
    torch.library.opcheck(torch.ops.gpu_kernels.softmax.default, (x.requires_grad_(),))
    torch.library.opcheck(torch.ops.gpu_kernels.reduce.default, (rand(100, seed=13), "sum"))
    a = rand(40, 64, dtype=torch.bfloat16, seed=14)
    torch.library.opcheck(torch.ops.gpu_kernels.gemm.default, (a, a))
    q = rand(1, 2, 40, 64, dtype=torch.bfloat16, seed=15).requires_grad_()
    torch.library.opcheck(torch.ops.gpu_kernels.attention.default, (q, q, q, True))


def test_compile_fullgraph_matches_eager():
    def f(x, gamma, beta, a, b, q, k, v):
        y = gkt.layernorm(gkt.softmax(x * 2.0) + 1.0, gamma, beta, 1e-5)
        c = gkt.gemm(a, b).float().relu()
        o = gkt.attention(q, k, v, causal=True)
        return y, c, o.float().square().sum(), gkt.reduce(y)

    args = [rand(16, 256, seed=20), rand(256, seed=21), rand(256, seed=22),
            rand(64, 64, dtype=torch.bfloat16, seed=23), rand(32, 64, dtype=torch.bfloat16, seed=24)]
    qkv = [rand(1, 2, 64, 64, dtype=torch.bfloat16, seed=25 + i).requires_grad_() for i in range(3)]
    # Inductor generates C++ for CPU tensors and Triton for CUDA ones; on the simulator the
    # AOT-autograd graph (fake tensors, the functionalized graph) without a code generator.
    compiled = torch.compile(f, fullgraph=True, backend="inductor" if CUDA else "aot_eager")
    eager = f(*args, *qkv)
    eager[2].backward()
    grads = [t.grad.clone() for t in qkv]
    for t in qkv:
        t.grad = None
    got = compiled(*args, *qkv)
    got[2].backward()
    for e, c in zip(eager, got):
        torch.testing.assert_close(c, e, rtol=1e-5, atol=1e-5)
    for e, t in zip(grads, qkv):
        torch.testing.assert_close(t.grad, e, rtol=0, atol=0)  # the same deterministic kernels


def test_exchange_table_and_attributes_agree():
    """torch tensors are read (and outputs made) through torch's DLPack exchange table where
    torch has one, else through their attributes: both give the same results."""
    x = rand(5000, seed=30)
    k = gk.load_kernels("example_kernels")
    got = []
    try:
        for on in [True, False]:
            gk._set_torch_exchange(on)
            out = torch.empty_like(x)
            k.saxpy(*gk.launch_1d(x.numel()), 2.0, x, x, out)
            s = gk.reduce(x)
            assert s.shape == () and s.device == x.device and s.dtype == x.dtype
            with pytest.raises(TypeError, match="complex64"):
                gk.reduce(x.to(torch.complex64))
            got.append((out, s))
    finally:
        gk._set_torch_exchange(True)
    assert torch.equal(got[0][0], 3 * x) and torch.equal(got[1][0], 3 * x)
    assert torch.equal(got[0][1], got[1][1])
    print("torch exchange table:", gk._torch_exchange())
