//! Packed 16-bit floating point: two `bf16` or two `f16` in one 32-bit register
//! ([`Bf16x2`], [`F16x2`]), the operand format of the tensor-core instructions in
//! [`crate::mma`], with the GPU's packed arithmetic and hardware conversions.
//!
//! Why not `half::bf16` arithmetic: `half` converts in software (tens of instructions per
//! value), while the GPU has single instructions (`cvt.rn.bf16x2.f32`, `fma.rn.bf16x2`, ...).
//! The scalar conversions here ([`f32_to_bf16`], [`bf16_to_f32`], [`f32_to_f16`],
//! [`f16_to_f32`]) are one instruction each (or a shift, for bf16 → f32).
//!
//! # Layout
//! The element with the lower index (`lo`) is in bits 0..16, the higher (`hi`) in bits 16..32,
//! the order in which two consecutive elements of a row-major array sit in memory. A `Bf16x2`
//! read from `&[half::bf16]` at an even index `2i` as a `u32` is `(x[2i], x[2i + 1])`. This is
//! the order the `mma` fragments use (the lower column / k index in the low half).
//!
//! # Rounding
//! All conversions from f32 round to nearest even (`.rn`); arithmetic rounds the exact result
//! once to nearest even. Requires sm_80 (`bf16` arithmetic uses `fma.rn.bf16x2`, which is how
//! CUDA's headers implement `__hadd2`/`__hmul2` for bf16 before sm_90). The simulator computes
//! the exact result in f64 and rounds it once, which matches except for the rare double-rounding
//! case of an `fma` whose exact result needs more than 53 bits.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

use half::{bf16, f16};

use crate::DeviceCopy;

/// Two `bf16` in one 32-bit register (`lo` in bits 0..16). See the [module docs](self).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Bf16x2(pub u32);

/// Two `f16` in one 32-bit register (`lo` in bits 0..16). See the [module docs](self).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct F16x2(pub u32);

// SAFETY: `#[repr(transparent)]` over `u32`: plain data, every bit pattern valid, no padding.
unsafe impl DeviceCopy for Bf16x2 {}
// SAFETY: as for `Bf16x2`.
unsafe impl DeviceCopy for F16x2 {}

/// f32 → bf16, round to nearest even (`cvt.rn.bf16.f32`).
#[inline(always)]
pub fn f32_to_bf16(x: f32) -> bf16 {
    device!("packed::f32_to_bf16", {
        let r: u16;
        // SAFETY: a register conversion.
        unsafe { core::arch::asm!("cvt.rn.bf16.f32 {r}, {x};", r = out(reg16) r, x = in(reg32) x, options(pure, nomem, nostack)) };
        bf16::from_bits(r)
    }, sim: { bf16::from_f32(x) })
}

/// bf16 → f32, exact (a 16-bit shift: bf16 is the top half of an f32).
#[inline(always)]
pub fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits((x.to_bits() as u32) << 16)
}

/// f32 → f16, round to nearest even (`cvt.rn.f16.f32`); overflows to ±inf.
#[inline(always)]
pub fn f32_to_f16(x: f32) -> f16 {
    device!("packed::f32_to_f16", {
        let r: u16;
        // SAFETY: a register conversion.
        unsafe { core::arch::asm!("cvt.rn.f16.f32 {r}, {x};", r = out(reg16) r, x = in(reg32) x, options(pure, nomem, nostack)) };
        f16::from_bits(r)
    }, sim: { f16::from_f32(x) })
}

/// f16 → f32, exact (`cvt.f32.f16`).
#[inline(always)]
pub fn f16_to_f32(x: f16) -> f32 {
    device!("packed::f16_to_f32", {
        let r: f32;
        // SAFETY: a register conversion.
        unsafe { core::arch::asm!("cvt.f32.f16 {r}, {x};", r = out(reg32) r, x = in(reg16) x.to_bits(), options(pure, nomem, nostack)) };
        r
    }, sim: { x.to_f32() })
}

/// One packed instruction `$ins d, a, b[, c];` on 32-bit registers; `$sim` computes it on the
/// host from the unpacked halves.
macro_rules! packed_op {
    ($what:literal, $ins:literal, $($x:ident),+ ; $sim:expr) => {
        device!($what, {
            let d: u32;
            // SAFETY: a register-to-register arithmetic instruction.
            unsafe {
                core::arch::asm!(
                    concat!($ins, " {d}", $(", {", stringify!($x), "}"),+, ";"),
                    d = out(reg32) d, $($x = in(reg32) $x.0),+,
                    options(pure, nomem, nostack),
                )
            };
            Self(d)
        }, sim: { $sim })
    };
}

impl Bf16x2 {
    /// Packs two f32 rounded to nearest even (`cvt.rn.bf16x2.f32`, one instruction; PTX takes
    /// the high half first: `d = {hi, lo}`).
    #[inline(always)]
    pub fn from_f32(lo: f32, hi: f32) -> Bf16x2 {
        device!("packed::Bf16x2::from_f32", {
            let d: u32;
            // SAFETY: a register conversion.
            unsafe { core::arch::asm!("cvt.rn.bf16x2.f32 {d}, {hi}, {lo};", d = out(reg32) d, hi = in(reg32) hi, lo = in(reg32) lo, options(pure, nomem, nostack)) };
            Bf16x2(d)
        }, sim: { Bf16x2::new(bf16::from_f32(lo), bf16::from_f32(hi)) })
    }

    /// Both halves as f32 (exact: two shifts/masks).
    #[inline(always)]
    pub fn to_f32(self) -> (f32, f32) {
        (
            f32::from_bits(self.0 << 16),
            f32::from_bits(self.0 & 0xffff_0000),
        )
    }

    /// Packs two `bf16` (no rounding).
    #[inline(always)]
    pub fn new(lo: bf16, hi: bf16) -> Bf16x2 {
        Bf16x2(lo.to_bits() as u32 | (hi.to_bits() as u32) << 16)
    }

    /// The two halves as `bf16`: `(lo, hi)`.
    #[inline(always)]
    pub fn unpack(self) -> (bf16, bf16) {
        (
            bf16::from_bits(self.0 as u16),
            bf16::from_bits((self.0 >> 16) as u16),
        )
    }

    /// The same value in both halves.
    #[inline(always)]
    pub fn splat(x: bf16) -> Bf16x2 {
        Bf16x2::new(x, x)
    }

    /// `self * b + c` per half, rounded once (`fma.rn.bf16x2`).
    #[inline(always)]
    pub fn fma(self, b: Bf16x2, c: Bf16x2) -> Bf16x2 {
        let a = self;
        packed_op!("packed::Bf16x2::fma", "fma.rn.bf16x2", a, b, c;
            sim_bf16(a, b, c, |x, y, z| x * y + z))
    }

    /// Per-half maximum (`max.bf16x2`); a NaN half yields the other operand's half.
    #[inline(always)]
    pub fn max(self, b: Bf16x2) -> Bf16x2 {
        let a = self;
        packed_op!("packed::Bf16x2::max", "max.bf16x2", a, b;
            sim_bf16(a, b, a, |x, y, _| x.max(y)))
    }
}

impl F16x2 {
    /// Packs two f32 rounded to nearest even (`cvt.rn.f16x2.f32`; `d = {hi, lo}` in PTX).
    #[inline(always)]
    pub fn from_f32(lo: f32, hi: f32) -> F16x2 {
        device!("packed::F16x2::from_f32", {
            let d: u32;
            // SAFETY: a register conversion.
            unsafe { core::arch::asm!("cvt.rn.f16x2.f32 {d}, {hi}, {lo};", d = out(reg32) d, hi = in(reg32) hi, lo = in(reg32) lo, options(pure, nomem, nostack)) };
            F16x2(d)
        }, sim: { F16x2::new(f16::from_f32(lo), f16::from_f32(hi)) })
    }

    /// Both halves as f32 (exact; two `cvt.f32.f16`).
    #[inline(always)]
    pub fn to_f32(self) -> (f32, f32) {
        let (lo, hi) = self.unpack();
        (f16_to_f32(lo), f16_to_f32(hi))
    }

    /// Packs two `f16` (no rounding).
    #[inline(always)]
    pub fn new(lo: f16, hi: f16) -> F16x2 {
        F16x2(lo.to_bits() as u32 | (hi.to_bits() as u32) << 16)
    }

    /// The two halves as `f16`: `(lo, hi)`.
    #[inline(always)]
    pub fn unpack(self) -> (f16, f16) {
        (
            f16::from_bits(self.0 as u16),
            f16::from_bits((self.0 >> 16) as u16),
        )
    }

    /// The same value in both halves.
    #[inline(always)]
    pub fn splat(x: f16) -> F16x2 {
        F16x2::new(x, x)
    }

    /// `self * b + c` per half, rounded once (`fma.rn.f16x2`).
    #[inline(always)]
    pub fn fma(self, b: F16x2, c: F16x2) -> F16x2 {
        let a = self;
        packed_op!("packed::F16x2::fma", "fma.rn.f16x2", a, b, c;
            sim_f16(a, b, c, |x, y, z| x * y + z))
    }

    /// Per-half maximum (`max.f16x2`, sm_80); a NaN half yields the other operand's half.
    #[inline(always)]
    pub fn max(self, b: F16x2) -> F16x2 {
        let a = self;
        packed_op!("packed::F16x2::max", "max.f16x2", a, b;
            sim_f16(a, b, a, |x, y, _| x.max(y)))
    }
}

/// `a + b` per half (`fma.rn.bf16x2` with a factor of 1: exact product, one rounding;
/// `add.bf16x2` needs sm_90).
impl core::ops::Add for Bf16x2 {
    type Output = Bf16x2;
    #[inline(always)]
    fn add(self, b: Bf16x2) -> Bf16x2 {
        // 1.0 in both halves.
        self.fma(Bf16x2(0x3f80_3f80), b)
    }
}

/// `a * b` per half (`fma.rn.bf16x2` with an addend of -0.0, which keeps the sign of a zero
/// product; `mul.bf16x2` needs sm_90).
impl core::ops::Mul for Bf16x2 {
    type Output = Bf16x2;
    #[inline(always)]
    fn mul(self, b: Bf16x2) -> Bf16x2 {
        self.fma(b, Bf16x2(0x8000_8000))
    }
}

/// `a + b` per half (`add.rn.f16x2`).
impl core::ops::Add for F16x2 {
    type Output = F16x2;
    #[inline(always)]
    fn add(self, b: F16x2) -> F16x2 {
        let a = self;
        packed_op!("packed::F16x2::add", "add.rn.f16x2", a, b;
            sim_f16(a, b, a, |x, y, _| x + y))
    }
}

/// `a * b` per half (`mul.rn.f16x2`).
impl core::ops::Mul for F16x2 {
    type Output = F16x2;
    #[inline(always)]
    fn mul(self, b: F16x2) -> F16x2 {
        let a = self;
        packed_op!("packed::F16x2::mul", "mul.rn.f16x2", a, b;
            sim_f16(a, b, a, |x, y, _| x * y))
    }
}

/// The simulator's packed bf16 operation: exact in f64, rounded once.
#[cfg(not(target_arch = "nvptx64"))]
#[allow(dead_code)]
fn sim_bf16(a: Bf16x2, b: Bf16x2, c: Bf16x2, f: impl Fn(f64, f64, f64) -> f64) -> Bf16x2 {
    let (a0, a1) = a.unpack();
    let (b0, b1) = b.unpack();
    let (c0, c1) = c.unpack();
    let lo = f(a0.to_f64(), b0.to_f64(), c0.to_f64());
    let hi = f(a1.to_f64(), b1.to_f64(), c1.to_f64());
    Bf16x2::new(bf16::from_f64(lo), bf16::from_f64(hi))
}

/// The simulator's packed f16 operation: exact in f64, rounded once.
#[cfg(not(target_arch = "nvptx64"))]
#[allow(dead_code)]
fn sim_f16(a: F16x2, b: F16x2, c: F16x2, f: impl Fn(f64, f64, f64) -> f64) -> F16x2 {
    let (a0, a1) = a.unpack();
    let (b0, b1) = b.unpack();
    let (c0, c1) = c.unpack();
    let lo = f(a0.to_f64(), b0.to_f64(), c0.to_f64());
    let hi = f(a1.to_f64(), b1.to_f64(), c1.to_f64());
    F16x2::new(f16::from_f64(lo), f16::from_f64(hi))
}
