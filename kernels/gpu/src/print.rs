//! Device-side `printf`, through the CUDA driver's `vprintf`.
//!
//! ```ignore
//! gpu::printf!("thread %u: x = %f, n = %lld\n", i, x, n);
//! ```
//!
//! The format string is C's: the driver formats it on the host after the kernel finishes (output
//! appears at the next synchronizing call; the buffer is 1 MiB by default, and lines beyond it
//! are dropped). `vprintf(format, args)` takes a pointer to the arguments packed as C varargs
//! would be: each in order, aligned to its size, `f32` promoted to `f64`, integers narrower than
//! 32 bits promoted to 32. [`printf!`](crate::printf) builds that buffer on the stack.
//!
//! The macro checks the format string at compile time: the number of arguments must match the
//! conversions (`*` width/precision included), and each argument's type must fit its
//! conversion:
//!
//! | conversion                     | argument types                                  |
//! |--------------------------------|-------------------------------------------------|
//! | `%d %i %u %x %X %o %c`         | `i8 i16 i32 u8 u16 u32 bool`                    |
//! | `%ld %lld %lu %llx ...` (`l ll z j t`) | `i64 u64 isize usize`                   |
//! | `%f %e %g %a` (any case)       | `f32 f64` (and `f16 bf16` with `half`)          |
//! | `%p`                           | raw pointers, `usize`/`u64`                     |
//! | `%s`                           | `&CStr`, `*const u8` to a NUL-terminated string |
//!
//! `%n` and `long double` (`L`) are rejected. A Rust `&str` is not NUL-terminated; print it as
//! `%s` only via a `CStr` (`c"literal"`).
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

use core::ffi::CStr;
use core::mem::MaybeUninit;

/// Argument kinds, as the format string expects them and as arguments provide them.
#[doc(hidden)]
pub mod kind {
    /// A 4-byte integer (`int`, after promotion).
    pub const INT32: u8 = 1;
    /// An 8-byte integer (`long`, `long long`, `size_t`).
    pub const INT64: u8 = 2;
    /// A `double` (floats are promoted).
    pub const FLOAT64: u8 = 3;
    /// A pointer.
    pub const PTR: u8 = 4;
    /// `%s`: a pointer to a NUL-terminated string (expected only).
    pub const STR: u8 = 5;
}

/// A value `printf!` can pass: implemented for the primitive numbers, `bool`, raw pointers and
/// `&CStr` (and `f16`/`bf16` with the `half` feature).
pub trait PrintfArg: Copy {
    #[doc(hidden)]
    const KIND: u8;
    /// The value as C varargs pass it, in 4 or 8 bytes.
    #[doc(hidden)]
    fn __promote(self) -> Promoted;
}

/// A promoted vararg.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum Promoted {
    Four(u32),
    Eight(u64),
}

macro_rules! impl_printf_arg {
    ($($t:ty: $kind:ident, |$v:ident| $promote:expr;)*) => { $(
        impl PrintfArg for $t {
            const KIND: u8 = kind::$kind;
            #[inline(always)]
            fn __promote(self) -> Promoted {
                let $v = self;
                $promote
            }
        }
    )* };
}

impl_printf_arg! {
    i8: INT32, |v| Promoted::Four(v as i32 as u32);
    i16: INT32, |v| Promoted::Four(v as i32 as u32);
    i32: INT32, |v| Promoted::Four(v as u32);
    u8: INT32, |v| Promoted::Four(v as u32);
    u16: INT32, |v| Promoted::Four(v as u32);
    u32: INT32, |v| Promoted::Four(v);
    bool: INT32, |v| Promoted::Four(v as u32);
    i64: INT64, |v| Promoted::Eight(v as u64);
    u64: INT64, |v| Promoted::Eight(v);
    isize: INT64, |v| Promoted::Eight(v as u64);
    usize: INT64, |v| Promoted::Eight(v as u64);
    f32: FLOAT64, |v| Promoted::Eight((v as f64).to_bits());
    f64: FLOAT64, |v| Promoted::Eight(v.to_bits());
}

#[cfg(feature = "half")]
impl_printf_arg! {
    half::f16: FLOAT64, |v| Promoted::Eight(v.to_f64().to_bits());
    half::bf16: FLOAT64, |v| Promoted::Eight(v.to_f64().to_bits());
}

impl<T> PrintfArg for *const T {
    const KIND: u8 = kind::PTR;
    #[inline(always)]
    fn __promote(self) -> Promoted {
        Promoted::Eight(self as usize as u64)
    }
}

impl<T> PrintfArg for *mut T {
    const KIND: u8 = kind::PTR;
    #[inline(always)]
    fn __promote(self) -> Promoted {
        Promoted::Eight(self as usize as u64)
    }
}

impl PrintfArg for &CStr {
    const KIND: u8 = kind::PTR;
    #[inline(always)]
    fn __promote(self) -> Promoted {
        Promoted::Eight(self.as_ptr() as usize as u64)
    }
}

/// Whether an argument of kind `got` may be passed for a conversion expecting `expected`.
#[doc(hidden)]
pub const fn compatible(expected: u8, got: u8) -> bool {
    expected == got
        || (expected == kind::STR && got == kind::PTR)
        || (expected == kind::PTR && got == kind::INT64)
}

/// The `vprintf` argument buffer for `N` arguments: 8-byte aligned, each argument at the next
/// offset aligned to its size. Only the bytes written are initialized: the arguments and the
/// 4-byte gaps before 8-byte arguments (zeroed), which is all `vprintf` reads. (Zero-filling the
/// whole buffer would cost a byte-by-byte loop: LLVM lowers that memset naively for NVPTX.)
#[doc(hidden)]
pub struct ArgBuffer<const N: usize> {
    words: MaybeUninit<[u64; N]>,
    offset: usize,
}

impl<const N: usize> ArgBuffer<N> {
    #[inline(always)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        ArgBuffer {
            words: MaybeUninit::uninit(),
            offset: 0,
        }
    }

    /// Appends `value`, which the format string expects as kind `EXPECTED` (checked at compile
    /// time).
    #[inline(always)]
    pub fn push<T: PrintfArg, const EXPECTED: u8>(&mut self, value: T) {
        const {
            assert!(
                compatible(EXPECTED, T::KIND),
                "printf!: an argument's type does not match its conversion (e.g. %d needs a 32-bit integer, %lld a 64-bit one, %f a float, %s a &CStr)"
            )
        };
        let bytes = self.words.as_mut_ptr().cast::<u8>();
        match value.__promote() {
            Promoted::Four(v) => {
                assert!(self.offset + 4 <= N * 8);
                // SAFETY: in bounds (checked above; at most 8 bytes per argument) and 4-aligned
                // (offsets only grow by 4 or to a multiple of 8).
                unsafe { bytes.add(self.offset).cast::<u32>().write(v) };
                self.offset += 4;
            }
            Promoted::Eight(v) => {
                let at = self.offset.next_multiple_of(8);
                assert!(at + 8 <= N * 8);
                // SAFETY: in bounds and aligned (the buffer is `[u64; N]`, `at` a multiple of 8,
                // a gap starts at a multiple of 4).
                unsafe {
                    if at != self.offset {
                        bytes.add(self.offset).cast::<u32>().write(0);
                    }
                    bytes.add(at).cast::<u64>().write(v);
                }
                self.offset = at + 8;
            }
        }
    }
}

/// Calls `vprintf` with a NUL-terminated format and a filled buffer; returns what `vprintf`
/// returns (the number of arguments, or a negative value on error).
#[doc(hidden)]
#[inline(always)]
pub fn __vprintf<const N: usize>(format: &'static str, args: &ArgBuffer<N>) -> i32 {
    debug_assert!(format.ends_with('\0'));
    device!("printf!", {
        let args = if N == 0 {
            core::ptr::null()
        } else {
            args.words.as_ptr().cast()
        };
        // SAFETY: `format` is NUL-terminated (the macro appends "\0"); `args` is laid out as
        // the format's conversions expect (checked at compile time by `printf!`).
        unsafe { core::arch::nvptx::vprintf(format.as_ptr(), args) }
    }, sim: { // SAFETY: as on the GPU: `args` is laid out as the format's conversions expect.
        unsafe { crate::sim::printf::vprintf(format, args.words.as_ptr().cast()) } })
}

/// 1, whatever the argument: counts macro repetitions in a constant expression.
#[doc(hidden)]
pub const fn __one(_: &str) -> usize {
    1
}

/// The kinds of arguments a C format string consumes, in order: `N` must be their number.
/// Panics (a compile error in the const context `printf!` calls it from) on a malformed or
/// unsupported conversion, or if `N` is wrong.
#[doc(hidden)]
pub const fn __conversions<const N: usize>(format: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let count = scan(format.as_bytes(), &mut out);
    assert!(
        count == N,
        "printf!: internal error: conversion count mismatch"
    );
    out
}

/// Number of arguments the format consumes.
#[doc(hidden)]
pub const fn __count_conversions(format: &str) -> usize {
    scan(format.as_bytes(), &mut [])
}

/// Walks `%` conversions, writing the kind of each consumed argument to `out` (when it has
/// room); returns how many arguments the format consumes.
const fn scan(s: &[u8], out: &mut [u8]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if i < s.len() && s[i] == b'%' {
            i += 1;
            continue;
        }
        // flags
        while i < s.len() && matches!(s[i], b'-' | b'+' | b' ' | b'#' | b'0') {
            i += 1;
        }
        // width
        if i < s.len() && s[i] == b'*' {
            n = record(out, n, kind::INT32);
            i += 1;
        }
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        // precision
        if i < s.len() && s[i] == b'.' {
            i += 1;
            if i < s.len() && s[i] == b'*' {
                n = record(out, n, kind::INT32);
                i += 1;
            }
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
        }
        // length
        let mut long = false;
        while i < s.len() && matches!(s[i], b'h' | b'l' | b'z' | b'j' | b't' | b'L') {
            assert!(
                s[i] != b'L',
                "printf!: long double (%L...) is not supported"
            );
            long |= matches!(s[i], b'l' | b'z' | b'j' | b't');
            i += 1;
        }
        assert!(
            i < s.len(),
            "printf!: incomplete conversion at the end of the format string"
        );
        let k = match s[i] {
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' => {
                if long {
                    kind::INT64
                } else {
                    kind::INT32
                }
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => kind::FLOAT64,
            b's' => kind::STR,
            b'p' => kind::PTR,
            b'n' => panic!("printf!: %n is not supported"),
            _ => panic!("printf!: unknown conversion character"),
        };
        n = record(out, n, k);
        i += 1;
    }
    n
}

const fn record(out: &mut [u8], n: usize, k: u8) -> usize {
    if n < out.len() {
        out[n] = k;
    }
    n + 1
}

/// Device-side formatted print, like CUDA's `printf`: `printf!("i = %d, x = %f\n", i, x)`.
///
/// The format is a C format string literal (a NUL is appended); the arguments are checked
/// against it at compile time (see [`crate::print`]). Returns `vprintf`'s result. On the host,
/// panics like every device intrinsic.
#[macro_export]
macro_rules! printf {
    (@push $buf:ident, $kinds:ident, [$($idx:tt)*], $arg:expr, $($rest:tt)*) => {
        $buf.push::<_, { $kinds[0 $($idx)*] }>($arg);
        $crate::printf!(@push $buf, $kinds, [$($idx)* + 1], $($rest)*);
    };
    (@push $buf:ident, $kinds:ident, [$($idx:tt)*], ) => {};
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        const __GPU_FMT: &str = ::core::concat!($fmt, "\0");
        const __GPU_N: usize = $crate::print::__count_conversions(__GPU_FMT);
        const _: () = ::core::assert!(
            __GPU_N == 0 $(+ $crate::print::__one(::core::stringify!($arg)))*,
            "printf!: the number of arguments does not match the format string's conversions"
        );
        const __GPU_KINDS: [u8; __GPU_N] = $crate::print::__conversions::<__GPU_N>(__GPU_FMT);
        #[allow(unused_mut)]
        let mut __gpu_buf = $crate::print::ArgBuffer::<__GPU_N>::new();
        $crate::printf!(@push __gpu_buf, __GPU_KINDS, [], $($arg,)*);
        $crate::print::__vprintf(__GPU_FMT, &__gpu_buf)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_classifies_conversions() {
        assert_eq!(__count_conversions("plain %% text\0"), 0);
        assert_eq!(__count_conversions("%d %s %p %c\0"), 4);
        assert_eq!(
            __conversions::<7>("%-08.3f %*d %.*lld %zu %#x\0"),
            [
                kind::FLOAT64,
                kind::INT32,
                kind::INT32,
                kind::INT32,
                kind::INT64,
                kind::INT64,
                kind::INT32
            ]
        );
        assert_eq!(
            __conversions::<3>("%hhd %lu %s\0"),
            [kind::INT32, kind::INT64, kind::STR]
        );
    }

    #[test]
    fn kinds_are_compatible_as_documented() {
        assert!(compatible(kind::INT32, <u8 as PrintfArg>::KIND));
        assert!(compatible(kind::INT64, <usize as PrintfArg>::KIND));
        assert!(compatible(kind::FLOAT64, <f32 as PrintfArg>::KIND));
        assert!(compatible(kind::STR, <&CStr as PrintfArg>::KIND));
        assert!(compatible(kind::PTR, <u64 as PrintfArg>::KIND));
        assert!(!compatible(kind::INT32, <i64 as PrintfArg>::KIND));
        assert!(!compatible(kind::STR, <u64 as PrintfArg>::KIND));
        assert!(!compatible(kind::FLOAT64, <i64 as PrintfArg>::KIND));
    }

    #[test]
    fn buffer_packs_like_c_varargs() {
        let mut buf = ArgBuffer::<4>::new();
        buf.push::<_, { kind::INT32 }>(-2i32);
        buf.push::<_, { kind::FLOAT64 }>(1.5f32);
        buf.push::<_, { kind::INT32 }>(7u8);
        buf.push::<_, { kind::INT64 }>(u64::MAX);
        assert_eq!(buf.offset, 32);
        // SAFETY: bytes 0..32 were all written (arguments and the zeroed gap).
        let words = unsafe { buf.words.assume_init() };
        assert_eq!(words[0] as u32, (-2i32) as u32);
        assert_eq!(words[0] >> 32, 0, "gap before an 8-byte argument is zeroed");
        assert_eq!(f64::from_bits(words[1]), 1.5);
        assert_eq!(words[2] as u32, 7);
        assert_eq!(words[3], u64::MAX);
    }
}
