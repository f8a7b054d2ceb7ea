//! The tensor memory accelerator (TMA): bulk copies of a 2-D box of a tensor between global and
//! shared memory, described by a tensor map (`CUtensorMap`, encoded on the host with
//! `cuTensorMapEncodeTiled`). Loads complete on an mbarrier ([`super::mbarrier`]) by
//! transaction bytes; out-of-bounds parts of a box are filled with zeros, so ragged edges need
//! no masking on the load side.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

use crate::DeviceCopy;

/// A `CUtensorMap`: 128 opaque bytes, 64-byte aligned. The host encodes it and copies it to
/// global memory (a `DeviceBuffer<TensorMap>`); kernels pass its generic address to [`load_2d`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, DeviceCopy)]
#[repr(C, align(64))]
pub struct TensorMap {
    /// The encoded descriptor.
    pub words: [u64; 16],
}

/// Fetches a tensor map into the TMA unit's descriptor cache ahead of its first use.
///
/// # Safety
/// `map` is the generic address of a valid tensor map (64-byte aligned, in global memory).
#[inline(always)]
pub unsafe fn prefetch_map(map: *const TensorMap) {
    device!("hopper::tma::prefetch_map", {
        // SAFETY: the caller guarantees a valid tensor map address; prefetch has no effect
        // on program state.
        unsafe {
            core::arch::asm!("prefetch.tensormap [{m}];", m = in(reg64) map, options(nostack))
        }
    })
}

/// Copies the box at element coordinates (`x`, `y`) (x = innermost dimension) of the tensor
/// described by `map` into shared memory at `dst`, completing `box bytes` transactions on the
/// mbarrier `bar`. Issued by one thread.
///
/// # Safety
/// `map` is the generic address of a valid tensor map; `dst` is a shared address aligned as
/// the map's swizzle requires (1024 bytes for the 128-byte swizzle, else 128) with room for the
/// whole box; nothing reads or writes `dst` until `bar`'s phase completes; the phase's expected
/// transaction count includes the box's bytes (out-of-bounds parts count too).
#[inline(always)]
pub unsafe fn load_2d(dst: u32, map: *const TensorMap, bar: u32, x: i32, y: i32) {
    device!("hopper::tma::load_2d", {
        // SAFETY: the caller guarantees the map, destination and barrier contracts above.
        unsafe {
            core::arch::asm!(
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
                d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y,
                b = in(reg32) bar, options(nostack)
            )
        }
    })
}

/// [`load_2d`] for a 3-D tensor: the box at element coordinates (`x`, `y`, `z`), x innermost.
/// A box one element deep in `z` copies a 2-D tile of one matrix of a batch (one attention
/// head), and rows past that matrix's end are out of bounds, so they arrive as zeros instead
/// of the next matrix's rows.
///
/// # Safety
/// As [`load_2d`].
#[inline(always)]
pub unsafe fn load_3d(dst: u32, map: *const TensorMap, bar: u32, x: i32, y: i32, z: i32) {
    device!("hopper::tma::load_3d", {
        // SAFETY: the caller guarantees the map, destination and barrier contracts above.
        unsafe {
            core::arch::asm!(
                "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}];",
                d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y,
                z = in(reg32) z, b = in(reg32) bar, options(nostack)
            )
        }
    })
}

/// Copies the box at (`x`, `y`) of shared memory at `src` to the tensor described by `map`;
/// out-of-bounds parts of the box are not written. Issued by one thread; complete it with
/// [`store_commit`] and [`store_wait_read`] before reusing `src`.
///
/// # Safety
/// As [`load_2d`] for `map` and alignment; the writes to `src` by other threads were made
/// visible to the async proxy ([`super::mbarrier::fence_proxy_async_shared`] in each writer,
/// then a barrier).
#[inline(always)]
pub unsafe fn store_2d(src: u32, map: *const TensorMap, x: i32, y: i32) {
    device!("hopper::tma::store_2d", {
        // SAFETY: the caller guarantees the contracts above.
        unsafe {
            core::arch::asm!(
                "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
                s = in(reg32) src, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y,
                options(nostack)
            )
        }
    })
}

/// Closes the group of bulk stores issued so far by this thread.
#[inline(always)]
pub fn store_commit() {
    device!("hopper::tma::store_commit", {
        // SAFETY: no operands.
        unsafe { core::arch::asm!("cp.async.bulk.commit_group;", options(nostack)) }
    })
}

/// Waits until every committed bulk store group of this thread has finished reading its
/// shared-memory source (the source may then be overwritten).
#[inline(always)]
pub fn store_wait_read() {
    device!("hopper::tma::store_wait_read", {
        // SAFETY: no operands.
        unsafe { core::arch::asm!("cp.async.bulk.wait_group.read 0;", options(nostack)) }
    })
}

/// Waits until every committed bulk store group of this thread is complete (written to global).
#[inline(always)]
pub fn store_wait() {
    device!("hopper::tma::store_wait", {
        // SAFETY: no operands.
        unsafe { core::arch::asm!("cp.async.bulk.wait_group 0;", options(nostack)) }
    })
}

// --- forward 2 ---

/// [`store_2d`] through a 3-D tensor map: copies the box at (`x`, `y`, `z`) of shared memory at
/// `src` to the tensor; out-of-bounds parts of the box (rows past a matrix's end, say) are not
/// written, so a box never spills into the next matrix.
///
/// # Safety
/// As [`store_2d`].
#[inline(always)]
pub unsafe fn store_3d(src: u32, map: *const TensorMap, x: i32, y: i32, z: i32) {
    device!("hopper::tma::store_3d", {
        // SAFETY: the caller guarantees the contracts above.
        unsafe {
            core::arch::asm!(
                "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [{m}, {{{x}, {y}, {z}}}], [{s}];",
                s = in(reg32) src, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y,
                z = in(reg32) z, options(nostack)
            )
        }
    })
}
