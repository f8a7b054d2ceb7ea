"""Fits the polynomials of `erfc.rs` (f32, `--f32`) and `erf_f64.rs`'s `erfc_f64`: near-minimax
for the relative error, by Lawson's iteratively reweighted least squares on Chebyshev nodes in
160-bit arithmetic; then each coefficient is rounded to the target format, lowest degree first,
and the rest refitted (as `fit_erfinv.py`). Prints the maximum weighted error on a dense grid
and the coefficients' bits, highest degree first (as the Rust tables).

`fit_erfc.py K A0 A1 D`: g(t) = erfc(a)*e^(a^2)*(a + K) for a in [A0, A1], t = (a - K)/(a + K),
  so that erfc(a) = e^(-a^2)*g(t)/(a + K).
`fit_erfc.py shift K0 STEP N`: the K = K0 + i*STEP, |i| <= N, for which g's constant term,
  g(0) = 2K*erfc(K)*e^(K^2), lies closest to a number of the target format (its rounding is
  the one no other coefficient can absorb).
`--f32`: coefficients rounded to f32, else f64. `--imm J` (f64): the coefficients of degree J
  and above rounded first, highest first, to 21-bit significands (immediate operands).
Needs mpmath (minutes)."""
import sys
import fit_lawson
from mpmath import mp, mpf, erfc, exp, log, cos, pi, sqrt

mp.prec = 160
LN2 = log(2)
F32, IMM = fit_lawson.format_options(sys.argv)
rnd21 = fit_lawson.rnd21


def rnd(v):
    return fit_lawson.rnd(v, F32)


def bits(v):
    return fit_lawson.bits(v, F32)


if sys.argv[1] == "shift":
    k0, step, N = mpf(sys.argv[2]), mpf(sys.argv[3]), int(sys.argv[4])
    res = []
    for i in range(-N, N + 1):
        K = k0 + i * step
        g0 = 2 * K * erfc(K) * exp(K * K)
        ulp = mpf(2)**(int(mp.floor(log(g0, 2))) - (23 if F32 else 52))
        res.append((abs(g0 / ulp - mp.floor(g0 / ulp + mpf(1) / 2)), K))
    for off, K in sorted(res)[:6]:
        print("K %r: constant term %.4f ulp from the nearest" % (float(K), float(off)))
    sys.exit(0)

K, a0, a1, deg = mpf(sys.argv[1]), mpf(sys.argv[2]), mpf(sys.argv[3]), int(sys.argv[4])
kind = "erfc"
lo, hi = (a0 - K) / (a0 + K), (a1 - K) / (a1 + K)


def target(t):
    a = K * (1 + t) / (1 - t)
    return erfc(a) * exp(a * a) * (a + K)


weight = lambda t: 1 / target(t)
basis = [(lambda j: lambda t: t**j)(j) for j in range(deg + 1)]
names = ["g%d" % j for j in range(deg + 1)]
n = len(basis)
N = 5 * n
xs = [(lo + hi) / 2 - (hi - lo) / 2 * cos(pi * (i + mpf(1) / 2) / N) for i in range(N)]
fs = [target(x) for x in xs]
ws0 = [weight(x) for x in xs]
bs = [[b(x) for b in basis] for x in xs]


m, fixed = fit_lawson.fit_rounded(bs, fs, ws0, names, rnd, IMM, rnd21)
print("%s degree %d unrounded: 2^%.2f" % (kind, deg, float(log(m, 2))))
mx = mpf(0)
for i in range(2000):
    x = lo + (hi - lo) * (i + mpf(1) / 3) / 2000
    v = sum(fixed[j] * basis[j](x) for j in range(n))
    mx = max(mx, abs(weight(x) * (v - target(x))))
print("rounded: dense 2^%.2f" % float(log(mx, 2)))
poly = [j for j in range(n) if names[j][0] != "l"]
for j in reversed(poly):
    print("    " + bits(fixed[j]))
for j in range(n):
    if names[j] == "lo":
        print("lo: " + bits(fixed[j]))
