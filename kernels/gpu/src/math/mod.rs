//! Math for kernels: accurate library functions (`sin`, `exp`, `log`, `erf`, ...) and the
//! hardware's fast approximate instructions and bit operations.
//!
//! # Accurate functions
//! `no_std` Rust has no `f32::sin`; these are the `sinf`/`expf`/... of CUDA's math library,
//! written in plain Rust with the same structure: Cody–Waite range reduction (a Payne–Hanek
//! reduction for huge trigonometric arguments), minimax polynomials evaluated with fused
//! multiply-add ([`fma`]), and exact scaling by powers of two. Each function's documentation
//! states its error bound in ulp (units in the last place); the `math_ulp` tests measure it over
//! millions of inputs and the edge cases (±0, subnormals, ±inf, NaN, huge arguments) against a
//! reference computed in higher precision. The README's "Math functions" section has the
//! measured table.
//!
//! The f32 functions use only f32 arithmetic (no f64: it runs at 1/64 rate on consumer GPUs),
//! no lookup tables in local memory, and select rather than branch where they can, so threads
//! of a warp stay converged. They only use IEEE operations that round the same everywhere
//! (`+ - * /`, `fma.rn`, `sqrt.rn`, conversions), never the `.approx` instructions: the same
//! code gives bit-identical results on the GPU, on the CPU simulator and in host tests.
//!
//! Why free functions (`math::sin(x)`) and no `x.sin()` trait: on the host, the simulator
//! build of a kernel crate links `std`, whose inherent `f32::sin` wins over any trait method of
//! the same name. A kernel writing `x.sin()` would compute glibc's `sin` in the simulator and
//! ours on the GPU, and the two sides would differ in the last bit.
//!
//! # Hardware approximations
//! The `_approx` functions are single PTX `.approx` instructions (the special-function unit):
//! much faster, a few ulp of error over documented ranges, see each function.

pub(crate) mod bank;
mod erf_f64;
mod erfc;
mod erfinv;
mod erfinv_f64;
mod exp10_log10_f64;
mod exp_log;
mod exp_log_f64;
mod expm1_log1p;
mod expm1_log1p_f64;
mod fast;
mod gamma;
mod gamma_f64;
mod hyperbolic;
mod hyperbolic_f64;
mod inverse_trig;
mod inverse_trig_f64;
mod misc;
mod misc_f64;
mod pow;
mod pow_f64;
mod rounding;
mod rounding_f64;
mod special;
mod special_f64;
mod trig;
mod trig_f64;
mod trig_pi_f64;

pub use erf_f64::{erf_f64, erfc_f64};
pub use erfc::erfc;
pub use erfinv::erfinv;
pub use erfinv_f64::erfinv_f64;
pub use exp_log::{exp, exp2, exp10, log, log2, log10};
pub use exp_log_f64::{exp_f64, exp2_f64, log_f64, log2_f64};
pub use exp10_log10_f64::{exp10_f64, log10_f64};
pub use expm1_log1p::{expm1, log1p};
pub use expm1_log1p_f64::{expm1_f64, log1p_f64};
pub use fast::*;
pub use gamma::{lgamma, tgamma};
pub use gamma_f64::{lgamma_f64, tgamma_f64};
pub use hyperbolic::{acosh, asinh, atanh, cosh, sinh};
pub use hyperbolic_f64::{acosh_f64, asinh_f64, atanh_f64, cosh_f64, sinh_f64};
pub use inverse_trig::{acos, asin, atan, atan2};
pub use inverse_trig_f64::{acos_f64, asin_f64, atan_f64, atan2_f64};
pub use misc::{cbrt, hypot, powi, remainder, tan};
pub use misc_f64::{cbrt_f64, hypot_f64, tan_f64};
pub use pow::pow;
pub use pow_f64::{pow_f64, powi_f64};
pub use rounding::{copysign, fmod, frexp, ldexp, round};
pub use rounding_f64::{copysign_f64, fmod_f64, frexp_f64, ldexp_f64, remainder_f64, round_f64};
pub use special::{erf, tanh};
pub use special_f64::tanh_f64;
pub use trig::{cos, cospi, sin, sincos, sinpi};
pub use trig_f64::{cos_f64, sin_f64, sincos_f64};
pub use trig_pi_f64::{cospi_f64, sinpi_f64};

/// Bits of 2/π for the Payne–Hanek reduction, most significant first, after one zero word (so
/// a window may start before the binary point).
pub(crate) const TWO_OVER_PI: [u32; 9] = [
    0,
    0xa2f9_836e,
    0x4e44_1529,
    0xfc27_57d1,
    0xf534_ddc0,
    0xdb62_9599,
    0x3c43_9041,
    0xfe51_63ab,
    0xdebb_c561,
];

/// Evaluates the polynomial with coefficients `c` (highest degree first) at `x` by Horner's
/// rule with fused multiply-adds.
#[inline(always)]
pub(crate) fn horner<const N: usize>(x: f32, c: [f32; N]) -> f32 {
    let mut r = c[0];
    let mut i = 1;
    while i < N {
        r = fma(r, x, c[i]);
        i += 1;
    }
    r
}

/// `a·b` rounded on its own (`mul.rn.f32`). Kernel crates are built with multiply-add
/// contraction on (LLVM and ptxas fuse a plain `a * b + c` into one fma), which would change
/// these functions' results on the GPU and break their error-free transformations (`hi + lo`
/// sums); an explicitly rounded multiply is never fused. Additions need no such care: only a
/// product can be fused into them, and every product here goes through `mul` or [`fma`].
#[inline(always)]
pub(crate) fn mul(a: f32, b: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("mul.rn.f32 {r}, {a}, {b};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a * b
    }
}

/// [`mul`] for f64 (`mul.rn.f64`).
#[inline(always)]
pub(crate) fn mul64(a: f64, b: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f64;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("mul.rn.f64 {r}, {a}, {b};", r = out(reg64) r, a = in(reg64) a, b = in(reg64) b, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a * b
    }
}

/// [`horner`] for f64.
#[inline(always)]
pub(crate) fn horner64<const N: usize>(x: f64, c: [f64; N]) -> f64 {
    let mut r = c[0];
    let mut i = 1;
    while i < N {
        r = fma_f64(r, x, c[i]);
        i += 1;
    }
    r
}

/// 1/x for a positive normal x below 2^125 within about 2 ulp: the bits of a magic constant
/// minus those of x (relative error below 0.06), then a Newton step and a third-order step
/// (relative error below 2^-25 before rounding). No `div.rn.f32` (a long sequence with a branch
/// to a slow path), IEEE operations only.
#[inline(always)]
pub(crate) fn recip(x: f32) -> f32 {
    let y = f32::from_bits(0x7ef3_11c3_u32.wrapping_sub(x.to_bits()));
    let y = fma(y, fnma(x, y, 1.0), y);
    let e = fnma(x, y, 1.0);
    fma(y, fma(e, e, e), y)
}

/// t/d for a positive normal d below 2^125 and a normal quotient: t·[`recip`]`(d)` corrected by
/// its residual t − q·d (exact by an FMA), within a fraction of an ulp of the correctly
/// rounded quotient.
#[inline(always)]
pub(crate) fn quotient(t: f32, d: f32) -> f32 {
    let y = recip(d);
    let q = mul(t, y);
    fma(fnma(q, d, t), y, q)
}

/// √z as `s + lo` for 0 ≤ z < 2^126 without `sqrt.rn` (a long sequence with a branch to a slow
/// path): 1/√z from the bits of z (relative error below 0.035) and two Newton steps
/// y·(3/2 − z·y²/2) (below 2^-17), s = z·y, and the residual z − s² (one rounding) times
/// y/2 ≈ 1/(2s): s + lo is √z to about 2^-34. Finite for every z in range, 0 included (z·y
/// is formed before y·y, which would overflow there). IEEE operations only, so the simulator's
/// results are the GPU's.
#[inline(always)]
pub(crate) fn sqrt_ext(z: f32) -> (f32, f32) {
    let hz = mul(z, 0.5);
    let y = f32::from_bits(0x5f37_59df_u32.wrapping_sub(z.to_bits() >> 1));
    let y = mul(y, fnma(mul(hz, y), y, 1.5));
    let y = mul(y, fnma(mul(hz, y), y, 1.5));
    let s = mul(z, y);
    (s, mul(fnma(s, s, z), mul(y, 0.5)))
}

/// `2^n` for `n` in -1022..=1023, from its bits.
#[inline(always)]
pub(crate) fn pow2i64(n: i32) -> f64 {
    f64::from_bits(((n + 1023) as u64) << 52)
}

/// `2^n` for `n` in -126..=127 (a normal power of two), built from its bits.
#[inline(always)]
pub(crate) fn pow2i(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// Rounds to the nearest integer (ties to even) for |x| < 2^22, by the add-and-subtract trick
/// with 1.5·2^23, fused with a multiplication: `rint(x·m)`.
#[inline(always)]
pub(crate) fn rint_mul(x: f32, m: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    fma(x, m, MAGIC) - MAGIC
}
