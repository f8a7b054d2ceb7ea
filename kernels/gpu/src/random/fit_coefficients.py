# Near-minimax polynomial fits (weighted least squares on Chebyshev nodes, then a few
def pw_(y, j):
    return D(1) if j == 0 else y**j
# Remez-like reweighting passes), in 60-digit decimal arithmetic; coefficients rounded to f32
# one at a time from the lowest degree, refitting the rest after each rounding.
from decimal import Decimal as D, getcontext
import struct, math
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
