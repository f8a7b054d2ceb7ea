"""Timing shared by the peer scripts: CUDA events, three warm-up calls, then the best of five
trials of the mean over enough repetitions to take >= 20 ms — the procedure of
`benches::time_us` on the Rust side, so ratios compare like with like."""
import torch


def time_us(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    once_ms = max(start.elapsed_time(end), 1e-3)
    reps = max(10, min(10000, int(20.0 / once_ms)))
    best = float("inf")
    for _ in range(5):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) * 1000.0 / reps)
    return best
