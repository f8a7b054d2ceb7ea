//! Deterministic pseudo-random inputs, so that a failure reproduces from its seed without a
//! `rand` dependency (none is available offline here).
//!
//! Four small generators, each kept bit-for-bit as the tests and benchmarks first wrote them:
//! expected values and tolerances were settled against these exact sequences. Seeding is left
//! to the caller (`XorShift64::new(seed | 1)`, ...), since the copies this replaces seeded in
//! different ways; [`XorShift64::from_seed`] is the most common one. The xorshift generators
//! have an all-zero fixed point, so their state must not be 0.

/// xorshift64 (Marsaglia; shifts 13, 7, 17).
#[derive(Clone, Debug)]
pub struct XorShift64(pub u64);

impl XorShift64 {
    /// The generator with this (nonzero) state.
    pub fn new(state: u64) -> Self {
        Self(state)
    }

    /// Any seed (0 included) spread by the golden-ratio multiplier and made odd, so that
    /// nearby seeds give unrelated sequences.
    pub fn from_seed(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next state.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `[-1, 1)` from the top 24 bits: [`signed_f32`] of the next state.
    pub fn signed_f32(&mut self) -> f32 {
        signed_f32(self.next_u64())
    }
}

/// xorshift64* (Vigna): xorshift64 with shifts 12, 25, 27 and a multiplied output, whose low
/// bits are good too.
#[derive(Clone, Debug)]
pub struct XorShift64Star(pub u64);

impl XorShift64Star {
    /// The generator with this (nonzero) state.
    pub fn new(state: u64) -> Self {
        Self(state)
    }

    /// The next output.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[-1, 1)` with 52 random bits: [`signed_f64`] of the next output.
    pub fn signed_f64(&mut self) -> f64 {
        signed_f64(self.next_u64())
    }

    /// Uniform in `[-1, 1)` from the top 24 bits: [`signed_f32`] of the next output.
    pub fn signed_f32(&mut self) -> f32 {
        signed_f32(self.next_u64())
    }
}

/// xorshift32 (Marsaglia; shifts 13, 17, 5).
#[derive(Clone, Debug)]
pub struct XorShift32(pub u32);

impl XorShift32 {
    /// The generator with this (nonzero) state.
    pub fn new(state: u32) -> Self {
        Self(state)
    }

    /// The next state.
    pub fn next_u32(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }
}

/// SplitMix64 (Steele, Lea, Flood): a counter through a mixing function; any seed, 0
/// included, gives a full-quality sequence.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next output.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// In `0..n` (`0` when `n` is 0), by remainder: slightly biased, which fuzzing does not mind.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// `len` values uniform in `[-1, 1)`: [`XorShift64::from_seed`] through [`signed_f32`], the
/// examples' and benchmarks' usual inputs.
pub fn signed_f32s(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = XorShift64::from_seed(seed);
    (0..len).map(|_| rng.signed_f32()).collect()
}

/// Uniform in `[0, 1)` from the top 24 bits of `bits` (every value exact in f32).
pub fn unit_f32(bits: u64) -> f32 {
    (bits >> 40) as f32 / (1u64 << 24) as f32
}

/// Uniform in `[-1, 1)` from the top 24 bits of `bits`: `2 * unit_f32(bits) - 1`.
pub fn signed_f32(bits: u64) -> f32 {
    unit_f32(bits) * 2.0 - 1.0
}

/// Uniform in `[-1, 1)` from the top 53 bits of `bits`, in steps of 2^-52.
pub fn signed_f64(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    // First outputs pinned, so an edit that changes a sequence (and with it every expected
    // value written against it) fails here rather than somewhere downstream.
    #[test]
    fn sequences_are_pinned() {
        let mut x = XorShift64::new(1);
        let got = [x.next_u64(), x.next_u64(), x.next_u64()];
        assert_eq!(
            got,
            [0x4082_2041, 0x1000_4106_0c01_1441, 0x9b1e_842f_6e86_2629]
        );
        let mut x = XorShift64Star::new(1);
        let got = [x.next_u64(), x.next_u64(), x.next_u64()];
        assert_eq!(
            got,
            [
                0x47e4_ce4b_896c_dd1d,
                0xabcf_a6a8_e079_651d,
                0xb9d1_0d8f_eb73_1f57
            ]
        );
        let mut x = XorShift32::new(1);
        let got = [x.next_u32(), x.next_u32(), x.next_u32()];
        assert_eq!(got, [0x42021, 0x408_0601, 0x9dcc_a8c5]);
        let mut x = SplitMix64::new(0);
        let got = [x.next_u64(), x.next_u64(), x.next_u64()];
        assert_eq!(
            got,
            [
                0xe220_a839_7b1d_cdaf,
                0x6e78_9e6a_a1b9_65f4,
                0x06c4_5d18_8009_454f
            ]
        );
    }

    #[test]
    fn float_mappings_cover_their_ranges() {
        assert_eq!(unit_f32(0), 0.0);
        assert_eq!(unit_f32(u64::MAX), 1.0 - 1.0 / (1u64 << 24) as f32);
        assert_eq!(signed_f32(0), -1.0);
        assert_eq!(signed_f32(1 << 63), 0.0);
        assert_eq!(signed_f64(0), -1.0);
        assert_eq!(signed_f64(u64::MAX), 1.0 - 1.0 / (1u64 << 52) as f64);
    }
}
