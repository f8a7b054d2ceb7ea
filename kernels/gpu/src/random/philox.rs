//! Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
//! counter-based generator. The output for a 128-bit counter and a 64-bit key is a pure
//! function of the two, so any thread can jump to any point of any stream in constant time.

/// Rounds of the Philox4x32 bijection: 10, the default of Random123 and curand (Salmon et al.
/// found fewer rounds already pass TestU01's BigCrush; 10 keeps a safety margin).
pub const PHILOX_ROUNDS: usize = 10;

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9; // golden ratio
const W1: u32 = 0xBB67_AE85; // sqrt(3) - 1

/// Both halves of the 64-bit product `a·b`. Written as one widening multiply (`mul.wide.u32`,
/// one `IMAD.WIDE.U32` in SASS) rather than `mul.hi` plus `mul.lo`: ptxas kept those as two
/// or three integer multiplies, and the multiplies are most of Philox's cost (integer
/// multiply-adds issue at half the rate of float ones).
/// On the GPU it is inline PTX: from plain Rust, LLVM emitted a 64×64-bit `mul.lo.s64` of the
/// zero-extended operands, which costs two additions of zero high words per multiply.
#[inline(always)]
fn mul_hi_lo(a: u32, b: u32) -> (u32, u32) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (lo, hi): (u32, u32);
        // SAFETY: arithmetic on registers only.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 p; mul.wide.u32 p, {a}, {b}; mov.b64 {{{lo}, {hi}}}, p; }}",
                a = in(reg32) a, b = in(reg32) b, lo = out(reg32) lo, hi = out(reg32) hi,
                options(pure, nomem, nostack),
            )
        };
        (hi, lo)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let p = a as u64 * b as u64;
        ((p >> 32) as u32, p as u32)
    }
}

/// One Philox4x32 round: two 32×32→64 multiplies and xors.
#[inline(always)]
fn round(c: [u32; 4], k: [u32; 2]) -> [u32; 4] {
    let (hi0, lo0) = mul_hi_lo(M0, c[0]);
    let (hi1, lo1) = mul_hi_lo(M1, c[2]);
    [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0]
}

/// The Philox4x32-10 bijection: four 32-bit words from a 128-bit counter and a 64-bit key,
/// bit-exact with Random123's `philox4x32(ctr, key)` (its known-answer vectors are the tests);
/// curand's Philox4_32_10 is derived from Random123 and uses the same constants and key
/// schedule.
#[inline(always)]
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
    c = round(c, k);
    for _ in 1..PHILOX_ROUNDS {
        k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        c = round(c, k);
    }
    c
}

/// The counter of block `block` of subsequence `subsequence`: the low 64 bits count blocks, the
/// high 64 bits name the subsequence, as in curand.
#[inline(always)]
pub const fn counter(subsequence: u64, block: u64) -> [u32; 4] {
    [
        block as u32,
        (block >> 32) as u32,
        subsequence as u32,
        (subsequence >> 32) as u32,
    ]
}

/// The key for a 64-bit seed (low word first, as curand).
#[inline(always)]
pub const fn key(seed: u64) -> [u32; 2] {
    [seed as u32, (seed >> 32) as u32]
}

/// A Philox4x32-10 stream with curand's `curand_init(seed, subsequence, offset, &state)`
/// semantics: stream `(seed, subsequence)` is the sequence of words of the counter blocks
/// `counter(subsequence, 0), counter(subsequence, 1), ...` under `key(seed)`, 4 words per
/// block, and `offset` skips that many words. Subsequences are 2^66 words long and never
/// overlap, so giving each thread its own subsequence (its global index) with one seed is the
/// usual way to get independent per-thread streams; `offset` resumes where a previous kernel
/// stopped.
///
/// `new`, `skip` and `skip_subsequences` are O(1) (one Philox call for the current block, as
/// curand computes it eagerly too). Differences from curand are in the conversions to floats
/// (see [`crate::random`]).
#[derive(Clone, Copy, Debug)]
pub struct Philox4x32 {
    key: [u32; 2],
    counter: [u32; 4],
    output: [u32; 4],
    /// Next word of `output` to hand out, 0..=3.
    index: u32,
    spare_f32: f32,
    spare_f64: f64,
    /// Bit 0: `spare_f32` holds an unused normal; bit 1: `spare_f64` does.
    spare: u32,
}

impl Philox4x32 {
    /// The stream `(seed, subsequence)`, starting `offset` words in (`curand_init`).
    #[inline(always)]
    pub fn new(seed: u64, subsequence: u64, offset: u64) -> Philox4x32 {
        let mut s = Philox4x32 {
            key: key(seed),
            counter: counter(subsequence, offset / 4),
            output: [0; 4],
            index: (offset % 4) as u32,
            spare_f32: 0.0,
            spare_f64: 0.0,
            spare: 0,
        };
        s.output = philox4x32_10(s.counter, s.key);
        s
    }

    /// Skips `n` words (`skipahead`): O(1).
    #[inline(always)]
    pub fn skip(&mut self, n: u64) {
        let words = self.index as u64 + n % 4;
        self.index = (words % 4) as u32;
        self.add_blocks(n / 4 + words / 4);
        self.output = philox4x32_10(self.counter, self.key);
    }

    /// Skips `n` subsequences (`skipahead_sequence`): O(1).
    #[inline(always)]
    pub fn skip_subsequences(&mut self, n: u64) {
        let hi = ((self.counter[3] as u64) << 32 | self.counter[2] as u64).wrapping_add(n);
        self.counter[2] = hi as u32;
        self.counter[3] = (hi >> 32) as u32;
        self.output = philox4x32_10(self.counter, self.key);
    }

    /// Adds `n` to the 128-bit counter.
    #[inline(always)]
    fn add_blocks(&mut self, n: u64) {
        let lo = (self.counter[1] as u64) << 32 | self.counter[0] as u64;
        let (lo, carry) = lo.overflowing_add(n);
        self.counter[0] = lo as u32;
        self.counter[1] = (lo >> 32) as u32;
        if carry {
            let hi = ((self.counter[3] as u64) << 32 | self.counter[2] as u64).wrapping_add(1);
            self.counter[2] = hi as u32;
            self.counter[3] = (hi >> 32) as u32;
        }
    }

    /// The next word (`curand`).
    #[inline(always)]
    pub fn next_u32(&mut self) -> u32 {
        let v = self.output[self.index as usize & 3];
        self.index += 1;
        if self.index == 4 {
            self.index = 0;
            self.add_blocks(1);
            self.output = philox4x32_10(self.counter, self.key);
        }
        v
    }

    /// The next four words (`curand4`): one Philox call when the stream is at a block boundary
    /// (always, if only `next_u32x4` and the 4-word distributions are used after an `offset`
    /// that is a multiple of 4).
    #[inline(always)]
    pub fn next_u32x4(&mut self) -> [u32; 4] {
        if self.index == 0 {
            let v = self.output;
            self.add_blocks(1);
            self.output = philox4x32_10(self.counter, self.key);
            v
        } else {
            [
                self.next_u32(),
                self.next_u32(),
                self.next_u32(),
                self.next_u32(),
            ]
        }
    }

    /// The next two words.
    #[inline(always)]
    pub(crate) fn next_u32x2(&mut self) -> [u32; 2] {
        [self.next_u32(), self.next_u32()]
    }

    /// Takes the cached second normal of the last `f32` Box–Muller pair, if any.
    #[inline(always)]
    pub(crate) fn take_spare_f32(&mut self) -> Option<f32> {
        if self.spare & 1 != 0 {
            self.spare &= !1;
            Some(self.spare_f32)
        } else {
            None
        }
    }

    #[inline(always)]
    pub(crate) fn put_spare_f32(&mut self, z: f32) {
        self.spare_f32 = z;
        self.spare |= 1;
    }

    #[inline(always)]
    pub(crate) fn take_spare_f64(&mut self) -> Option<f64> {
        if self.spare & 2 != 0 {
            self.spare &= !2;
            Some(self.spare_f64)
        } else {
            None
        }
    }

    #[inline(always)]
    pub(crate) fn put_spare_f64(&mut self, z: f64) {
        self.spare_f64 = z;
        self.spare |= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known-answer vectors of Random123 (github.com/DEShawResearch/random123, file
    // `tests/kat_vectors`, the three `philox4x32 10` lines; columns: name, rounds, counter[4],
    // key[2], expected[4]):
    //
    // philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000   6627e8d5 e169c58d bc57ac4c 9b00dbd8
    // philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   408f276d 41c83b0e a20bc7c6 6d5451fd
    // philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   d16cfe09 94fdcceb 5001e420 24126ea1
    pub(crate) const KAT: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
        (
            [0, 0, 0, 0],
            [0, 0],
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
        ),
        (
            [u32::MAX; 4],
            [u32::MAX; 2],
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
        ),
        (
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0],
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
        ),
    ];

    #[test]
    fn known_answers() {
        for (ctr, key, want) in KAT {
            assert_eq!(
                philox4x32_10(ctr, key),
                want,
                "counter {ctr:08x?} key {key:08x?}"
            );
        }
    }

    #[test]
    fn stream_is_counter_blocks_in_order() {
        let (seed, sub) = (0x0123_4567_89ab_cdef_u64, 77u64);
        let mut s = Philox4x32::new(seed, sub, 0);
        for block in 0..5u64 {
            let want = philox4x32_10(counter(sub, block), key(seed));
            for w in want {
                assert_eq!(s.next_u32(), w);
            }
        }
    }

    #[test]
    fn offsets_and_skips_agree_with_stepping() {
        let mut reference = Philox4x32::new(9, 3, 0);
        let words: [u32; 40] = core::array::from_fn(|_| reference.next_u32());
        for offset in 0..20u64 {
            let mut s = Philox4x32::new(9, 3, offset);
            assert_eq!(s.next_u32(), words[offset as usize], "offset {offset}");
            let x4 = s.next_u32x4();
            assert_eq!(x4[..], words[offset as usize + 1..offset as usize + 5]);
            for skip in 0..7u64 {
                let mut t = Philox4x32::new(9, 3, offset);
                t.skip(skip);
                assert_eq!(t.next_u32(), words[(offset + skip) as usize]);
            }
        }
        let mut s = Philox4x32::new(9, 0, 0);
        s.skip_subsequences(3);
        assert_eq!(s.next_u32(), words[0]);
    }

    #[test]
    fn counter_carries_into_the_subsequence() {
        let mut s = Philox4x32::new(5, 0, 0);
        s.add_blocks(u64::MAX);
        s.skip(4);
        let want = philox4x32_10([0, 0, 1, 0], key(5));
        assert_eq!(s.next_u32x4(), want);
    }
}
