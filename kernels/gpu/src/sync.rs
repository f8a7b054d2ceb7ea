//! Barriers and memory fences.
//!
//! A block barrier ([`sync_threads`] and the reducing forms) waits until every thread of the
//! block has arrived, and makes the memory writes (global and shared) done before it by any
//! thread of the block visible to all of them after it. It must be reached by all threads of
//! the block (not under a condition that differs between them); otherwise the block hangs or
//! misbehaves. The warp barrier [`sync_warp`] does the same for the lanes named in a mask.
//!
//! Fences only order this thread's own memory accesses as seen by other threads at a scope;
//! they do not wait for anyone. Use them around flags/atomics (e.g. "last block done" patterns).
//!
//! The barrier asm blocks are deliberately *not* `nomem`: the compiler must treat them as
//! reading and writing memory, so it keeps loads and stores on their side of the barrier.
//!
//! They use the non-`.aligned` PTX forms (`barrier.sync`, `barrier.red`; `bar.sync` means
//! `barrier.sync.aligned`): `.aligned` promises that all threads execute the *same* barrier
//! instruction, which rustc cannot guarantee since it does not mark inline asm `convergent`
//! (LLVM may duplicate it into branches). On sm_70+ the non-aligned form is what makes that
//! safe; its cost is small (`BAR.SYNC` instead of `BAR.SYNC.DEFER_BLOCKING` in SASS).
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

use crate::atomic::Scope;

/// Block barrier, `__syncthreads()`: waits for all threads of the block (`barrier.sync 0`).
#[inline(always)]
#[track_caller]
pub fn sync_threads() {
    device!("sync::sync_threads", {
        // SAFETY: a barrier has no memory-safety preconditions (misuse hangs, not corrupts).
        unsafe { core::arch::asm!("barrier.sync 0;", options(nostack)) }
    }, sim: { crate::sim::intrinsics::barrier("sync::sync_threads", false); })
}

/// Block barrier that also counts the threads whose `predicate` is true, `__syncthreads_count`
/// (`barrier.red.popc.u32`). Every thread gets the same count.
#[inline(always)]
#[track_caller]
pub fn sync_threads_count(predicate: bool) -> u32 {
    device!("sync::sync_threads_count", {
        let count: u32;
        // SAFETY: as for `sync_threads`; the predicate register is local to the asm block.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred %gpu_p;",
                "setp.ne.u32 %gpu_p, {p}, 0;",
                "barrier.red.popc.u32 {c}, 0, %gpu_p; }}",
                p = in(reg32) predicate as u32,
                c = out(reg32) count,
                options(nostack),
            )
        };
        count
    }, sim: { crate::sim::intrinsics::barrier("sync::sync_threads_count", predicate).count })
}

/// Block barrier that returns whether `predicate` is true in every thread, `__syncthreads_and`
/// (`barrier.red.and.pred`).
#[inline(always)]
#[track_caller]
pub fn sync_threads_and(predicate: bool) -> bool {
    device!("sync::sync_threads_and", {
        let all: u32;
        // SAFETY: as for `sync_threads`; the predicate registers are local to the asm block.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred %gpu_p, %gpu_q;",
                "setp.ne.u32 %gpu_p, {p}, 0;",
                "barrier.red.and.pred %gpu_q, 0, %gpu_p;",
                "selp.u32 {r}, 1, 0, %gpu_q; }}",
                p = in(reg32) predicate as u32,
                r = out(reg32) all,
                options(nostack),
            )
        };
        all != 0
    }, sim: { crate::sim::intrinsics::barrier("sync::sync_threads_and", predicate).all })
}

/// Block barrier that returns whether `predicate` is true in any thread, `__syncthreads_or`
/// (`barrier.red.or.pred`).
#[inline(always)]
#[track_caller]
pub fn sync_threads_or(predicate: bool) -> bool {
    device!("sync::sync_threads_or", {
        let any: u32;
        // SAFETY: as for `sync_threads`; the predicate registers are local to the asm block.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred %gpu_p, %gpu_q;",
                "setp.ne.u32 %gpu_p, {p}, 0;",
                "barrier.red.or.pred %gpu_q, 0, %gpu_p;",
                "selp.u32 {r}, 1, 0, %gpu_q; }}",
                p = in(reg32) predicate as u32,
                r = out(reg32) any,
                options(nostack),
            )
        };
        any != 0
    }, sim: { crate::sim::intrinsics::barrier("sync::sync_threads_or", predicate).any })
}

/// Warp barrier, `__syncwarp(mask)` (`bar.warp.sync`): waits for the lanes in `mask`, which
/// must include the calling lane, and orders their memory accesses like a block barrier does.
#[inline(always)]
#[track_caller]
pub fn sync_warp(mask: u32) {
    device!("sync::sync_warp", {
        // SAFETY: a barrier has no memory-safety preconditions.
        unsafe { core::arch::asm!("bar.warp.sync {m};", m = in(reg32) mask, options(nostack)) }
    }, sim: { crate::sim::intrinsics::warp_exchange("sync::sync_warp", mask, 0); })
}

/// [`sync_warp`] over all 32 lanes.
#[inline(always)]
pub fn sync_warp_all() {
    sync_warp(u32::MAX)
}

/// Sequentially consistent fence at block scope, `__threadfence_block()` (`fence.sc.cta`, what
/// `membar.cta` means on sm_70+).
#[inline(always)]
pub fn fence_block() {
    fence_sc(Scope::Block)
}

/// Sequentially consistent fence at device scope, `__threadfence()` (`fence.sc.gpu`): this
/// thread's writes before it are seen by every thread of the GPU before its writes after it.
#[inline(always)]
pub fn fence_device() {
    fence_sc(Scope::Device)
}

/// Sequentially consistent fence at system scope, `__threadfence_system()` (`fence.sc.sys`):
/// also orders accesses as seen by the host and peer GPUs (mapped/managed memory).
#[inline(always)]
pub fn fence_system() {
    fence_sc(Scope::System)
}

/// Sequentially consistent fence at `scope` (`fence.sc.{cta,gpu,sys}`).
#[inline(always)]
pub fn fence_sc(scope: Scope) {
    device!("sync::fence_sc", {
        // SAFETY: a fence only constrains ordering; no preconditions.
        unsafe {
            match scope {
                Scope::Block => core::arch::asm!("fence.sc.cta;", options(nostack)),
                Scope::Device => core::arch::asm!("fence.sc.gpu;", options(nostack)),
                Scope::System => core::arch::asm!("fence.sc.sys;", options(nostack)),
            }
        }
    }, sim: { crate::sim::intrinsics::fence() })
}

/// Acquire-release fence at `scope` (`fence.acq_rel.{cta,gpu,sys}`): cheaper than
/// [`fence_sc`]; enough to publish data before a relaxed flag store, or to read it after a
/// relaxed flag load.
#[inline(always)]
pub fn fence_acq_rel(scope: Scope) {
    device!("sync::fence_acq_rel", {
        // SAFETY: a fence only constrains ordering; no preconditions.
        unsafe {
            match scope {
                Scope::Block => core::arch::asm!("fence.acq_rel.cta;", options(nostack)),
                Scope::Device => core::arch::asm!("fence.acq_rel.gpu;", options(nostack)),
                Scope::System => core::arch::asm!("fence.acq_rel.sys;", options(nostack)),
            }
        }
    }, sim: { crate::sim::intrinsics::fence() })
}

/// Named barrier `id` (1..=15; 0 is [`sync_threads`]'s) for `threads` threads (a multiple of
/// 32): waits until `threads` threads have arrived on it, counting this one, by this function
/// or [`named_barrier_arrive`] (`barrier.sync id, threads`). Lets a subset of the block's warps
/// synchronise, e.g. two warpgroups taking turns (FlashAttention-3's ping-pong schedule).
///
/// # Safety
/// Every thread of each participating warp executes it; the counts of all threads using
/// barrier `id` agree and the arrivals balance the waits, or the block hangs.
#[inline(always)]
pub unsafe fn named_barrier_sync(id: u32, threads: u32) {
    device!("sync::named_barrier_sync", {
        // SAFETY: the caller guarantees the participation contract above.
        unsafe {
            core::arch::asm!("barrier.sync {i}, {n};", i = in(reg32) id, n = in(reg32) threads, options(nostack))
        }
    })
}

/// Arrives on named barrier `id` for `threads` threads without waiting (`barrier.arrive id,
/// threads`): the producer side of [`named_barrier_sync`].
///
/// # Safety
/// As [`named_barrier_sync`].
#[inline(always)]
pub unsafe fn named_barrier_arrive(id: u32, threads: u32) {
    device!("sync::named_barrier_arrive", {
        // SAFETY: the caller guarantees the participation contract above.
        unsafe {
            core::arch::asm!("barrier.arrive {i}, {n};", i = in(reg32) id, n = in(reg32) threads, options(nostack))
        }
    })
}
