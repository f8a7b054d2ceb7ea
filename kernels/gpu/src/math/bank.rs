//! `f64` polynomial coefficients in the GPU's constant memory ([`const_bank!`]).
//!
//! An `f64` constant whose low 32 bits are not zero cannot be an immediate operand of a SASS
//! double instruction: ptxas builds it from two uniform moves (`UMOV`) at every use, again in
//! every loop iteration and for every element a thread handles, as the uniform registers
//! cannot hold them all. A polynomial of 12 coefficients costs 24 extra instructions per
//! evaluation that way. A table in the `.const` state space, read at fixed addresses, becomes
//! constant-bank operands of the instructions that use it (`DFMA R, R, c[0x3][...], R`), for
//! free. On the host and the simulator the table is its Rust array.

/// Value at byte offset `$off` (a constant expression) of the `.const` array `$sym`; on the
/// host, `$v`.
macro_rules! load {
    ($sym:literal, $off:expr, $v:expr) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            let r: f64;
            // SAFETY: reads 8 bytes inside the module's own constant array (the offset is
            // below its size by construction), which nothing writes.
            unsafe {
                core::arch::asm!(
                    concat!("ld.const.f64 {r}, [", $sym, "+{off}];"),
                    r = out(reg64) r,
                    off = const $off,
                    options(pure, nomem, nostack),
                )
            };
            r
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            $v
        }
    }};
}
pub(crate) use load;

/// Placeholder for a repetition: expands to `$s` whatever `$_t` is. (Used only in the GPU
/// build's offsets and `.const` initializer.)
#[allow(unused_macros)]
macro_rules! each {
    ($_t:expr, $s:literal) => {
        $s
    };
}
#[allow(unused_imports)]
pub(crate) use each;

/// `const_bank! { NAME = "ptx_symbol", [c0, c1, ...]; }` defines the unit type `NAME` with
/// `NAME::VALUES` (the array), `NAME::get::<I>()` (one value) and `NAME::horner(x)` (Horner's rule, highest degree first, as
/// `math::horner64`), and in the GPU build the `.const` array `ptx_symbol` with the same
/// values (their bits, written by the compiler from the same expressions), which `horner`
/// reads at fixed offsets. The symbol must be unique in the crate.
macro_rules! const_bank {
    ($(#[$m:meta])* $vis:vis $name:ident = $sym:literal, [$first:expr $(, $v:expr)* $(,)?];) => {
        #[cfg(target_arch = "nvptx64")]
        core::arch::global_asm!(
            concat!(".const .align 8 .b64 ", $sym, "[] = {{{}U", $($crate::math::bank::each!($v, ", {}U"),)* "}};"),
            const f64::to_bits($first), $(const f64::to_bits($v)),*
        );
        $(#[$m])*
        // Named like the constant arrays they replace.
        #[allow(clippy::upper_case_acronyms)]
        $vis struct $name;
        impl $name {
            /// The coefficients, highest degree first.
            #[allow(dead_code)]
            pub(crate) const VALUES: &[f64] = &[$first, $($v),*];
            /// Value `I` (`I` below the table's length: checked at compile time).
            #[allow(dead_code)]
            #[inline(always)]
            pub(crate) fn get<const I: usize>() -> f64 {
                const { assert!(I < Self::VALUES.len(), "const_bank: index out of the table") };
                $crate::math::bank::load!($sym, 8 * I, Self::VALUES[I])
            }
            /// Horner's rule on the coefficients.
            #[allow(dead_code)]
            #[inline(always)]
            pub(crate) fn horner(x: f64) -> f64 {
                #[allow(unused_mut)]
                let mut r = $crate::math::bank::load!($sym, 0, $first);
                $crate::math::bank::const_bank!(@step $sym, x, r, [$first] $($v),*);
                r
            }
            /// Horner's rule continued from `r`, the value of the higher-degree terms: returns
            /// `r·x^n + p(x)` for the table's n coefficients. (Those higher terms can be
            /// immediate operands, [`horner64`](crate::math::horner64) on an array, when their
            /// low 32 bits are zero.)
            #[allow(dead_code)]
            #[inline(always)]
            pub(crate) fn horner_from(r: f64, x: f64) -> f64 {
                #[allow(unused_mut)]
                let mut r = r;
                $crate::math::bank::const_bank!(@step $sym, x, r, [] $first $(, $v)*);
                r
            }
        }
    };
    (@step $sym:literal, $x:ident, $r:ident, [$($done:expr),*] $head:expr $(, $tail:expr)*) => {
        $r = $crate::math::fma_f64(
            $r,
            $x,
            $crate::math::bank::load!($sym, 8 * <[u8]>::len(&[$($crate::math::bank::each!($done, 0u8)),*]), $head),
        );
        $crate::math::bank::const_bank!(@step $sym, $x, $r, [$($done,)* $head] $($tail),*);
    };
    (@step $sym:literal, $x:ident, $r:ident, [$($done:expr),*]) => {};
}
pub(crate) use const_bank;
