"""Fits the TANH tables of `special_f64.rs` and (`--f32`) `special.rs`, near-minimax for the
relative error they make in tanh: Lawson's iteratively reweighted least squares on Chebyshev
nodes in 160-bit arithmetic, then each coefficient rounded to f64 (f32 with `--f32`), lowest
degree first, and the rest refitted. Prints the maximum weighted error on a dense grid and the
coefficients' bits, highest degree first (as the Rust tables).

`python3 fit_tanh.py DEG X [--f32]`: p(s) = (tanh x - x)/x³ with s = x² for |x| <= X, weighted
by s·x/tanh x (the relative error of tanh = x + x³·p per unit error of p). Needs mpmath."""
import sys
import fit_lawson
from mpmath import mp, mpf, tanh, sqrt

mp.prec = 160
deg, X = int(sys.argv[1]), mpf(sys.argv[2])
lo, hi = mpf(2)**-60, X * X


def target(s):
    x = sqrt(s)
    return (tanh(x) - x) / (x * s)


def weight(s):
    x = sqrt(s)
    return s * x / tanh(x)


fit_lawson.fit_polynomial(target, weight, lo, hi, deg, 6 * (deg + 1), "--f32" in sys.argv)
