//! Host versions of the math intrinsics. The `_approx` ones are computed exactly (well within
//! the GPU instructions' documented error), so simulator results are at least as accurate.

pub(crate) fn rsqrt(x: f32) -> f32 {
    1.0 / x.sqrt()
}
pub(crate) fn sqrt_approx(x: f32) -> f32 {
    x.sqrt()
}
pub(crate) fn sqrt(x: f32) -> f32 {
    x.sqrt()
}
pub(crate) fn rcp_approx(x: f32) -> f32 {
    1.0 / x
}
/// `ex2.approx.ftz`: subnormal results flush to zero, as on the GPU.
pub(crate) fn exp2_approx(x: f32) -> f32 {
    let r = x.exp2();
    if r.is_subnormal() { 0.0 } else { r }
}
pub(crate) fn log2_approx(x: f32) -> f32 {
    x.log2()
}
pub(crate) fn sin_approx(x: f32) -> f32 {
    x.sin()
}
pub(crate) fn cos_approx(x: f32) -> f32 {
    x.cos()
}
pub(crate) fn tanh_approx(x: f32) -> f32 {
    x.tanh()
}
/// `cvt.sat.f32.f32`: clamps to [0, 1], NaN becomes 0.
pub(crate) fn saturate(x: f32) -> f32 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}
pub(crate) fn sqrt_f64(x: f64) -> f64 {
    x.sqrt()
}
pub(crate) fn rcp_f64(x: f64) -> f64 {
    1.0 / x
}
pub(crate) fn floor(x: f32) -> f32 {
    x.floor()
}
pub(crate) fn ceil(x: f32) -> f32 {
    x.ceil()
}
pub(crate) fn trunc(x: f32) -> f32 {
    x.trunc()
}
pub(crate) fn rint(x: f32) -> f32 {
    x.round_ties_even()
}
pub(crate) fn floor_f64(x: f64) -> f64 {
    x.floor()
}
pub(crate) fn ceil_f64(x: f64) -> f64 {
    x.ceil()
}
pub(crate) fn trunc_f64(x: f64) -> f64 {
    x.trunc()
}
pub(crate) fn rint_f64(x: f64) -> f64 {
    x.round_ties_even()
}
pub(crate) fn div_approx(x: f32, y: f32) -> f32 {
    x / y
}
pub(crate) fn fma(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}
pub(crate) fn fma_f64(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// `prmt.b32` (default mode): byte `i` of the result is byte `s[4i..4i+3]` of the 8-byte value
/// `y:x`, with the sign of that byte replicated when bit `4i+3` is set.
pub(crate) fn byte_perm(x: u32, y: u32, s: u32) -> u32 {
    let bytes = ((y as u64) << 32 | x as u64).to_le_bytes();
    let mut out = 0u32;
    for i in 0..4 {
        let sel = (s >> (4 * i)) & 0xf;
        let b = bytes[(sel & 7) as usize];
        let b = if sel & 8 != 0 {
            if b & 0x80 != 0 { 0xff } else { 0 }
        } else {
            b
        };
        out |= (b as u32) << (8 * i);
    }
    out
}
