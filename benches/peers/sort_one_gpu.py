"""`python3 benches/peers/sort_one_gpu.py N`: cupy.ndarray.sort (in place, CUB onesweep) of 2^N random u32
keys on one GPU, the single-GPU peer of `distributed-sort`. Best of 6 (each on a fresh copy, copy not
timed), CUDA events."""
import sys
import cupy as cp

n = 1 << int(sys.argv[1])
rng = cp.random.default_rng(7)
src = rng.integers(0, 2**32, size=n, dtype=cp.uint64).astype(cp.uint32)
best = float("inf")
for _ in range(6):
    x = src.copy()
    cp.cuda.Device().synchronize()
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record()
    x.sort()
    b.record()
    b.synchronize()
    best = min(best, cp.cuda.get_elapsed_time(a, b))
print(f"cupy.ndarray.sort 2^{sys.argv[1]} u32: {best:.3f} ms ({n / best / 1e6:.2f} Gkeys/s)")
