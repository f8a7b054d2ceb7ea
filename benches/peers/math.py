"""Peer timings for `math-bench`: torch's and cupy's element-wise math functions (CUDA's math
library underneath, as libdevice for Numba) over 2^26 elements, with inputs from the same
ranges as the Rust side, timed with CUDA events like it (see timing.py). Prints JSON:
{case: {peer: {size: microseconds}}}. Run on the GPU machine in the same call as the bench."""
import json
import sys

import torch

from timing import Results

try:
    import cupy
except Exception:  # cupy is optional
    cupy = None
try:
    from cupyx.scipy.special import erf as cupy_erf
except Exception:
    cupy_erf = None

N = 1 << 26
# name: (torch function, cupy function, input ranges)
UNARY = {
    "sin": (torch.sin, "sin", (-100.0, 100.0)),
    "cos": (torch.cos, "cos", (-100.0, 100.0)),
    "exp": (torch.exp, "exp", (-80.0, 80.0)),
    "log": (torch.log, "log", (0.0, 1000.0)),
    "tanh": (torch.tanh, "tanh", (-5.0, 5.0)),
    "erf": (torch.erf, None, (-5.0, 5.0)),
    "erfinv": (torch.erfinv, None, (-1.0, 1.0)),
    "lgamma": (torch.lgamma, None, (0.0, 40.0)),
}
DTYPES = {"f32": torch.float32, "f64": torch.float64}
# Our f64 bench set (pow has its own cases below).
F64 = {"sin", "cos", "exp", "log", "tanh", "erf"}


def uniform(n, lo, hi, dtype):
    return torch.rand(n, device="cuda", dtype=dtype) * (hi - lo) + lo


def cases():
    out = Results([N])
    for tname, dtype in DTYPES.items():
        for name, (tfn, cname, (lo, hi)) in UNARY.items():
            if tname == "f64" and name not in F64:
                continue
            case = f"math_{name}_{tname}"

            def torch_case(n, tfn=tfn, lo=lo, hi=hi, dtype=dtype):
                x, y = uniform(n, lo, hi, dtype), torch.empty(n, device="cuda", dtype=dtype)
                return lambda: tfn(x, out=y)

            out.add(case, f"torch.{name}", torch_case)
            cfn = getattr(cupy, cname) if (cupy is not None and cname) else None
            if name == "erf":
                cfn = cupy_erf
            if cfn is not None:
                def cupy_case(n, cfn=cfn, lo=lo, hi=hi, dtype=dtype):
                    x = cupy.asarray(uniform(n, lo, hi, dtype))
                    y = cupy.empty_like(x)
                    return lambda: cfn(x, out=y)

                out.add(case, f"cupy.{name}", cupy_case)

        def torch_pow(n, dtype=dtype):
            x, y = uniform(n, 0.0, 10.0, dtype), uniform(n, -10.0, 10.0, dtype)
            z = torch.empty(n, device="cuda", dtype=dtype)
            return lambda: torch.pow(x, y, out=z)

        out.add(f"math_pow_{tname}", "torch.pow", torch_pow)
        if cupy is not None:
            def cupy_pow(n, dtype=dtype):
                x = cupy.asarray(uniform(n, 0.0, 10.0, dtype))
                y = cupy.asarray(uniform(n, -10.0, 10.0, dtype))
                z = cupy.empty_like(x)
                return lambda: cupy.power(x, y, out=z)

            out.add(f"math_pow_{tname}", "cupy.power", cupy_pow)
    return out


if __name__ == "__main__":
    json.dump(cases(), sys.stdout, indent=1)
