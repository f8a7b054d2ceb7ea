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
//! Three launches: [`pack_spread`] (one thread per group: the largest spread of a run, so the
//! host can pick the width), [`pack`] and [`unpack`] (one warp per group each).

use crate::atomic;
use crate::ops::Max;
use crate::shared::SharedSlice;
use crate::slice::DisjointSlice;
use crate::sync::sync_warp_all;
use crate::thread::{block_size, global_id_x, lane_id, local_index};
use crate::{shared_array, unroll, warp};

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

/// Groups a block of [`PACK_BLOCK`] threads packs or unpacks: one per warp.
const GROUPS_PER_BLOCK: usize = PACK_BLOCK as usize / 32;

/// Keys of a group each lane of its warp handles: lane `l` takes keys `l`, `l + 32`, ….
const KEYS_PER_LANE: usize = PACK_GROUP / 32;

/// This warp's group and lane; the block's staging area for the group's 128 words in shared
/// memory (a group's distances, or its packed words, which are at most as many).
#[inline(always)]
fn warp_group() -> (usize, u32, SharedSlice<u32>) {
    let t = local_index();
    let stage = shared_array!(u32, GROUPS_PER_BLOCK * PACK_GROUP).as_slice();
    let warp = (t / 32) as usize;
    let (_, mine) = stage.split_at(warp * PACK_GROUP);
    (global_id_x() / 32, t % 32, mine)
}

/// The body of a packing kernel: `packed[..packed_words(keys.len(), width)]` receives `keys`
/// packed at `width` bits a key, one warp per group (launch at least `32 ·
/// pack_groups(keys.len())` threads in blocks of [`PACK_BLOCK`]). `width` must hold every
/// group's spread ([`pack_width`] of [`pack_spread`]'s result); distances are cut to `width`
/// bits, so a smaller width loses data.
///
/// Each lane loads its 4 keys of the group at once (coalesced), the warp stages the distances
/// in shared memory, and each lane then assembles its packed words from there: every load in
/// flight together, no division by anything but the width.
///
/// Panics (the launch fails) if `width > 32`, `packed` is too short or the block is not
/// [`PACK_BLOCK`] threads.
#[inline(always)]
pub fn pack(keys: &[u32], width: u32, packed: &DisjointSlice<'_, u32>) {
    assert!(width <= 32, "device::pack: the width is at most 32 bits");
    assert!(
        block_size() == PACK_BLOCK,
        "device::pack: launch PACK_BLOCK threads per block"
    );
    let groups = pack_groups(keys.len());
    assert!(
        packed.len() >= packed_words(keys.len(), width),
        "device::pack: the output is shorter than packed_words(len, width)"
    );
    let (g, lane, stage) = warp_group();
    if g >= groups {
        return;
    }
    let first = g * PACK_GROUP;
    let base = keys[first];
    let mut d = [0u32; KEYS_PER_LANE];
    unroll!(KEYS_PER_LANE, |m| {
        let k = first + lane as usize + 32 * m;
        if k < keys.len() {
            d[m] = keys[k].wrapping_sub(base) & low_bits(width) as u32;
        }
    });
    unroll!(KEYS_PER_LANE, |m| {
        // SAFETY: slot `lane + 32 m < PACK_GROUP` of this warp's stage; one lane per slot.
        unsafe { stage.write_unchecked(lane as usize + 32 * m, d[m]) };
    });
    sync_warp_all();
    // SAFETY (writes below): word `g` and words `groups + g · per_group + j` (`j < per_group`)
    // are below `packed_words(len, width) <= packed.len()`, each written by one lane of one
    // warp.
    if lane == 0 {
        unsafe { packed.write_unchecked_race(g, base) };
    }
    let per_group = pack_group_words(width);
    let words = groups + g * per_group;
    unroll!(KEYS_PER_LANE, |m| {
        let j = lane + 32 * m as u32;
        if (j as usize) < per_group {
            // Word `j`: bits `32 j .. 32 j + 32` of the group, which hold (parts of) keys
            // `32 j / width ..= (32 j + 31) / width`.
            let bit0 = 32 * j;
            let (i0, i1) = (
                bit0 / width,
                ((bit0 + 31) / width).min(PACK_GROUP as u32 - 1),
            );
            let mut bits = 0u64;
            for i in i0..=i1 {
                // SAFETY: `i < PACK_GROUP`, written before the warp barrier.
                let d = unsafe { stage.read_unchecked(i as usize) } as u64;
                // Where key `i`'s bits start relative to this word: below it for a first key
                // that straddles the previous word.
                let at = i * width;
                bits |= if at >= bit0 {
                    d << (at - bit0)
                } else {
                    d >> (bit0 - at)
                };
            }
            unsafe { packed.write_unchecked_race(words + j as usize, bits as u32) };
        }
    });
}

/// The body of an unpacking kernel: `out[i]` = key `i` of the run of `len` keys that
/// [`pack`] packed at `width` bits into `packed`, one warp per group (launch at least `32 ·
/// pack_groups(len)` threads in blocks of [`PACK_BLOCK`]). The warp loads the group's packed
/// words at once into shared memory, then each lane extracts its 4 keys.
///
/// Panics (the launch fails) if `width > 32`, `packed` is shorter than
/// `packed_words(len, width)`, `out` shorter than `len` or the block is not [`PACK_BLOCK`]
/// threads.
#[inline(always)]
pub fn unpack(packed: &[u32], len: usize, width: u32, out: &DisjointSlice<'_, u32>) {
    assert!(width <= 32, "device::unpack: the width is at most 32 bits");
    assert!(
        block_size() == PACK_BLOCK,
        "device::unpack: launch PACK_BLOCK threads per block"
    );
    assert!(
        packed.len() >= packed_words(len, width) && out.len() >= len,
        "device::unpack: packed is shorter than packed_words(len, width), or out than len"
    );
    let groups = pack_groups(len);
    let (g, lane, stage) = warp_group();
    if g >= groups {
        return;
    }
    let base = packed[g];
    let per_group = pack_group_words(width);
    let words = &packed[groups + g * per_group..groups + (g + 1) * per_group];
    let mut w = [0u32; KEYS_PER_LANE];
    unroll!(KEYS_PER_LANE, |m| {
        let j = lane as usize + 32 * m;
        if j < per_group {
            w[m] = words[j];
        }
    });
    unroll!(KEYS_PER_LANE, |m| {
        // SAFETY: slot `lane + 32 m < PACK_GROUP` of this warp's stage; one lane per slot.
        unsafe { stage.write_unchecked(lane as usize + 32 * m, w[m]) };
    });
    sync_warp_all();
    let first = g * PACK_GROUP;
    unroll!(KEYS_PER_LANE, |m| {
        let i = lane + 32 * m as u32;
        let k = first + i as usize;
        if k < len {
            let d = if width == 0 {
                0
            } else {
                let bit = i * width;
                let (at, shift) = ((bit / 32) as usize, bit % 32);
                // SAFETY: `at < per_group` (key `i`'s bits start inside the group's words), and
                // so is `at + 1` when its bits run on; both staged before the barrier.
                let lo = unsafe { stage.read_unchecked(at) } as u64;
                let hi = if shift + width > 32 {
                    (unsafe { stage.read_unchecked(at + 1) }) as u64
                } else {
                    0
                };
                (((hi << 32) | lo) >> shift) & low_bits(width)
            };
            // SAFETY: `k < len <= out.len()`; key `k` belongs to this lane alone.
            unsafe { out.write_unchecked_race(k, base.wrapping_add(d as u32)) };
        }
    });
}
