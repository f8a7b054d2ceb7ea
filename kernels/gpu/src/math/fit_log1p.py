"""Fits the polynomials of `expm1_log1p.rs`'s `log1p` (f32) near-minimax for the relative error
each makes in log(1 + f): Lawson's iteratively reweighted least squares on Chebyshev nodes in
160-bit arithmetic, then each coefficient rounded to the target precision, lowest degree first,
and the rest refitted (as `fit_erf.py`). Prints the maximum weighted error on a dense grid and
the coefficients, highest degree first (as the Rust tables).

`python3 fit_log1p.py f32 7`: LOG1P, p(f) with log(1 + f) = f - f²/2 + f³·p(f) on
[-1/4, 1/2] (widened by 2^-20), weighted by |f³/log(1 + f)|.
`python3 fit_log1p.py f32 7 log`: `exp_log.rs`'s LOG, the same p on `log`'s [-1/3, 1/3].
`python3 fit_log1p.py f32 8 log2` (`log10`): `exp_log.rs`'s LOG2 (LOG10), p(f) with
log_b(1 + f) = f·log_b(e) + f²·p(f) on [√2/2 − 1, √2 − 1], weighted by |f²/log_b(1 + f)|.
Needs mpmath (seconds)."""
import sys, struct
import fit_lawson
from mpmath import mp, mpf, log1p, cos, pi, sqrt, log
mp.prec = 160
prec = sys.argv[1]
deg = int(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "log1p"
target = lambda f: (log1p(f) - f + f*f/2)/f**3
weight = lambda f: abs(f**3/log1p(f))
if mode == "log":
    lo, hi = mpf(-1)/3 - mpf(2)**-20, mpf(1)/3 + mpf(2)**-20
elif mode in ("log2", "log10"):
    lo, hi = sqrt(mpf(2))/2 - 1 - mpf(2)**-20, sqrt(mpf(2)) - 1 + mpf(2)**-20
    c = 1/log(mpf(mode[3:]))
    target = lambda f: (c*log1p(f) - c*f)/f**2
    weight = lambda f: abs(f**2/(c*log1p(f)))
else:
    lo, hi = mpf(-0.25) - mpf(2)**-20, mpf(0.5) + mpf(2)**-20
N = 6*(deg + 1)
xs = [(lo + hi)/2 - (hi - lo)/2*cos(pi*(i + mpf(1)/2)/N) for i in range(N)]
fs = [target(x) for x in xs]
ws0 = [weight(x) for x in xs]
pows = [[x**j for j in range(deg + 1)] for x in xs]

def rnd(c):
    if prec == "f32":
        return mpf(struct.unpack('<f', struct.pack('<f', float(c)))[0])
    return mpf(float(c))

m, fixed = fit_lawson.fit_lowest_first(pows, fs, ws0, rnd)
print("degree", deg, "unrounded: 2^%.2f" % float(log(m, 2)))
mx = fit_lawson.dense_error(fixed, target, weight, lo, hi)
print("rounded: dense 2^%.2f" % float(log(mx, 2)))
for cc in reversed(fixed):
    if prec == "f32":
        print("    %r," % struct.unpack('<f', struct.pack('<f', float(cc)))[0], "// 0x%08x" % struct.unpack('<I', struct.pack('<f', float(cc)))[0])
    else:
        print("    f64::from_bits(0x%016x), // %r" % (struct.unpack('<Q', struct.pack('<d', float(cc)))[0], float(cc)))
