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

/// The body of a spread kernel: `spread[slot] = max(spread[slot], largest spread of a group
/// of keys)`, one thread per group (launch at least `pack_groups(keys.len())` threads; the
/// slot starts at 0 for a fresh run). A warp folds its groups' spreads first, so one atomic
/// goes out per warp.
///
/// The keys must be ascending; otherwise the result is meaningless (a packing at its width
/// loses bits). Panics (the launch fails) if `slot` is past the end of `spread`.
#[inline(always)]
pub fn pack_spread(keys: &[u32], spread: &DisjointSlice<'_, u32>, slot: usize) {
    assert!(
        slot < spread.len(),
        "device::pack_spread: slot past the end of spread"
    );
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
        // SAFETY: `slot < spread.len()`; the slot is updated only atomically while the kernel
        // runs.
        unsafe { atomic::max(spread.as_mut_ptr().add(slot), warp_max) };
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
/// The warp loads its groups' keys at once (coalesced), ORs each distance into its words in
/// shared memory (one or two shared atomics a key, no division), and writes the words out
/// coalesced. Positions inside the warp's groups are 32-bit (a few hundred keys), so the
/// per-key arithmetic is one instruction an operation. (Assembling each word from distances
/// staged in shared memory, or from the lanes' registers with shuffles, took more instructions
/// than the atomics cost.)
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
    let (g0, lane, stage) = warp_groups();
    if g0 >= groups {
        return;
    }
    // This warp's keys: `keys[first..first + n]`, `n <= STAGE_WORDS`; its groups: `g0 ..
    // g0 + warp_groups`.
    let first = g0 * PACK_GROUP;
    let n = (keys.len() - first).min(STAGE_WORDS) as u32;
    let warp_groups = (groups - g0).min(GROUPS_PER_WARP) as u32;
    let mine = keys[first..first + n as usize].as_ptr();
    let mut base = [0u32; GROUPS_PER_WARP];
    let mut k = [0u32; LANE_ITEMS];
    // SAFETY (all loads): every offset read is below `n`, inside `keys[first..first + n]`.
    unroll!(GROUPS_PER_WARP, |q| {
        if (q as u32) < warp_groups {
            base[q] = unsafe { mine.add(q * PACK_GROUP).read() };
        }
    });
    unroll!(LANE_ITEMS, |x| {
        let i = x as u32 / KEYS_PER_LANE as u32 * PACK_GROUP as u32
            + lane
            + 32 * (x % KEYS_PER_LANE) as u32;
        if i < n {
            k[x] = unsafe { mine.add(i as usize).read() };
        }
    });
    unroll!(STAGE_WORDS / 32, |x| {
        // SAFETY: slot `lane + 32 x < STAGE_WORDS` of this warp's stage; one lane per slot.
        unsafe { stage.write_unchecked((lane + 32 * x as u32) as usize, 0) };
    });
    sync_warp_all();
    if width > 0 {
        unroll!(LANE_ITEMS, |x| {
            let q = x / KEYS_PER_LANE;
            let i = lane + 32 * (x % KEYS_PER_LANE) as u32;
            if (q * PACK_GROUP) as u32 + i < n {
                let d = k[x].wrapping_sub(base[q]) & low_bits(width) as u32;
                let bit = i * width;
                let (word, shift) = ((q * PACK_GROUP) as u32 + bit / 32, bit % 32);
                stage.atomic_or(word as usize, d << shift);
                // The bits that run into the next word.
                if shift + width > 32 {
                    stage.atomic_or(word as usize + 1, d >> (32 - shift));
                }
            }
        });
    }
    sync_warp_all();
    // SAFETY (writes below): bases `g0 .. g0 + warp_groups` and the words `groups + g0 ·
    // per_group ..` of those groups are below `packed_words(len, width) <= packed.len()`
    // (checked above), each written by one lane of one warp.
    let per_group = pack_group_words(width) as u32;
    let bases = packed.as_mut_ptr().wrapping_add(g0);
    let words = packed
        .as_mut_ptr()
        .wrapping_add(groups + g0 * per_group as usize);
    if lane < warp_groups {
        // Lane `q` writes base `q` (the bases are in registers of every lane).
        let mut b = base[0];
        unroll!(GROUPS_PER_WARP, |q| {
            if lane == q as u32 {
                b = base[q];
            }
        });
        unsafe { bases.add(lane as usize).write(b) };
    }
    unroll!(LANE_ITEMS, |x| {
        let q = (x / KEYS_PER_LANE) as u32;
        let j = lane + 32 * (x % KEYS_PER_LANE) as u32;
        if q < warp_groups && j < per_group {
            // SAFETY: slot `q · PACK_GROUP + j` of the stage, ORed before the barrier.
            let word = unsafe { stage.read_unchecked((q * PACK_GROUP as u32 + j) as usize) };
            unsafe { words.add((q * per_group + j) as usize).write(word) };
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
/// loads its groups' packed words at once into shared memory, then each lane extracts its keys
/// (32-bit positions inside the warp's groups, as in [`pack`]).
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
    let first = g0 * PACK_GROUP;
    let n = (len - first).min(STAGE_WORDS) as u32;
    let warp_groups = (groups - g0).min(GROUPS_PER_WARP) as u32;
    let per_group = pack_group_words(width) as u32;
    // This warp's bases and words: inside `packed[..packed_words(len, width)]` (checked).
    let bases = packed[g0..g0 + warp_groups as usize].as_ptr();
    let start = groups + g0 * per_group as usize;
    let words = packed[start..start + (warp_groups * per_group) as usize].as_ptr();
    let mut base = [0u32; GROUPS_PER_WARP];
    // SAFETY (loads): base `q < warp_groups`, word `q · per_group + j < warp_groups ·
    // per_group`.
    unroll!(GROUPS_PER_WARP, |q| {
        if (q as u32) < warp_groups {
            base[q] = unsafe { bases.add(q).read() };
        }
    });
    let mut w = [0u32; LANE_ITEMS];
    unroll!(LANE_ITEMS, |x| {
        let q = (x / KEYS_PER_LANE) as u32;
        let j = lane + 32 * (x % KEYS_PER_LANE) as u32;
        if q < warp_groups && j < per_group {
            w[x] = unsafe { words.add((q * per_group + j) as usize).read() };
        }
    });
    unroll!(LANE_ITEMS, |x| {
        let slot = (x / KEYS_PER_LANE * PACK_GROUP) as u32 + lane + 32 * (x % KEYS_PER_LANE) as u32;
        // SAFETY: slot `q · PACK_GROUP + j < STAGE_WORDS` of this warp's stage; one lane per
        // slot.
        unsafe { stage.write_unchecked(slot as usize, w[x]) };
    });
    sync_warp_all();
    let mine = out.as_mut_ptr().wrapping_add(first);
    unroll!(LANE_ITEMS, |x| {
        let q = x / KEYS_PER_LANE;
        let i = lane + 32 * (x % KEYS_PER_LANE) as u32;
        let k = (q * PACK_GROUP) as u32 + i;
        if k < n {
            let bit = i * width;
            let (at, shift) = ((q * PACK_GROUP) as u32 + bit / 32, bit % 32);
            // SAFETY: key `i`'s bits start in word `bit / 32 < per_group` of group `q`, and run
            // into the next only while it is `< per_group`; all staged before the barrier. (At
            // width 0 slot `at` holds a stale value, masked to nothing.)
            let lo = unsafe { stage.read_unchecked(at as usize) } as u64;
            let hi = if shift + width > 32 {
                (unsafe { stage.read_unchecked(at as usize + 1) }) as u64
            } else {
                0
            };
            let d = (((hi << 32) | lo) >> shift) & low_bits(width);
            // SAFETY: `first + k < len <= out.len()` (checked above); key `first + k` belongs
            // to this lane alone.
            unsafe { mine.add(k as usize).write(base[q].wrapping_add(d as u32)) };
        }
    });
}
