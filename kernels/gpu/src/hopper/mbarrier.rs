//! `mbarrier`: a 64-bit barrier object in shared memory that counts arrivals and, on sm_90,
//! bytes written by asynchronous copies (transaction counts). The usual producer/consumer
//! pipeline: the consumer waits on a "full" barrier that the producer's TMA copies complete, and
//! the producer waits on an "empty" barrier that the consumers arrive on once done with a stage.
//!
//! A barrier's phase completes when its pending arrival count and transaction count both reach
//! zero; it then resets to the count given to [`init`] and flips its phase parity. Waiters name
//! the parity of the phase they wait for ([`wait_parity`]): the first phase has parity 0. A wait
//! on parity 1 before anything completed returns at once (the "previous" phase counts as done),
//! which lets a producer treat every stage as empty in its first round.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

/// Initialises the barrier at shared address `bar` to expect `count` arrivals per phase.
///
/// # Safety
/// `bar` is an 8-byte aligned shared-memory address that no other thread uses until the
/// initialisation is made visible ([`fence_init`] then a block barrier). Exactly one thread
/// initialises each barrier.
#[inline(always)]
pub unsafe fn init(bar: u32, count: u32) {
    device!("hopper::mbarrier::init", {
        // SAFETY: the caller guarantees an aligned shared barrier that only this thread touches.
        unsafe {
            core::arch::asm!(
                "mbarrier.init.shared::cta.b64 [{b}], {c};",
                b = in(reg32) bar, c = in(reg32) count, options(nostack)
            )
        }
    })
}

/// Makes preceding [`init`]s visible to the other threads and to the asynchronous proxy (TMA
/// completes transactions on the barrier). Follow with a block barrier.
#[inline(always)]
pub fn fence_init() {
    device!("hopper::mbarrier::fence_init", {
        // SAFETY: a fence; no operands.
        unsafe { core::arch::asm!("fence.mbarrier_init.release.cluster;", options(nostack)) }
    })
}

/// Arrives on the barrier (one of the `count` arrivals of the current phase).
///
/// # Safety
/// `bar` is an initialised barrier; the phase must still expect an arrival (arriving more
/// often than `count` per phase corrupts it).
#[inline(always)]
pub unsafe fn arrive(bar: u32) {
    device!("hopper::mbarrier::arrive", {
        let _state: u64;
        // SAFETY: the caller guarantees an initialised barrier expecting this arrival.
        unsafe {
            core::arch::asm!(
                "mbarrier.arrive.shared::cta.b64 {s}, [{b}];",
                s = out(reg64) _state, b = in(reg32) bar, options(nostack)
            )
        }
    })
}

/// Arrives on the barrier and adds `bytes` to the transaction count of the current phase: the
/// phase then also waits for that many bytes of asynchronous copies ([`super::tma`]) that name
/// this barrier.
///
/// # Safety
/// As [`arrive`]; the copies issued for this phase must total exactly `bytes`.
#[inline(always)]
pub unsafe fn arrive_expect_tx(bar: u32, bytes: u32) {
    device!("hopper::mbarrier::arrive_expect_tx", {
        let _state: u64;
        // SAFETY: the caller guarantees an initialised barrier expecting this arrival.
        unsafe {
            core::arch::asm!(
                "mbarrier.arrive.expect_tx.shared::cta.b64 {s}, [{b}], {n};",
                s = out(reg64) _state, b = in(reg32) bar, n = in(reg32) bytes, options(nostack)
            )
        }
    })
}

/// One test of whether the phase with parity `parity` has completed (the hardware may suspend
/// the thread for a while before answering `false`).
///
/// # Safety
/// `bar` is an initialised barrier.
#[inline(always)]
pub unsafe fn try_wait_parity(bar: u32, parity: u32) -> bool {
    device!("hopper::mbarrier::try_wait_parity", {
        let done: u32;
        // SAFETY: the caller guarantees an initialised barrier; the predicate is local.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred %p; mbarrier.try_wait.parity.shared::cta.b64 %p, [{b}], {q}; selp.u32 {d}, 1, 0, %p; }}",
                d = out(reg32) done, b = in(reg32) bar, q = in(reg32) parity, options(nostack)
            )
        };
        done != 0
    })
}

/// Waits until the phase with parity `parity` has completed. Memory written before the
/// arrivals (and by the copies) that completed it is visible afterwards.
///
/// # Safety
/// `bar` is an initialised barrier, and the phase waited for must eventually complete (or the
/// thread hangs).
#[inline(always)]
pub unsafe fn wait_parity(bar: u32, parity: u32) {
    // SAFETY: forwarded contract.
    while !unsafe { try_wait_parity(bar, parity) } {}
}

/// Invalidates the barrier so its 8 bytes can be reused as ordinary shared memory.
///
/// # Safety
/// No thread uses the barrier afterwards, and no copy still targets it.
#[inline(always)]
pub unsafe fn invalidate(bar: u32) {
    device!("hopper::mbarrier::invalidate", {
        // SAFETY: the caller guarantees the barrier is idle.
        unsafe {
            core::arch::asm!("mbarrier.inval.shared::cta.b64 [{b}];", b = in(reg32) bar, options(nostack))
        }
    })
}

/// `fence.proxy.async.global`: orders this thread's ordinary accesses to global memory with its
/// asynchronous-proxy ones (bulk copies and reductions, TMA stores), both ways: after an
/// acquire that hands over data (`grid::wait_turn`) and before a release that publishes what a
/// completed bulk reduction wrote (`grid::end_turn`).
#[inline(always)]
pub fn fence_proxy_async_global() {
    device!("hopper::mbarrier::fence_proxy_async_global", {
        // SAFETY: a fence; no operands.
        unsafe { core::arch::asm!("fence.proxy.async.global;", options(nostack)) }
    })
}

/// `fence.proxy.async.shared::cta`: orders this thread's ordinary shared-memory accesses with
/// later accesses of the asynchronous proxy (TMA stores reading shared memory, wgmma operands).
/// Each thread that wrote the data fences before the barrier that hands it over.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    device!("hopper::mbarrier::fence_proxy_async_shared", {
        // SAFETY: a fence; no operands.
        unsafe { core::arch::asm!("fence.proxy.async.shared::cta;", options(nostack)) }
    })
}
