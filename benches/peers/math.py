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
    import cupyx.scipy.special as cupy_special
except Exception:
    cupy_special = None

N = 1 << 26
# name: (torch function, cupy function name (in cupy, or "special." in cupyx.scipy.special),
# input range). The ranges are `gpu_algorithms::math_maps`' `bench` ones; keep them equal.
UNARY = {
    "sin": (torch.sin, "sin", (-100.0, 100.0)),
    "cos": (torch.cos, "cos", (-100.0, 100.0)),
    "tan": (torch.tan, "tan", (-100.0, 100.0)),
    "asin": (torch.asin, "arcsin", (-1.0, 1.0)),
    "acos": (torch.acos, "arccos", (-1.0, 1.0)),
    "atan": (torch.atan, "arctan", (-100.0, 100.0)),
    "sinh": (torch.sinh, "sinh", (-10.0, 10.0)),
    "cosh": (torch.cosh, "cosh", (-10.0, 10.0)),
    "tanh": (torch.tanh, "tanh", (-5.0, 5.0)),
    "asinh": (torch.asinh, "arcsinh", (-100.0, 100.0)),
    "acosh": (torch.acosh, "arccosh", (1.0, 1000.0)),
    "atanh": (torch.atanh, "arctanh", (-1.0, 1.0)),
    "exp": (torch.exp, "exp", (-80.0, 80.0)),
    "exp2": (torch.exp2, "exp2", (-120.0, 120.0)),
    "exp10": (None, None, (-35.0, 35.0)),
    "expm1": (torch.expm1, "expm1", (-10.0, 10.0)),
    "log": (torch.log, "log", (0.0, 1000.0)),
    "log2": (torch.log2, "log2", (0.0, 1000.0)),
    "log10": (torch.log10, "log10", (0.0, 1000.0)),
    "log1p": (torch.log1p, "log1p", (-0.9, 100.0)),
    "cbrt": (None, "cbrt", (-1000.0, 1000.0)),
    "erf": (torch.erf, "special.erf", (-5.0, 5.0)),
    "erfc": (torch.erfc, "special.erfc", (-5.0, 10.0)),
    "erfinv": (torch.erfinv, "special.erfinv", (-1.0, 1.0)),
    "lgamma": (torch.lgamma, "special.gammaln", (0.0, 40.0)),
    "tgamma": (None, "special.gamma", {"f32": (0.0, 30.0), "f64": (0.0, 170.0)}),
    "sinpi": (None, None, (-100.0, 100.0)),
    "cospi": (None, None, (-100.0, 100.0)),
}
DTYPES = {"f32": torch.float32, "f64": torch.float64}


def cupy_function(name):
    if cupy is None or name is None:
        return None
    if name.startswith("special."):
        return getattr(cupy_special, name[len("special."):], None) if cupy_special else None
    return getattr(cupy, name, None)


def uniform(n, lo, hi, dtype):
    return torch.rand(n, device="cuda", dtype=dtype) * (hi - lo) + lo


def cases():
    out = Results([N])
    for tname, dtype in DTYPES.items():
        for name, (tfn, cname, ranges) in UNARY.items():
            lo, hi = ranges[tname] if isinstance(ranges, dict) else ranges
            case = f"math_{name}_{tname}"
            if tfn is not None:
                def torch_case(n, tfn=tfn, lo=lo, hi=hi, dtype=dtype):
                    x, y = uniform(n, lo, hi, dtype), torch.empty(n, device="cuda", dtype=dtype)
                    return lambda: tfn(x, out=y)

                out.add(case, f"torch.{name}", torch_case)
            cfn = cupy_function(cname)
            if cfn is not None:
                def cupy_case(n, cfn=cfn, lo=lo, hi=hi, dtype=dtype):
                    x = cupy.asarray(uniform(n, lo, hi, dtype))
                    y = cupy.empty_like(x)
                    return lambda: cfn(x, out=y)

                out.add(case, f"cupy.{cname}", cupy_case)

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
