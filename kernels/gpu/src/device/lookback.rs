//! Tile status words for single-pass scans with *decoupled look-back* (Merrill & Garland,
//! "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016).
//!
//! Each tile publishes its aggregate (`PARTIAL`) as soon as it has it, and its inclusive prefix
//! (`INCLUSIVE`) once it knows the prefix of everything before it. A tile learns its prefix by
//! looking back over its predecessors a warp at a time: it folds `PARTIAL` aggregates until it
//! meets an `INCLUSIVE` one. No tile waits for a whole earlier scan pass, so the input is read
//! once and the output written once.
//!
//! Status words carry an *epoch* (the call number) so the storage needs zeroing only once, when
//! allocated: a word from an earlier call reads as "not yet published".
//!
//! Layout, [`STATUS_WORDS_PER_TILE`] `u64` per tile: values up to 4 bytes are packed with their
//! flag into the tile's first word (one 64-bit access, atomic by itself). Larger values (up to
//! 8 bytes) have separate slots for the aggregate and the inclusive prefix, and the flag in a
//! third word written after them (release/acquire fences): a slot is written once per call,
//! before the flag that announces it, so a reader never sees a value newer than its flag.

use core::mem::size_of;

use crate::DeviceCopy;
use crate::math::clz;
use crate::ops::ReduceOp;
use crate::slice::DisjointSlice;
use crate::sync::fence_acq_rel;
use crate::thread::{WARP_SIZE, lane_id};
use crate::{atomic, warp};

const INVALID: u32 = 0;
const PARTIAL: u32 = 1;
const INCLUSIVE: u32 = 2;
/// `u64` status words per tile.
pub const STATUS_WORDS_PER_TILE: usize = 4;
/// Epochs must fit in the flag's upper 30 bits.
pub(crate) const MAX_EPOCH: u32 = (1 << 30) - 1;

#[repr(C)]
union Bits<T: Copy> {
    value: T,
    bits: u64,
}

#[inline(always)]
fn to_bits<T: DeviceCopy>(v: T) -> u64 {
    let mut b = Bits { bits: 0 };
    b.value = v;
    // SAFETY: fully initialized: zeroed, then `value`'s bytes (no padding: DeviceCopy).
    unsafe { b.bits }
}

#[inline(always)]
fn from_bits<T: DeviceCopy>(bits: u64) -> T {
    // SAFETY: every bit pattern is a valid `T` (DeviceCopy); the bytes came from `to_bits`.
    unsafe { Bits { bits }.value }
}

/// The status words of one scan call. See the module docs.
pub struct TileStatus<T> {
    words: *mut u64,
    epoch: u32,
    _marker: core::marker::PhantomData<T>,
}

impl<T: DeviceCopy> TileStatus<T> {
    const PACKED: bool = size_of::<T>() <= 4;

    /// Wraps `status` for a scan of `tiles` tiles in call number `epoch`. Panics if `status`
    /// has fewer than `STATUS_WORDS_PER_TILE · tiles` words, `T` is larger than 8 bytes, or `epoch` is 0 or ≥ 2³⁰.
    #[inline(always)]
    pub fn new(status: &DisjointSlice<'_, u64>, tiles: usize, epoch: u32) -> Self {
        const {
            assert!(
                size_of::<T>() <= 8,
                "device scans support values up to 8 bytes"
            )
        };
        assert!(
            status.len() / STATUS_WORDS_PER_TILE >= tiles,
            "device scan: status storage shorter than 4 words per tile"
        );
        assert!(
            epoch != 0 && epoch <= MAX_EPOCH,
            "device scan: epoch must be in 1..2^30"
        );
        TileStatus {
            words: status.as_mut_ptr(),
            epoch,
            _marker: core::marker::PhantomData,
        }
    }

    #[inline(always)]
    fn flag(&self, kind: u32) -> u32 {
        self.epoch << 2 | kind
    }

    /// Publishes `value` for `tile` as `PARTIAL` (aggregate) or `INCLUSIVE` (prefix). Called by
    /// one thread per tile.
    #[inline(always)]
    fn publish(&self, tile: usize, kind: u32, value: T) {
        // SAFETY: `tile < tiles` (callers), so both words are inside the checked storage; each
        // tile's words are written only by its own block, others read them volatile.
        unsafe {
            let p = self.words.add(STATUS_WORDS_PER_TILE * tile);
            if Self::PACKED {
                p.write_volatile(to_bits(value) << 32 | self.flag(kind) as u64);
            } else {
                let slot = if kind == PARTIAL { 0 } else { 1 };
                p.add(slot).write_volatile(to_bits(value));
                fence_acq_rel(atomic::Scope::Device);
                p.add(2).write_volatile(self.flag(kind) as u64);
            }
        }
    }

    /// `(kind, value)` of `tile` as of now; `INVALID` for words of another epoch.
    #[inline(always)]
    fn read(&self, tile: usize) -> (u32, T) {
        // SAFETY: as in `publish`; volatile loads observe other blocks' stores.
        unsafe {
            let p = self.words.add(STATUS_WORDS_PER_TILE * tile);
            let (flag, bits) = if Self::PACKED {
                let w = p.read_volatile();
                (w as u32, w >> 32)
            } else {
                let flag = p.add(2).read_volatile() as u32;
                if flag & 3 != INVALID {
                    fence_acq_rel(atomic::Scope::Device);
                }
                let slot = if flag & 3 == PARTIAL { 0 } else { 1 };
                (flag, p.add(slot).read_volatile())
            };
            let kind = if flag >> 2 == self.epoch {
                flag & 3
            } else {
                INVALID
            };
            (kind, from_bits(bits))
        }
    }

    /// Marks `tile` (the first) as done with inclusive prefix `value`.
    #[inline(always)]
    pub fn publish_inclusive(&self, tile: usize, value: T) {
        self.publish(tile, INCLUSIVE, value)
    }

    /// The prefix callback of tile `tile > 0`, run by all lanes of one warp: publishes the
    /// tile's `aggregate`, looks back for the fold of all earlier tiles (returned, in every
    /// lane), and publishes the tile's inclusive prefix.
    #[inline(always)]
    pub fn look_back<O: ReduceOp<T>>(&self, tile: usize, aggregate: T, op: O) -> T {
        let lane = lane_id();
        if lane == 0 {
            self.publish(tile, PARTIAL, aggregate);
        }
        let mut exclusive: Option<T> = None;
        // Window of the 32 tiles before `end`; lane 31 reads the closest.
        let mut end = tile;
        loop {
            let pred = end as isize - WARP_SIZE as isize + lane as isize;
            let (kind, value) = loop {
                let (kind, value) = if pred >= 0 {
                    self.read(pred as usize)
                } else {
                    (PARTIAL, aggregate) // before tile 0: never folded (tile 0 is INCLUSIVE)
                };
                if !warp::any(kind == INVALID) {
                    break (kind, value);
                }
            };
            let inclusive_lanes = warp::ballot(kind == INCLUSIVE && pred >= 0);
            let from = if inclusive_lanes != 0 {
                31 - clz(inclusive_lanes)
            } else {
                0
            };
            let window = fold_lanes_from(value, op, from);
            exclusive = Some(match exclusive {
                Some(later) => op.combine(window, later),
                None => window,
            });
            if inclusive_lanes != 0 {
                break;
            }
            end -= WARP_SIZE as usize;
        }
        let exclusive = exclusive.unwrap_or(aggregate);
        if lane == 0 {
            self.publish(tile, INCLUSIVE, op.combine(exclusive, aggregate));
        }
        exclusive
    }
}

/// `op` over the values of lanes `from..32`, in lane order, in every lane.
#[inline(always)]
fn fold_lanes_from<T: DeviceCopy, O: ReduceOp<T>>(v: T, op: O, from: u32) -> T {
    let lane = lane_id();
    let mut acc = v;
    let mut offset = 1;
    while offset < WARP_SIZE {
        let other = warp::shuffle_down(acc, offset);
        let rel = lane.wrapping_sub(from);
        if lane >= from && rel.is_multiple_of(2 * offset) && lane + offset < WARP_SIZE {
            acc = op.combine(acc, other);
        }
        offset *= 2;
    }
    warp::shuffle_idx(acc, from)
}
