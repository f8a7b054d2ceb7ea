//! Loops unrolled in the source: [`unroll!`](crate::unroll!) runs a body for `i = 0, 1, …, N-1`
//! as straight-line code.
//!
//! Why: a thread's register arrays (accumulators, fragments, items) stay in registers only if
//! every index into them is a constant; indexed by a loop variable they live in local memory.
//! LLVM's own unroller gives up on bodies with many `asm` statements (`mma`, `ldmatrix`), so
//! kernels unroll such loops themselves.
//!
//! How: the body becomes one `#[inline(always)]` closure, called once per index from the arm of
//! a `match N` that has exactly `N` calls. rustc type-checks the body once and, because `N` is a
//! constant after monomorphization, generates code for that one arm only. (Pasting the body once
//! per possible index behind `if k < N`, the usual macro trick, makes nested loops cost
//! `16 × 16 × 16` copies in the compiler: a 2,000-line kernel crate took minutes to build.)
//!
//! The count must be a constant the compiler knows without the enclosing function's generic
//! parameters (a literal, a `const` item, an expression of those), or a const generic parameter
//! itself (`N`, not `N / 2`: stable Rust has no generic const expressions).

/// The most iterations [`unroll`] takes: beyond it, unrolling is rarely what a kernel wants
/// (registers run out), and a loop is the better tool.
pub const MAX_UNROLL: usize = 32;

/// Builds `match $n { 0 => {}, 1 => { f(0); }, 2 => { f(0); f(1); }, … }` from a list of
/// indices: arm `k` calls `f` for every index before `k`.
macro_rules! unroll_arms {
    ($n:expr, $f:ident, [$($done:literal)*], [], [$($arms:tt)*]) => {
        match $n {
            $($arms)*
            // Refused at compile time by `unroll`'s assertion.
            _ => {}
        }
    };
    ($n:expr, $f:ident, [$($done:literal)*], [$next:literal $($rest:literal)*], [$($arms:tt)*]) => {
        unroll_arms!($n, $f, [$($done)* $next], [$($rest)*], [$($arms)* $next => { $( $f($done); )* } ])
    };
}

/// Calls `f(0)`, `f(1)`, …, `f(N - 1)` in order, written out (see the [module docs](self)).
/// Prefer the [`unroll!`](crate::unroll!) macro, which also marks the body `#[inline(always)]`
/// so that each call is inlined and its index becomes a constant.
///
/// `N` above [`MAX_UNROLL`] is a compile error.
#[inline(always)]
pub fn unroll<const N: usize>(mut f: impl FnMut(usize)) {
    const {
        assert!(
            N <= MAX_UNROLL,
            "unroll: at most MAX_UNROLL (32) iterations"
        )
    };
    unroll_arms!(
        N,
        f,
        [],
        [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32],
        []
    )
}

/// Runs `$body` with `$i: usize` bound to `0, 1, …, N-1` in turn, unrolled in the source:
///
/// ```
/// # use gpu::unroll;
/// let mut acc = [0.0f32; 4];
/// unroll!(4, |i| {
///     acc[i] += i as f32; // `i` is a constant in each copy: `acc` stays in registers
/// });
/// assert_eq!(acc, [0.0, 1.0, 2.0, 3.0]);
/// ```
///
/// `N` is a constant expression that does not use the enclosing function's generic parameters,
/// or a const generic parameter alone; at most [`MAX_UNROLL`](crate::unroll::MAX_UNROLL). The
/// body is a closure: `return` leaves the current iteration only, and `break`/`continue` are not
/// available.
#[macro_export]
macro_rules! unroll {
    ($n:expr, |$i:ident| $body:block) => {
        $crate::unroll::unroll::<{ $n }>(
            #[inline(always)]
            |$i: usize| $body,
        )
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_every_index_once_in_order() {
        let mut seen = [usize::MAX; 32];
        let mut count = 0;
        crate::unroll!(32, |i| {
            seen[count] = i;
            count += 1;
        });
        assert_eq!(count, 32);
        assert!(seen.iter().enumerate().all(|(k, &i)| k == i));
        let mut none = 0;
        crate::unroll!(0, |_i| {
            none += 1;
        });
        assert_eq!(none, 0);
    }

    #[test]
    fn nests_and_takes_generic_counts() {
        fn grid<const R: usize, const C: usize>() -> [[usize; C]; R] {
            let mut out = [[0; C]; R];
            crate::unroll!(R, |r| {
                crate::unroll!(C, |c| {
                    out[r][c] = r * 10 + c;
                });
            });
            out
        }
        assert_eq!(grid::<2, 3>(), [[0, 1, 2], [10, 11, 12]]);
    }
}
