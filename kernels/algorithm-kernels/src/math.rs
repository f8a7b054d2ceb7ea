//! `math_<fn>_<type>`: element-wise maps of `gpu::math`'s accurate functions, for the math bench
//! (against torch/cupy) and the test that the GPU computes them bit-identically to the host.
//! Each thread maps [`MATH_ITEMS`] consecutive elements loaded with 16-byte vector loads
//! (`gpu::device::transform_unrolled`); blocks of [`MATH_BLOCK`] threads, one tile per block. (Not
//! `gpu::transform_kernel!`: its 16-item tiles keep the items of a long function body in local
//! memory.)

use gpu::prelude::*;

/// Threads per block of the `math_*` kernels.
pub const MATH_BLOCK: u32 = 256;
/// Elements per thread and tile (16 bytes of f32, 32 of f64).
pub const MATH_ITEMS: usize = 4;

macro_rules! map_kernels {
    ($($name:ident($t:ty) => $f:path;)*) => { $(
        /// `out[i] = f(x[i])`.
        #[kernel(block(256))]
        pub fn $name(x: &[$t], out: DisjointSlice<$t>) {
            gpu::device::transform_unrolled::<$t, $t, _, MATH_ITEMS>(x, &out, $f);
        }
    )* };
}

map_kernels! {
    math_sin_f32(f32) => gpu::math::sin;
    math_cos_f32(f32) => gpu::math::cos;
    math_exp_f32(f32) => gpu::math::exp;
    math_log_f32(f32) => gpu::math::log;
    math_tanh_f32(f32) => gpu::math::tanh;
    math_erf_f32(f32) => gpu::math::erf;
    math_erfinv_f32(f32) => gpu::math::erfinv;
    math_lgamma_f32(f32) => gpu::math::lgamma;
    math_log_f64(f64) => gpu::math::log_f64;
    math_tanh_f64(f64) => gpu::math::tanh_f64;
    // The rest of the library, f32 then f64 (bench rows and the GPU bit-identity test).
    math_tan_f32(f32) => gpu::math::tan;
    math_asin_f32(f32) => gpu::math::asin;
    math_acos_f32(f32) => gpu::math::acos;
    math_atan_f32(f32) => gpu::math::atan;
    math_sinh_f32(f32) => gpu::math::sinh;
    math_cosh_f32(f32) => gpu::math::cosh;
    math_atanh_f32(f32) => gpu::math::atanh;
    math_exp2_f32(f32) => gpu::math::exp2;
    math_exp10_f32(f32) => gpu::math::exp10;
    math_expm1_f32(f32) => gpu::math::expm1;
    math_log2_f32(f32) => gpu::math::log2;
    math_log10_f32(f32) => gpu::math::log10;
    math_log1p_f32(f32) => gpu::math::log1p;
    math_cbrt_f32(f32) => gpu::math::cbrt;
    math_erfc_f32(f32) => gpu::math::erfc;
    math_tgamma_f32(f32) => gpu::math::tgamma;
    math_sinpi_f32(f32) => gpu::math::sinpi;
    math_cospi_f32(f32) => gpu::math::cospi;
    math_tan_f64(f64) => gpu::math::tan_f64;
    math_asin_f64(f64) => gpu::math::asin_f64;
    math_acos_f64(f64) => gpu::math::acos_f64;
    math_atan_f64(f64) => gpu::math::atan_f64;
    math_sinh_f64(f64) => gpu::math::sinh_f64;
    math_cosh_f64(f64) => gpu::math::cosh_f64;
    math_atanh_f64(f64) => gpu::math::atanh_f64;
    math_exp2_f64(f64) => gpu::math::exp2_f64;
    math_exp10_f64(f64) => gpu::math::exp10_f64;
    math_expm1_f64(f64) => gpu::math::expm1_f64;
    math_log2_f64(f64) => gpu::math::log2_f64;
    math_log10_f64(f64) => gpu::math::log10_f64;
    math_log1p_f64(f64) => gpu::math::log1p_f64;
    math_cbrt_f64(f64) => gpu::math::cbrt_f64;
    math_erfc_f64(f64) => gpu::math::erfc_f64;
    math_erfinv_f64(f64) => gpu::math::erfinv_f64;
    math_lgamma_f64(f64) => gpu::math::lgamma_f64;
    math_tgamma_f64(f64) => gpu::math::tgamma_f64;
    math_sinpi_f64(f64) => gpu::math::sinpi_f64;
    math_cospi_f64(f64) => gpu::math::cospi_f64;
}

/// `map_kernels!` with the registers limited so that `$blocks` blocks fit on an SM
/// (`launch_bounds(256, $blocks)`): more warps hide more of the memory's latency, which these
/// long functions need more than registers, even at the cost of a few spilled bytes. Each count
/// is the fastest of 3, 4, 5, 6 and 8 blocks measured on an H100, with bit-identical outputs
/// (README, "Math functions", has the figures and the kernels swept).
macro_rules! bounded_map_kernels {
    ($($name:ident($t:ty, $blocks:tt) => $f:path;)*) => { $(
        /// `out[i] = f(x[i])`.
        #[kernel(launch_bounds(256, $blocks))]
        pub fn $name(x: &[$t], out: DisjointSlice<$t>) {
            gpu::device::transform_unrolled::<$t, $t, _, MATH_ITEMS>(x, &out, $f);
        }
    )* };
}

bounded_map_kernels! {
    math_sin_f64(f64, 5) => gpu::math::sin_f64;
    math_cos_f64(f64, 5) => gpu::math::cos_f64;
    math_erf_f64(f64, 4) => gpu::math::erf_f64;
    // Unbounded, ptxas fits this one in 32 registers by loading the second half of the four
    // elements only after computing the first (half the loads in flight); bounded, it issues
    // all four loads first.
    math_exp_f64(f64, 6) => gpu::math::exp_f64;
    math_asinh_f64(f64, 5) => gpu::math::asinh_f64;
    math_acosh_f64(f64, 5) => gpu::math::acosh_f64;
    math_asinh_f32(f32, 8) => gpu::math::asinh;
    math_acosh_f32(f32, 8) => gpu::math::acosh;
}

/// `out[i] = x[i]^y[i]` ([`gpu::math::pow`]).
#[kernel(block(256))]
pub fn math_pow_f32(x: &[f32], y: &[f32], out: DisjointSlice<f32>) {
    gpu::device::transform2::<f32, f32, f32, _, MATH_ITEMS>(x, y, &out, gpu::math::pow);
}

/// `out[i] = x[i]^y[i]` ([`gpu::math::pow_f64`]).
#[kernel(block(256))]
pub fn math_pow_f64(x: &[f64], y: &[f64], out: DisjointSlice<f64>) {
    gpu::device::transform2::<f64, f64, f64, _, MATH_ITEMS>(x, y, &out, gpu::math::pow_f64);
}
