//! Helpers shared by the math accuracy tests (`math_ulp`, `math_ulp_f64`, `math_ulp_more`):
//! the fixed-seed input generator and the arbitrary-precision f64 reference. Each test uses a
//! part of it.
#![allow(dead_code)]

/// A fixed-seed xorshift generator: the same inputs on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A random f32 bit pattern: every binade, NaNs and infinities included.
    pub fn bits32(&mut self) -> f32 {
        f32::from_bits((self.next() >> 32) as u32)
    }
    /// A random f64 bit pattern.
    pub fn bits64(&mut self) -> f64 {
        f64::from_bits(self.next())
    }
    /// Uniform in [lo, hi) with 24 random bits.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }
    /// Uniform in [lo, hi) with 53 random bits.
    pub fn uniform_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// f32 measurements: the error of a result against the f64 reference, and the edge inputs.
pub mod f32_ref {
    /// The error of `y` against the exact value `r`, in ulp of `r`'s f32 binade (subnormals: 2^-149).
    pub fn ulp_error(y: f32, r: f64) -> f64 {
        if r.is_nan() || y.is_nan() {
            return if r.is_nan() && y.is_nan() {
                0.0
            } else {
                f64::INFINITY
            };
        }
        if y.is_infinite() || r.is_infinite() || r.abs() > f32::MAX as f64 {
            return if y as f64 == r || y == r as f32 {
                0.0
            } else {
                f64::INFINITY
            };
        }
        let a = r.abs();
        let exp = if a == 0.0 {
            -149
        } else {
            ((a.to_bits() >> 52) as i32 - 1023).max(-126) - 23
        };
        let e = (y as f64 - r).abs() / 2f64.powi(exp.max(-149));
        if y == r as f32 { e.min(0.5) } else { e }
    }

    /// Edge inputs every f32 function sees: zeros, infinities, NaN, the normal and subnormal
    /// extremes, small integers, and multiples of 1/2 and π/4 with their neighbours.
    pub fn specials() -> Vec<f32> {
        let mut v = vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(1),
            f32::from_bits(0x007f_ffff),
            f32::MAX,
            f32::MIN,
            1.0,
            -1.0,
            0.5,
            2.0,
            f32::EPSILON,
        ];
        for k in -20..20 {
            for x in [k as f32 * 0.5, k as f32 * core::f32::consts::FRAC_PI_4] {
                v.extend([
                    x,
                    f32::from_bits(x.to_bits() + 1),
                    f32::from_bits(x.to_bits().wrapping_sub(1)),
                ]);
            }
        }
        v
    }
}

/// The f64 reference: values exact to [`f64_ref::P`] bits (astro-float, pure Rust).
pub mod f64_ref {
    use astro_float::{BigFloat, RoundingMode, Sign};

    /// Bits of precision of the reference.
    pub const P: usize = 256;
    /// Rounding of the reference's operations.
    pub const RM: RoundingMode = RoundingMode::ToEven;

    /// `x` exactly as a BigFloat. (astro-float 0.9's `from_f64` halves subnormals: they are
    /// converted scaled up by 2^64 and scaled back.)
    pub fn big(x: f64) -> BigFloat {
        if x != 0.0 && x.abs() < f64::MIN_POSITIVE {
            let mut b = BigFloat::from_f64(x * 2f64.powi(64), P);
            let e = b.exponent().expect("finite");
            b.set_exponent(e - 64);
            b
        } else {
            BigFloat::from_f64(x, P)
        }
    }

    /// (mantissa's top 64 bits as a fraction in [1/2, 1), binary exponent, negative) of a finite
    /// nonzero `b`; `None` for zero.
    pub fn parts(b: &BigFloat) -> Option<(f64, i32, bool)> {
        let (m, _, s, e, _) = b.as_raw_parts()?;
        let top = *m.last()?;
        if top == 0 {
            return None;
        }
        Some((top as f64 / 2f64.powi(64), e, s == Sign::Neg))
    }

    /// The error of `y` against the exact `r`, in ulp of `r`'s f64 binade.
    pub fn ulp_error(y: f64, r: &BigFloat) -> f64 {
        if r.is_nan() || y.is_nan() {
            return if r.is_nan() && y.is_nan() {
                0.0
            } else {
                f64::INFINITY
            };
        }
        // Beyond f64's range the correctly rounded result is ±inf (the reference has no overflow).
        if let Some((_, e, neg)) = parts(r)
            && e > 1024
        {
            return if y.is_infinite() && (y < 0.0) == neg {
                0.0
            } else {
                f64::INFINITY
            };
        }
        if r.is_inf() || y.is_infinite() {
            let same = y.is_infinite() && r.is_inf() && (y < 0.0) == r.is_negative();
            return if same { 0.0 } else { f64::INFINITY };
        }
        // The binade of r: r = 0.1xxx·2^e, so r in [2^(e-1), 2^e); ulp = 2^(max(e-1, -1022) - 52).
        let ulp_exp = match parts(r) {
            Some((_, e, _)) => (e - 1).max(-1022) - 52,
            None => -1074,
        };
        let d = big(y).sub(r, P, RM);
        match parts(&d) {
            None => 0.0,
            Some((frac, e, _)) => frac * 2f64.powi(e - ulp_exp),
        }
    }

    /// Edge inputs every f64 function sees: zeros, infinities, NaN, the normal and subnormal
    /// extremes, small integers, multiples of 3/4, and multiples of π/4 with their neighbours.
    pub fn specials() -> Vec<f64> {
        let mut v = vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(1),
            f64::from_bits(0x000f_ffff_ffff_ffff),
            f64::MAX,
            f64::MIN,
            1.0,
            -1.0,
            0.5,
            2.0,
            f64::EPSILON,
        ];
        v.extend((-20..20).map(|k| k as f64 * 0.75));
        for k in -20..20 {
            let x = k as f64 * core::f64::consts::FRAC_PI_4;
            v.extend([
                x,
                f64::from_bits(x.to_bits() + 1),
                f64::from_bits(x.to_bits().wrapping_sub(1)),
            ]);
        }
        v
    }
}
