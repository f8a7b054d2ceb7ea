//! The simulator's implementation of each device intrinsic (the `sim:` bodies of `device!`).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence as host_fence};
use std::sync::OnceLock;
use std::time::Instant;

use super::rendezvous::{self, BarrierResult};
use super::runtime::{current, yield_now};
use crate::thread::{Dim3, WARP_SIZE};

pub(crate) fn thread_idx() -> Dim3 {
    current("thread::thread_idx").thread
}

pub(crate) fn block_idx() -> Dim3 {
    current("thread::block_idx").block().block_idx
}

pub(crate) fn block_dim() -> Dim3 {
    current("thread::block_dim").block().block_dim
}

pub(crate) fn grid_dim() -> Dim3 {
    current("thread::grid_dim").block().grid_dim
}

/// The lanes of the calling thread's warp that exist (all 32 but in a partial last warp).
pub(crate) fn warp_exists_mask() -> u32 {
    current("warp").warp().exists_mask()
}

pub(crate) fn lane() -> u32 {
    current("thread::lane_id").lane()
}

/// `%lanemask_*`: `cmp` selects which lanes relative to this one.
pub(crate) fn lane_mask(cmp: core::cmp::Ordering, or_equal: bool) -> u32 {
    let lane = lane();
    (0..WARP_SIZE)
        .filter(|&l| l.cmp(&lane) == cmp || (or_equal && l == lane))
        .fold(0, |m, l| m | 1 << l)
}

// ---- barriers and fences ----

#[track_caller]
pub(crate) fn barrier(what: &str, predicate: bool) -> BarrierResult {
    rendezvous::barrier(what, predicate)
}

#[track_caller]
pub(crate) fn fence() {
    host_fence(Ordering::SeqCst);
    yield_now();
}

// ---- warp collectives ----

/// Every lane's value, once all lanes of `mask` arrive.
#[track_caller]
pub(crate) fn warp_exchange(what: &str, mask: u32, value: u64) -> [u64; 32] {
    rendezvous::exchange(what, mask, value)
}

/// `shfl.sync.<mode>.b32` with PTX's lane arithmetic: `mode` 0 up, 1 down, 2 bfly, 3 idx;
/// `c` packs the segment mask (bits 8..12) and clamp lane (bits 0..4).
#[track_caller]
pub(crate) fn shfl(mode: u8, mask: u32, v: u32, b: u32, c: u32) -> u32 {
    let values = warp_exchange("warp::shfl", mask, v as u64);
    let lane = lane() as i32;
    let b = (b & 0x1f) as i32;
    let clamp = (c & 0x1f) as i32;
    let seg = ((c >> 8) & 0x1f) as i32;
    let max_lane = (lane & seg) | (clamp & !seg);
    let min_lane = lane & seg;
    let (j, in_range) = match mode {
        0 => (lane - b, lane - b >= max_lane),
        1 => (lane + b, lane + b <= max_lane),
        2 => (lane ^ b, (lane ^ b) <= max_lane),
        _ => {
            let j = min_lane | (b & !seg);
            (j, j <= max_lane)
        }
    };
    let src = if in_range { j } else { lane };
    if (0..32).contains(&src) && mask & (1 << src) != 0 {
        values[src as usize] as u32
    } else {
        // The source lane is not in the mask: undefined on a GPU; the simulator returns the
        // lane's own value.
        v
    }
}

/// [`rendezvous::exchange_map`]: per-lane results computed at one instant by the last lane.
#[track_caller]
pub(crate) fn warp_exchange_map(
    what: &str,
    mask: u32,
    value: u64,
    f: impl FnOnce(&[u64; 32]) -> [[u64; 2]; 32],
) -> [u64; 2] {
    rendezvous::exchange_map(what, mask, value, f)
}

#[track_caller]
pub(crate) fn ballot(mask: u32, predicate: bool) -> u32 {
    let values = warp_exchange("warp::ballot_sync", mask, predicate as u64);
    (0..WARP_SIZE)
        .filter(|&l| mask & (1 << l) != 0 && values[l as usize] != 0)
        .fold(0, |m, l| m | 1 << l)
}

/// `match.any`: the lanes of `mask` holding the same bits as this lane.
#[track_caller]
pub(crate) fn match_any(mask: u32, bits: u64) -> u32 {
    let values = warp_exchange("warp::match_any_sync", mask, bits);
    (0..WARP_SIZE)
        .filter(|&l| mask & (1 << l) != 0 && values[l as usize] == bits)
        .fold(0, |m, l| m | 1 << l)
}

/// `match.all`: `mask` (restricted to existing lanes) if all its lanes agree, else 0.
#[track_caller]
pub(crate) fn match_all(mask: u32, bits: u64) -> u32 {
    let same = match_any(mask, bits);
    let live = mask & current("warp::match_all_sync").warp().exists_mask();
    if same == live { live } else { 0 }
}

/// `redux.sync` over the lanes of `mask`; `op` 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor;
/// `signed` for the s32 forms.
#[track_caller]
pub(crate) fn redux(op: u8, signed: bool, mask: u32, v: u32) -> u32 {
    let values = warp_exchange("warp::reduce", mask, v as u64);
    let lanes = (0..WARP_SIZE)
        .filter(|&l| mask & (1 << l) != 0)
        .map(|l| values[l as usize] as u32);
    match (op, signed) {
        (0, _) => lanes.fold(0u32, u32::wrapping_add),
        (1, false) => lanes.min().unwrap_or(v),
        (1, true) => lanes.map(|x| x as i32).min().unwrap_or(v as i32) as u32,
        (2, false) => lanes.max().unwrap_or(v),
        (2, true) => lanes.map(|x| x as i32).max().unwrap_or(v as i32) as u32,
        (3, _) => lanes.fold(u32::MAX, |a, x| a & x),
        (4, _) => lanes.fold(0, |a, x| a | x),
        _ => lanes.fold(0, |a, x| a ^ x),
    }
}

/// `activemask`: the warp's lanes that have not exited (the simulator does not track which
/// lanes execute a branch together).
pub(crate) fn active_mask() -> u32 {
    let t = current("warp::active_mask");
    t.warp().live_lanes(t.block())
}

// ---- shared memory ----

pub(crate) fn static_shared_addr(site: usize, bytes: usize, align: usize) -> u32 {
    current("shared_array!")
        .block()
        .shared
        .static_addr(site, bytes, align)
}

pub(crate) fn dynamic_shared_bytes() -> u32 {
    current("shared::dynamic_size_bytes")
        .block()
        .shared
        .dynamic_bytes()
}

/// A host pointer to `size` bytes at shared address `addr` (bounds-checked).
#[track_caller]
pub(crate) fn shared_ptr(addr: u32, size: usize) -> *mut u8 {
    current("shared memory access")
        .block()
        .shared
        .ptr(addr, size)
}

/// Reads a `T` at shared address `addr`.
#[track_caller]
pub(crate) fn shared_read<T: Copy>(addr: u32) -> T {
    let p = shared_ptr(addr, core::mem::size_of::<T>()).cast::<T>();
    // SAFETY: `shared_ptr` checked the bytes are inside the block's arena; unaligned reads are
    // allowed, and all threads of a block run on this OS thread (no data race).
    unsafe { p.read_unaligned() }
}

/// Writes a `T` at shared address `addr`.
#[track_caller]
pub(crate) fn shared_write<T: Copy>(addr: u32, value: T) {
    let p = shared_ptr(addr, core::mem::size_of::<T>()).cast::<T>();
    // SAFETY: as for `shared_read`.
    unsafe { p.write_unaligned(value) }
}

/// A shared-memory load by an `ld.shared` flavour (`volatile` ones let other threads run, as
/// they are how a thread polls a flag).
#[track_caller]
pub(crate) fn shared_load<T: Copy>(addr: u32, flavour: &str) -> T {
    if flavour.contains("volatile") {
        yield_now();
    }
    shared_read(addr)
}

/// A shared-memory store by an `st.shared` flavour.
#[track_caller]
pub(crate) fn shared_store<T: Copy>(addr: u32, value: T, flavour: &str) {
    shared_write(addr, value);
    if flavour.contains("volatile") {
        yield_now();
    }
}

// ---- atomics ----

/// Read-modify-write of 32 bits at `p` with `f(old) -> new`; returns the old bits.
///
/// # Safety
/// `p` must be valid and 4-byte aligned, accessed only atomically by other threads.
pub(crate) unsafe fn rmw32(p: *mut u8, f: impl Fn(u32) -> u32) -> u32 {
    // SAFETY: the caller guarantees validity and alignment.
    let a = unsafe { AtomicU32::from_ptr(p.cast()) };
    let old = a
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |x| Some(f(x)))
        .unwrap_or_else(|x| x);
    yield_now();
    old
}

/// [`rmw32`] for 64 bits.
///
/// # Safety
/// `p` must be valid and 8-byte aligned, accessed only atomically by other threads.
pub(crate) unsafe fn rmw64(p: *mut u8, f: impl Fn(u64) -> u64) -> u64 {
    // SAFETY: the caller guarantees validity and alignment.
    let a = unsafe { AtomicU64::from_ptr(p.cast()) };
    let old = a
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |x| Some(f(x)))
        .unwrap_or_else(|x| x);
    yield_now();
    old
}

/// The result of one PTX atomic operation `op` (`"add.u32"`, `"min.s64"`, `"cas.b32"`, ...)
/// on old value `x` with operands `b` (and `c` for `cas`).
pub(crate) fn atomic_op(op: &str, x: u64, b: u64, c: u64) -> u64 {
    let (name, ty) = op.split_once('.').unwrap_or((op, "b32"));
    let wide = ty.ends_with("64");
    let (xi, bi) = if wide {
        (x as i64, b as i64)
    } else {
        (x as u32 as i32 as i64, b as u32 as i32 as i64)
    };
    let r = match (name, ty) {
        ("add", "f32") => (f32::from_bits(x as u32) + f32::from_bits(b as u32)).to_bits() as u64,
        ("add", "f64") => (f64::from_bits(x) + f64::from_bits(b)).to_bits(),
        ("add", _) => x.wrapping_add(b),
        ("min", "s32" | "s64") => xi.min(bi) as u64,
        ("max", "s32" | "s64") => xi.max(bi) as u64,
        ("min", _) => x.min(b),
        ("max", _) => x.max(b),
        ("and", _) => x & b,
        ("or", _) => x | b,
        ("xor", _) => x ^ b,
        ("exch", _) => b,
        ("cas", _) => {
            if x == b {
                c
            } else {
                x
            }
        }
        ("inc", _) => {
            if x >= b {
                0
            } else {
                x + 1
            }
        }
        ("dec", _) => {
            if x == 0 || x > b {
                b
            } else {
                x - 1
            }
        }
        _ => panic!("gpu::atomic: the simulator does not model `atom.{op}`"),
    };
    if wide { r } else { r & 0xffff_ffff }
}

/// One PTX atomic `op` at `p`; returns the old value (zero-extended).
///
/// # Safety
/// `p` must be valid and aligned for the operation's width, accessed only atomically by other
/// threads.
pub(crate) unsafe fn atomic(p: *mut u8, op: &str, b: u64, c: u64) -> u64 {
    if op.ends_with("64") {
        // SAFETY: forwarded to the caller.
        unsafe { rmw64(p, |x| atomic_op(op, x, b, c)) }
    } else {
        // SAFETY: forwarded to the caller.
        unsafe { rmw32(p, |x| atomic_op(op, x as u64, b, c) as u32) as u64 }
    }
}

// ---- time ----

fn epoch() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// A monotonic nanosecond counter standing in for `%clock64` (the simulator has no cycles).
pub(crate) fn clock64() -> u64 {
    yield_now();
    epoch().elapsed().as_nanos() as u64
}

/// `%globaltimer`: nanoseconds since the Unix epoch.
pub(crate) fn globaltimer() -> u64 {
    yield_now();
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `nanosleep`: lets the other simulated threads run.
pub(crate) fn nanosleep() {
    yield_now();
    std::thread::yield_now();
}
