"""Fits the polynomials of `erfinv.rs` (f32, `--f32`) and `erfinv_f64.rs`: near-minimax for the
error each makes, by Lawson's iteratively reweighted least squares on Chebyshev nodes in 160-bit
arithmetic; then each coefficient is rounded to the target format, lowest degree first, and the
rest refitted. Prints the maximum weighted error on a dense grid and the coefficients' bits,
highest degree first (as the Rust tables).

`fit_erfinv.py logabs D`: r(f) = log2(1 + f)/f on [sqrt(1/2) - 1, sqrt(2) - 1], for the
  absolute error of f*r(f) (t = k + f*r(f) = log2(1 - x^2) is used for its absolute error).
`fit_erfinv.py central D T1 C`: erfinv(x)/x = C0_HI + lo + t*q(t - C) for t = log2(1 - x^2)
  in [T1, 0], C0_HI = sqrt(pi)/2 rounded; q (degree D) and the constant lo (printed last) are
  fitted together, for the relative error of erfinv(x)/x (lo absorbs q(0)'s rounding times C).
`fit_erfinv.py tail D S0 S1 C`: erfinv(x)/x = p(s - C) for s = sqrt(-log2(1 - x^2)) in
  [S0, S1], relative error; also prints d0 + d1*u, p'(u)/(2s) to a few percent (the tail's
  first-order correction for the roundings of t and s).
`fit_erfinv.py shift central|tail C STEP N`: the shifts C + i*STEP, |i| <= N, for which the
  constant term of q (central: (erfinv(x)/x - sqrt(pi)/2)/t at t = C) or of p (tail: erfinv(x)/x
  at s = C) lies closest to a number of the target format. A constant term's rounding error
  is the one no other coefficient can absorb, so the fits use such shifts.
`--f32`: coefficients rounded to f32 (the f32 `erfinv`), else f64.
`--imm J` (f64): the coefficients of degree J and above rounded first, highest first (each
  time the lower ones refitted), to 21-bit significands: an f64 whose low 32 bits are zero is
  an immediate operand of a SASS double instruction, no constant load.
Needs mpmath (minutes)."""
import sys
import fit_lawson
from mpmath import mp, mpf, erfinv, expm1, log, log1p, cos, pi, sqrt

mp.prec = 160
LN2 = log(2)
F32, IMM = fit_lawson.format_options(sys.argv)
rnd21 = fit_lawson.rnd21


def rnd(v):
    return fit_lawson.rnd(v, F32)


def bits(v):
    return fit_lawson.bits(v, F32)


def p_of_t(t):
    """erfinv(x)/x for log2(1 - x^2) = t <= 0."""
    if t == 0:
        return sqrt(pi) / 2
    x = sqrt(-expm1(t * LN2))
    return erfinv(x) / x


if sys.argv[1] == "shift":
    central = sys.argv[2] == "central"
    c_mid, step, K = mpf(sys.argv[3]), mpf(sys.argv[4]), int(sys.argv[5])
    res = []
    for i in range(-K, K + 1):
        c = c_mid + i * step
        q = (p_of_t(c) - sqrt(pi) / 2) / c if central else p_of_t(-c * c)
        ulp = mpf(2)**(int(mp.floor(log(abs(q), 2))) - (23 if F32 else 52))
        off = abs(q / ulp - mp.floor(q / ulp + mpf(1) / 2))
        res.append((off, c))
    for off, c in sorted(res)[:6]:
        print("shift %r: constant term %.4f ulp from the nearest" % (float(c), float(off)))
    sys.exit(0)

kind, deg = sys.argv[1], int(sys.argv[2])
# Each fit: interval [lo, hi] of the variable z, target f(z), weight w(z), basis functions
# b_j(z) (coefficient j multiplies b_j), and the order in which coefficients are rounded.
if kind == "logabs":
    lo, hi = sqrt(mpf(1) / 2) - 1 - mpf(2)**-30, sqrt(mpf(2)) - 1 + mpf(2)**-30
    target = lambda f: log1p(f) / LN2
    weight = lambda f: 1
    basis = [(lambda j: lambda f: f * f**j)(j) for j in range(deg + 1)]
    names = ["r%d" % j for j in range(deg + 1)]
elif kind == "central":
    lo, hi, shift = mpf(sys.argv[3]), mpf(0), mpf(sys.argv[4])
    c0_hi = rnd(sqrt(pi) / 2)
    target = lambda t: p_of_t(t) - c0_hi
    weight = lambda t: 1 / p_of_t(t)
    basis = [(lambda j: lambda t: t * (t - shift)**j)(j) for j in range(deg + 1)] + [lambda t: 1]
    names = ["q%d" % j for j in range(deg + 1)] + ["lo"]
else:
    lo, hi, shift = mpf(sys.argv[3]), mpf(sys.argv[4]), mpf(sys.argv[5])
    target = lambda s: p_of_t(-s * s)
    weight = lambda s: 1 / target(s)
    basis = [(lambda j: lambda s: (s - shift)**j)(j) for j in range(deg + 1)]
    names = ["p%d" % j for j in range(deg + 1)]
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
if kind == "tail":
    # p'(u)/(2s) as d0 + d1*u, interpolated at the Chebyshev points of degree 1.
    dp = lambda u: sum(j * fixed[j] * u**(j - 1) for j in range(1, n)) / (2 * (u + shift))
    u1, u2 = [lo - shift + (hi - lo) * w for w in (mpf('0.1464'), mpf('0.8536'))]
    d1 = (dp(u2) - dp(u1)) / (u2 - u1)
    d0 = dp(u1) - d1 * u1
    us = [lo - shift + (hi - lo) * i / 200 for i in range(201)]
    rel = max(abs((d0 + d1 * u) / dp(u) - 1) for u in us)
    print("deriv: d0 %r, d1 %r, relative error %.3f" % (float(d0), float(d1), float(rel)))
