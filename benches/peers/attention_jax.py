"""JAX's cuDNN attention as a peer of `attention-bench`: `jax.nn.dot_product_attention(...,
implementation="cudnn")` on bf16 [batch, seq, heads, head_dim] arrays (JAX's layout), for the
shapes and case names of attention.py (same command-line options; attention.py runs this script
in its own process and merges its JSON unless --no-jax). Peers "jax.cudnn" (the forward) and
"jax.cudnn.backward" (the gradients of q, k, v from one forward's residuals: `jax.vjp`, the
pullback jitted on its own, so the forward is not timed again). Grouped-query shapes pass K/V
with fewer heads, as JAX takes them. The variable-length cases are not run here.

JAX has no CUDA events: a row's time is the wall-clock mean over enough back-to-back calls to
take >= 20 ms, the best of five such trials, after the same untimed warm-up as attention.py's
rows. The calls are dispatched asynchronously, so the queue stays full and the mean is the GPU's
time per call whenever a call takes longer on the GPU than its dispatch (tens of microseconds;
every row here takes longer)."""
import json
import sys
import time

import jax
import jax.numpy as jnp

from attention import BACKWARD_ONLY, CAUSAL, CONFIGS, SEQS, TOKENS16K, WARM_S, case_name


def time_us(fn):
    """Mean microseconds per call of `fn` (it returns JAX arrays), as described above."""
    start_s = time.perf_counter()
    while time.perf_counter() - start_s < WARM_S:
        for _ in range(4):
            r = fn()
        jax.block_until_ready(r)
    for _ in range(3):
        r = fn()
    jax.block_until_ready(r)
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    once_ms = max((time.perf_counter() - t0) * 1000.0, 1e-3)
    reps = max(10, min(10000, int(20.0 / once_ms)))
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            r = fn()
        jax.block_until_ready(r)
        best = min(best, (time.perf_counter() - t0) * 1e6 / reps)
    return best


def main():
    out = {}
    key = jax.random.PRNGKey(1)
    for d, b, h, kv_heads in CONFIGS:
        for causal in CAUSAL:
            fwd_times, bwd_times = {}, {}
            for s in SEQS:
                if TOKENS16K:
                    b = 16384 // s
                key, kq, kk, kv = jax.random.split(key, 4)
                q, k, v = (
                    (jax.random.uniform(r, (b, s, heads, d), jnp.float32) * 2 - 1).astype(jnp.bfloat16)
                    for r, heads in ((kq, h), (kk, kv_heads), (kv, kv_heads))
                )

                def attend(q, k, v):
                    return jax.nn.dot_product_attention(q, k, v, is_causal=causal, implementation="cudnn")

                try:
                    if not BACKWARD_ONLY:
                        forward = jax.jit(attend)
                        fwd_times[str(s)] = time_us(lambda: forward(q, k, v))
                    if not (TOKENS16K and not BACKWARD_ONLY):
                        o, pullback = jax.vjp(attend, q, k, v)
                        g = jax.random.uniform(key, o.shape, jnp.float32).astype(jnp.bfloat16)
                        backward = jax.jit(lambda pullback, g: pullback(g))
                        bwd_times[str(s)] = time_us(lambda: backward(pullback, g))
                        del o, pullback, g
                except Exception as e:  # cuDNN refuses the shape, or no cuDNN (reported)
                    label = case_name(d, b, h, kv_heads, causal)
                    print(f"attention_jax.py: {label} seq {s}: {type(e).__name__}: {e}", file=sys.stderr)
                del q, k, v
            case = out[case_name(d, b, h, kv_heads, causal)] = {}
            for name, t in (("jax.cudnn", fwd_times), ("jax.cudnn.backward", bwd_times)):
                if t:
                    case[name] = t
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
