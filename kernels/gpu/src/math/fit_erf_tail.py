"""Fits `erf_f64.rs`'s ERFTAIL: g(t) = -ln(erfc(t)) on t in [1, 6] as a polynomial in
x = t - 1, near-minimax for max erfc(t)*|p - g| (the absolute error it causes in erf = 1 - e^-g):
Lawson's iteratively reweighted least squares on Chebyshev nodes in 200-bit arithmetic, then each
coefficient rounded to f64, lowest degree first, and the rest refitted. Prints the coefficients'
bits, highest degree first (the Rust table stores their negations: the polynomial of ln erfc).
Needs mpmath: `python3 fit_erf_tail.py 17` (the degree; minutes)."""
import sys
from mpmath import mp, mpf, erfc, log, cos, pi, matrix, qr_solve, lu_solve
mp.prec = 200
deg = int(sys.argv[1]); N = int(sys.argv[2]) if len(sys.argv) > 2 else 6*deg
lo, hi = mpf(1), mpf(6)
ts = [ (lo+hi)/2 + (hi-lo)/2*cos(pi*(2*i+1)/(2*N)) for i in range(N)]
gs = [ -log(erfc(t)) for t in ts]
ws0 = [ erfc(t) for t in ts]
def fit(fixed, ws):
    # fixed: list of already fixed low-order coeffs
    k0 = len(fixed)
    A = matrix(N, deg+1-k0); b = matrix(N, 1)
    for i,t in enumerate(ts):
        x = t - 1
        r = gs[i] - sum(c*x**j for j,c in enumerate(fixed))
        for j in range(k0, deg+1):
            A[i, j-k0] = ws[i]*x**j
        b[i] = ws[i]*r
    sol, res = qr_solve(A, b)
    return fixed + [sol[j] for j in range(deg+1-k0)]
def errs(c):
    out=[]
    for i,t in enumerate(ts):
        x=t-1
        p = mpf(0)
        for cc in reversed(c): p = p*x + cc
        out.append(ws0[i]*(p-gs[i]))
    return out
def lawson(fixed, iters=30):
    ws = ws0[:]
    u = [mpf(1)]*N
    best=None
    for it in range(iters):
        wt = [ws0[i]*mp.sqrt(u[i]) for i in range(N)]
        c = fit(fixed, wt)
        e = errs(c)
        m = max(abs(v) for v in e)
        if best is None or m < best[0]: best=(m,c)
        s = sum(u[i]*abs(e[i]) for i in range(N))
        u = [u[i]*abs(e[i])/s for i in range(N)]
    return best
m, c = lawson([])
print("deg", deg, "exact-coef max weighted err 2^%.2f" % float(log(m,2)))
# round coefficients lowest first, refit the rest
fixed=[]
for k in range(deg+1):
    fixed.append(mpf(float(c[k])))
    if k < deg:
        m, c = lawson(fixed, 15)
        c = c
# final
e = errs(fixed); m = max(abs(v) for v in e)
# dense check
mx=mpf(0)
for i in range(2001):
    t = lo + (hi-lo)*i/2000
    x = t-1; p=mpf(0)
    for cc in reversed(fixed): p=p*x+cc
    mx = max(mx, abs(erfc(t)*(p + log(erfc(t)))))
print("rounded: nodes 2^%.2f dense 2^%.2f" % (float(log(m,2)), float(log(mx,2))))
for cc in reversed(fixed):
    print("    f64::from_bits(0x%016x), // %r" % (__import__('struct').unpack('Q', __import__('struct').pack('d', float(cc)))[0], float(cc)))
