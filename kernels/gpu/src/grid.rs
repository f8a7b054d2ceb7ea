//! Synchronization between the blocks of a grid.
//!
//! - [`sync`], a barrier of the whole grid, for kernels launched *cooperatively*
//!   (`LaunchConfig::cooperative()` on the host): every block of such a launch is resident on
//!   the device at once, so all of them can wait for each other.
//! - [`wait_turn`] / [`end_turn`], turns on a global counter: blocks take a section one after
//!   the other in an order the kernel chooses (deterministic floating-point sums), in any
//!   launch, as long as no block waits for one dispatched after it.
//!
//! [`sync`] is a barrier across every thread of the grid, built like CUDA's cooperative groups
//! `grid.sync()`: each block's thread 0 adds to one global counter word and spins until the
//! word's top bit flips. Block 0 adds `0x8000_0000 - (blocks - 1)`, every other block 1, so
//! the sum of one round is exactly `0x8000_0000`: the top bit flips when the last block
//! arrives (not before: the low 31 bits start each round at zero, so the partial sums stay
//! below the top bit), and the word is ready for the next round without a reset. So a
//! `DisjointSlice<u32>` of length 1 that the host zeroed once (`alloc_zeroed`) serves every
//! launch, as long as launches using the same word do not run at the same time. A launch that
//! stops inside a barrier (a kernel fault) leaves the word mid-round: zero it again.
//!
//! A grid barrier in a kernel that was *not* launched cooperatively can hang when the grid has
//! more blocks than fit on the device at once; the host refuses cooperative launches that do
//! not fit (occupancy x SM count).
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

use crate::atomic::{self, Scope};
use crate::slice::DisjointSlice;
use crate::sync::{fence_device, sync_threads};
use crate::thread;

/// The top bit of the counter, which flips once per completed barrier.
const FLIP: u32 = 0x8000_0000;

/// The counter word of a grid barrier; see the [module docs](self).
pub struct GridBarrier {
    word: *mut u32,
}

impl GridBarrier {
    /// The barrier whose counter is `words[0]`: a global word the host zeroed once (its low 31
    /// bits must be zero; every completed barrier leaves them so). Every block of the launch
    /// must use the same word.
    ///
    /// Panics if `words` is empty.
    #[inline(always)]
    pub fn new(words: &DisjointSlice<u32>) -> GridBarrier {
        assert!(
            !words.is_empty(),
            "grid::GridBarrier::new: the barrier buffer is empty"
        );
        GridBarrier {
            word: words.as_mut_ptr(),
        }
    }
}

/// Reads the counter without caching (`ld.volatile`); on the simulator an atomic load
/// that lets the other simulated threads run.
#[inline(always)]
fn load(word: *mut u32) -> u32 {
    device!("grid::sync", {
        let v: u32;
        // SAFETY: `word` is the barrier's global counter (valid for the launch); a volatile
        // load has no other precondition.
        unsafe {
            core::arch::asm!(
                "ld.volatile.u32 {v}, [{p}];",
                v = out(reg32) v, p = in(reg64) word, options(nostack, readonly)
            )
        };
        v
    }, sim: {
        // SAFETY: `word` is a valid, aligned u32 that other threads access only atomically.
        let v = unsafe { (*word.cast::<core::sync::atomic::AtomicU32>())
            .load(core::sync::atomic::Ordering::SeqCst) };
        crate::sim::intrinsics::fence();
        v
    })
}

/// Waits until every thread of the grid has called `sync` (the same number of times); memory
/// writes made before it by any thread are visible to every thread after it.
///
/// Every thread of every block must call it (it contains block barriers), and the launch must
/// be cooperative.
#[inline(always)]
pub fn sync(barrier: &GridBarrier) {
    sync_threads();
    let t = thread::thread_idx();
    if t.x == 0 && t.y == 0 && t.z == 0 {
        let g = thread::grid_dim();
        let blocks = g.x * g.y * g.z;
        let b = thread::block_idx();
        let add = if b.x == 0 && b.y == 0 && b.z == 0 {
            FLIP.wrapping_sub(blocks - 1)
        } else {
            1
        };
        // Publish this block's writes (ordered before them by the block barrier above)
        // before arriving.
        fence_device();
        // SAFETY: the barrier's word is a valid global u32 that every block accesses only
        // atomically or with volatile loads.
        let old = unsafe { atomic::global::add(barrier.word, add, Scope::Device) };
        while (old ^ load(barrier.word)) & FLIP == 0 {}
        // Order the other blocks' writes (published before their arrival) before ours after.
        fence_device();
    }
    sync_threads();
}

/// How long [`wait_turn`] waits before it gives up and ends the launch: far longer than any
/// one turn of a working kernel takes, so only a schedule that can never reach the turn (a
/// bug, or a counter the host did not zero) trips it, and the host gets an error, not a hang.
pub const TURN_TIMEOUT_NS: u64 = 10_000_000_000;

/// Waits until the global counter `*word` equals `turn`, then orders this thread's later
/// memory accesses after the writes the previous turn's holder made before [`end_turn`]
/// (`ld.acquire.gpu` in a spin loop).
///
/// With [`end_turn`] this serializes a section of several blocks in a chosen order (CUTLASS's
/// `GenericBarrier::wait_eq` / `arrive_inc`): block `r` waits for turn `r`, does its part,
/// ends its turn. Floating-point sums added in such turns come out the same bits on every run.
/// The order must not make a block wait for one that is dispatched after it (blocks start in
/// order of their linear index): a block's turn may depend only on blocks of lower index, or
/// the grid can stall once its waiting blocks fill the device, unless every block involved is
/// resident at once (a cooperative launch, or a grid the caller knows fits). A wait longer than
/// [`TURN_TIMEOUT_NS`] panics (the launch ends with an error naming the kernel).
///
/// # Safety
/// `word` is a valid, aligned global `u32` that every thread accesses only through these two
/// functions (or atomics) while the kernel runs.
#[inline(always)]
pub unsafe fn wait_turn(word: *const u32, turn: u32) {
    // SAFETY: the caller's contract.
    unsafe { wait_turn_within(word, turn, TURN_TIMEOUT_NS) }
}

/// [`wait_turn`] giving up after `timeout_ns` nanoseconds instead of [`TURN_TIMEOUT_NS`].
///
/// # Safety
/// As [`wait_turn`].
#[inline(always)]
pub unsafe fn wait_turn_within(word: *const u32, turn: u32, timeout_ns: u64) {
    let mut polls = 0u32;
    let mut start = 0u64;
    while load_acquire(word) != turn {
        polls = polls.wrapping_add(1);
        if polls % 1024 == 1 {
            let now = crate::time::globaltimer();
            if polls == 1 {
                start = now;
            } else if now.wrapping_sub(start) > timeout_ns {
                panic!(
                    "grid::wait_turn: the turn never came (counter not zeroed, or an order that waits for a later block)"
                );
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::time::nanosleep(100);
    }
}

/// Passes the turn: adds one to `*word` after this thread's earlier writes
/// (`red.release.gpu.add`). Writes made by asynchronous copies (bulk reductions, TMA stores)
/// must be complete first (`hopper::tma::store_wait`) and fenced
/// (`hopper::mbarrier::fence_proxy_async_global`), and a next holder that writes with them
/// fences after its [`wait_turn`] too.
///
/// # Safety
/// As [`wait_turn`].
#[inline(always)]
pub unsafe fn end_turn(word: *mut u32) {
    device!("grid::end_turn", {
        // SAFETY: the caller guarantees a valid global word accessed only atomically.
        unsafe {
            core::arch::asm!(
                "red.release.gpu.global.add.u32 [{p}], 1;",
                p = in(reg64) word, options(nostack)
            )
        }
    }, sim: {
        // SAFETY: as above.
        unsafe { (*word.cast::<core::sync::atomic::AtomicU32>())
            .fetch_add(1, core::sync::atomic::Ordering::SeqCst) };
        crate::sim::intrinsics::fence();
    })
}

/// `ld.acquire.gpu` of a global word; on the simulator a sequentially consistent load that
/// lets the other simulated threads run.
#[inline(always)]
fn load_acquire(word: *const u32) -> u32 {
    device!("grid::wait_turn", {
        let v: u32;
        // SAFETY: `word` is a valid global word (the callers' contract); an acquire load has no
        // other precondition.
        unsafe {
            core::arch::asm!(
                "ld.acquire.gpu.global.u32 {v}, [{p}];",
                v = out(reg32) v, p = in(reg64) word, options(nostack)
            )
        };
        v
    }, sim: {
        // SAFETY: as above.
        let v = unsafe { (*word.cast::<core::sync::atomic::AtomicU32>())
            .load(core::sync::atomic::Ordering::SeqCst) };
        crate::sim::intrinsics::fence();
        v
    })
}
