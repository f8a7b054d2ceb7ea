"""Fits `erf_f64.rs`'s polynomials, near-minimax for the relative error each makes in erf:
Lawson's iteratively reweighted least squares on Chebyshev nodes in 160-bit arithmetic, then each
coefficient rounded to f64, lowest degree first, and the rest refitted. Prints the maximum weighted
error on a dense grid and the coefficients' bits, highest degree first (as the Rust tables).

`python3 fit_erf.py 23`: ERFH, p(a) with -ln erfc(a) = a + a·p(a) on [0, 5.87], weighted by
a·erfc(a)/erf(a) (the relative error of erf = 1 - e^-(a + a·p) per unit error of p).
`python3 fit_erf.py --exp 9`: ERFEXP, q(t) = (e^t - 1 - t)/t² on |t| <= ln 2/2, weighted by
t²/|e^t - 1| (the relative error of e^t - 1 = t + t²·q).
`python3 fit_erf.py --f32-large 6`: `special.rs`'s ERF_LARGE (f32 coefficients), g(a) = log2 erfc(a)
on [0.9375, 4], weighted by ln 2·erfc(a)/erf(a) (the relative error of erf = 1 - 2^g per unit
error of g).
`python3 fit_erf.py --f32-exp2 5`: `special.rs`'s ERF_EXP2 (f32), q(f) = (2^f - 1)/f on |f| <= 1/2,
weighted by |f|/2^f (the relative error of 2^f = 1 + f·q).
Needs mpmath (minutes)."""
import sys
import fit_lawson
from mpmath import mp, mpf, erf, erfc, expm1, log
mp.prec = 160
if sys.argv[1] == "--exp":
    deg = int(sys.argv[2]); lo, hi = -(log(2)/2 + mpf(2)**-40), log(2)/2 + mpf(2)**-40
    target = lambda t: (expm1(t) - t)/t**2
    weight = lambda t: t**2/abs(expm1(t))
    N = 6*(deg + 1)
elif sys.argv[1] == "--f32-large":
    deg = int(sys.argv[2]); lo, hi = mpf('0.9375'), mpf(4)
    target = lambda a: log(erfc(a), 2)
    weight = lambda a: log(2)*erfc(a)/erf(a)
    N = 6*(deg + 1)
elif sys.argv[1] == "--f32-exp2":
    deg = int(sys.argv[2]); lo, hi = -(mpf(1)/2 + mpf(2)**-30), mpf(1)/2 + mpf(2)**-30
    target = lambda f: (mpf(2)**f - 1)/f
    weight = lambda f: abs(f)/mpf(2)**f
    N = 6*(deg + 1)
else:
    deg = int(sys.argv[1]); lo, hi = mpf(0), mpf('5.87')
    target = lambda a: (-log(erfc(a)) - a)/a
    weight = lambda a: a*erfc(a)/erf(a)
    N = 5*(deg + 1)
fit_lawson.fit_polynomial(target, weight, lo, hi, deg, N, sys.argv[1].startswith("--f32"))
