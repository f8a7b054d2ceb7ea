//! `gpu::math`: approximate transcendental functions, exact roots/FMA, integer bit operations.

use gpu::prelude::*;

/// Math results of one thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, DeviceCopy)]
pub struct MathRecord {
    pub sqrt_f64: f64,
    pub rcp_f64: f64,
    pub fma_f64: f64,
    pub mul_hi_u64: u64,
    pub mul_hi_i64: i64,
    pub brev64: u64,
    pub rsqrt: f32,
    pub sqrt_approx: f32,
    pub sqrt: f32,
    pub rcp_approx: f32,
    pub exp2_approx: f32,
    pub log2_approx: f32,
    pub sin_approx: f32,
    pub cos_approx: f32,
    pub tanh_approx: f32,
    pub saturate: f32,
    pub exp_approx: f32,
    pub exp10_approx: f32,
    pub ln_approx: f32,
    pub log10_approx: f32,
    pub div_approx: f32,
    pub powf_approx: f32,
    pub fma: f32,
    pub fmin: f32,
    pub fmax: f32,
    pub mul_hi_u32: u32,
    pub mul_hi_i32: i32,
    pub popc: u32,
    pub popc64: u32,
    pub clz: u32,
    pub clz64: u32,
    pub brev: u32,
    pub ffs: u32,
    pub ffs64: u32,
    pub byte_perm: u32,
    pub ffs_zero: u32,
}

/// The inputs of thread `t` of [`selftest_math`].
pub mod inputs {
    pub fn x(t: u32) -> f32 {
        (t + 1) as f32 * 0.25
    }
    pub fn xd(t: u32) -> f64 {
        (t + 1) as f64 * 0.5
    }
    pub fn a32(t: u32) -> u32 {
        (t + 1).wrapping_mul(0x0123_4567)
    }
    pub const B32: u32 = 0x9e37_79b9;
    pub fn a64(t: u32) -> u64 {
        (t as u64 + 1).wrapping_mul(0x0123_4567_89ab_cdef)
    }
    pub const B64: u64 = 0x9e37_79b9_7f4a_7c15;
}

use inputs::*;

/// Launch: 1 block × 32 threads; `records.len() == 32`.
///
/// Expected for thread `t` (inputs from [`inputs`]), "≈" meaning within the PTX ISA's stated
/// error (a relative 1e-5 is a safe check; `tanh_approx` 1e-3; the `sin`/`cos` absolute 1e-5):
/// - f64, exact: `sqrt_f64 = xd.sqrt()`, `rcp_f64 = 1.0 / xd`, `fma_f64 = xd.mul_add(3.0, -1.0)`.
/// - `mul_hi_u64 = ((a64 as u128 * B64 as u128) >> 64)`, `mul_hi_i64` likewise signed
///   (`a64 as i64`, `B64 as i64`), `brev64 = a64.reverse_bits()`.
/// - `rsqrt ≈ 1/√x`, `sqrt_approx ≈ √x`, `sqrt = x.sqrt()` (exact), `rcp_approx ≈ 1/x`,
///   `exp2_approx ≈ 2^x`, `log2_approx ≈ log2 x`, `sin_approx ≈ sin(x - 4)`,
///   `cos_approx ≈ cos(x - 4)`, `tanh_approx ≈ tanh(x - 4)`, `saturate = clamp(x - 1, 0, 1)`,
///   `exp_approx ≈ e^(x - 4)`, `exp10_approx ≈ 10^(x / 4)`, `ln_approx ≈ ln x`,
///   `log10_approx ≈ log10 x`, `div_approx ≈ 1/x`, `powf_approx ≈ x^1.5`,
///   `fma = x.mul_add(3.0, 1.0)` (exact), `fmin = x.min(2.0)`, `fmax = x.max(2.0)`.
/// - `mul_hi_u32 = (a32 as u64 * B32 as u64) >> 32`, `mul_hi_i32` likewise signed,
///   `popc = a32.count_ones()`, `popc64 = a64.count_ones()`,
///   `clz = (a32 >> t).leading_zeros()`, `clz64 = (a64 >> t).leading_zeros()`,
///   `brev = a32.reverse_bits()`, `ffs = (a32 << t).trailing_zeros() + 1` (0 if that is 0),
///   `ffs64 = (a64 << t).trailing_zeros() + 1` (0 if 0), `byte_perm` = bytes of the 8-byte
///   value `B32:a32` picked by selector nibbles `0x7531` (result byte i = input byte
///   `(0x7531 >> 4i) & 7`), `ffs_zero = 0`.
#[kernel]
pub fn selftest_math(mut records: DisjointSlice<MathRecord>) {
    let g = thread::global_index();
    let t = g.get() as u32;
    let (x, xd, a32, a64) = (x(t), xd(t), a32(t), a64(t));
    let record = MathRecord {
        sqrt_f64: math::sqrt_f64(xd),
        rcp_f64: math::rcp_f64(xd),
        fma_f64: math::fma_f64(xd, 3.0, -1.0),
        mul_hi_u64: math::mul_hi_u64(a64, B64),
        mul_hi_i64: math::mul_hi_i64(a64 as i64, B64 as i64),
        brev64: math::brev64(a64),
        rsqrt: math::rsqrt(x),
        sqrt_approx: math::sqrt_approx(x),
        sqrt: math::sqrt(x),
        rcp_approx: math::rcp_approx(x),
        exp2_approx: math::exp2_approx(x),
        log2_approx: math::log2_approx(x),
        sin_approx: math::sin_approx(x - 4.0),
        cos_approx: math::cos_approx(x - 4.0),
        tanh_approx: math::tanh_approx(x - 4.0),
        saturate: math::saturate(x - 1.0),
        exp_approx: math::exp_approx(x - 4.0),
        exp10_approx: math::exp10_approx(x / 4.0),
        ln_approx: math::ln_approx(x),
        log10_approx: math::log10_approx(x),
        div_approx: math::div_approx(1.0, x),
        powf_approx: math::powf_approx(x, 1.5),
        fma: math::fma(x, 3.0, 1.0),
        fmin: math::fmin(x, 2.0),
        fmax: math::fmax(x, 2.0),
        mul_hi_u32: math::mul_hi_u32(a32, B32),
        mul_hi_i32: math::mul_hi_i32(a32 as i32, B32 as i32),
        popc: math::popc(a32),
        popc64: math::popc64(a64),
        clz: math::clz(a32 >> t),
        clz64: math::clz64(a64 >> t),
        brev: math::brev(a32),
        ffs: math::ffs(a32 << t),
        ffs64: math::ffs64(a64 << t),
        byte_perm: math::byte_perm(a32, B32, 0x7531),
        ffs_zero: math::ffs(0),
    };
    records.set(g, record);
}
