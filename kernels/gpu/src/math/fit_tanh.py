"""Fits the TANH tables of `special_f64.rs` and (`--f32`) `special.rs`, near-minimax for the
relative error they make in tanh: Lawson's iteratively reweighted least squares on Chebyshev
nodes in 160-bit arithmetic, then each coefficient rounded to f64 (f32 with `--f32`), lowest
degree first, and the rest refitted. Prints the maximum weighted error on a dense grid and the
coefficients' bits, highest degree first (as the Rust tables).

`python3 fit_tanh.py DEG X [--f32]`: p(s) = (tanh x - x)/x³ with s = x² for |x| <= X, weighted
by s·x/tanh x (the relative error of tanh = x + x³·p per unit error of p). Needs mpmath."""
import sys
import fit_lawson
from mpmath import mp, mpf, tanh, sqrt, cos, pi, log

mp.prec = 160
deg, X = int(sys.argv[1]), mpf(sys.argv[2])
lo, hi = mpf(2)**-60, X * X


def target(s):
    x = sqrt(s)
    return (tanh(x) - x) / (x * s)


def weight(s):
    x = sqrt(s)
    return s * x / tanh(x)


N = 6 * (deg + 1)
xs = [(lo + hi) / 2 - (hi - lo) / 2 * cos(pi * (i + mpf(1) / 2) / N) for i in range(N)]
fs = [target(x) for x in xs]
ws0 = [weight(x) for x in xs]
pows = [[x**j for j in range(deg + 1)] for x in xs]
F32 = "--f32" in sys.argv
m, fixed = fit_lawson.fit_lowest_first(pows, fs, ws0, lambda v: fit_lawson.rnd(v, F32))
print("degree", deg, "unrounded: 2^%.2f" % float(log(m, 2)))
mx = mpf(0)
for i in range(3001):
    s = lo + (hi - lo) * (i + mpf(1) / 3) / 3000
    p = mpf(0)
    for cc in reversed(fixed):
        p = p * s + cc
    mx = max(mx, abs(weight(s) * (p - target(s))))
print("rounded: dense 2^%.2f" % float(log(mx, 2)))
for cc in reversed(fixed):
    print("    " + fit_lawson.bits(cc, F32))
