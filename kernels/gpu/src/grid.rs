//! Grid-wide synchronization, for kernels launched *cooperatively*
//! (`LaunchConfig::cooperative()` on the host): every block of such a launch is resident on
//! the device at once, so all of them can wait for each other.
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
