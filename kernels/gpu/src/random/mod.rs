//! Random numbers: the counter-based Philox4x32-10 generator and the distributions Monte Carlo
//! code needs, usable inside any kernel and, unchanged, on the host and the simulator.
//!
//! ```ignore
//! use gpu::random::Philox4x32;
//!
//! // One independent stream per thread: same seed, the thread's index as the subsequence
//! // (curand_init(seed, subsequence, offset)).
//! let mut rng = Philox4x32::new(seed, thread::global_index().get() as u64, 0);
//! let [a, b, c, d] = rng.uniform_f32x4();   // one Philox call
//! let z = rng.normal_f64();
//! ```
//!
//! # Streams
//! [`philox4x32_10`] maps a 128-bit counter and a 64-bit key to four 32-bit words; it is
//! bit-exact with Random123 (its known-answer vectors are the tests) and with curand's Philox.
//! [`Philox4x32`] walks counters as curand does: stream `(seed, subsequence)` is the words of
//! blocks `(block, subsequence)` for block = 0, 1, 2, ... under the key `seed`; `offset` skips
//! words. For bulk fills, compute block `i` directly: `philox4x32_10(counter(sub, i), key(seed))`
//! (what `gpu_algorithms`' `fill_uniform` / `fill_normal` do, one block per four outputs).
//!
//! # Conversions (where this differs from curand)
//! - **`u32 → f32`** ([`uniform_f32`]): `(x >> 9) · 2^-23 + 2^-24`, the midpoints of 2^23 equal
//!   cells: values in `[2^-24, 1 - 2^-24]`, never 0 or 1, computed exactly, mean exactly ½.
//!   curand's `x · 2^-32 + 2^-33` gives `(0, 1]` (its top values round to 1.0), torch's `[0, 1)`
//!   with 24 bits; the open interval lets `ln u` and `ln(1-u)` be used without checks.
//! - **`(u32, u32) → f64`** ([`uniform_f64`]): 52 bits, `k · 2^-52 + 2^-53`, in `(0, 1)` likewise.
//! - **Normals** ([`box_muller_f32`], [`box_muller_f64`]): Box–Muller, two normals from two
//!   uniforms (`f32`: two words; `f64`: four words), radius `r = √(-2 ln u)`, giving
//!   `(r·cos θ, r·sin θ)` for a uniform angle θ. `f64`: `θ = 2πv` with `v` a 52-bit uniform.
//!   `f32`: θ is a uniform point `π/2·a` of the first quadrant (`a` from the 23 low bits of the
//!   second word) reflected into the quadrant that the word's two top bits choose, which is
//!   as uniform on the circle and needs no quadrant reduction. `-2 ln u`, `sin` and `cos` are
//!   this module's own arithmetic of exact IEEE operations (polynomials with fused
//!   multiply-adds, the `f32` ones fitted by `random/fit_coefficients.py`, the `f64` ones
//!   fdlibm's; the square root correctly rounded), where curand uses `__sincosf`, the
//!   hardware approximation; so the GPU and the simulator give the same bits. Measured over
//!   every `f32` uniform (`kernels/gpu/tests/random.rs`): `-2 ln u` within 0.8·2^-23 relative,
//!   `sin`, `cos` 1.2·2^-23 relative (also near 0); `f64` within 1.5·2^-52 relative and
//!   3.2·2^-52 absolute over a sample. The smallest uniform bounds the tails: `|z| <= 5.77`
//!   for `f32` (probability 8·10⁻⁹ beyond), `|z| <= 8.57` for `f64`.
//!   The fills scale the radius ([`normal_pair_f32`], [`normal_pair_f64`]:
//!   `mean + (sd·r)·cos θ`), one multiply per pair fewer than scaling each normal.
//! - **Exponential**: `-ln u` (half of Box–Muller's `-2 ln u`), one word (`f32`) or two
//!   (`f64`).
//! - **Poisson** ([`Philox4x32::poisson`]): Knuth's product of uniforms for `λ <= 500`
//!   (`λ + 1` uniforms on average, exact in distribution up to `f64` rounding); above, the
//!   normal approximation `⌊λ + √λ·z + ½⌋`.
//!
//! The integer generator needs nothing else; the float conversions use `gpu::math`'s correctly
//! rounded `sqrt` and `fma`, so on the host they need the `sim` feature (as all of `gpu::math`).

mod consts;
mod float;
mod philox;

pub use philox::{PHILOX_ROUNDS, Philox4x32, counter, key, philox4x32_10};

use crate::math::{fma, fma_f64, mul, mul64, sqrt_f64};

/// A word to a uniform `f32` in `(0, 1)`: the midpoint `(k + ½)·2^-23` of cell `k = x >> 9`.
/// Computed as `1.k - (1 - 2^-24)` with `k` as the mantissa bits of a number in `[1, 2)`: one
/// logic operation and one exact subtraction, no integer-to-float conversion.
#[inline(always)]
pub fn uniform_f32(x: u32) -> f32 {
    f32::from_bits(0x3f80_0000 | (x >> 9)) - (1.0 - 1.0 / 16_777_216.0)
}

/// Two words to a uniform `f64` in `(0, 1)`: the midpoint of cell `(hi:lo) >> 12` of 2^52,
/// computed as [`uniform_f32`] (a 64-bit integer-to-float conversion is a slow instruction).
#[inline(always)]
pub fn uniform_f64(hi: u32, lo: u32) -> f64 {
    // k = (hi:lo) >> 12 built word by word: the low word is one funnel shift, the high word a
    // shift and an or (as a 64-bit shift of the words, it was four integer instructions).
    let k_lo = (lo >> 12) | (hi << 20);
    let k_hi = (hi >> 12) | 0x3ff0_0000;
    // 1 - 2^-53, from the constant bank on the GPU (see `consts`).
    f64::from_bits(((k_hi as u64) << 32) | k_lo as u64) - consts::k::<{ consts::UNIFORM_SHIFT }>()
}

/// Two standard normals from two words (Box–Muller): the radius `√(-2 ln u)` from the 23
/// top bits of `x`; the angle a uniform point of the first quadrant, `π/2·a` with `a` from
/// the 23 low bits of `y`, reflected into the quadrant that bits 31 and 30 of `y` choose
/// (the signs of the cosine and the sine), which is uniform on the circle as `2π·v` is.
#[inline(always)]
pub fn box_muller_f32(x: u32, y: u32) -> [f32; 2] {
    let (r, s, c, y) = box_muller_parts_f32(x, y);
    let (rc, rs) = signed_radii(r, y);
    [mul(rc, c), mul(rs, s)]
}

/// Two normals of mean `mean` and standard deviation `sd` from two words: [`box_muller_f32`]
/// with the scale applied to the radius, `mean + (sd·r)·cos θ` and `mean + (sd·r)·sin θ` (one
/// multiply-add each; what `fill_normal` computes).
#[inline(always)]
pub fn normal_pair_f32(x: u32, y: u32, mean: f32, sd: f32) -> [f32; 2] {
    let (r, s, c, y) = box_muller_parts_f32(x, y);
    let (rc, rs) = signed_radii(mul(r, sd), y);
    [fma(rc, c, mean), fma(rs, s, mean)]
}

/// Box–Muller's radius, the sine and cosine of the angle within its quadrant, and the word
/// whose bits 31 and 30 give the cosine's and the sine's signs.
#[inline(always)]
fn box_muller_parts_f32(x: u32, y: u32) -> (f32, f32, f32, u32) {
    let r = float::sqrt_in_range_f32(float::neg2_ln_f32(uniform_f32(x)));
    let (s, c) = float::sincos_quarter_f32(uniform_f32(y << 9));
    (r, s, c, y)
}

/// The radius with the cosine's and the sine's signs (bits 31 and 30 of `y`).
#[inline(always)]
fn signed_radii(r: f32, y: u32) -> (f32, f32) {
    let r = r.to_bits();
    (
        f32::from_bits(r ^ (y & 0x8000_0000)),
        f32::from_bits(r ^ ((y << 1) & 0x8000_0000)),
    )
}

/// Two standard normals from four words (Box–Muller on two 52-bit uniforms).
#[inline(always)]
pub fn box_muller_f64(w: [u32; 4]) -> [f64; 2] {
    let r = float::sqrt_in_range_f64(float::neg2_ln_f64(uniform_f64(w[0], w[1])));
    let (s, c) = float::sincos_turns_f64(uniform_f64(w[2], w[3]));
    [mul64(r, c), mul64(r, s)]
}

/// Two normals of mean `mean` and standard deviation `sd` from four words: [`box_muller_f64`]
/// with the scale applied to the radius (as [`normal_pair_f32`]; what `fill_normal` computes).
#[inline(always)]
pub fn normal_pair_f64(w: [u32; 4], mean: f64, sd: f64) -> [f64; 2] {
    let r = mul64(
        float::sqrt_in_range_f64(float::neg2_ln_f64(uniform_f64(w[0], w[1]))),
        sd,
    );
    let (s, c) = float::sincos_turns_f64(uniform_f64(w[2], w[3]));
    [fma_f64(r, c, mean), fma_f64(r, s, mean)]
}

/// A standard exponential (`-ln u`) from one word.
#[inline(always)]
pub fn exponential_f32(x: u32) -> f32 {
    0.5 * float::neg2_ln_f32(uniform_f32(x))
}

/// A standard exponential from two words.
#[inline(always)]
pub fn exponential_f64(hi: u32, lo: u32) -> f64 {
    0.5 * float::neg2_ln_f64(uniform_f64(hi, lo))
}

/// Means above which [`Philox4x32::poisson`] uses the normal approximation.
pub const POISSON_KNUTH_MAX: f64 = 500.0;

/// The distributions, drawn from the stream in order (curand's `curand_uniform`,
/// `curand_normal`, ... with the conversions above).
impl Philox4x32 {
    /// A uniform `f32` in `(0, 1)` (one word).
    #[inline(always)]
    pub fn uniform_f32(&mut self) -> f32 {
        uniform_f32(self.next_u32())
    }

    /// Four uniform `f32` (one Philox call at a block boundary).
    #[inline(always)]
    pub fn uniform_f32x4(&mut self) -> [f32; 4] {
        self.next_u32x4().map(uniform_f32)
    }

    /// A uniform `f64` in `(0, 1)` (two words).
    #[inline(always)]
    pub fn uniform_f64(&mut self) -> f64 {
        let [hi, lo] = self.next_u32x2();
        uniform_f64(hi, lo)
    }

    /// Two uniform `f64` (four words).
    #[inline(always)]
    pub fn uniform_f64x2(&mut self) -> [f64; 2] {
        let w = self.next_u32x4();
        [uniform_f64(w[0], w[1]), uniform_f64(w[2], w[3])]
    }

    /// A standard normal `f32`: Box–Muller makes two from two words; the second is kept for
    /// the next call (as curand does).
    #[inline(always)]
    pub fn normal_f32(&mut self) -> f32 {
        if let Some(z) = self.take_spare_f32() {
            return z;
        }
        let [x, y] = self.next_u32x2();
        let [a, b] = box_muller_f32(x, y);
        self.put_spare_f32(b);
        a
    }

    /// Four standard normals `f32` from four words (`curand_normal4`).
    #[inline(always)]
    pub fn normal_f32x4(&mut self) -> [f32; 4] {
        let w = self.next_u32x4();
        let [a, b] = box_muller_f32(w[0], w[1]);
        let [c, d] = box_muller_f32(w[2], w[3]);
        [a, b, c, d]
    }

    /// A standard normal `f64`; two are made from four words and the second is kept.
    #[inline(always)]
    pub fn normal_f64(&mut self) -> f64 {
        if let Some(z) = self.take_spare_f64() {
            return z;
        }
        let [a, b] = self.normal_f64x2();
        self.put_spare_f64(b);
        a
    }

    /// Two standard normals `f64` from four words (`curand_normal2_double`).
    #[inline(always)]
    pub fn normal_f64x2(&mut self) -> [f64; 2] {
        box_muller_f64(self.next_u32x4())
    }

    /// A standard exponential `f32` (one word).
    #[inline(always)]
    pub fn exponential_f32(&mut self) -> f32 {
        exponential_f32(self.next_u32())
    }

    /// A standard exponential `f64` (two words).
    #[inline(always)]
    pub fn exponential_f64(&mut self) -> f64 {
        let [hi, lo] = self.next_u32x2();
        exponential_f64(hi, lo)
    }

    /// A Poisson variate of mean `lambda` (0 for `lambda <= 0` or NaN). Knuth's method up to
    /// [`POISSON_KNUTH_MAX`]: `λ + 1` uniforms on average, so meant for the small means of
    /// Monte Carlo event counts; above it, the rounded normal approximation (one normal).
    #[inline(always)]
    pub fn poisson(&mut self, lambda: f64) -> u32 {
        if lambda.is_nan() || lambda <= 0.0 {
            return 0;
        }
        if lambda > POISSON_KNUTH_MAX {
            let v = fma_f64(sqrt_f64(lambda), self.normal_f64(), lambda) + 0.5;
            return if v <= 0.0 {
                0
            } else if v >= u32::MAX as f64 {
                u32::MAX
            } else {
                v as u32
            };
        }
        let limit = float::exp_f64(-lambda);
        let mut k = 0u32;
        let mut p = self.uniform_f64();
        while p > limit {
            k += 1;
            p *= self.uniform_f64();
        }
        k
    }
}

/// Host access to the private elementary functions, for the accuracy tests.
#[doc(hidden)]
pub mod __float {
    pub use super::float::{
        exp_f64, neg2_ln_f32, neg2_ln_f64, sincos_quarter_f32, sincos_turns_f64, sqrt_in_range_f32,
        sqrt_in_range_f64,
    };
}
