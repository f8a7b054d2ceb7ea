//! Thread-block clusters (sm_90): the blocks of a cluster (launched with
//! `LaunchConfig::with_cluster` on the host) run at the same time on one GPU processing
//! cluster, can wait for each other ([`sync`]), and can read, write and update each other's
//! shared memory (*distributed shared memory*): [`map_shared`] turns the shared-window address
//! of a variable in this block into the address of the same variable in block `rank` of the
//! cluster, which [`load_u32`], [`store_u32`] and [`atomic_add_u32`] then access.
//!
//! A block's shared memory lives only as long as the block: a block whose shared memory others
//! access must not exit before they are done, so kernels end with a [`sync`] after their last
//! remote access. On the CPU simulator these report "unsupported on simulator".
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

use crate::thread::Dim3;

/// Reads one special register (on the GPU only).
#[cfg(target_arch = "nvptx64")]
macro_rules! sreg {
    ($reg:literal) => {{
        let v: u32;
        // SAFETY: reading a special register has no preconditions.
        unsafe {
            core::arch::asm!(concat!("mov.u32 {v}, ", $reg, ";"), v = out(reg32) v,
                options(pure, nomem, nostack))
        };
        v
    }};
}

/// This block's rank in its cluster, `0..blocks()` (`%cluster_ctarank`).
#[inline(always)]
pub fn block_rank() -> u32 {
    device!("hopper::cluster::block_rank", { sreg!("%cluster_ctarank") })
}

/// Blocks per cluster (`%cluster_nctarank`).
#[inline(always)]
pub fn blocks() -> u32 {
    device!("hopper::cluster::blocks", { sreg!("%cluster_nctarank") })
}

/// This block's position in its cluster (`%cluster_ctaid`).
#[inline(always)]
pub fn block_idx() -> Dim3 {
    device!("hopper::cluster::block_idx", {
        Dim3 {
            x: sreg!("%cluster_ctaid.x"),
            y: sreg!("%cluster_ctaid.y"),
            z: sreg!("%cluster_ctaid.z"),
        }
    })
}

/// The cluster's shape in blocks (`%cluster_nctaid`).
#[inline(always)]
pub fn dim() -> Dim3 {
    device!("hopper::cluster::dim", {
        Dim3 {
            x: sreg!("%cluster_nctaid.x"),
            y: sreg!("%cluster_nctaid.y"),
            z: sreg!("%cluster_nctaid.z"),
        }
    })
}

/// Cluster barrier: waits until every thread of every block of the cluster has arrived
/// (`barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`). Shared-memory writes
/// (local or remote) before it are visible to every thread of the cluster after it. Every
/// thread of the cluster must call it.
#[inline(always)]
pub fn sync() {
    device!("hopper::cluster::sync", {
        // SAFETY: a barrier has no memory-safety preconditions.
        unsafe {
            core::arch::asm!(
                "barrier.cluster.arrive.release;",
                "barrier.cluster.wait.acquire;",
                options(nostack)
            )
        }
    })
}

/// The address, in the cluster's shared window, of the variable at this block's shared-window
/// address `addr` in the block of rank `rank` (`mapa.shared::cluster`). `rank` must be below
/// [`blocks`].
#[inline(always)]
pub fn map_shared(addr: u32, rank: u32) -> u32 {
    device!("hopper::cluster::map_shared", {
        let d: u32;
        // SAFETY: an address computation; no memory access.
        unsafe {
            core::arch::asm!("mapa.shared::cluster.u32 {d}, {a}, {r};",
                d = out(reg32) d, a = in(reg32) addr, r = in(reg32) rank,
                options(pure, nomem, nostack))
        };
        d
    })
}

/// Reads the `u32` at cluster shared address `addr` (`ld.shared::cluster.u32`).
///
/// # Safety
/// `addr` comes from [`map_shared`] of a 4-byte aligned `u32` of a block of this cluster that
/// has not exited, and no other thread writes it concurrently (other than atomically).
#[inline(always)]
pub unsafe fn load_u32(addr: u32) -> u32 {
    device!("hopper::cluster::load_u32", {
        let v: u32;
        // SAFETY: the caller guarantees a valid, live address.
        unsafe {
            core::arch::asm!("ld.shared::cluster.u32 {v}, [{a}];",
                v = out(reg32) v, a = in(reg32) addr, options(nostack, readonly))
        };
        v
    })
}

/// Writes `v` to the `u32` at cluster shared address `addr` (`st.shared::cluster.u32`).
///
/// # Safety
/// As for [`load_u32`], and no other thread accesses it concurrently.
#[inline(always)]
pub unsafe fn store_u32(addr: u32, v: u32) {
    device!("hopper::cluster::store_u32", {
        // SAFETY: the caller guarantees a valid, live, exclusively written address.
        unsafe {
            core::arch::asm!("st.shared::cluster.u32 [{a}], {v};",
                a = in(reg32) addr, v = in(reg32) v, options(nostack))
        }
    })
}

/// Atomically adds `v` to the `u32` at cluster shared address `addr`
/// (`atom.shared::cluster.add.u32`, relaxed, cluster scope); returns the old value.
///
/// # Safety
/// `addr` comes from [`map_shared`] of a 4-byte aligned `u32` of a block of this cluster that
/// has not exited; other threads access it only atomically.
#[inline(always)]
pub unsafe fn atomic_add_u32(addr: u32, v: u32) -> u32 {
    device!("hopper::cluster::atomic_add_u32", {
        let old: u32;
        // SAFETY: the caller guarantees a valid, live address accessed only atomically.
        unsafe {
            core::arch::asm!("atom.shared::cluster.add.u32 {o}, [{a}], {v};",
                o = out(reg32) old, a = in(reg32) addr, v = in(reg32) v, options(nostack))
        };
        old
    })
}
