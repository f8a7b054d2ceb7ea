"""Numba CUDA twin of kernels/twin-kernels' grid-stride block sum, timed like twins-bench.

Written the way Numba's documentation writes such kernels, with the twin suite's algorithm and
launch shape (BLOCK = 256 threads, 8 blocks per SM, n = 2^26 f32). Prints one line with the
time and the bandwidth, checks the result against numpy, and with `--ptx DIR` writes the PTX
Numba generated (to compare with ours: `cargo xtask ptx twin-kernels::block_sum_grid_stride`).

Numba 0.68 needs numpy < 2.3: carry a numpy 2.2.6 wheel and put it first on PYTHONPATH.
"""

import sys

import numpy as np
from numba import cuda, float32

BLOCK = 256
WARPS = BLOCK // 32


@cuda.jit
def block_sum_grid_stride(inp, block_sums):
    warp_sums = cuda.shared.array(WARPS, float32)
    s = float32(0.0)
    for i in range(cuda.grid(1), inp.shape[0], cuda.gridsize(1)):
        s += inp[i]
    offset = 16
    while offset > 0:
        s += cuda.shfl_down_sync(0xFFFFFFFF, s, offset)
        offset //= 2
    lane = cuda.threadIdx.x % 32
    warp = cuda.threadIdx.x // 32
    if lane == 0:
        warp_sums[warp] = s
    cuda.syncthreads()
    if warp == 0:
        s = warp_sums[lane] if lane < WARPS else float32(0.0)
        offset = 16
        while offset > 0:
            s += cuda.shfl_down_sync(0xFFFFFFFF, s, offset)
            offset //= 2
    if cuda.threadIdx.x == 0:
        block_sums[cuda.blockIdx.x] = s


def best_us(run, reps):
    """Best of five trials of `reps` launches, each timed with CUDA events (as twins-bench)."""
    for _ in range(3):
        run()
    best = float("inf")
    for _ in range(5):
        start, stop = cuda.event(), cuda.event()
        start.record()
        for _ in range(reps):
            run()
        stop.record()
        stop.synchronize()
        best = min(best, cuda.event_elapsed_time(start, stop) * 1000.0 / reps)
    return best


def main():
    n = 1 << 26
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    blocks = min((n + BLOCK - 1) // BLOCK, sms * 8)
    host = np.random.default_rng(9).uniform(-1, 1, n).astype(np.float32)
    inp = cuda.to_device(host)
    sums = cuda.device_array(blocks, dtype=np.float32)
    kernel = block_sum_grid_stride[blocks, BLOCK]
    kernel(inp, sums)
    cuda.synchronize()
    total = float(sums.copy_to_host().astype(np.float64).sum())
    want = float(host.astype(np.float64).sum())
    ok = abs(total - want) <= 1e-3 * max(1.0, abs(want)) + 1.0
    us = best_us(lambda: kernel(inp, sums), 200)
    print(
        f"numba block_sum_grid_stride n={n} blocks={blocks}: {us / 1000:.4f} ms, "
        f"{4 * n / (us * 1e-6) / 1e9:.0f} GB/s, check {'ok' if ok else 'WRONG'}"
    )
    if "--ptx" in sys.argv:
        out = sys.argv[sys.argv.index("--ptx") + 1]
        for sig, ptx in block_sum_grid_stride.inspect_asm().items():
            with open(f"{out}/numba_block_sum.ptx", "w") as f:
                f.write(ptx)


if __name__ == "__main__":
    main()
