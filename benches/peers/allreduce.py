"""Peer for allreduce-bench: torch.distributed all_reduce (NCCL), one process per GPU, started
by `torchrun --nproc-per-node N benches/peers/allreduce.py [--max-log2-bytes 32] > peers.json`.
Same procedure as the Rust side: 5 warm-up calls, then the best of 5 trials of the mean over a
repetition count that depends on the size only; rank 0 prints {case: {peer: {bytes: us}}}."""
import json
import os
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
import torch
import torch.distributed as dist


def reps_for(nbytes):
    est_us = 30.0 + nbytes / 300e3
    return int(min(2000.0, max(10.0, 20000.0 / est_us)))


def main():
    max_log2 = 32
    if "--max-log2-bytes" in sys.argv:
        max_log2 = int(sys.argv[sys.argv.index("--max-log2-bytes") + 1])
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    out = {}
    for name, dtype, size in (("f32", torch.float32, 4), ("bf16", torch.bfloat16, 2)):
        case = out.setdefault(f"all_reduce_{name}", {}).setdefault("torch.distributed", {})
        for log2 in range(20, max_log2 + 1, 2):
            nbytes = 1 << log2
            buf = torch.zeros(nbytes // size, dtype=dtype, device="cuda")
            reps = reps_for(nbytes)
            for _ in range(5):
                dist.all_reduce(buf)
            torch.cuda.synchronize()
            best = float("inf")
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(5):
                start.record()
                for _ in range(reps):
                    dist.all_reduce(buf)
                end.record()
                end.synchronize()
                best = min(best, start.elapsed_time(end) * 1000.0 / reps)
            case[str(nbytes)] = best
            del buf
            torch.cuda.empty_cache()
    if dist.get_rank() == 0:
        json.dump(out, sys.stdout)
    dist.barrier()
    dist.destroy_process_group()


main()
