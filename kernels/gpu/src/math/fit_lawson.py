"""Lawson's iteratively reweighted least squares, shared by the `fit_*.py` scripts: the
coefficients of a linear combination of basis functions that is near-minimax for a weighted
error at a set of nodes (Chebyshev nodes in the scripts), some coefficients held at given
values. Each iteration solves a weighted least-squares problem (QR) and moves weight towards the
nodes with the largest error; the best iterate is kept. In mpmath at the caller's precision."""
from mpmath import log, mpf, matrix, qr_solve, sqrt


def log2(v):
    return log(v, 2)


def fit(bs, fs, fixed, ws):
    """Weighted least squares for the coefficients not in `fixed` (a dict index -> value), with
    `bs[i][j]` basis function j at node i and `fs[i]` the target there. Returns every
    coefficient as a dict."""
    n, N = len(bs[0]), len(bs)
    free = [j for j in range(n) if j not in fixed]
    A = matrix(N, len(free))
    b = matrix(N, 1)
    for i in range(N):
        r = fs[i] - sum(c * bs[i][j] for j, c in fixed.items())
        for k, j in enumerate(free):
            A[i, k] = ws[i] * bs[i][j]
        b[i] = ws[i] * r
    sol, _ = qr_solve(A, b)
    c = dict(fixed)
    for k, j in enumerate(free):
        c[j] = sol[k]
    return c


def lawson(bs, fs, ws0, fixed, iters):
    """`iters` Lawson iterations for the error weighted by `ws0[i]` at node i: `(max weighted
    error, coefficients as a dict)` of the best iterate."""
    n, N = len(bs[0]), len(bs)
    u = [mpf(1) / N] * N
    best = None
    for _ in range(iters):
        c = fit(bs, fs, fixed, [ws0[i] * sqrt(u[i]) for i in range(N)])
        e = [ws0[i] * (sum(c[j] * bs[i][j] for j in range(n)) - fs[i]) for i in range(N)]
        m = max(abs(v) for v in e)
        if best is None or m < best[0]:
            best = (m, c)
        s = sum(u[i] * abs(e[i]) for i in range(N))
        u = [u[i] * abs(e[i]) / s for i in range(N)]
    return best


def fit_lowest_first(bs, fs, ws0, rnd):
    """A near-minimax fit (25 iterations), then each coefficient rounded by `rnd`, lowest
    index first, the rest refitted (10 iterations) after each: `(max weighted error before
    rounding, the rounded coefficients as a list)`."""
    n = len(bs[0])
    m0, c = lawson(bs, fs, ws0, {}, 25)
    fixed = {}
    for j in range(n):
        fixed[j] = rnd(c[j])
        if j < n - 1:
            _, c = lawson(bs, fs, ws0, fixed, 10)
    return m0, [fixed[j] for j in range(n)]


def fit_polynomial(target, weight, lo, hi, deg, N, f32):
    """`fit_lowest_first` of a degree-`deg` polynomial to `target` on `N` Chebyshev nodes of
    [lo, hi], its error weighted by `weight`, the coefficients rounded to f32 or f64; prints the
    error before rounding, after it on a dense grid, and the coefficients' bits, highest degree
    first (as the Rust tables). For `fit_erf.py` and `fit_tanh.py`."""
    from mpmath import cos, pi
    xs = [(lo + hi) / 2 - (hi - lo) / 2 * cos(pi * (i + mpf(1) / 2) / N) for i in range(N)]
    fs = [target(x) for x in xs]
    ws0 = [weight(x) for x in xs]
    pows = [[x**j for j in range(deg + 1)] for x in xs]
    m, fixed = fit_lowest_first(pows, fs, ws0, lambda v: rnd(v, f32))
    print("degree", deg, "unrounded: 2^%.2f" % float(log2(m)))
    print("rounded: dense 2^%.2f" % float(log2(dense_error(fixed, target, weight, lo, hi))))
    for cc in reversed(fixed):
        print("    " + bits(cc, f32))


def dense_error(coeffs, target, weight, lo, hi):
    """The largest weighted error |weight(x)·(p(x) - target(x))| of the polynomial with
    `coeffs` (lowest degree first) on 3001 points of [lo, hi], off the fitting nodes."""
    mx = mpf(0)
    for i in range(3001):
        x = lo + (hi - lo) * (i + mpf(1) / 3) / 3000
        p = mpf(0)
        for cc in reversed(coeffs):
            p = p * x + cc
        mx = max(mx, abs(weight(x) * (p - target(x))))
    return mx


def fit_rounded(bs, fs, ws0, names, rnd, imm=None, rnd_imm=None):
    """`fit_lowest_first` for `fit_erfc.py` and `fit_erfinv.py`: with `imm`, the polynomial
    coefficients of index `imm` and above (names not starting with "l") are rounded first,
    highest first, by `rnd_imm`; each step's refitted error goes to stderr. Returns `(max
    weighted error before rounding, the coefficients as a dict)`."""
    import sys
    n = len(bs[0])
    m0, c = lawson(bs, fs, ws0, {}, 25)
    fixed = {}
    order = list(range(n))
    if imm is not None:
        high = [j for j in range(n) if names[j][0] != "l" and j >= imm]
        for j in reversed(high):
            fixed[j] = rnd_imm(c[j])
            m, c = lawson(bs, fs, ws0, fixed, 10)
            print("  fixed %s (21 bits): 2^%.2f" % (names[j], float(log2(m))), file=sys.stderr)
        order = [j for j in range(n) if j not in fixed]
    for idx, j in enumerate(order):
        fixed[j] = rnd(c[j])
        if idx < len(order) - 1:
            m, c = lawson(bs, fs, ws0, fixed, 10)
            print("  fixed %s: 2^%.2f" % (names[j], float(log2(m))), file=sys.stderr)
    return m0, fixed


def format_options(argv):
    """Removes `--f32` and `--imm J` from `argv`: `(f32, imm)` (imm None without `--imm`)."""
    f32 = "--f32" in argv
    if f32:
        argv.remove("--f32")
    imm = None
    if "--imm" in argv:
        i = argv.index("--imm")
        imm = int(argv[i + 1])
        del argv[i:i + 2]
    return f32, imm


def rnd21(v):
    """v rounded to a 21-bit significand (an f64 with its low 32 bits zero)."""
    import struct
    b = struct.unpack('<Q', struct.pack('<d', float(v)))[0]
    b = (b + (1 << 31)) & ~((1 << 32) - 1)  # round half up on the magnitude's bits
    return mpf(struct.unpack('<d', struct.pack('<Q', b))[0])


def rnd(v, f32):
    """v rounded to f32 or f64, as an mpf."""
    import struct
    if f32:
        return mpf(struct.unpack('<f', struct.pack('<f', float(v)))[0])
    return mpf(float(v))


def bits(v, f32):
    """v as a Rust `from_bits` expression with its value in a comment."""
    import struct
    if f32:
        return "f32::from_bits(0x%08x), // %r" % (struct.unpack('<I', struct.pack('<f', float(v)))[0], float(v))
    return "f64::from_bits(0x%016x), // %r" % (struct.unpack('<Q', struct.pack('<d', float(v)))[0], float(v))
