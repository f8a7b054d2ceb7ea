//! Fast hardware math: the GPU's special-function unit and single-instruction bit operations.
//! (Re-exported by [`gpu::math`](super); the accurate library functions live beside this file.)
//!
//! The `_approx` functions are single PTX `.approx` instructions: much faster than correctly
//! rounded library code, with errors of a few ulp over their documented ranges (PTX ISA,
//! "Floating-point instructions"), and flushing subnormal inputs/outputs to zero where the
//! name says `ftz`. Use them where the speed matters more than the last bits.
//!
//! Where LLVM already emits the right single instruction for a core Rust operation
//! (`count_ones` → `popc`, `leading_zeros` → `clz`, `reverse_bits` → `brev`, `f32::min` →
//! `min.f32`), the functions here use the Rust operation, so the optimizer still sees through
//! them (constant folding etc.). The rest are inline PTX marked `pure, nomem`, so unused or
//! repeated calls are still removed or merged.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

/// Defines `fn $name(x: $t) -> $t` as one PTX instruction `$ins d, a;`.
macro_rules! unary {
    ($($(#[$doc:meta])* $name:ident($t:ty, $reg:ident) => $ins:literal;)*) => { $(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(x: $t) -> $t {
            device!(concat!("math::", stringify!($name)), {
                let r: $t;
                // SAFETY: an arithmetic instruction on registers.
                unsafe {
                    core::arch::asm!(concat!($ins, " {r}, {x};"), r = out($reg) r, x = in($reg) x, options(pure, nomem, nostack))
                };
                r
            }, sim: { crate::sim::math::$name(x) })
        }
    )* };
}

unary! {
    /// `1/sqrt(x)` (`rsqrt.approx.f32`), max relative error 2^-22.9 over the normal range.
    rsqrt(f32, reg32) => "rsqrt.approx.f32";
    /// `sqrt(x)` (`sqrt.approx.f32`), max relative error 2^-23 over the normal range.
    sqrt_approx(f32, reg32) => "sqrt.approx.f32";
    /// Correctly rounded `sqrt(x)` for `f32` (`sqrt.rn.f32`).
    sqrt(f32, reg32) => "sqrt.rn.f32";
    /// `1/x` (`rcp.approx.f32`), max relative error 2^-23 over the normal range.
    rcp_approx(f32, reg32) => "rcp.approx.f32";
    /// `2^x` (`ex2.approx.ftz.f32`), max relative error 2^-22 (near 2^-22.5 in practice).
    exp2_approx(f32, reg32) => "ex2.approx.ftz.f32";
    /// `log2(x)` (`lg2.approx.f32`), max absolute error 2^-22 on (0.5, 2), relative elsewhere.
    log2_approx(f32, reg32) => "lg2.approx.f32";
    /// `sin(x)` in radians (`sin.approx.f32`), max absolute error 2^-20.5 on [-π, π];
    /// accuracy drops for large |x|.
    sin_approx(f32, reg32) => "sin.approx.f32";
    /// `cos(x)` in radians (`cos.approx.f32`), max absolute error 2^-20.5 on [-π, π].
    cos_approx(f32, reg32) => "cos.approx.f32";
    /// `tanh(x)` (`tanh.approx.f32`, sm_75+), max relative error 2^-11: for activations.
    tanh_approx(f32, reg32) => "tanh.approx.f32";
    /// Clamps to [0, 1] (`cvt.sat.f32.f32`); NaN becomes 0.
    saturate(f32, reg32) => "cvt.sat.f32.f32";
    /// Correctly rounded `sqrt(x)` for `f64` (`sqrt.rn.f64`).
    sqrt_f64(f64, reg64) => "sqrt.rn.f64";
    /// `1/x` for `f64` (`rcp.rn.f64`, correctly rounded).
    rcp_f64(f64, reg64) => "rcp.rn.f64";
    /// The largest integer not above `x` (`cvt.rmi.f32.f32`), exact.
    floor(f32, reg32) => "cvt.rmi.f32.f32";
    /// The smallest integer not below `x` (`cvt.rpi.f32.f32`), exact.
    ceil(f32, reg32) => "cvt.rpi.f32.f32";
    /// `x` rounded toward zero to an integer (`cvt.rzi.f32.f32`), exact.
    trunc(f32, reg32) => "cvt.rzi.f32.f32";
    /// `x` rounded to the nearest integer, ties to even (`cvt.rni.f32.f32`), exact.
    rint(f32, reg32) => "cvt.rni.f32.f32";
    /// [`floor`] for `f64` (`cvt.rmi.f64.f64`).
    floor_f64(f64, reg64) => "cvt.rmi.f64.f64";
    /// [`ceil`] for `f64` (`cvt.rpi.f64.f64`).
    ceil_f64(f64, reg64) => "cvt.rpi.f64.f64";
    /// [`trunc`] for `f64` (`cvt.rzi.f64.f64`).
    trunc_f64(f64, reg64) => "cvt.rzi.f64.f64";
    /// [`rint`] for `f64` (`cvt.rni.f64.f64`).
    rint_f64(f64, reg64) => "cvt.rni.f64.f64";
}

/// `e^x` as `2^(x·log2 e)` with [`exp2_approx`]: the `__expf` of CUDA's fast math. The relative
/// error grows with |x| (the rounding of `x·log2 e` is amplified), about 2^-21 for |x| < 10.
#[inline(always)]
pub fn exp_approx(x: f32) -> f32 {
    exp2_approx(x * core::f32::consts::LOG2_E)
}

/// `10^x` as `2^(x·log2 10)` with [`exp2_approx`].
#[inline(always)]
pub fn exp10_approx(x: f32) -> f32 {
    exp2_approx(x * core::f32::consts::LOG2_10)
}

/// `ln(x)` as `log2(x)·ln 2` with [`log2_approx`] (`__logf`).
#[inline(always)]
pub fn ln_approx(x: f32) -> f32 {
    log2_approx(x) * core::f32::consts::LN_2
}

/// `log10(x)` as `log2(x)·log10 2` with [`log2_approx`].
#[inline(always)]
pub fn log10_approx(x: f32) -> f32 {
    log2_approx(x) * core::f32::consts::LOG10_2
}

/// `x / y` (`div.approx.f32`): `x · (1/y)`, max error 2 ulp for |y| in [2^-126, 2^126].
#[inline(always)]
pub fn div_approx(x: f32, y: f32) -> f32 {
    device!("math::div_approx", {
        let r: f32;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("div.approx.f32 {r}, {x}, {y};", r = out(reg32) r, x = in(reg32) x, y = in(reg32) y, options(pure, nomem, nostack))
        };
        r
    }, sim: { crate::sim::math::div_approx(x, y) })
}

/// `x^y` for `x > 0` as `2^(y·log2 x)`: fast, but the error grows with |y·log2 x|.
#[inline(always)]
pub fn powf_approx(x: f32, y: f32) -> f32 {
    exp2_approx(y * log2_approx(x))
}

/// Fused multiply-add `a·b + c` with one rounding (`fma.rn.f32`).
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    device!("math::fma", {
        let r: f32;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("fma.rn.f32 {r}, {a}, {b}, {c};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack))
        };
        r
    }, sim: { crate::sim::math::fma(a, b, c) })
}

/// `a·b − c` with one rounding: [`fma`] with the negation inside the asm block, where ptxas
/// folds it into the FFMA. (A `-c` written in Rust reaches an asm operand as an integer `xor`
/// on the `.b32` register, which ptxas keeps as a separate instruction.)
#[inline(always)]
pub(crate) fn fms(a: f32, b: f32, c: f32) -> f32 {
    device!("math::fma", {
        let r: f32;
        // SAFETY: arithmetic instructions on registers.
        unsafe {
            core::arch::asm!("{{ .reg .f32 t; neg.f32 t, {c}; fma.rn.f32 {r}, {a}, {b}, t; }}", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack))
        };
        r
    }, sim: { crate::sim::math::fma(a, b, -c) })
}

/// `if a > b { x } else { y }` as one `selp` once both values exist (false for a NaN `a`, as
/// `>`). LLVM turns a select between a short and a long formula into a branch around the long
/// one, which a warp of mixed arguments runs anyway, plus the divergence bookkeeping, and
/// which keeps ptxas from interleaving the two formulas.
#[inline(always)]
pub(crate) fn select_gt(a: f32, b: f32, x: f32, y: f32) -> f32 {
    device!("math::select_gt", {
        let r: f32;
        // SAFETY: a comparison and a select on registers.
        unsafe {
            core::arch::asm!("{{ .reg .pred p; setp.gt.f32 p, {a}, {b}; selp.f32 {r}, {x}, {y}, p; }}", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, x = in(reg32) x, y = in(reg32) y, options(pure, nomem, nostack))
        };
        r
    }, sim: { if a > b { x } else { y } })
}

/// [`select_gt`] for f64.
#[inline(always)]
pub(crate) fn select_gt_f64(a: f64, b: f64, x: f64, y: f64) -> f64 {
    device!("math::select_gt_f64", {
        let r: f64;
        // SAFETY: a comparison and a select on registers.
        unsafe {
            core::arch::asm!("{{ .reg .pred p; setp.gt.f64 p, {a}, {b}; selp.f64 {r}, {x}, {y}, p; }}", r = out(reg64) r, a = in(reg64) a, b = in(reg64) b, x = in(reg64) x, y = in(reg64) y, options(pure, nomem, nostack))
        };
        r
    }, sim: { if a > b { x } else { y } })
}

/// `c − a·b` with one rounding ([`fma`] of `-a`, negated inside the asm block like [`fms`]).
#[inline(always)]
pub(crate) fn fnma(a: f32, b: f32, c: f32) -> f32 {
    device!("math::fma", {
        let r: f32;
        // SAFETY: arithmetic instructions on registers.
        unsafe {
            core::arch::asm!("{{ .reg .f32 t; neg.f32 t, {a}; fma.rn.f32 {r}, t, {b}, {c}; }}", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack))
        };
        r
    }, sim: { crate::sim::math::fma(-a, b, c) })
}

/// Fused multiply-add for `f64` (`fma.rn.f64`).
#[inline(always)]
pub fn fma_f64(a: f64, b: f64, c: f64) -> f64 {
    device!("math::fma_f64", {
        let r: f64;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("fma.rn.f64 {r}, {a}, {b}, {c};", r = out(reg64) r, a = in(reg64) a, b = in(reg64) b, c = in(reg64) c, options(pure, nomem, nostack))
        };
        r
    }, sim: { crate::sim::math::fma_f64(a, b, c) })
}

/// `a·b − c` for `f64` with one rounding: [`fma_f64`] with the negation inside the asm block
/// (as [`fms`]), where ptxas folds it into the DFMA.
#[inline(always)]
pub(crate) fn fms_f64(a: f64, b: f64, c: f64) -> f64 {
    device!("math::fma_f64", {
        let r: f64;
        // SAFETY: arithmetic instructions on registers.
        unsafe {
            core::arch::asm!("{{ .reg .f64 t; neg.f64 t, {c}; fma.rn.f64 {r}, {a}, {b}, t; }}", r = out(reg64) r, a = in(reg64) a, b = in(reg64) b, c = in(reg64) c, options(pure, nomem, nostack))
        };
        r
    }, sim: { crate::sim::math::fma_f64(a, b, -c) })
}

/// `c − a·b` for `f64` with one rounding (as [`fnma`]).
#[inline(always)]
pub(crate) fn fnma_f64(a: f64, b: f64, c: f64) -> f64 {
    device!("math::fma_f64", {
        let r: f64;
        // SAFETY: arithmetic instructions on registers.
        unsafe {
            core::arch::asm!("{{ .reg .f64 t; neg.f64 t, {a}; fma.rn.f64 {r}, t, {b}, {c}; }}", r = out(reg64) r, a = in(reg64) a, b = in(reg64) b, c = in(reg64) c, options(pure, nomem, nostack))
        };
        r
    }, sim: { crate::sim::math::fma_f64(-a, b, c) })
}

/// Minimum (`min.f32`); if one operand is NaN, returns the other.
#[inline(always)]
pub fn fmin(a: f32, b: f32) -> f32 {
    a.min(b)
}

/// Maximum (`max.f32`); if one operand is NaN, returns the other.
#[inline(always)]
pub fn fmax(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// High 32 bits of the 64-bit product (`mul.hi.u32`), `__umulhi`.
#[inline(always)]
pub fn mul_hi_u32(a: u32, b: u32) -> u32 {
    ((a as u64 * b as u64) >> 32) as u32
}

/// High 32 bits of the signed 64-bit product (`mul.hi.s32`), `__mulhi`.
#[inline(always)]
pub fn mul_hi_i32(a: i32, b: i32) -> i32 {
    ((a as i64 * b as i64) >> 32) as i32
}

/// High 64 bits of the 128-bit product (`mul.hi.u64`), `__umul64hi`.
#[inline(always)]
pub fn mul_hi_u64(a: u64, b: u64) -> u64 {
    device!("math::mul_hi_u64", {
        let r: u64;
        // SAFETY: an arithmetic instruction on registers. (Written as PTX: 128-bit Rust
        // arithmetic could pull in compiler-builtins calls the kernel sysroot does not have.)
        unsafe {
            core::arch::asm!("mul.hi.u64 {r}, {a}, {b};", r = out(reg64) r, a = in(reg64) a, b = in(reg64) b, options(pure, nomem, nostack))
        };
        r
    }, sim: { ((a as u128 * b as u128) >> 64) as u64 })
}

/// High 64 bits of the signed 128-bit product (`mul.hi.s64`), `__mul64hi`.
#[inline(always)]
pub fn mul_hi_i64(a: i64, b: i64) -> i64 {
    device!("math::mul_hi_i64", {
        let r: i64;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("mul.hi.s64 {r}, {a}, {b};", r = out(reg64) r, a = in(reg64) a, b = in(reg64) b, options(pure, nomem, nostack))
        };
        r
    }, sim: { ((a as i128 * b as i128) >> 64) as i64 })
}

/// Number of set bits (`popc.b32`), `__popc`.
#[inline(always)]
pub fn popc(x: u32) -> u32 {
    x.count_ones()
}

/// Number of set bits of a 64-bit value (`popc.b64`), `__popcll`.
#[inline(always)]
pub fn popc64(x: u64) -> u32 {
    x.count_ones()
}

/// Leading zero bits (`clz.b32`), `__clz`; 32 for 0.
#[inline(always)]
pub fn clz(x: u32) -> u32 {
    x.leading_zeros()
}

/// Leading zero bits of a 64-bit value (`clz.b64`), `__clzll`.
#[inline(always)]
pub fn clz64(x: u64) -> u32 {
    x.leading_zeros()
}

/// Bit reversal (`brev.b32`), `__brev`.
#[inline(always)]
pub fn brev(x: u32) -> u32 {
    x.reverse_bits()
}

/// Bit reversal of a 64-bit value (`brev.b64`), `__brevll`.
#[inline(always)]
pub fn brev64(x: u64) -> u64 {
    x.reverse_bits()
}

/// Find first set: 1 + the index of the least significant set bit, 0 if `x == 0` (`__ffs`).
#[inline(always)]
pub fn ffs(x: u32) -> u32 {
    if x == 0 { 0 } else { x.trailing_zeros() + 1 }
}

/// [`ffs`] for 64-bit values (`__ffsll`).
#[inline(always)]
pub fn ffs64(x: u64) -> u32 {
    if x == 0 { 0 } else { x.trailing_zeros() + 1 }
}

/// Byte permute (`prmt.b32`), `__byte_perm(x, y, s)`: byte `i` of the result is byte
/// `(s >> 4i) & 7` of the 8-byte value `y:x`.
#[inline(always)]
pub fn byte_perm(x: u32, y: u32, s: u32) -> u32 {
    device!("math::byte_perm", {
        let r: u32;
        // SAFETY: a bit manipulation on registers.
        unsafe {
            core::arch::asm!("prmt.b32 {r}, {x}, {y}, {s};", r = out(reg32) r, x = in(reg32) x, y = in(reg32) y, s = in(reg32) s, options(pure, nomem, nostack))
        };
        r
    }, sim: { crate::sim::math::byte_perm(x, y, s) })
}
