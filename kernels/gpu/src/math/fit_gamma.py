"""Fits the polynomials of `gamma.rs` (f32) and `gamma_f64.rs` (f64), near-minimax for the
relative error: Lawson's iteratively reweighted least squares on Chebyshev nodes (as
`fit_erf.py`), then each coefficient rounded to the target precision, lowest degree first, and
the rest refitted. Prints the maximum relative error on a dense grid and the coefficients,
highest degree first (as the Rust tables).

`python3 fit_gamma.py NAME DEG [f32|f64]`, NAME one of
- `lgamma`: q(s) = lgamma(1 + t)/(t·(t − 1)) for s = t − 0.625 on −0.875 ≤ s ≤ 0.875
  (lgamma(x) for 0.75 ≤ x < 2.5 with t = x − 1, and lgamma(1 + x) for x < 0.75 with t = x;
  the zeros at x = 1 and 2 are the explicit factors, so the relative error of q is that of
  lgamma; centred, as Horner's rule in t itself loses bits to cancellation near t = 1.5);
- `stirling`: r(w) with lgamma(x) = (x − 1/2)·ln x − x + ln √(2π) + z·r(z²), z = 1/x, on
  x ≥ 2.5 (0 < w = z² ≤ 0.16);
- `atanh`: s(v) = (2·atanh(√v)/√v − 2)/v on 0 ≤ v ≤ 0.0295 (ln m = 2u + u³·s(u²) for
  u = (m − 1)/(m + 1), m in [√2/2, √2]).
Needs mpmath (minutes)."""
import sys, struct
import fit_lawson
from mpmath import mp, mpf, loggamma, log, atanh, sqrt, cos, pi

mp.prec = 128
name, deg = sys.argv[1], int(sys.argv[2])
prec = sys.argv[3] if len(sys.argv) > 3 else "f32"
rnd = (lambda v: mpf(struct.unpack('<f', struct.pack('<f', float(v)))[0])) if prec == "f32" \
    else (lambda v: mpf(float(v)))

if name == "lgamma":
    lo, hi = mpf(-0.875), mpf(0.875)
    centre = mpf(0.625)
    if len(sys.argv) > 5:
        # Another t interval: `lgamma DEG PREC T_LO T_HI` (centred on its midpoint).
        t_lo, t_hi = mpf(sys.argv[4]), mpf(sys.argv[5])
        centre = (t_lo + t_hi)/2
        lo, hi = t_lo - centre, t_hi - centre
    def target(s):
        t = s + centre
        if abs(t) < mpf(2)**-60 or abs(t - 1) < mpf(2)**-60:
            t += mpf(2)**-60
        return loggamma(1 + t)/(t*(t - 1))
elif name == "stirling":
    lo, hi = mpf(0), mpf(0.16)
    def target(w):
        if w < mpf(2)**-40:
            w = mpf(2)**-40
        x = 1/sqrt(w)
        return (loggamma(x) - ((x - mpf(1)/2)*log(x) - x + log(2*pi)/2))*x
elif name == "atanh":
    lo, hi = mpf(0), mpf(0.0295)
    def target(v):
        if v < mpf(2)**-40:
            v = mpf(2)**-40
        return (2*atanh(sqrt(v))/sqrt(v) - 2)/v
else:
    raise SystemExit("unknown target " + name)

N = 6*(deg + 1)
xs = [(lo + hi)/2 - (hi - lo)/2*cos(pi*(i + mpf(1)/2)/N) for i in range(N)]
fs = [target(x) for x in xs]
ws0 = [1/abs(f) for f in fs]
pows = [[x**j for j in range(deg + 1)] for x in xs]


m, fixed = fit_lawson.fit_lowest_first(pows, fs, ws0, rnd)
print(name, "degree", deg, "unrounded: 2^%.2f" % float(log(m, 2)))
# Relative error: weighted by 1/target.
mx = fit_lawson.dense_error(fixed, target, lambda x: 1 / target(x), lo, hi)
print("rounded to %s: dense 2^%.2f" % (prec, float(log(mx, 2))))
def shortest32(v):
    for d in range(1, 12):
        s = '%.*e' % (d - 1, v)
        if struct.unpack('<f', struct.pack('<f', float(s)))[0] == v:
            return s
for cc in reversed(fixed):
    if prec == "f32":
        print("    %s, // 0x%08x" % (shortest32(float(cc)), struct.unpack('<I', struct.pack('<f', float(cc)))[0]))
    else:
        print("    %r," % float(cc))
