"""Fits `erf_f64.rs`'s polynomials, near-minimax for the relative error each makes in erf:
Lawson's iteratively reweighted least squares on Chebyshev nodes in 160-bit arithmetic, then each
coefficient rounded to f64, lowest degree first, and the rest refitted. Prints the maximum weighted
error on a dense grid and the coefficients' bits, highest degree first (as the Rust tables).

`python3 fit_erf.py 23`: ERFH, p(a) with -ln erfc(a) = a + a·p(a) on [0, 5.87], weighted by
a·erfc(a)/erf(a) (the relative error of erf = 1 - e^-(a + a·p) per unit error of p).
`python3 fit_erf.py --exp 9`: ERFEXP, q(t) = (e^t - 1 - t)/t² on |t| <= ln 2/2, weighted by
t²/|e^t - 1| (the relative error of e^t - 1 = t + t²·q).
Needs mpmath (minutes)."""
import sys, struct
import fit_lawson
from mpmath import mp, mpf, erf, erfc, expm1, log, cos, pi, sqrt
mp.prec = 160
if sys.argv[1] == "--exp":
    deg = int(sys.argv[2]); lo, hi = -(log(2)/2 + mpf(2)**-40), log(2)/2 + mpf(2)**-40
    target = lambda t: (expm1(t) - t)/t**2
    weight = lambda t: t**2/abs(expm1(t))
    N = 6*(deg + 1)
else:
    deg = int(sys.argv[1]); lo, hi = mpf(0), mpf('5.87')
    target = lambda a: (-log(erfc(a)) - a)/a
    weight = lambda a: a*erfc(a)/erf(a)
    N = 5*(deg + 1)
xs = [(lo + hi)/2 - (hi - lo)/2*cos(pi*(i + mpf(1)/2)/N) for i in range(N)]
fs = [target(x) for x in xs]
ws0 = [weight(x) for x in xs]
pows = [[x**j for j in range(deg + 1)] for x in xs]

m, fixed = fit_lawson.fit_lowest_first(pows, fs, ws0, lambda v: mpf(float(v)))
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
    print("    f64::from_bits(0x%016x), // %r" % (struct.unpack('<Q', struct.pack('<d', float(cc)))[0], float(cc)))
