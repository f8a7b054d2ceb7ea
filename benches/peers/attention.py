"""Peer timings for `attention-bench`: torch.nn.functional.scaled_dot_product_attention on bf16
[batch, heads, seq, head_dim] tensors (its default backend on an H100 is flash attention), timed
with CUDA events exactly like the Rust side. Prints JSON {case: {peer: {seq: microseconds}}} with
the same case names as the bench (e.g. "d64_b4_h16", "d128_b4_h8_causal"); peer
"torch.sdpa.backward" times the gradients of q, k, v (torch.autograd.grad) from one forward;
peer "torch.sdpa.f16" the forward on the same values as float16 (the bench's f16 rows);
peers "torch.sdpa.flash" / "torch.sdpa.cudnn" (and their ".backward") SDPA held to one backend
(torch.nn.attention.sdpa_kernel: torch's own FlashAttention-2 kernels, cuDNN's), so the bench
compares with the fastest backend, not only the one SDPA picks; and, unless --no-jax, JAX's
cuDNN attention ("jax.cudnn", "jax.cudnn.backward"; attention_jax.py in its own process, merged
into this output).
With --tokens16k (or --d256-varlen: head dimension 256 and the variable-length cases only) also
the variable-length cases "d64_h32_varlen16k" ...: 16384 tokens in the ragged sequences
VARLEN_LENS, peers "torch.sdpa.nested" (SDPA on jagged nested tensors, its varlen path),
"torch.sdpa.nested.f16", and "torch.sdpa.padded" (the batch padded to the longest sequence,
no key-padding mask: a mask would move SDPA off its flash kernel)."""
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from timing import time_us as _time_us


# --warm-ms N: untimed running before each row (default 200 ms), as attention-bench's flag.
WARM_S = 0.2
if "--warm-ms" in sys.argv:
    WARM_S = int(sys.argv[sys.argv.index("--warm-ms") + 1]) / 1000.0


def time_us(fn):
    """Each SDPA row after `WARM_S` of untimed running, as `attention-bench` times ours."""
    return _time_us(fn, warm_s=WARM_S)

# (head_dim, batch, heads, K/V heads) and sequence lengths: keep in sync with
# attention_bench.rs. The last is grouped-query attention (Llama 3 8B's 32 query heads on 8 K/V
# heads): SDPA with enable_gqa=True ("torch.sdpa") and on K/V repeated to every query head
# beforehand ("torch.sdpa.expanded"; its backward includes the repeat's gradient).
CONFIGS = [(64, 4, 16, 16), (128, 4, 8, 8), (128, 2, 32, 8)]
SEQS = [1024, 4096, 8192]
if "--quick" in sys.argv:
    SEQS = [1024, 4096]
# --tokens16k: FlashAttention-3's sweep, 16k tokens (batch = 16384 / seq), hidden size 2048
# (heads = 2048 / head_dim), forward only unless --backward; case names "d64_h32_t16k" (keep in sync with
# attention_bench.rs).
D256_VARLEN = "--d256-varlen" in sys.argv
TOKENS16K = "--tokens16k" in sys.argv or D256_VARLEN
if TOKENS16K:
    CONFIGS = [(64, 0, 32, 32), (128, 0, 16, 16), (256, 0, 8, 8)]
    SEQS = [1024, 2048, 4096, 8192, 16384]
if D256_VARLEN:
    CONFIGS = [(256, 0, 8, 8)]
# --backward: the backward rows only ("torch.sdpa.backward"); with --tokens16k the sweep's
# head dimensions 64 and 128 (the shapes attention-bench --tokens16k --backward times).
BACKWARD_ONLY = "--backward" in sys.argv
if BACKWARD_ONLY:
    CONFIGS = [c for c in CONFIGS if c[0] != 256]
# --head-dim D (repeatable): only those head dimensions; --no-varlen: no variable-length cases
# (as attention_bench.rs).
HEAD_DIMS = [int(sys.argv[i + 1]) for i, a in enumerate(sys.argv) if a == "--head-dim"]
if HEAD_DIMS:
    CONFIGS = [c for c in CONFIGS if c[0] in HEAD_DIMS]
NO_VARLEN = "--no-varlen" in sys.argv
# --seq N (repeatable): only these sequence lengths; --causal yes|no: only those cases.
ONLY_SEQS = [int(sys.argv[i + 1]) for i, a in enumerate(sys.argv) if a == "--seq"]
if ONLY_SEQS:
    SEQS = [s for s in SEQS if s in ONLY_SEQS]
# --no-f16: no float16 rows (for attention-bench --defaults-only, which times bf16 only).
NO_F16 = "--no-f16" in sys.argv
CAUSAL = (False, True)
if "--causal" in sys.argv:
    CAUSAL = (sys.argv[sys.argv.index("--causal") + 1] == "yes",)
# The variable-length cases (keep in sync with attention_bench.rs): sequence lengths, 16384
# tokens, and (head_dim, heads).
VARLEN_LENS = [3000, 517, 1, 1300, 4096, 129, 2222, 777, 64, 2500, 1778]
VARLEN_CONFIGS = [(64, 32), (128, 16), (256, 8)]


def sdpa(q, k, v, causal, gqa):
    """SDPA; `enable_gqa` (torch 2.5+) only passed for grouped-query shapes."""
    if gqa:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


# SDPA held to one backend: (peer name, backend). Grouped-query shapes too where the backend
# takes them (a backend that refuses a shape is reported on stderr and left out).
BACKENDS = [("torch.sdpa.flash", SDPBackend.FLASH_ATTENTION), ("torch.sdpa.cudnn", SDPBackend.CUDNN_ATTENTION)]


def backend_times(fwd, bwd, q, k, v, causal, gqa, s, case_label):
    """Forward and backward times of SDPA under each of `BACKENDS`, into `fwd[name][seq]` and
    `bwd[name][seq]`."""
    for name, backend in BACKENDS:
        try:
            with sdpa_kernel(backend):
                if not BACKWARD_ONLY:
                    fwd.setdefault(name, {})[str(s)] = time_us(lambda: sdpa(q, k, v, causal, gqa))
                if TOKENS16K and not BACKWARD_ONLY:
                    continue
                qg, kg, vg = (t.detach().requires_grad_(True) for t in (q, k, v))
                o = sdpa(qg, kg, vg, causal, gqa)
                g = torch.rand_like(o)
                bwd.setdefault(name, {})[str(s)] = time_us(
                    lambda: torch.autograd.grad(o, (qg, kg, vg), g, retain_graph=True)
                )
                del qg, kg, vg, o, g
        except Exception as e:  # this backend refuses the shape or is missing (reported)
            print(f"attention.py: {case_label} seq {s} {name}: {type(e).__name__}: {e}", file=sys.stderr)
        torch.cuda.empty_cache()


def case_name(d, b, h, kv_heads, causal):
    if TOKENS16K:
        return f"d{d}_h{h}_t16k" + ("_causal" if causal else "")
    gqa = "" if kv_heads == h else f"_kv{kv_heads}"
    return f"d{d}_b{b}_h{h}{gqa}" + ("_causal" if causal else "")


def main():
    out = {}
    gen = torch.Generator(device="cuda").manual_seed(1)
    for d, b, h, kv_heads in CONFIGS:
        gqa = kv_heads != h
        for causal in CAUSAL:
            times, backward, times16, expanded, expanded_backward = {}, {}, {}, {}, {}
            by_backend, by_backend_backward = {}, {}
            for s in SEQS:
                if TOKENS16K:
                    b = 16384 // s
                q, k, v = (
                    (torch.rand(b, heads, s, d, device="cuda", generator=gen, dtype=torch.float32) * 2 - 1)
                    .to(torch.bfloat16)
                    for heads in (h, kv_heads, kv_heads)
                )
                if not BACKWARD_ONLY:
                    times[str(s)] = time_us(lambda: sdpa(q, k, v, causal, gqa))
                backend_times(
                    by_backend, by_backend_backward, q, k, v, causal, gqa, s,
                    case_name(d, b, h, kv_heads, causal),
                )
                if gqa and not BACKWARD_ONLY:
                    group = h // kv_heads
                    ke, ve = (t.repeat_interleave(group, dim=1) for t in (k, v))
                    expanded[str(s)] = time_us(
                        lambda: F.scaled_dot_product_attention(q, ke, ve, is_causal=causal)
                    )
                    del ke, ve
                    for t in (q, k, v):
                        t.requires_grad_(True)
                    ke, ve = (t.repeat_interleave(group, dim=1) for t in (k, v))
                    o = F.scaled_dot_product_attention(q, ke, ve, is_causal=causal)
                    g = torch.rand_like(o)
                    expanded_backward[str(s)] = time_us(
                        lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
                    )
                    del ke, ve, o, g
                    q, k, v = (t.detach() for t in (q, k, v))
                if not NO_F16 and not gqa and not BACKWARD_ONLY:
                    q16, k16, v16 = (t.to(torch.float16) for t in (q, k, v))
                    times16[str(s)] = time_us(
                        lambda: F.scaled_dot_product_attention(q16, k16, v16, is_causal=causal)
                    )
                    del q16, k16, v16
                if TOKENS16K and not BACKWARD_ONLY:
                    del q, k, v
                    torch.cuda.empty_cache()
                    continue
                # The backward alone: gradients of q, k, v from one forward's graph.
                for t in (q, k, v):
                    t.requires_grad_(True)
                o = sdpa(q, k, v, causal, gqa)
                g = torch.rand_like(o)
                backward[str(s)] = time_us(
                    lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
                )
                del q, k, v, o, g
                torch.cuda.empty_cache()
            case = out[case_name(d, b, h, kv_heads, causal)] = {}
            for name, t in (
                ("torch.sdpa", times),
                ("torch.sdpa.f16", times16),
                ("torch.sdpa.backward", backward),
                ("torch.sdpa.expanded", expanded),
                ("torch.sdpa.expanded.backward", expanded_backward),
            ):
                if t:
                    case[name] = t
            case.update(by_backend)
            case.update({f"{name}.backward": t for name, t in by_backend_backward.items()})
    if TOKENS16K and not NO_VARLEN and not BACKWARD_ONLY:
        varlen(out, gen)
    if "--no-jax" not in sys.argv:
        jax_peers(out)
    json.dump(out, sys.stdout, indent=1)


def jax_peers(out):
    """Merges attention_jax.py's timings (same arguments, its own process: JAX and torch each
    keep their own GPU memory pool) into `out`; a failure there is reported, not fatal."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention_jax.py")
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    torch.cuda.empty_cache()
    run = subprocess.run([sys.executable, script] + sys.argv[1:], env=env, capture_output=True, text=True)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print(f"attention.py: attention_jax.py failed (exit {run.returncode}); no JAX peers", file=sys.stderr)
        return
    for case, peers in json.loads(run.stdout).items():
        out.setdefault(case, {}).update(peers)


def varlen(out, gen):
    total = sum(VARLEN_LENS)
    for d, h in VARLEN_CONFIGS:
        for causal in (False, True):
            case = f"d{d}_h{h}_varlen16k" + ("_causal" if causal else "")
            peers = out.setdefault(case, {})
            q, k, v = (
                (torch.rand(total, h, d, device="cuda", generator=gen) * 2 - 1).to(torch.bfloat16)
                for _ in range(3)
            )
            for name, dtype in (("torch.sdpa.nested", torch.bfloat16), ("torch.sdpa.nested.f16", torch.float16)):
                try:
                    # [total, h, d] split into sequences -> jagged [B, j, h, d] -> [B, h, j, d].
                    nq, nk, nv = (
                        torch.nested.nested_tensor(
                            list(t.to(dtype).split(VARLEN_LENS)), layout=torch.jagged
                        ).transpose(1, 2)
                        for t in (q, k, v)
                    )
                    peers[name] = {
                        str(total): time_us(
                            lambda: F.scaled_dot_product_attention(nq, nk, nv, is_causal=causal)
                        )
                    }
                    del nq, nk, nv
                except Exception as e:  # an older torch: no jagged SDPA (reported, not hidden)
                    print(f"attention.py: {case} {name}: {e}", file=sys.stderr)
            # Padded to the longest sequence: [B, h, max, d].
            b, m = len(VARLEN_LENS), max(VARLEN_LENS)
            pq, pk, pv = (
                (torch.rand(b, h, m, d, device="cuda", generator=gen) * 2 - 1).to(torch.bfloat16)
                for _ in range(3)
            )
            peers["torch.sdpa.padded"] = {
                str(total): time_us(lambda: F.scaled_dot_product_attention(pq, pk, pv, is_causal=causal))
            }
            del q, k, v, pq, pk, pv
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
