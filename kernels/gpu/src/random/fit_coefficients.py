"""Fits the f32 polynomials of `gpu::random`'s Box–Muller (`float.rs`): `-2·ln(1 - g/2) = g +
g²·R(g)` and `sin(π/2·a) = a·S(a²)`. Near-minimax: weighted least squares on Chebyshev nodes in
60-digit decimal arithmetic, reweighted a few times towards equal ripple; then each coefficient
is rounded to f32, lowest degree first, and the rest refitted. Prints the coefficients' bits
(highest degree first, as in the Rust tables) and the maximum weighted error on a dense grid.
Standard library only: `python3 fit_coefficients.py`."""
from decimal import Decimal as D, getcontext
import math
import struct


def pw_(y, j):
    return D(1) if j == 0 else y**j

getcontext().prec = 60
PI = D('3.141592653589793238462643383279502884197169399375105820974944592307816406286')
def sin_d(x):
    x = D(x); s = D(0); t = x; k = 1
    while abs(t) > D(10)**-58:
        s += t; t = -t*x*x/((k+1)*(k+2)); k += 2
    return s
def cos_d(x):
    x = D(x); s = D(0); t = D(1); k = 0
    while abs(t) > D(10)**-58:
        s += t; t = -t*x*x/((k+1)*(k+2)); k += 2
    return s
def f32(x): return D(struct.unpack('f', struct.pack('f', float(x)))[0])
def solve(A, b):
    n = len(b); M = [row[:] + [b[i]] for i, row in enumerate(A)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c])); M[c], M[p] = M[p], M[c]
        for r in range(n):
            if r != c:
                f = M[r][c] / M[c][c]
                M[r] = [M[r][k] - f*M[c][k] for k in range(n+1)]
    return [M[i][n]/M[i][i] for i in range(n)]
def fit(F, W, a, b, deg, fixed, npts=300, passes=6, rnd=f32):
    # minimise max |W(y)·(F(y) - Σ c_k y^k)| over [a, b]; `fixed`: dict k -> value
    ys = [ (a+b)/2 + (b-a)/2 * D(math.cos(math.pi*(i+0.5)/npts)) for i in range(npts)]
    Fs = [F(y) for y in ys]; Ws = [W(y) for y in ys]
    fixed = dict(fixed)
    for k in range(deg+1):
        free = [j for j in range(deg+1) if j not in fixed]
        if not free: break
        lam = [D(1)]*npts
        for _ in range(passes):
            A = [[D(0)]*len(free) for _ in free]; bb = [D(0)]*len(free)
            for i, y in enumerate(ys):
                w2 = (Ws[i]**2)*lam[i]
                r = Fs[i] - sum(v*pw_(y,j) for j, v in fixed.items())
                pw = [pw_(y,j) for j in free]
                for p in range(len(free)):
                    bb[p] += w2*pw[p]*r
                    for q in range(len(free)): A[p][q] += w2*pw[p]*pw[q]
            c = solve(A, bb)
            err = [abs(Ws[i]*(Fs[i] - sum(v*pw_(ys[i],j) for j, v in fixed.items()) - sum(c[t]*pw_(ys[i],free[t]) for t in range(len(free))))) for i in range(npts)]
            m = max(err)
            lam = [lam[i]*(1 + err[i]/m) for i in range(npts)]
        if k in fixed: continue
        fixed[k] = rnd(c[free.index(k)])
    coef = [fixed[k] for k in range(deg+1)]
    # error on a dense grid
    mx = D(0)
    for i in range(4001):
        y = a + (b-a)*i/4000
        e = abs(W(y)*(F(y) - sum(coef[j]*pw_(y,j) for j in range(deg+1))))
        mx = max(mx, e)
    return coef, mx


def hx(c):
    return "0x%08x" % struct.unpack("I", struct.pack("f", float(c)))[0]


if __name__ == "__main__":
    S2 = D(2).sqrt()

    def F(g):
        return -2 * (1 - g / 2).ln()

    def R(g):
        if abs(g) < D(10) ** -6:  # -2·ln(1-x) = 2(x + x²/2 + x³/3 + ...), x = g/2
            x = g / 2
            return sum(2 * x**k / k for k in range(2, 40)) / (g * g) if g != 0 else D(1) / 2
        return (F(g) - g) / (g * g)

    def W(g):
        return D(0) if g == 0 else g * g / abs(F(g))

    c, e = fit(R, W, 2 - 2 * S2, 2 - S2, 7, {}, npts=400)
    print("R (neg2_ln_f32):", [hx(x) for x in reversed(c)], "relative error", float(e))
    HP = PI / 2

    def S(y):
        return sin_d(HP * y.sqrt()) / y.sqrt() if y > 0 else HP

    c, e = fit(S, lambda y: 1 / S(y), D(0), D(1), 4, {})
    print("S (sincos_quarter_f32):", [hx(x) for x in reversed(c)], "relative error", float(e))
