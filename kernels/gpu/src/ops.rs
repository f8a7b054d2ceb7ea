//! Operators for the cooperative algorithms ([`crate::warp`], [`crate::block`],
//! [`crate::device`]): what "combine two values" means.
//!
//! An operator is a small `Copy` value implementing [`ReduceOp`]. The built-in ones ([`Sum`],
//! [`Min`], [`Max`], [`BitAnd`], [`BitOr`], [`BitXor`]) work on every [`Numeric`] type and know
//! their identity ([`Identity`]), which lets the algorithms pad partial tiles; any closure
//! `Fn(T, T) -> T + Copy` is an operator too, and so is your own type:
//!
//! ```ignore
//! #[derive(Clone, Copy)]
//! struct ArgMax;                       // (value, index) pairs, larger value wins
//! impl ReduceOp<(f32, u32)> for ArgMax {
//!     fn combine(&self, a: (f32, u32), b: (f32, u32)) -> (f32, u32) {
//!         if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) { b } else { a }
//!     }
//! }
//! ```
//!
//! Operators must be **associative**; reductions and scans regroup the work. They need not be
//! commutative: every algorithm here combines values in index order (lower index on the left).
//! Floating-point `+` is not exactly associative, so a GPU sum differs from a sequential sum by
//! rounding; each algorithm documents its combination order.
//!
//! Integer [`Sum`] wraps on overflow (like the hardware and like CUB), it never panics.

/// An associative binary operator on `T`.
pub trait ReduceOp<T>: Copy {
    /// `a ⊕ b`, with `a` the value from the lower index.
    fn combine(&self, a: T, b: T) -> T;

    /// The operator applied over all 32 lanes of a full warp, the result in every lane.
    ///
    /// The default is a butterfly of shuffles; built-in operators override it with a hardware
    /// reduction (`redux.sync`) where one exists. Not for calling directly: use
    /// [`crate::warp::reduce`].
    #[doc(hidden)]
    #[inline(always)]
    fn __warp_all_reduce(&self, v: T) -> T
    where
        T: crate::DeviceCopy,
    {
        crate::warp::butterfly_reduce(v, *self)
    }
}

/// An operator with an identity element `e` (`e ⊕ x = x ⊕ e = x`), e.g. 0 for [`Sum`].
///
/// Algorithms that have it pad partial tiles with it instead of branching per element.
pub trait Identity<T>: ReduceOp<T> {
    /// The identity element.
    fn identity(&self) -> T;
}

impl<T, F: Fn(T, T) -> T + Copy> ReduceOp<T> for F {
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        self(a, b)
    }
}

/// Number types with the built-in operators: `u8 i8 u16 i16 u32 i32 u64 i64 usize isize f32 f64`
/// and, with the `half` feature, `f16 bf16`.
pub trait Numeric: crate::DeviceCopy + PartialOrd {
    /// 0.
    const ZERO: Self;
    /// The smallest value (`-inf` for floats): the identity of [`Max`].
    const LOWEST: Self;
    /// The largest value (`+inf` for floats): the identity of [`Min`].
    const HIGHEST: Self;
    /// Wrapping addition for integers, IEEE addition for floats.
    fn add(self, other: Self) -> Self;
    /// Warp-wide sum/min/max with a hardware instruction, if this type has one.
    #[doc(hidden)]
    #[inline(always)]
    fn __warp_redux(_op: RedOp, _v: Self) -> Option<Self> {
        None
    }
}

/// Which built-in reduction, for [`Numeric::__warp_redux`].
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum RedOp {
    Sum,
    Min,
    Max,
}

/// Integer types that also have the bitwise operators.
pub trait Bits: Numeric {
    /// All bits set: the identity of [`BitAnd`].
    const ONES: Self;
    /// `self & other`.
    fn and(self, other: Self) -> Self;
    /// `self | other`.
    fn or(self, other: Self) -> Self;
    /// `self ^ other`.
    fn xor(self, other: Self) -> Self;
}

macro_rules! int_numeric {
    ($($t:ty $(=> $redux:ty)?),*) => { $(
        impl Numeric for $t {
            const ZERO: Self = 0;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            $(
            #[inline(always)]
            fn __warp_redux(op: RedOp, v: Self) -> Option<Self> {
                let v = v as $redux;
                Some(match op {
                    RedOp::Sum => crate::warp::reduce_add(v),
                    RedOp::Min => crate::warp::reduce_min(v),
                    RedOp::Max => crate::warp::reduce_max(v),
                })
            }
            )?
        }
        impl Bits for $t {
            const ONES: Self = !0;
            #[inline(always)]
            fn and(self, other: Self) -> Self { self & other }
            #[inline(always)]
            fn or(self, other: Self) -> Self { self | other }
            #[inline(always)]
            fn xor(self, other: Self) -> Self { self ^ other }
        }
    )* };
}

int_numeric!(u8, i8, u16, i16, u32 => u32, i32 => i32, u64, i64, usize, isize);

macro_rules! float_numeric {
    ($($t:ty),*) => { $(
        impl Numeric for $t {
            const ZERO: Self = 0.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                self + other
            }
        }
    )* };
}

float_numeric!(f32, f64);

/// `a + b` rounded once to the 16-bit format, as one instruction on the GPU: `add.rn.f16`, and
/// for bf16 `fma.rn.bf16` with a factor 1 (`add.bf16` needs sm_90; the PTX targets sm_80). The
/// host (and simulator) computes it through f32 with `half`'s conversions, which rounds to the
/// same bits (NaN payloads aside): the f32 sum is rounded to 24 bits first, and with at least
/// 2·11 + 2 bits that double rounding equals one rounding (f16: 11 bits, bf16: 8). `half`'s
/// conversions are bit manipulation in software, long on the GPU.
#[cfg(feature = "half")]
macro_rules! half_numeric {
    ($($t:ty => $add:literal),*) => { $(
        impl Numeric for $t {
            const ZERO: Self = <$t>::ZERO;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let r: u16;
                    // SAFETY: one arithmetic instruction on registers.
                    unsafe {
                        core::arch::asm!(
                            $add,
                            r = out(reg16) r,
                            a = in(reg16) self.to_bits(),
                            b = in(reg16) other.to_bits(),
                            options(pure, nomem, nostack),
                        )
                    };
                    <$t>::from_bits(r)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                <$t>::from_f32(self.to_f32() + other.to_f32())
            }
        }
    )* };
}

#[cfg(feature = "half")]
half_numeric!(
    half::f16 => "add.rn.f16 {r}, {a}, {b};",
    half::bf16 => "{{ .reg .b16 one; mov.b16 one, 0x3F80; fma.rn.bf16 {r}, {a}, one, {b}; }}"
);

/// `a + b` (wrapping for integers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sum;

/// The smaller of `a` and `b` (`a` when equal or unordered: a NaN on the left is kept, one on the
/// right is skipped — like CUB's `Min`, `b < a ? b : a`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Min;

/// The larger of `a` and `b` (`a` when equal or unordered, like CUB's `Max`, `a < b ? b : a`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Max;

/// Bitwise and.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitAnd;

/// Bitwise or.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitOr;

/// Bitwise xor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitXor;

macro_rules! builtin_op {
    ($op:ident, $bound:ident, $red:ident, |$a:ident, $b:ident| $body:expr, $id:expr) => {
        impl<T: $bound> ReduceOp<T> for $op {
            #[inline(always)]
            fn combine(&self, $a: T, $b: T) -> T {
                $body
            }

            #[inline(always)]
            fn __warp_all_reduce(&self, v: T) -> T {
                builtin_op!(@redux $red, v, *self)
            }
        }

        impl<T: $bound> Identity<T> for $op {
            #[inline(always)]
            fn identity(&self) -> T {
                $id
            }
        }
    };
    (@redux none, $v:expr, $op:expr) => {
        crate::warp::butterfly_reduce($v, $op)
    };
    (@redux $red:ident, $v:expr, $op:expr) => {
        match T::__warp_redux(RedOp::$red, $v) {
            Some(r) => r,
            None => crate::warp::butterfly_reduce($v, $op),
        }
    };
}

builtin_op!(Sum, Numeric, Sum, |a, b| a.add(b), T::ZERO);
builtin_op!(
    Min,
    Numeric,
    Min,
    |a, b| if b < a { b } else { a },
    T::HIGHEST
);
builtin_op!(
    Max,
    Numeric,
    Max,
    |a, b| if a < b { b } else { a },
    T::LOWEST
);
builtin_op!(BitAnd, Bits, none, |a, b| a.and(b), T::ONES);
builtin_op!(BitOr, Bits, none, |a, b| a.or(b), T::ZERO);
builtin_op!(BitXor, Bits, none, |a, b| a.xor(b), T::ZERO);

/// A test on one value, for selection and partitioning ([`crate::device::select`]).
///
/// Implemented for closures `Fn(&T) -> bool + Copy` and for [`Compare`].
pub trait Predicate<T>: Copy {
    /// Whether `x` is selected.
    fn test(&self, x: &T) -> bool;
}

impl<T, F: Fn(&T) -> bool + Copy> Predicate<T> for F {
    #[inline(always)]
    fn test(&self, x: &T) -> bool {
        self(x)
    }
}

/// How [`Compare`] compares a value `x` with its threshold `t`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    /// `x < t`
    Less = 0,
    /// `x <= t`
    LessEqual = 1,
    /// `x > t`
    Greater = 2,
    /// `x >= t`
    GreaterEqual = 3,
    /// `x == t`
    Equal = 4,
    /// `x != t`
    NotEqual = 5,
}

impl CompareOp {
    /// The op with this code; codes beyond 5 mean [`CompareOp::NotEqual`]. (Kernels receive the
    /// op as a `u32` parameter.)
    #[inline(always)]
    pub fn from_code(code: u32) -> CompareOp {
        match code {
            0 => CompareOp::Less,
            1 => CompareOp::LessEqual,
            2 => CompareOp::Greater,
            3 => CompareOp::GreaterEqual,
            4 => CompareOp::Equal,
            _ => CompareOp::NotEqual,
        }
    }
}

/// `x <op> threshold` as a [`Predicate`]: the built-in selection test, with the threshold a
/// kernel parameter so one kernel serves every comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compare<T> {
    /// The comparison.
    pub op: CompareOp,
    /// The value compared with.
    pub threshold: T,
}

impl<T: PartialOrd + Copy> Predicate<T> for Compare<T> {
    #[inline(always)]
    fn test(&self, x: &T) -> bool {
        let t = &self.threshold;
        match self.op {
            CompareOp::Less => x < t,
            CompareOp::LessEqual => x <= t,
            CompareOp::Greater => x > t,
            CompareOp::GreaterEqual => x >= t,
            CompareOp::Equal => x == t,
            CompareOp::NotEqual => x != t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold<T: Copy, O: ReduceOp<T>>(op: O, init: T, xs: &[T]) -> T {
        xs.iter().fold(init, |acc, &x| op.combine(acc, x))
    }

    #[test]
    fn builtins_and_identities() {
        assert_eq!(fold(Sum, Sum.identity(), &[1u32, 2, 3]), 6);
        assert_eq!(fold(Sum, 0u8, &[200, 100]), 44, "integer sums wrap");
        assert_eq!(fold(Min, Min.identity(), &[3i32, -7, 5]), -7);
        assert_eq!(fold(Max, Max.identity(), &[3.0f32, -7.0, 5.5]), 5.5);
        assert_eq!(<Min as Identity<f64>>::identity(&Min), f64::INFINITY);
        assert_eq!(
            fold(BitAnd, BitAnd.identity(), &[0b1110u16, 0b0111]),
            0b0110
        );
        assert_eq!(fold(BitOr, BitOr.identity(), &[0b1000u64, 0b0001]), 0b1001);
        assert_eq!(
            fold(BitXor, BitXor.identity(), &[0b1100i64, 0b1010]),
            0b0110
        );
        let closure = |a: i32, b: i32| a * 10 + b;
        assert_eq!(
            fold(closure, 0, &[1, 2, 3]),
            123,
            "closures keep index order"
        );
    }

    #[cfg(feature = "half")]
    #[test]
    fn half_sum() {
        let x = half::bf16::from_f32(1.5);
        assert_eq!(Sum.combine(x, x).to_f32(), 3.0);
        assert_eq!(
            <Max as Identity<half::f16>>::identity(&Max),
            half::f16::NEG_INFINITY
        );
    }
}
