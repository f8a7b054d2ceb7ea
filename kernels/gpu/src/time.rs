//! Clocks and sleeping.
//!
//! [`clock`] / [`clock64`] count cycles of the SM the thread runs on (per-SM counters, not
//! comparable across SMs); [`globaltimer`] is a GPU-wide nanosecond timer (its update
//! granularity is about a microsecond on many GPUs). The reads are not `pure`: each call reads
//! the counter again, and the compiler does not merge or drop them.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

/// The SM's 32-bit cycle counter (`%clock`), `clock()`. Wraps every few seconds.
#[inline(always)]
pub fn clock() -> u32 {
    device!("time::clock", {
        let t: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {t}, %clock;", t = out(reg32) t, options(nomem, nostack))
        };
        t
    }, sim: { crate::sim::intrinsics::clock64() as u32 })
}

/// The SM's 64-bit cycle counter (`%clock64`), `clock64()`.
#[inline(always)]
pub fn clock64() -> u64 {
    device!("time::clock64", {
        let t: u64;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u64 {t}, %clock64;", t = out(reg64) t, options(nomem, nostack))
        };
        t
    }, sim: { crate::sim::intrinsics::clock64() })
}

/// The global nanosecond timer (`%globaltimer`).
#[inline(always)]
pub fn globaltimer() -> u64 {
    device!("time::globaltimer", {
        let t: u64;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) t, options(nomem, nostack))
        };
        t
    }, sim: { crate::sim::intrinsics::globaltimer() })
}

/// Suspends the thread for about `ns` nanoseconds (`nanosleep.u32`, sm_70+; the hardware
/// sleeps somewhere in [0, 2·ns], at most about 1 ms). For back-off in spin loops.
#[inline(always)]
pub fn nanosleep(ns: u32) {
    device!("time::nanosleep", {
        // SAFETY: only delays the thread.
        unsafe { core::arch::asm!("nanosleep.u32 {t};", t = in(reg32) ns, options(nomem, nostack)) }
    }, sim: { crate::sim::intrinsics::nanosleep() })
}
