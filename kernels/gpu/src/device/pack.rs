//! Frame-of-reference packing of ascending `u32` runs: fewer bytes to move for keys that are
//! already sorted, as a distributed sort's runs are when they change GPU.
//!
//! A run is cut into groups of [`PACK_GROUP`] keys. Each group keeps its first key (the
//! *base*) in full and every key as its distance from the base in `width` bits, the same width
//! for the whole run: the bits of the largest spread (last key minus first) of any group.
//! Sorted keys that are dense in their range have small spreads: 2^28 uniform keys over half of
//! `u32` spread about 1,000 per group, 11 bits a key instead of 32.
//!
//! The packed run is `packed_words(len, width)` words: the `groups` bases, then each group's
//! `PACK_GROUP · width / 32` words of distances, key `i` of a group at bits `i · width ..` of
//! its words (little-endian bit order across words). One width for the run (rather than one per
//! group) puts every group's words at a fixed place, so packing and unpacking are one pass each
//! with no scan, and a thread finds its bits by arithmetic.
//!
//! Three launches, each one thread per item: [`pack_spread`] (the largest spread of a run, so
//! the host can pick the width), [`pack`] (one thread per packed word) and [`unpack`] (one per
//! key).

use crate::atomic;
use crate::ops::Max;
use crate::slice::DisjointSlice;
use crate::thread::{global_id_x, global_index, lane_id};
use crate::warp;

/// Keys per group sharing one base. A multiple of 32, so a group's distances fill whole words
/// at any width.
pub const PACK_GROUP: usize = 128;

/// Threads per block of the packing kernels.
pub const PACK_BLOCK: u32 = 256;

/// Groups of a run of `len` keys.
pub const fn pack_groups(len: usize) -> usize {
    len.div_ceil(PACK_GROUP)
}

/// Words of the distances of one group at `width` bits a key.
pub const fn pack_group_words(width: u32) -> usize {
    PACK_GROUP * width as usize / 32
}

/// Words of a run of `len` keys packed at `width` bits a key: the bases, then the distances.
pub const fn packed_words(len: usize, width: u32) -> usize {
    pack_groups(len) * (1 + pack_group_words(width))
}

/// The width that holds distances up to `spread`: its bit length (0 for 0, 32 for
/// `u32::MAX`).
pub const fn pack_width(spread: u32) -> u32 {
    32 - spread.leading_zeros()
}

/// The `width` lowest bits set.
#[inline(always)]
fn low_bits(width: u32) -> u64 {
    (1u64 << width) - 1
}

/// The body of a spread kernel: `*spread = max(*spread, largest spread of a group of keys)`,
/// one thread per group (launch at least `pack_groups(keys.len())` threads; `spread` starts at
/// 0 for a fresh run). A warp folds its groups' spreads first, so one atomic goes out per warp.
///
/// The keys must be ascending; otherwise the result is meaningless (a packing at its width
/// loses bits).
#[inline(always)]
pub fn pack_spread(keys: &[u32], spread: *mut u32) {
    let g = global_id_x();
    let first = g * PACK_GROUP;
    let mine = if first < keys.len() {
        let last = (first + PACK_GROUP).min(keys.len()) - 1;
        keys[last].wrapping_sub(keys[first])
    } else {
        0
    };
    let warp_max = warp::reduce(mine, Max);
    if lane_id() == 0 && warp_max > 0 {
        // SAFETY: the caller passes the address of a `u32` in global memory, updated only
        // atomically while the kernel runs.
        unsafe { atomic::max(spread, warp_max) };
    }
}

/// The body of a packing kernel: `packed[..packed_words(keys.len(), width)]` receives `keys`
/// packed at `width` bits a key, one thread per packed word (launch at least that many
/// threads). `width` must hold every group's spread ([`pack_width`] of [`pack_spread`]'s
/// result); distances are cut to `width` bits, so a smaller width loses data.
///
/// Panics (the launch fails) if `width > 32` or `packed` is too short.
#[inline(always)]
pub fn pack(keys: &[u32], width: u32, packed: &mut DisjointSlice<'_, u32>) {
    assert!(width <= 32, "device::pack: the width is at most 32 bits");
    let groups = pack_groups(keys.len());
    let total = packed_words(keys.len(), width);
    let index = global_index();
    let w = index.get();
    if w >= total {
        return;
    }
    assert!(
        packed.len() >= total,
        "device::pack: the output is shorter than packed_words(len, width)"
    );
    let word = if w < groups {
        keys[w * PACK_GROUP]
    } else {
        // Word `j` of group `g`'s distances: bits `32 j .. 32 j + 32`, which hold (parts of)
        // keys `32 j / width ..= (32 j + 31) / width` of the group.
        let per_group = pack_group_words(width);
        let (g, j) = ((w - groups) / per_group, (w - groups) % per_group);
        let first = g * PACK_GROUP;
        let base = keys[first];
        let bit0 = 32 * j as u32;
        let (i0, i1) = (
            bit0 / width,
            ((bit0 + 31) / width).min(PACK_GROUP as u32 - 1),
        );
        let mut bits = 0u64;
        for i in i0..=i1 {
            let k = first + i as usize;
            let d = if k < keys.len() {
                (keys[k].wrapping_sub(base) as u64) & low_bits(width)
            } else {
                0
            };
            // Where key `i`'s bits start relative to this word: below it for the first key when
            // that key straddles the previous word.
            let at = i * width;
            bits |= if at >= bit0 {
                d << (at - bit0)
            } else {
                d >> (bit0 - at)
            };
        }
        bits as u32
    };
    packed.set(index, word);
}

/// The body of an unpacking kernel: `out[i]` = key `i` of the run of `len` keys that
/// [`pack`] packed at `width` bits into `packed`, one thread per key (launch at least `len`
/// threads).
///
/// Panics (the launch fails) if `width > 32`, `packed` is shorter than
/// `packed_words(len, width)` or `out` shorter than `len`.
#[inline(always)]
pub fn unpack(packed: &[u32], len: usize, width: u32, out: &mut DisjointSlice<'_, u32>) {
    assert!(width <= 32, "device::unpack: the width is at most 32 bits");
    let index = global_index();
    let i = index.get();
    if i >= len {
        return;
    }
    assert!(
        packed.len() >= packed_words(len, width) && out.len() >= len,
        "device::unpack: packed is shorter than packed_words(len, width), or out than len"
    );
    let groups = pack_groups(len);
    let (g, r) = (i / PACK_GROUP, (i % PACK_GROUP) as u32);
    let base = packed[g];
    let d = if width == 0 {
        0
    } else {
        let bit = r * width;
        let at = groups + g * pack_group_words(width) + (bit / 32) as usize;
        let shift = bit % 32;
        let lo = packed[at] as u64;
        // The key's bits run into the next word of the same group.
        let hi = if shift + width > 32 {
            packed[at + 1] as u64
        } else {
            0
        };
        (((hi << 32) | lo) >> shift) & low_bits(width)
    };
    out.set(index, base.wrapping_add(d as u32));
}
