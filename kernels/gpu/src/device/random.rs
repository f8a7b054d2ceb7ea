//! Device-wide random fills: Philox4x32-10 counter blocks straight to memory.

use crate::DeviceCopy;
use crate::random::{counter, key, philox4x32_10};
use crate::slice::DisjointSlice;
use crate::thread;

/// Threads per block of the fill kernels.
pub const FILL_BLOCK: u32 = 256;

/// The body of a random fill kernel: output element `i` is value `i % N` of
/// `f(philox4x32_10(counter(subsequence, offset + i / N), key(seed)))`, so the result depends
/// only on `(seed, subsequence, offset)` and not on the launch shape. `f` turns one counter
/// block's four words into `N` values of 16 bytes in all (four 32-bit or two 64-bit values),
/// which each thread writes with one 16-byte store; a partial last group is written element by
/// element. `offset` counts counter blocks, so a fill of `len` elements uses
/// `len.div_ceil(N)` of them and the next fill continues at `offset + len.div_ceil(N)`
/// (modulo 2^64: the block counter does not carry into the subsequence).
///
/// Any grid: threads stride over the groups of `N` elements.
#[inline(always)]
pub fn random_fill<T: DeviceCopy, F: Fn([u32; 4]) -> [T; N], const N: usize>(
    out: &DisjointSlice<'_, T>,
    seed: u64,
    subsequence: u64,
    offset: u64,
    f: F,
) {
    const {
        assert!(
            N * size_of::<T>() == 16,
            "random_fill: N values must be 16 bytes"
        )
    };
    let n = out.len();
    let key = key(seed);
    let p = out.as_mut_ptr();
    let aligned = (p as usize).is_multiple_of(16);
    let groups = n.div_ceil(N);
    // Whole groups of an aligned output: one 16-byte store each, no bounds or alignment test
    // in the loop, and 32-bit group indices where they cannot wrap (the index arithmetic of
    // the general loop below was a tenth of the normal fills' instructions).
    let full = if aligned { n / N } else { 0 };
    let start = thread::global_index().get();
    let stride = thread::grid_size();
    let mut first_general = 0;
    if full as u64 + stride as u64 <= u32::MAX as u64 {
        let (end, step) = (full as u32, stride as u32);
        // SAFETY: `store` is called with groups `q < full` only: each lies in bounds and is
        // 16-byte aligned (the base is, and the group is 16 bytes); it belongs to this thread
        // alone (grid-stride indices are unique); `T: DeviceCopy` has no padding, so all 16
        // bytes are initialized.
        let store = |q: u32, values: [T; N]| unsafe {
            let v = (&raw const values).cast::<[u32; 4]>().read_unaligned();
            crate::block::load::store_v4(p.add(q as usize * N).cast::<u8>(), v)
        };
        let mut q = start as u32;
        if N == 4 {
            // Group q's block is offset + q: its high word is offset's, plus 1 from the q at
            // which the low word wraps on. Two passes, each with the high word fixed, so that
            // Philox's work on it (the first round's xor and the second round's multiply of
            // that word) is hoisted out of the loop and the block count is one 32-bit
            // addition: `fill_normal_f32`'s loop 142 → 137 SASS instructions (sm_90). Not for
            // two values a group (f64): there the hoisted words took uniform registers that
            // the loop's constant-bank operands need, and ptxas moved them back and forth
            // between uniform and ordinary registers in every iteration (`fill_normal_f64`
            // 142 → 162).
            let (lo, hi) = (offset as u32, (offset >> 32) as u32);
            let wrap = ((1u64 << 32) - lo as u64).min(end as u64) as u32;
            for carry in 0..2u32 {
                let (pass_end, hi) = (if carry == 0 { wrap } else { end }, hi.wrapping_add(carry));
                while q < pass_end {
                    let c = [
                        q.wrapping_add(lo),
                        hi,
                        subsequence as u32,
                        (subsequence >> 32) as u32,
                    ];
                    store(q, f(philox4x32_10(c, key)));
                    q += step;
                }
            }
        } else {
            let mut block = offset.wrapping_add(q as u64);
            while q < end {
                store(q, f(philox4x32_10(counter(subsequence, block), key)));
                q += step;
                block = block.wrapping_add(stride as u64);
            }
        }
        first_general = full;
    }
    // The rest (a partial last group, an unaligned output, or more than 2^32 groups): element
    // by element where a group is partial or unaligned.
    let mut q = first_general + start;
    while q < groups {
        let words = philox4x32_10(counter(subsequence, offset.wrapping_add(q as u64)), key);
        let values = f(words);
        let first = q * N;
        if aligned && first + N <= n {
            // SAFETY: as above: in bounds (checked), aligned, this thread's own group.
            unsafe {
                let v = (&raw const values).cast::<[u32; 4]>().read_unaligned();
                crate::block::load::store_v4(p.add(first).cast::<u8>(), v)
            }
        } else {
            for (j, v) in values.into_iter().enumerate() {
                if first + j < n {
                    // SAFETY: element `first + j` belongs to this thread's group alone.
                    unsafe { out.write_unchecked_race(first + j, v) };
                }
            }
        }
        q = q.saturating_add(stride);
    }
}

/// Instantiates a random fill ([`random_fill`]) as the kernel `$name` producing `$t`, `$n` per
/// counter block, from `$f: Fn([u32; 4], $p, $p) -> [$t; $n]` (the two `$p` parameters are a
/// location and a scale that the distribution may use, e.g. the mean and standard deviation).
/// Parameters: `out: DisjointSlice<$t>, seed: u64, subsequence: u64, offset: u64, a: $p,
/// b: $p`.
///
/// ```ignore
/// gpu::random_fill_kernel!(fill_normal_f32, f32, 4, f32, |w: [u32; 4], mean: f32, sd: f32| {
///     let [a, b] = gpu::random::box_muller_f32(w[0], w[1]);
///     let [c, d] = gpu::random::box_muller_f32(w[2], w[3]);
///     [a, b, c, d].map(|z| gpu::math::fma(z, sd, mean))
/// });
/// ```
#[macro_export]
macro_rules! random_fill_kernel {
    ($name:ident, $t:ident, $n:literal, $p:ident, $f:expr) => {
        #[allow(clippy::too_many_arguments)]
        #[$crate::kernel]
        pub fn $name(
            out: $crate::DisjointSlice<$t>,
            seed: u64,
            subsequence: u64,
            offset: u64,
            a: $p,
            b: $p,
        ) {
            let f = $f;
            $crate::device::random_fill::<$t, _, $n>(&out, seed, subsequence, offset, |w| {
                f(w, a, b)
            })
        }
    };
}
