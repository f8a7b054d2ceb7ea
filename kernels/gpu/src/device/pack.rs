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
//! host can pick the width), [`pack`] and [`unpack`] (one warp per 4 groups each).

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

/// Groups each warp packs or unpacks. Their loads are all issued before the first is used
/// (with one group a warp had too few bytes in flight to cover the memory latency).
const GROUPS_PER_WARP: usize = 4;

/// Keys of a group each lane of its warp handles: lane `l` takes keys `l`, `l + 32`, ….
const KEYS_PER_LANE: usize = PACK_GROUP / 32;

/// Items of one lane: `KEYS_PER_LANE` of each of the warp's groups.
const LANE_ITEMS: usize = GROUPS_PER_WARP * KEYS_PER_LANE;

/// Words of the staging area of one warp: `PACK_GROUP` per group (a group's packed words, at
/// most `PACK_GROUP`).
const STAGE_WORDS: usize = GROUPS_PER_WARP * PACK_GROUP;

/// This warp's first group and lane, and its staging area in shared memory.
#[inline(always)]
fn warp_groups() -> (usize, u32, SharedSlice<u32>) {
    let t = local_index();
    let stage = shared_array!(u32, PACK_BLOCK as usize / 32 * STAGE_WORDS).as_slice();
    let (_, mine) = stage.split_at((t / 32) as usize * STAGE_WORDS);
    (global_id_x() / 32 * GROUPS_PER_WARP, t % 32, mine)
}

/// The body of a packing kernel: `packed[..packed_words(keys.len(), width)]` receives `keys`
/// packed at `width` bits a key, one warp per `GROUPS_PER_WARP` (4) groups (launch at least
/// [`pack_threads`]`(keys.len())` threads in blocks of [`PACK_BLOCK`]). `width` must hold
/// every group's spread ([`pack_width`] of [`pack_spread`]'s result); distances are cut to
/// `width` bits, so a smaller width loses data.
///
/// The warp loads its groups' keys at once (coalesced); each 32 of them fill whole words,
/// which lanes assemble from the others' distances with shuffles and write out coalesced.
/// (ORing each distance into its words with shared atomics instead was bound by the atomics;
/// assembling words from distances staged in shared memory, by the instructions.)
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
    let (g0, lane, _) = warp_groups();
    if g0 >= groups {
        return;
    }
    let mut base = [0u32; GROUPS_PER_WARP];
    unroll!(GROUPS_PER_WARP, |q| {
        if g0 + q < groups {
            base[q] = keys[(g0 + q) * PACK_GROUP];
        }
    });
    let mut k = [0u32; LANE_ITEMS];
    unroll!(LANE_ITEMS, |x| {
        let at = (g0 + x / KEYS_PER_LANE) * PACK_GROUP + lane as usize + 32 * (x % KEYS_PER_LANE);
        if at < keys.len() {
            k[x] = keys[at];
        }
    });
    // SAFETY (writes below): word `g` and words `groups + g · per_group + j` (`j < per_group`)
    // are below `packed_words(len, width) <= packed.len()`, each written by one lane of one
    // warp.
    unroll!(GROUPS_PER_WARP, |q| {
        let g = g0 + q;
        if lane == 0 && g < groups {
            unsafe { packed.write_unchecked_race(g, base[q]) };
        }
    });
    if width == 0 {
        return;
    }
    // Keys `32 m .. 32 m + 32` of a group (one per lane) fill exactly its words `m · width ..
    // (m + 1) · width`. Lane `t < width` assembles word `t` of them: bits `32 t .. 32 t + 32`,
    // (parts of) the keys of lanes `32 t / width ..= (32 t + 31) / width`, fetched with
    // shuffles. The lanes are the same for every `m` and group: the divisions are done once.
    let per_group = pack_group_words(width);
    let bit0 = 32 * lane;
    let (from, to) = (bit0 / width, ((bit0 + 31) / width).min(31));
    // Every lane runs as many shuffles as the widest word needs (all 32 lanes take part).
    let steps = 32u32.div_ceil(width) + 1;
    unroll!(LANE_ITEMS, |x| {
        let (q, m) = (x / KEYS_PER_LANE, x % KEYS_PER_LANE);
        let g = g0 + q;
        let at = g * PACK_GROUP + lane as usize + 32 * m;
        let d = if at < keys.len() {
            k[x].wrapping_sub(base[q]) & low_bits(width) as u32
        } else {
            0
        };
        let mut bits = 0u64;
        for s in 0..steps {
            let src = from + s;
            let v = warp::shuffle_idx(d, src.min(31)) as u64;
            if src <= to {
                // Where key `src`'s bits start relative to this word: below it for a first key
                // that straddles the previous word.
                let at = src * width;
                bits |= if at >= bit0 {
                    v << (at - bit0)
                } else {
                    v >> (bit0 - at)
                };
            }
        }
        if lane < width && g < groups {
            let j = m * width as usize + lane as usize;
            unsafe { packed.write_unchecked_race(groups + g * per_group + j, bits as u32) };
        }
    });
}

/// Threads of a packing or unpacking launch for a run of `len` keys: a warp per
/// `GROUPS_PER_WARP` groups.
pub const fn pack_threads(len: usize) -> usize {
    pack_groups(len).div_ceil(GROUPS_PER_WARP) * 32
}

/// The body of an unpacking kernel: `out[i]` = key `i` of the run of `len` keys that
/// [`pack`] packed at `width` bits into `packed`, one warp per `GROUPS_PER_WARP` groups
/// (launch at least [`pack_threads`]`(len)` threads in blocks of [`PACK_BLOCK`]). The warp
/// loads its groups' packed words at once into shared memory, then each lane extracts its keys.
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
    let (g0, lane, stage) = warp_groups();
    if g0 >= groups {
        return;
    }
    let per_group = pack_group_words(width);
    let mut base = [0u32; GROUPS_PER_WARP];
    unroll!(GROUPS_PER_WARP, |q| {
        if g0 + q < groups {
            base[q] = packed[g0 + q];
        }
    });
    let mut w = [0u32; LANE_ITEMS];
    unroll!(LANE_ITEMS, |x| {
        let (q, j) = (x / KEYS_PER_LANE, lane as usize + 32 * (x % KEYS_PER_LANE));
        if g0 + q < groups && j < per_group {
            w[x] = packed[groups + (g0 + q) * per_group + j];
        }
    });
    unroll!(LANE_ITEMS, |x| {
        let (q, j) = (x / KEYS_PER_LANE, lane as usize + 32 * (x % KEYS_PER_LANE));
        // SAFETY: slot `q · PACK_GROUP + j < STAGE_WORDS` of this warp's stage; one lane per
        // slot.
        unsafe { stage.write_unchecked(q * PACK_GROUP + j, w[x]) };
    });
    sync_warp_all();
    unroll!(LANE_ITEMS, |x| {
        let (q, i) = (x / KEYS_PER_LANE, lane + 32 * (x % KEYS_PER_LANE) as u32);
        let k = (g0 + q) * PACK_GROUP + i as usize;
        if k < len {
            let d = if width == 0 {
                0
            } else {
                let bit = i * width;
                let (at, shift) = (q * PACK_GROUP + (bit / 32) as usize, bit % 32);
                // SAFETY: key `i`'s bits start in word `bit / 32 < per_group` of group `q`, and
                // run into the next only while it is `< per_group`; all staged before the
                // barrier.
                let lo = unsafe { stage.read_unchecked(at) } as u64;
                let hi = if shift + width > 32 {
                    (unsafe { stage.read_unchecked(at + 1) }) as u64
                } else {
                    0
                };
                (((hi << 32) | lo) >> shift) & low_bits(width)
            };
            // SAFETY: `k < len <= out.len()`; key `k` belongs to this lane alone.
            unsafe { out.write_unchecked_race(k, base[q].wrapping_add(d as u32)) };
        }
    });
}
