"""Timing shared by the peer scripts: CUDA events, three warm-up calls, then the best of five
trials of the mean over enough repetitions to take >= 20 ms — the procedure of
`benches::time_us` on the Rust side, so ratios compare like with like."""
import sys
import time

import torch


class Fresh:
    """A call that consumes its input in place (an in-place sort): `restore` puts the input back
    before every call, outside the timed region, so each call works on the same fresh data."""

    def __init__(self, restore, run):
        self.restore, self.run = restore, run


def _time_us_fresh(call):
    """`time_us` for a `Fresh` call: each call between its own pair of events, the restore
    before it untimed; the mean over the repetitions, best of five trials."""
    def trial(reps):
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(reps)]
        for start, end in events:
            call.restore()
            start.record()
            call.run()
            end.record()
        torch.cuda.synchronize()
        return sum(start.elapsed_time(end) for start, end in events) * 1000.0 / reps

    trial(3)
    once_ms = max(trial(1) / 1000.0, 1e-3)
    reps = max(10, min(2000, int(20.0 / once_ms)))
    return min(trial(reps) for _ in range(5))


def time_us(fn, warm_s=0.0):
    """Mean microseconds per call of `fn`; with `warm_s`, after running it that many seconds
    untimed (`benches::time_us_warm`: every row timed at the GPU's sustained clock, not the
    higher one an idle GPU starts at)."""
    if isinstance(fn, Fresh):
        return _time_us_fresh(fn)
    start_s = time.perf_counter()
    while time.perf_counter() - start_s < warm_s:
        for _ in range(4):
            fn()
        torch.cuda.synchronize()
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


def sizes(max_log2):
    """Problem sizes 2^10, 2^12, … 2^max_log2, four of them with --quick, or the exponents given
    with --log2 K1,K2,…"""
    if "--log2" in sys.argv:
        return [1 << int(k) for k in sys.argv[sys.argv.index("--log2") + 1].split(",")]
    if "--quick" in sys.argv:
        return [1 << k for k in (10, 16, 20, 24)]
    return [1 << k for k in range(10, max_log2 + 1, 2)]


class Results(dict):
    """{case: {peer: {size: microseconds}}}, filled by `add`, dumped as JSON."""

    def __init__(self, sizes):
        super().__init__()
        self.sizes = sizes

    def add(self, case, peer, fn_for_size):
        """Times `fn_for_size(n)()` for every size; frees its memory between sizes. A peer that
        fails (a function missing from this version, an argument it refuses) is reported on
        stderr and left out, so one such peer does not cost the others' figures."""
        for n in self.sizes:
            try:
                fn = fn_for_size(n)
                self.setdefault(case, {}).setdefault(peer, {})[str(n)] = time_us(fn)
                del fn
            except Exception as e:
                print(f"peer {peer} of {case} at {n}: {type(e).__name__}: {e}", file=sys.stderr)
                return
            finally:
                torch.cuda.empty_cache()
