//! `math_<fn>_<type>`: element-wise maps of `gpu::math`'s accurate functions, one element per
//! thread (blocks of [`MATH_BLOCK`]), for the math bench (against torch/cupy) and the test that
//! the GPU computes them bit-identically to the host. (Not `gpu::transform_kernel!`: its
//! 16-item tiles keep the items of a long function body in local memory.)

use gpu::prelude::*;

/// Threads per block of the `math_*` kernels.
pub const MATH_BLOCK: u32 = 256;

macro_rules! map_kernels {
    ($($name:ident($t:ty) => $f:path;)*) => { $(
        /// `out[i] = f(x[i])`, one thread per element.
        #[kernel(block(256))]
        pub fn $name(x: &[$t], mut out: DisjointSlice<$t>) {
            let i = thread::global_index();
            if let (Some(o), Some(&v)) = (out.get_mut(i), x.get(i.get())) {
                *o = $f(v);
            }
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
}

/// `out[i] = x[i]^y[i]` ([`gpu::math::pow`]), one thread per element.
#[kernel(block(256))]
pub fn math_pow_f32(x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::global_index();
    if let (Some(o), Some(&a), Some(&b)) = (out.get_mut(i), x.get(i.get()), y.get(i.get())) {
        *o = gpu::math::pow(a, b);
    }
}
