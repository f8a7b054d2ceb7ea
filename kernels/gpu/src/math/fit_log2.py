"""Fits the polynomials of `exp_log.rs`'s `log2` and `log10` (f32) near-minimax for the
relative error each makes in log_b(1 + f): Lawson's iteratively reweighted least squares on
Chebyshev nodes in 160-bit arithmetic, each coefficient rounded to f32, lowest degree first,
and the rest refitted (`fit_lawson.fit_lowest_first`). Prints the maximum weighted error on a
dense grid and the coefficients, highest degree first (as the Rust tables).

`python3 fit_log2.py 2 9`: LOG2, p(f) with log2(1 + f) = f·log2(e) + f²·p(f) on
[√2/2 − 1, √2 − 1] (widened by 2^-20), weighted by |f²/log2(1 + f)|.
`python3 fit_log2.py 10 9`: LOG10, the same for log10.
Needs mpmath (seconds)."""
import sys, struct
import fit_lawson
from mpmath import mp, mpf, log, sqrt, cos, pi, log1p
mp.prec = 160
base = mpf(sys.argv[1])
deg = int(sys.argv[2])
lo, hi = sqrt(mpf(2))/2 - 1 - mpf(2)**-20, sqrt(mpf(2)) - 1 + mpf(2)**-20
lb = lambda f: log1p(f)/log(base)
c = 1/log(base)
target = lambda f: (lb(f) - f*c)/f**2
weight = lambda f: abs(f**2/lb(f))
N = 6*(deg + 1)
xs = [(lo + hi)/2 - (hi - lo)/2*cos(pi*(i + mpf(1)/2)/N) for i in range(N)]
fs = [target(x) for x in xs]
ws0 = [weight(x) for x in xs]
pows = [[x**j for j in range(deg + 1)] for x in xs]
rnd = lambda v: fit_lawson.rnd(v, True)
m, fixed = fit_lawson.fit_lowest_first(pows, fs, ws0, rnd)
print("degree", deg, "unrounded: 2^%.2f" % float(log(m, 2)))
mx = mpf(0)
for i in range(3001):
    x = lo + (hi - lo)*(i + mpf(1)/3)/3000
    p = mpf(0)
    for cc in reversed(fixed):
        p = p*x + cc
    mx = max(mx, abs(weight(x)*(p - target(x))))
print("rounded: dense 2^%.2f" % float(log(mx, 2)))
for cc in reversed(fixed):
    print("    %r," % struct.unpack("<f", struct.pack("<f", float(cc)))[0], "// 0x%08x" % struct.unpack("<I", struct.pack("<f", float(cc)))[0])
