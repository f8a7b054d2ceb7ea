"""Peer timing for `nbody-bench`: the same leapfrog step (kick, drift, all-pairs softened
gravity, kick) in eager torch f32, the pair interactions chunked over rows so the N x chunk x 3
differences fit in memory. Timed like the Rust side (timing.time_us). Prints JSON:
{"nbody_step": {"torch": {N: microseconds}}}."""
import json
import sys

import torch

from timing import time_us

EPS2 = 0.05 ** 2
DT = 1e-4
CHUNK = 2048


def accelerations(pos, mass):
    out = torch.empty_like(pos)
    for s in range(0, pos.shape[0], CHUNK):
        d = pos[None, :, :] - pos[s:s + CHUNK, None, :]          # chunk x N x 3
        r2 = (d * d).sum(-1) + EPS2
        w = mass[None, :] * torch.rsqrt(r2) ** 3                 # chunk x N
        out[s:s + CHUNK] = torch.einsum("ij,ijk->ik", w, d)
    return out


def main():
    out = {}
    gen = torch.Generator(device="cuda").manual_seed(1)
    for n in (16384, 65536):
        pos = torch.randn(n, 3, device="cuda", generator=gen)
        vel = torch.randn(n, 3, device="cuda", generator=gen) * 0.1
        mass = torch.full((n,), 1.0 / n, device="cuda")
        acc = accelerations(pos, mass)

        def step():
            nonlocal pos, vel, acc
            vel = vel + acc * (DT / 2)
            pos = pos + vel * DT
            acc = accelerations(pos, mass)
            vel = vel + acc * (DT / 2)

        out.setdefault("nbody_step", {}).setdefault("torch", {})[str(n)] = time_us(step)
        del pos, vel, mass, acc
        torch.cuda.empty_cache()
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
