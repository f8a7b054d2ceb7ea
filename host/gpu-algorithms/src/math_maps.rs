//! The element-wise maps of `gpu::math` (`algorithm_kernels::math`'s `math_<fn>_<type>`
//! kernels), listed once for the math bench (`benches`, against torch and cupy) and the test
//! that the GPU computes every function bit-identically to the host build
//! (`gpu-tests/tests/math.rs`). Launch one tile of [`MATH_BLOCK`] threads ×
//! [`MATH_ITEMS`] elements per block.
//!
//! [`MATH_BLOCK`]: algorithm_kernels::math::MATH_BLOCK
//! [`MATH_ITEMS`]: algorithm_kernels::math::MATH_ITEMS

use gpu_host::gpu::math;
use gpu_host::{DeviceBuffer, DeviceCopy, LaunchConfig, Result, Stream};

use crate::algorithm_kernels::Module;

/// A map kernel's typed launcher: `(x, out)`.
pub type MapLaunch<T> =
    fn(&Module, &Stream, LaunchConfig, &DeviceBuffer<T>, &mut DeviceBuffer<T>) -> Result<()>;

/// One unary function of `gpu::math` as a map kernel.
pub struct MathMap<T: DeviceCopy> {
    /// The kernel's name (`math_sin_f32`).
    pub kernel: &'static str,
    /// Its launcher.
    pub launch: MapLaunch<T>,
    /// The same function on the host (what the GPU must reproduce bit for bit).
    pub host: fn(T) -> T,
    /// Inputs of the bench: uniform over this range (`benches/peers/math.py` draws the
    /// peers' from the same).
    pub bench: (f32, f32),
    /// Inputs of the bit-identity test: this range, wider than the bench's (overflow,
    /// underflow and domain edges), and random bit patterns.
    pub test: (f32, f32),
}

macro_rules! maps {
    ($($kernel:ident => $host:path, $bench:expr, $test:expr;)*) => {
        &[$(MathMap {
            kernel: stringify!($kernel),
            launch: Module::$kernel,
            host: $host,
            bench: $bench,
            test: $test,
        },)*]
    };
}

/// The f32 maps.
pub const F32: &[MathMap<f32>] = maps! {
    math_sin_f32 => math::sin, (-100.0, 100.0), (-1e3, 1e3);
    math_cos_f32 => math::cos, (-100.0, 100.0), (-1e3, 1e3);
    math_tan_f32 => math::tan, (-100.0, 100.0), (-1e3, 1e3);
    math_asin_f32 => math::asin, (-1.0, 1.0), (-1.1, 1.1);
    math_acos_f32 => math::acos, (-1.0, 1.0), (-1.1, 1.1);
    math_atan_f32 => math::atan, (-100.0, 100.0), (-1e4, 1e4);
    math_sinh_f32 => math::sinh, (-10.0, 10.0), (-100.0, 100.0);
    math_cosh_f32 => math::cosh, (-10.0, 10.0), (-100.0, 100.0);
    math_tanh_f32 => math::tanh, (-5.0, 5.0), (-10.0, 10.0);
    math_asinh_f32 => math::asinh, (-100.0, 100.0), (-1e4, 1e4);
    math_acosh_f32 => math::acosh, (1.0, 1000.0), (0.5, 1e4);
    math_atanh_f32 => math::atanh, (-1.0, 1.0), (-1.1, 1.1);
    math_exp_f32 => math::exp, (-80.0, 80.0), (-110.0, 90.0);
    math_exp2_f32 => math::exp2, (-120.0, 120.0), (-160.0, 140.0);
    math_exp10_f32 => math::exp10, (-35.0, 35.0), (-50.0, 45.0);
    math_expm1_f32 => math::expm1, (-10.0, 10.0), (-100.0, 100.0);
    math_log_f32 => math::log, (0.0, 1000.0), (0.0, 1e3);
    math_log2_f32 => math::log2, (0.0, 1000.0), (0.0, 1e3);
    math_log10_f32 => math::log10, (0.0, 1000.0), (0.0, 1e3);
    math_log1p_f32 => math::log1p, (-0.9, 100.0), (-1.1, 1e3);
    math_cbrt_f32 => math::cbrt, (-1000.0, 1000.0), (-1e4, 1e4);
    math_erf_f32 => math::erf, (-5.0, 5.0), (-5.0, 5.0);
    math_erfc_f32 => math::erfc, (-5.0, 10.0), (-10.0, 12.0);
    math_erfinv_f32 => math::erfinv, (-1.0, 1.0), (-1.0, 1.0);
    math_lgamma_f32 => math::lgamma, (0.0, 40.0), (-20.0, 40.0);
    math_tgamma_f32 => math::tgamma, (0.0, 30.0), (-40.0, 40.0);
    math_sinpi_f32 => math::sinpi, (-100.0, 100.0), (-1e3, 1e3);
    math_cospi_f32 => math::cospi, (-100.0, 100.0), (-1e3, 1e3);
};

/// The f64 maps (the test widens f32 inputs and adds f64 bit patterns).
pub const F64: &[MathMap<f64>] = maps! {
    math_sin_f64 => math::sin_f64, (-100.0, 100.0), (-1e7, 1e7);
    math_cos_f64 => math::cos_f64, (-100.0, 100.0), (-1e3, 1e3);
    math_tan_f64 => math::tan_f64, (-100.0, 100.0), (-1e3, 1e3);
    math_asin_f64 => math::asin_f64, (-1.0, 1.0), (-1.1, 1.1);
    math_acos_f64 => math::acos_f64, (-1.0, 1.0), (-1.1, 1.1);
    math_atan_f64 => math::atan_f64, (-100.0, 100.0), (-1e4, 1e4);
    math_sinh_f64 => math::sinh_f64, (-10.0, 10.0), (-800.0, 800.0);
    math_cosh_f64 => math::cosh_f64, (-10.0, 10.0), (-800.0, 800.0);
    math_tanh_f64 => math::tanh_f64, (-5.0, 5.0), (-20.0, 20.0);
    math_asinh_f64 => math::asinh_f64, (-100.0, 100.0), (-1e4, 1e4);
    math_acosh_f64 => math::acosh_f64, (1.0, 1000.0), (0.5, 1e4);
    math_atanh_f64 => math::atanh_f64, (-1.0, 1.0), (-1.1, 1.1);
    math_exp_f64 => math::exp_f64, (-80.0, 80.0), (-750.0, 720.0);
    math_exp2_f64 => math::exp2_f64, (-120.0, 120.0), (-1100.0, 1050.0);
    math_exp10_f64 => math::exp10_f64, (-35.0, 35.0), (-330.0, 320.0);
    math_expm1_f64 => math::expm1_f64, (-10.0, 10.0), (-750.0, 720.0);
    math_log_f64 => math::log_f64, (0.0, 1000.0), (0.0, 1e3);
    math_log2_f64 => math::log2_f64, (0.0, 1000.0), (0.0, 1e3);
    math_log10_f64 => math::log10_f64, (0.0, 1000.0), (0.0, 1e3);
    math_log1p_f64 => math::log1p_f64, (-0.9, 100.0), (-1.1, 1e3);
    math_cbrt_f64 => math::cbrt_f64, (-1000.0, 1000.0), (-1e4, 1e4);
    math_erf_f64 => math::erf_f64, (-5.0, 5.0), (-6.0, 6.0);
    math_erfc_f64 => math::erfc_f64, (-5.0, 10.0), (-10.0, 30.0);
    math_erfinv_f64 => math::erfinv_f64, (-1.0, 1.0), (-1.1, 1.1);
    math_lgamma_f64 => math::lgamma_f64, (0.0, 40.0), (-30.0, 200.0);
    math_tgamma_f64 => math::tgamma_f64, (0.0, 170.0), (-200.0, 200.0);
    math_sinpi_f64 => math::sinpi_f64, (-100.0, 100.0), (-1e3, 1e3);
    math_cospi_f64 => math::cospi_f64, (-100.0, 100.0), (-1e3, 1e3);
};
