//! Device-wide LSD radix sort, *onesweep* style (Adinets & Merrill, "Onesweep: A Faster Least
//! Significant Digit Radix Sort for GPUs", 2022): one histogram kernel up front, then **one
//! kernel per 8-bit digit** that reads each key once and writes it once.
//!
//! 1. [`radix_sort_histogram`]: counts every digit of every pass over the whole input at once
//!    (shared-memory histograms, added to global counters).
//! 2. [`radix_sort_pass`], once per digit, ping-ponging between buffers. A block takes the next
//!    tile (an atomic ticket, so every earlier tile's block is already running: look-back never
//!    waits on a block that has not started), ranks its keys by digit in shared memory
//!    ([`block::radix_rank`]), and publishes its 256 digit counts. Thread `d` then learns where
//!    digit `d` starts in the output by *decoupled look-back* over the earlier tiles' counts
//!    (tile 0 seeds it with the exclusive scan of the histogram). Keys (and values) are
//!    scattered through shared memory in digit order, so each run of equal digits is written
//!    contiguously: global writes are mostly coalesced.
//!
//! The sort is stable (each pass is), so LSD order is right. Keys move unchanged; only their
//! [`RadixKey`] image is ranked (floats: NaNs by sign at the ends, `-0.0 = +0.0`).
//!
//! # State
//! `counts` (`u32`, [`SORT_COUNTS_LEN`]) holds the histograms (256 per pass) and a tile ticket
//! per pass; both are zero between sorts (tile 0 clears its pass's histogram after reading it,
//! the block that draws the last ticket resets the ticket), so it is zeroed only when allocated.
//! `status` (`u64`, 256 per tile) holds the look-back words, tagged with an *epoch* (one per
//! pass, `1..2^30`, never repeated until the storage is re-zeroed) so stale words read as "not
//! yet published".

use core::mem::size_of;

use crate::block::{self, RADIX_DIGITS, RadixBits, RadixKey, radix_digit, warp_striped_index};
use crate::ops::Sum;
use crate::shared;
use crate::slice::DisjointSlice;
use crate::sync::sync_threads;
use crate::thread::{WARP_SIZE, block_idx_x, block_size, grid_dim_x, local_index};
use crate::unroll;
use crate::{DeviceCopy, atomic};

/// Threads per block of the sort kernels: at least one per digit (the first 256 threads each own
/// a digit in the scans and the look-back); CUB's H100 block size, which measured faster than
/// 256 (README, "Parallel algorithms").
pub const SORT_BLOCK: u32 = 384;

/// Most passes of one sort: 64-bit keys, 8 bits per pass.
pub const SORT_MAX_PASSES: usize = 8;

/// Length of the `counts` state: 256 histogram counters per pass, then one tile ticket per pass.
pub const SORT_COUNTS_LEN: usize = SORT_MAX_PASSES * RADIX_DIGITS + SORT_MAX_PASSES;

/// Keys per thread of a pass tile for keys `K` with values of `value_bytes` (0 for keys only):
/// the tuning policy. Larger tiles spread each tile's fixed work (clearing the counters, the
/// digit scan, the look-back) over more keys, until the registers run out: keys alone take 18
/// (a 6912-key tile) without spilling at three blocks an SM (56 registers), pairs 16 at two
/// (values stay in registers during the look-back), and 13 when key and value take 16 bytes
/// (with 16, ptxas spilled 20 bytes, with 14 8 bytes). Measured on an H100 (README, "Parallel
/// algorithms").
pub const fn sort_items<K>(value_bytes: usize) -> usize {
    if value_bytes == 0 {
        18
    } else if size_of::<K>() + value_bytes > 12 {
        13
    } else {
        16
    }
}

/// Whether a pass kernel for keys `K` with values of `value_bytes` (0 for keys only) writes its
/// tile out with predicated stores after reading all of a thread's items, so that the items'
/// shared-memory reads, digits and stores overlap (true), or one item at a time behind a
/// branch each: the tuning policy. Only `f32` keys alone take the first: their digit takes five
/// instructions, a longer chain per item, and they gained; `u32` keys and `u32` pairs measured
/// faster with the second, and `f64` keys lost with both changes together (README, "Parallel
/// algorithms").
pub const fn sort_overlapped_writes<K: RadixKey>(value_bytes: usize) -> bool {
    // They read the whole key tile, which the pass fills only with `sort_bit_checks`.
    K::FLOAT && size_of::<K>() == 4 && value_bytes == 0 && sort_bit_checks::<K>()
}

/// Whether a pass kernel for keys `K` tests its per-item tile checks on reading as bits of one
/// word (ptxas sets up to seven predicates from it with one `R2P`) instead of an add and a
/// compare per item: the tuning policy. 32-bit keys gained; 64-bit keys lost (README,
/// "Parallel algorithms").
pub const fn sort_bit_checks<K>() -> bool {
    size_of::<K>() == 4
}

/// Keys per tile of a pass kernel for keys `K` with values of `value_bytes` (0 for keys only).
pub const fn sort_tile<K>(value_bytes: usize) -> usize {
    SORT_BLOCK as usize * sort_items::<K>(value_bytes)
}

/// Keys per thread per tile of the histogram kernel: 64 bytes (four 16-byte loads).
pub const fn histogram_items<K>() -> usize {
    64 / size_of::<K>()
}

/// Dynamic shared memory of a pass kernel for keys `K` (bytes): rank counters, digit offsets,
/// the tile ticket, then for pairs a *stage* (the tile's values in sorted order), and a tile of
/// keys in sorted order. `value_bytes` is 0 for keys only.
pub const fn sort_shared_bytes<K>(value_bytes: usize) -> usize {
    4 * (block::radix_rank_scratch_len(SORT_BLOCK as usize) + RADIX_DIGITS + 4)
        + sort_tile::<K>(value_bytes) * (value_bytes + size_of::<K>())
}

/// Most threads per block of the single-block sort ([`radix_sort_single`]).
pub const SORT_SINGLE_BLOCK: u32 = 512;

/// Keys per thread of the single-block sort: 16 (an 8192-key tile at most).
pub const fn sort_single_items<K>() -> usize {
    16
}

/// Most keys the single-block sort ([`radix_sort_single`]) takes for key type `K`.
pub const fn sort_single_tile<K>() -> usize {
    SORT_SINGLE_BLOCK as usize * sort_single_items::<K>()
}

/// Threads of the single-block sort of `n ≤ sort_single_tile::<K>()` keys: 256 (a 4096-key
/// tile) or 512. The smaller block ranks fewer padding keys and scans fewer warp counters.
pub const fn sort_single_threads<K>(n: usize) -> u32 {
    if n <= (SORT_SINGLE_BLOCK as usize / 2) * sort_single_items::<K>() {
        SORT_SINGLE_BLOCK / 2
    } else {
        SORT_SINGLE_BLOCK
    }
}

/// Dynamic shared memory of the single-block sort for keys `K` with `threads` threads (bytes;
/// `value_bytes` is 0 for keys only): the block sort's scratch.
pub const fn sort_single_shared_bytes<K>(threads: u32, value_bytes: usize) -> usize {
    4 * block::radix_sort_scratch_len(
        threads as usize,
        sort_single_items::<K>(),
        size_of::<K>(),
        value_bytes,
    )
}

/// Sorts small inputs in **one launch** of one block: stably moves the first `len` of
/// `keys_in` (and `values_in`) to `keys_out` (and `values_out`) ordered by bits
/// `begin_bit..end_bit` of the keys' radix images, with the block-level
/// [`block::radix_sort`] / [`block::radix_sort_pairs`] (one rank and exchange per 8 bits, all in
/// shared memory). Small sorts are dominated by launch latency: the onesweep path needs a
/// histogram launch and one launch per digit.
///
/// Launch one block of [`sort_single_threads`] threads (256 or 512; any multiple of 32 from
/// 256 to [`SORT_SINGLE_BLOCK`] works) with [`sort_single_shared_bytes`] of dynamic shared
/// memory; `len` must be at most threads · `N`. Positions past `len`
/// are padded with [`RadixKey::MAX_IMAGE`] (all ones in every digit): they follow every real key
/// (ties keep tile order, and the padding comes last) and are not stored. Panics (the launch
/// fails) on a bad launch or buffers shorter than `len`.
#[inline(always)]
pub fn radix_sort_single<K: RadixKey, V: DeviceCopy, const N: usize>(
    keys_in: &[K],
    keys_out: &DisjointSlice<'_, K>,
    values: Option<(&[V], &DisjointSlice<'_, V>)>,
    len: u32,
    begin_bit: u32,
    end_bit: u32,
) {
    let n = len as usize;
    assert!(
        (256..=SORT_SINGLE_BLOCK).contains(&block_size())
            && block_size().is_multiple_of(32)
            && grid_dim_x() == 1
            && n <= block_size() as usize * N
            && keys_in.len() >= n
            && keys_out.len() >= n
            && values.is_none_or(|(vi, vo)| vi.len() >= n && vo.len() >= n),
        "radix sort (single block): bad launch (block size, grid, or lengths)"
    );
    let scratch = shared::dynamic::<u32>();
    let keys: [K; N] = block::load_blocked_partial(&keys_in[..n], 0, K::MAX_IMAGE);
    let first = local_index() as usize * N;
    let store = |out: &DisjointSlice<'_, K>, keys: [K; N]| {
        unroll!(N, |i| {
            if first + i < n {
                // SAFETY: first + i < n ≤ out.len(); thread t alone writes t·N .. t·N + N.
                unsafe { out.as_mut_ptr().add(first + i).write(keys[i]) };
            }
        });
    };
    match values {
        None => {
            let keys = block::radix_sort(keys, begin_bit, end_bit, scratch);
            store(keys_out, keys);
        }
        Some((values_in, values_out)) => {
            // SAFETY: `V: DeviceCopy` is plain data, valid for any bit pattern; padding
            // values are never stored.
            let fill: V = unsafe { core::mem::zeroed() };
            let vals: [V; N] = block::load_blocked_partial(&values_in[..n], 0, fill);
            let (keys, vals) = block::radix_sort_pairs(keys, vals, begin_bit, end_bit, scratch);
            store(keys_out, keys);
            unroll!(N, |i| {
                if first + i < n {
                    // SAFETY: as for the keys: in bounds, one writer per element.
                    unsafe { values_out.as_mut_ptr().add(first + i).write(vals[i]) };
                }
            });
        }
    }
}

const PARTIAL: u64 = 1;
const INCLUSIVE: u64 = 2;

/// Predecessor tiles a look-back step reads at once.
const LOOKBACK_WINDOW: usize = 4;

/// One look-back step over the words of tiles `next-1, next-2, …` (nearest first).
#[derive(Debug, PartialEq)]
struct LookbackStep {
    /// Sum of the folded tiles' counts.
    sum: u32,
    /// How many tiles were folded.
    folded: usize,
    /// Whether an INCLUSIVE tile ended the walk.
    done: bool,
}

/// Folds `words` nearest first: PARTIAL counts are added and the walk goes on, an INCLUSIVE
/// one is added and ends it, a word not yet published in this `epoch` stops the step (it is
/// read again in the next one).
#[inline(always)]
#[allow(unused_assignments)] // the last unrolled step's update of `stopped` is never read
fn fold_window<const W: usize>(words: [u64; W], epoch: u32) -> LookbackStep {
    let mut step = LookbackStep {
        sum: 0,
        folded: 0,
        done: false,
    };
    let mut stopped = false;
    unroll!(W, |i| {
        let word = words[i];
        let kind = word & 3;
        let current = (word as u32) >> 2 == epoch && kind != 0;
        if !stopped && current {
            step.sum = step.sum.wrapping_add((word >> 32) as u32);
            step.folded += 1;
            step.done = kind == INCLUSIVE;
        }
        stopped |= !current || kind == INCLUSIVE;
    });
    step
}

/// Adds one tile's digits to the block's histograms (shared `u32` counters from `hist`, 256 per
/// pass, [`SORT_MAX_PASSES`] passes) for the
/// `passes` passes from `begin_bit` (the last pass ends at `end_bit`), skipping the items
/// `valid` rejects. Passes outer, the thread's keys inner and written out (as CUB's
/// histogram): the images stay in registers (a loop over the key array indexed it in local
/// memory), and each pass's shift and mask are computed once, not per key.
#[inline(always)]
fn count_digits<B: RadixBits, const N: usize>(
    hist: u32,
    images: [B; N],
    passes: usize,
    begin_bit: u32,
    end_bit: u32,
    valid: impl Fn(usize) -> bool,
) {
    for p in 0..passes {
        let shift = begin_bit + 8 * p as u32;
        let mask = (1u32 << (end_bit - shift).min(8)) - 1;
        let row = hist + 4 * (p * RADIX_DIGITS) as u32;
        unroll!(N, |i| {
            if valid(i) {
                let d = images[i].digit(shift, mask);
                // SAFETY: p < 8 and d < 256, so the address is inside `hist`; shared atomics.
                unsafe { atomic::shared::add(row + 4 * d, 1u32, atomic::Scope::Block) };
            }
        });
    }
}

/// The body of the histogram kernel: adds, for each of the passes over bits
/// `begin_bit..end_bit` (8 bits each, the last may be shorter), the count of each digit value
/// over all of `keys` to `counts[pass · 256 + digit]`.
///
/// Launch [`SORT_BLOCK`] threads and any number of blocks (the host uses what fills the GPU
/// once); block `b` takes tiles `b, b + grid, …`.
#[inline(always)]
pub fn radix_sort_histogram<K: RadixKey, const N: usize>(
    keys: &[K],
    counts: &DisjointSlice<'_, u32>,
    begin_bit: u32,
    end_bit: u32,
) {
    assert!(
        block_size() == SORT_BLOCK && counts.len() >= SORT_COUNTS_LEN,
        "radix sort histogram: block size must be SORT_BLOCK and counts SORT_COUNTS_LEN long"
    );
    let end_bit = end_bit.min(K::Bits::BITS);
    let passes = end_bit.saturating_sub(begin_bit).div_ceil(8) as usize;
    let hist = crate::shared_array!(u32, SORT_MAX_PASSES * RADIX_DIGITS);
    hist.block_fill(0);
    sync_threads();

    let tile = SORT_BLOCK as usize * N;
    let full_tiles = keys.len() / tile;
    let mut index = block_idx_x() as usize;
    while index < full_tiles {
        // Any order does for counting: the load pattern fastest for DRAM.
        let items: [K; N] = block::load_unordered(keys, index * tile);
        count_digits(
            hist.addr(),
            items.map(K::radix_bits),
            passes,
            begin_bit,
            end_bit,
            |_| true,
        );
        index += grid_dim_x() as usize;
    }
    if block_idx_x() as usize == full_tiles % grid_dim_x() as usize {
        // The partial tile, striped: key i of this thread is valid below the end.
        let first = full_tiles * tile + local_index() as usize;
        let items: [K; N] = block::load_striped_partial(keys, full_tiles * tile, K::MAX_IMAGE);
        let valid = |i: usize| first + i * (SORT_BLOCK as usize) < keys.len();
        count_digits(
            hist.addr(),
            items.map(K::radix_bits),
            passes,
            begin_bit,
            end_bit,
            valid,
        );
    }
    sync_threads();

    let d = local_index() as usize;
    for p in 0..passes.min(if d < RADIX_DIGITS { SORT_MAX_PASSES } else { 0 }) {
        // SAFETY: p · 256 + d < 2048 = hist's length (d < 256).
        let c = unsafe { hist.read_unchecked(p * RADIX_DIGITS + d) };
        if c != 0 {
            // SAFETY: inside `counts` (checked length); other blocks add atomically too.
            unsafe {
                atomic::global::add(
                    counts.as_mut_ptr().add(p * RADIX_DIGITS + d),
                    c,
                    atomic::Scope::Device,
                )
            };
        }
    }
}

/// One pass of the sort: stably moves the first `len` of `keys_in` (and `values_in`, if given)
/// to `keys_out` (and `values_out`) ordered by the digit at bit `shift` (`bits` wide, 1..=8) of
/// the keys' radix images. `pass` indexes the histogram the histogram kernel built for this
/// digit; `epoch` tags this pass's look-back words (see the module docs).
///
/// Launch one block of [`SORT_BLOCK`] threads per tile of [`sort_tile`] keys, with
/// [`sort_shared_bytes`] of dynamic shared memory. Panics (the launch fails) if the outputs are
/// or inputs are shorter than `len`, `len` is 0, or the state is too short.
///
/// Few values stay live across the long waits, so the kernel needs few registers and several
/// blocks share an SM (launch bounds cap the registers; a spill goes to L1 and L2 on every
/// tile): only the digits are held through the ranking (the keys are read again after it), the
/// digit counts are published as soon as they are known (inside the ranking), and the keys are
/// moved into sorted order in shared memory *before* the look-back, so only the look-back's own
/// state waits on other blocks.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn radix_sort_pass<K: RadixKey, V: DeviceCopy, const N: usize>(
    keys_in: &[K],
    keys_out: &DisjointSlice<'_, K>,
    values: Option<(&[V], &DisjointSlice<'_, V>)>,
    counts: &DisjointSlice<'_, u32>,
    status: &DisjointSlice<'_, u64>,
    len: u32,
    shift: u32,
    bits: u32,
    pass: u32,
    epoch: u32,
) {
    let n = len as usize;
    let tile_len = SORT_BLOCK as usize * N;
    let tiles = n.div_ceil(tile_len);
    assert!(
        block_size() == SORT_BLOCK
            && n > 0
            && keys_in.len() >= n
            && keys_out.len() >= n
            && values.is_none_or(|(vi, vo)| vi.len() >= n && vo.len() >= n)
            && counts.len() >= SORT_COUNTS_LEN
            && status.len() >= tiles * RADIX_DIGITS
            && (pass as usize) < SORT_MAX_PASSES
            && (1..=8).contains(&bits),
        "radix sort pass: bad launch (block size, lengths, state or digit)"
    );
    let t = local_index() as usize;

    // Shared memory: rank counters | digit offsets | tile ticket | stage (pairs) | keys.
    let smem = shared::dynamic::<u32>();
    let (counters, rest) = smem.split_at(block::radix_rank_scratch_len(SORT_BLOCK as usize));
    let (offsets, rest) = rest.split_at(RADIX_DIGITS);
    let (ticket_slot, rest) = rest.split_at(4);
    let value_bytes = if values.is_some() { size_of::<V>() } else { 0 };
    // Pairs: the values move to sorted order through a stage of their own.
    let (stage, key_region) = rest.split_at(tile_len * value_bytes / 4);
    let key_tile = key_region.cast::<K>();

    let ticket_counter = SORT_MAX_PASSES * RADIX_DIGITS + pass as usize;
    if t == 0 {
        // SAFETY: inside `counts`; other blocks touch the ticket only atomically. The block
        // drawing the last ticket is the last to touch it and resets it for the next sort.
        unsafe {
            let p = counts.as_mut_ptr().add(ticket_counter);
            let ticket = atomic::global::add(p, 1u32, atomic::Scope::Device);
            if ticket as usize == tiles - 1 {
                atomic::global::exch(p, 0u32, atomic::Scope::Device);
            }
            ticket_slot.write(0, ticket);
        }
    }
    counters.block_fill(0); // radix_rank_zeroed wants zero counters and a barrier since
    sync_threads();
    let tile = ticket_slot.read(0) as usize;
    let start = tile * tile_len;
    // Compared in 32 bits (a tile is far smaller): the per-key checks below are a third of the
    // pass's compares otherwise, each a pair of 64-bit `ISETP`s.
    let valid = (n - start).min(tile_len) as u32;

    // Thread d < 256 handles digit d in the look-back.
    let d = t;
    let owns_digit = d < RADIX_DIGITS;
    let status_word = |tile: usize| tile * RADIX_DIGITS + d;
    let publish = |tile: usize, kind: u64, value: u32| {
        let word = (value as u64) << 32 | (epoch as u64) << 2 | kind;
        // SAFETY: tile < tiles, d < 256: inside `status` (checked); one writer per word,
        // readers use volatile loads; a 64-bit store is single-copy atomic.
        unsafe {
            status
                .as_mut_ptr()
                .add(status_word(tile))
                .write_volatile(word)
        };
    };
    // Tile 0: where each digit starts in the output, from this pass's histogram (block-uniform).
    let mut base = 0;
    if tile == 0 {
        let hist = counts
            .as_mut_ptr()
            .wrapping_add(pass as usize * RADIX_DIGITS + d);
        let mut total = 0;
        if owns_digit {
            // SAFETY: inside `counts`; written by the histogram kernel, which has finished.
            // Only tile 0 reads this pass's histogram: clear it for the next sort.
            unsafe {
                total = hist.read_volatile();
                hist.write_volatile(0);
            }
        }
        base = block::exclusive_scan(total, Sum, 0u32).0;
    }

    // Warp-striped load; positions past the end get the largest digit, so they rank last.
    // The tile's digit counts are published as soon as they are known (inside the ranking).
    let publish_counts = |count: u32| {
        if owns_digit {
            if tile == 0 {
                publish(0, INCLUSIVE, base.wrapping_add(count));
            } else {
                publish(tile, PARTIAL, count);
            }
        }
    };
    // The keys are read for their digits, dropped during the ranking and read again afterwards
    // (from L1: this block read them just before), so that only the digits stay live across
    // the block-wide digit scan, and no shared-memory trips are spent on keeping them.
    // The first key's index, hidden from LLVM (as `first` below), so that every key's address
    // is one base plus a constant: otherwise LLVM computes it again inside each key's check,
    // and ptxas keeps those copies for the float keys.
    let first_read = opaque(start) + warp_striped_index::<N>(0);
    // Bit i (32-bit keys, see `sort_bit_checks`): this thread's warp-striped item i is inside
    // the tile.
    let read_mask = || {
        if sort_bit_checks::<K>() {
            items_below(warp_striped_index::<N>(0) as u32, WARP_SIZE, valid)
        } else {
            0
        }
    };
    let inside = |mask: u32, i: usize| {
        if sort_bit_checks::<K>() {
            mask & (1 << i) != 0
        } else {
            (warp_striped_index::<N>(i) as u32) < valid
        }
    };
    let mask = read_mask();
    let max_digit = (1u32 << bits) - 1;
    let digits: [u32; N] = core::array::from_fn(|i| {
        // SAFETY (both reads): item i is inside the tile: first_read + 32·i = start + j with
        // j = warp_striped_index(i) < valid, and start + valid ≤ n ≤ keys_in.len().
        let read = || unsafe { *keys_in.get_unchecked(first_read + i * WARP_SIZE as usize) };
        if sort_bit_checks::<K>() {
            // The padding key's digit is the largest (its image is all ones). Selecting the
            // key, not the digit, leaves the check's predicate needed only by the load (ptxas
            // keeps predicates for later uses in a register, two instructions each).
            let key = if inside(mask, i) {
                read()
            } else {
                K::MAX_IMAGE
            };
            radix_digit(key, shift, bits)
        } else if inside(mask, i) {
            radix_digit(read(), shift, bits)
        } else {
            max_digit
        }
    });
    let ranks = block::radix_rank_zeroed(digits, counters, publish_counts);
    // Where this thread's first key is, hidden from LLVM so that it reads the keys again
    // instead of keeping the first reads live.
    let first = opaque(start + warp_striped_index::<N>(0));
    let mask = read_mask();
    unroll!(N, |i| {
        // SAFETY (both reads): first + 32·i = first_read + 32·i < n ≤ keys_in.len() (as above).
        let read = || unsafe { *keys_in.get_unchecked(first + i * WARP_SIZE as usize) };
        // SAFETY (both writes): ranks are a permutation of 0..tile_len.
        let slot = ranks.ranks[i] as usize;
        if sort_bit_checks::<K>() {
            // A partial tile fills its whole key tile, so that overlapped writes (below) may
            // read every slot; the padding ranks last and is never written out.
            let key = if inside(mask, i) {
                read()
            } else {
                K::MAX_IMAGE
            };
            unsafe { key_tile.write_unchecked(slot, key) };
        } else if inside(mask, i) {
            unsafe { key_tile.write_unchecked(slot, read()) };
        }
    });
    // Pairs: the values are loaded now, so their latency overlaps the look-back.
    // SAFETY: `V: DeviceCopy` is plain data, valid for any bit pattern (all zeros included).
    let mut vals: [V; N] = [unsafe { core::mem::zeroed() }; N];
    if let Some((values_in, _)) = values {
        unroll!(N, |i| {
            if inside(mask, i) {
                // SAFETY: first + 32·i < n ≤ values_in.len() (as for the keys).
                vals[i] = unsafe { *values_in.get_unchecked(first + i * WARP_SIZE as usize) };
            }
        });
    }

    // Thread d: where digit d of this tile starts in the output.
    if owns_digit {
        let exclusive = if tile == 0 {
            base
        } else {
            // Walk back LOOKBACK_WINDOW tiles per round trip to L2 (independent loads in
            // flight), folding PARTIAL counts until an INCLUSIVE one; re-read from the first
            // unpublished one.
            let mut sum = 0u32;
            let mut next = tile; // the nearest tile not yet folded is next - 1
            loop {
                let mut words = [0u64; LOOKBACK_WINDOW];
                unroll!(LOOKBACK_WINDOW, |i| {
                    // Tiles below 0 are never folded (tile 0 is INCLUSIVE): read tile 0 instead.
                    let pred = next.saturating_sub(1 + i);
                    // SAFETY: pred < tile < tiles: inside `status`; written by other blocks.
                    words[i] =
                        unsafe { status.as_mut_ptr().add(status_word(pred)).read_volatile() };
                });
                let step = fold_window(words, epoch);
                sum = sum.wrapping_add(step.sum);
                if step.done {
                    break;
                }
                next -= step.folded;
            }
            if tile + 1 < tiles {
                publish(tile, INCLUSIVE, sum.wrapping_add(ranks.digit_count));
            }
            sum
        };
        // SAFETY: d < 256 = offsets.len().
        unsafe { offsets.write_unchecked(d, exclusive.wrapping_sub(ranks.digit_start)) };
    }
    sync_threads();

    // Pairs: the values into sorted order in the stage (every key has left it: barrier above).
    let value_tile = stage.cast::<V>();
    if values.is_some() {
        unroll!(N, |i| {
            // SAFETY: as for the keys; the stage holds a tile of V.
            unsafe { value_tile.write_unchecked(ranks.ranks[i] as usize, vals[i]) };
        });
    }

    // Out: consecutive threads write consecutive positions of one digit's run.
    let destination = |j: usize| {
        // SAFETY: j < tile_len; written before the barrier.
        let key = unsafe { key_tile.read_unchecked(j) };
        let digit = radix_digit(key, shift, bits) as usize;
        // SAFETY: digit < 256.
        let dest = unsafe { offsets.read_unchecked(digit) }.wrapping_add(j as u32);
        (key, dest)
    };
    if sort_overlapped_writes::<K>(value_bytes) {
        // Keys only (the policy's condition). Every slot is read (the whole tile is written
        // above) and only the writes are predicated, so one item's shared-memory reads, digit
        // and store overlap the next item's. A destination past the end (a corrupted state)
        // is never written, and the launch fails after the loop: the items written are
        // counted against the tile's.
        let write_mask = items_below(t as u32, SORT_BLOCK, valid);
        let mut written = 0u32;
        unroll!(N, |k| {
            let j = t + k * SORT_BLOCK as usize;
            let (key, dest) = destination(j);
            let live = write_mask & (1 << k) != 0;
            written += write_inside(keys_out, dest, len, key, live) as u32;
        });
        if written != write_mask.count_ones() {
            destination_out_of_bounds();
        }
    } else {
        // One item at a time, each behind its own check.
        unroll!(N, |k| {
            let j = t + k * SORT_BLOCK as usize;
            if (j as u32) < valid {
                let (key, dest) = destination(j);
                write_out(keys_out, dest, len, key);
            }
        });
        if let Some((_, values_out)) = values {
            sync_threads(); // the values are in place
            unroll!(N, |k| {
                let j = t + k * SORT_BLOCK as usize;
                if (j as u32) < valid {
                    let (_, dest) = destination(j);
                    // SAFETY: j < tile_len; written before the barrier.
                    let value = unsafe { value_tile.read_unchecked(j) };
                    write_out(values_out, dest, len, value);
                }
            });
        }
    }
}

/// Bit `i` (of 32) set when item `first + i·stride` is below `valid`: a thread's per-item
/// tile checks as one word, hidden from LLVM, so that each check is a bit test (ptxas sets
/// seven predicates from a word with one `R2P`) instead of an add and a compare.
#[inline(always)]
fn items_below(first: u32, stride: u32, valid: u32) -> u32 {
    let count = if valid > first {
        (valid - first).div_ceil(stride)
    } else {
        0
    };
    let mask = if count >= 32 {
        u32::MAX
    } else {
        (1u32 << count) - 1
    };
    #[cfg(target_arch = "nvptx64")]
    {
        let hidden: u32;
        // SAFETY: a shuffle of each lane's own value (xor 0) over the full warp, which every
        // thread of the sort kernels reaches converged; no memory is touched. Each call stays
        // its own value, to LLVM (not `pure`) and to ptxas (which does not look through a
        // shuffle), so one loop's tests are not reused in a later loop: ptxas would keep those
        // predicates in a register, two instructions per item.
        unsafe {
            core::arch::asm!("shfl.sync.bfly.b32 {y}, {x}, 0, 31, -1;", y = out(reg32) hidden,
                x = in(reg32) mask, options(nomem, nostack))
        };
        hidden
    }
    #[cfg(not(target_arch = "nvptx64"))]
    mask
}

/// `x`, unknown to LLVM: an empty move in inline PTX (ptxas sees through it).
#[inline(always)]
fn opaque(x: usize) -> usize {
    #[cfg(target_arch = "nvptx64")]
    {
        let y: usize;
        // SAFETY: a register move; no memory is touched.
        unsafe {
            core::arch::asm!("mov.b64 {y}, {x};", y = out(reg64) y, x = in(reg64) x,
                options(pure, nomem, nostack))
        };
        y
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x
    }
}

/// `out[i] = v`; the sort's destinations are a permutation of `0..n`, so no two threads of
/// the launch write the same element. Checked against `n` (which the pass checked to be at most
/// `out.len()`) in 32 bits, so a broken state cannot write out of bounds.
#[inline(always)]
fn write_out<T: DeviceCopy>(out: &DisjointSlice<'_, T>, i: u32, n: u32, v: T) {
    if i >= n {
        destination_out_of_bounds();
    }
    debug_assert!(n as usize <= out.len());
    // SAFETY: i < n ≤ out.len() (the caller's check); each destination is written by exactly
    // one thread (see above).
    unsafe { out.as_mut_ptr().add(i as usize).write(v) };
}

/// [`write_out`] if `live`, as a predicated store (see [`store_where`]), and whether it wrote:
/// a live item whose destination is past the end is not written.
#[inline(always)]
fn write_inside<T: DeviceCopy>(
    out: &DisjointSlice<'_, T>,
    i: u32,
    n: u32,
    v: T,
    live: bool,
) -> bool {
    debug_assert!(n as usize <= out.len());
    let write = live & (i < n);
    // SAFETY: written only if i < n ≤ out.len() (the caller's check); each destination is
    // written by exactly one thread (see above).
    unsafe { store_where(out.as_mut_ptr().wrapping_add(i as usize), v, write) };
    write
}

/// Writes `v` to global memory at `p` if `write`, as one predicated store in PTX for 4- and
/// 8-byte `T`: the value and address are computed whether or not it is written, so LLVM does
/// not move their reads into a branch of their own, where ptxas cannot overlap one item's
/// shared-memory reads with the next one's.
///
/// # Safety
/// If `write`, `p` points to global memory, valid for a write of `T` that no other thread
/// accesses.
#[inline(always)]
unsafe fn store_where<T: DeviceCopy>(p: *mut T, v: T, write: bool) {
    #[cfg(target_arch = "nvptx64")]
    {
        let w = write as u32;
        // One arm per size: `T` read as plain bits of that width, stored only if `write`.
        macro_rules! predicated_store {
            ($bits:ty, $reg:ident, $st:literal) => {
                if size_of::<T>() == size_of::<$bits>()
                    && core::mem::align_of::<T>() >= size_of::<$bits>()
                {
                    // SAFETY: `T` is plain data of this size and alignment; the store happens
                    // only if `write`, to memory the caller vouches for.
                    unsafe {
                        let bits: $bits = core::mem::transmute_copy(&v);
                        core::arch::asm!(
                            "{{ .reg .pred %gpu_w; .reg .u64 %gpu_g; setp.ne.u32 %gpu_w, {w}, 0;",
                            "cvta.to.global.u64 %gpu_g, {p};",
                            concat!("@%gpu_w ", $st, " [%gpu_g], {v}; }}"),
                            w = in(reg32) w, p = in(reg64) p, v = in($reg) bits,
                            options(nostack));
                    }
                    return;
                }
            };
        }
        predicated_store!(u32, reg32, "st.global.b32");
        predicated_store!(u64, reg64, "st.global.b64");
    }
    if write {
        // SAFETY: the caller's.
        unsafe { p.write(v) };
    }
}

#[cold]
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
fn destination_out_of_bounds() -> ! {
    panic!("radix sort pass: destination out of bounds (state not zeroed or reused concurrently?)")
}

/// Instantiates the radix sort histogram kernel for keys `$k` (`u32 i32 f32 u64 i64 f64`) as
/// `$name`. Parameters: `keys: &[K]`, `counts: DisjointSlice<u32>` ([`SORT_COUNTS_LEN`], zeroed
/// when allocated), `begin_bit: u32`, `end_bit: u32`. See [`radix_sort_histogram`].
#[macro_export]
macro_rules! radix_sort_histogram_kernel {
    ($name:ident, $k:ident) => {
        #[$crate::kernel]
        pub fn $name(
            keys: &[$k],
            counts: $crate::DisjointSlice<u32>,
            begin_bit: u32,
            end_bit: u32,
        ) {
            $crate::device::radix_sort_histogram::<$k, { $crate::device::histogram_items::<$k>() }>(
                keys, &counts, begin_bit, end_bit,
            )
        }
    };
}

/// Instantiates one radix sort pass over keys `$k` as `$name`. Parameters: `keys_in: &[K]`,
/// `keys_out: DisjointSlice<K>`, `counts: DisjointSlice<u32>`, `status: DisjointSlice<u64>`
/// (256 per tile, zeroed when allocated), `len` (keys to sort, at least 1), `shift`, `bits`,
/// `pass`, `epoch` (all `u32`). See
/// [`radix_sort_pass`].
#[macro_export]
macro_rules! radix_sort_keys_kernel {
    ($name:ident, $k:ident) => {
        #[$crate::kernel(launch_bounds(384, 3))]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            keys_in: &[$k],
            keys_out: $crate::DisjointSlice<$k>,
            counts: $crate::DisjointSlice<u32>,
            status: $crate::DisjointSlice<u64>,
            len: u32,
            shift: u32,
            bits: u32,
            pass: u32,
            epoch: u32,
        ) {
            $crate::device::radix_sort_pass::<$k, u32, { $crate::device::sort_items::<$k>(0) }>(
                keys_in, &keys_out, None, &counts, &status, len, shift, bits, pass, epoch,
            )
        }
    };
}

/// Instantiates one radix sort pass over pairs (keys `$k`, values `$v`) as `$name`; like
/// [`radix_sort_keys_kernel!`] with `values_in: &[V], values_out: DisjointSlice<V>` after
/// `keys_out`.
#[macro_export]
macro_rules! radix_sort_pairs_kernel {
    ($name:ident, $k:ident, $v:ident) => {
        #[$crate::kernel(launch_bounds(384, 2))]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            keys_in: &[$k],
            keys_out: $crate::DisjointSlice<$k>,
            values_in: &[$v],
            values_out: $crate::DisjointSlice<$v>,
            counts: $crate::DisjointSlice<u32>,
            status: $crate::DisjointSlice<u64>,
            len: u32,
            shift: u32,
            bits: u32,
            pass: u32,
            epoch: u32,
        ) {
            $crate::device::radix_sort_pass::<
                $k,
                $v,
                { $crate::device::sort_items::<$k>(::core::mem::size_of::<$v>()) },
            >(
                keys_in,
                &keys_out,
                Some((values_in, &values_out)),
                &counts,
                &status,
                len,
                shift,
                bits,
                pass,
                epoch,
            )
        }
    };
}

/// Instantiates the single-block sort ([`radix_sort_single`]) of keys `$k` as `$name`.
/// Parameters: `keys_in: &[K]`, `keys_out: DisjointSlice<K>`, `len`, `begin_bit`, `end_bit`
/// (all `u32`).
#[macro_export]
macro_rules! radix_sort_single_keys_kernel {
    ($name:ident, $k:ident) => {
        #[$crate::kernel(launch_bounds(512, 1))]
        pub fn $name(
            keys_in: &[$k],
            keys_out: $crate::DisjointSlice<$k>,
            len: u32,
            begin_bit: u32,
            end_bit: u32,
        ) {
            $crate::device::radix_sort_single::<
                $k,
                u32,
                { $crate::device::sort_single_items::<$k>() },
            >(keys_in, &keys_out, None, len, begin_bit, end_bit)
        }
    };
}

/// Instantiates the single-block sort of pairs (keys `$k`, values `$v`) as `$name`; like
/// [`radix_sort_single_keys_kernel!`] with `values_in: &[V], values_out: DisjointSlice<V>` after
/// `keys_out`.
#[macro_export]
macro_rules! radix_sort_single_pairs_kernel {
    ($name:ident, $k:ident, $v:ident) => {
        #[$crate::kernel(launch_bounds(512, 1))]
        pub fn $name(
            keys_in: &[$k],
            keys_out: $crate::DisjointSlice<$k>,
            values_in: &[$v],
            values_out: $crate::DisjointSlice<$v>,
            len: u32,
            begin_bit: u32,
            end_bit: u32,
        ) {
            $crate::device::radix_sort_single::<
                $k,
                $v,
                { $crate::device::sort_single_items::<$k>() },
            >(
                keys_in,
                &keys_out,
                Some((values_in, &values_out)),
                len,
                begin_bit,
                end_bit,
            )
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(kind: u64, epoch: u32, value: u32) -> u64 {
        (value as u64) << 32 | (epoch as u64) << 2 | kind
    }

    #[test]
    fn look_back_window() {
        let e = 7;
        let p = |v| word(PARTIAL, e, v);
        let i = |v| word(INCLUSIVE, e, v);
        let step = |sum, folded, done| LookbackStep { sum, folded, done };
        assert_eq!(
            fold_window([p(1), p(2), i(10), p(100)], e),
            step(13, 3, true)
        );
        assert_eq!(fold_window([i(5), i(6), p(7), p(8)], e), step(5, 1, true));
        assert_eq!(fold_window([p(1), p(2), p(3), p(4)], e), step(10, 4, false));
        // Unpublished (zero) or stale (other epoch) words stop the step before them.
        assert_eq!(fold_window([p(1), 0, i(3), p(4)], e), step(1, 1, false));
        assert_eq!(
            fold_window([word(INCLUSIVE, e - 1, 9), p(2), i(3), p(4)], e),
            step(0, 0, false)
        );
        assert_eq!(
            fold_window([p(1), p(2), word(PARTIAL, e + 1, 3), i(4)], e),
            step(3, 2, false)
        );
        // Sums wrap like the counts (offsets are taken modulo 2^32).
        assert_eq!(fold_window([p(u32::MAX), i(2), 0, 0], e), step(1, 2, true));
    }

    /// The whole look-back on a simulated status array: every tile's exclusive prefix is the
    /// sum of the earlier tiles' counts, whatever mix of PARTIAL/INCLUSIVE they show.
    #[test]
    fn look_back_walk() {
        let e = 3;
        let counts: [u32; 11] = [5, 0, 7, 1, 1, 9, 0, 0, 4, 2, 6];
        for pattern in 0u32..(1 << 10) {
            // tile 0 INCLUSIVE; tile j > 0 INCLUSIVE iff bit j-1 of pattern.
            let mut status = [0u64; 11];
            let mut prefix = 0u32;
            for (j, &c) in counts.iter().enumerate() {
                prefix += c;
                status[j] = if j == 0 || pattern >> (j - 1) & 1 == 1 {
                    word(INCLUSIVE, e, prefix)
                } else {
                    word(PARTIAL, e, c)
                };
            }
            for tile in 1..counts.len() {
                let (mut sum, mut next) = (0u32, tile);
                loop {
                    let words: [u64; LOOKBACK_WINDOW] =
                        core::array::from_fn(|i| status[next.saturating_sub(1 + i)]);
                    let step = fold_window(words, e);
                    sum = sum.wrapping_add(step.sum);
                    if step.done {
                        break;
                    }
                    assert!(
                        step.folded > 0,
                        "all words are published: progress every step"
                    );
                    next -= step.folded;
                }
                let want: u32 = counts[..tile].iter().sum();
                assert_eq!(sum, want, "tile {tile}, pattern {pattern:b}");
            }
        }
    }
}
