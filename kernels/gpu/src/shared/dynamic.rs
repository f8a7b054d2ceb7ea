//! The dynamic shared-memory region, sized per launch.
//!
//! PTX exposes it as an unsized `.extern .shared` array; the driver places it after the
//! kernel's static shared arrays and gives it the byte size requested at launch, which the
//! kernel reads from `%dynamic_smem_size`. This crate declares the one array every view uses.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

use core::marker::PhantomData;
use core::mem::{align_of, size_of};

use super::SharedSlice;
use super::access::access_width;
use crate::DeviceCopy;

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 16 .b8 __gpu_dynamic_shared[];");

/// Bytes of dynamic shared memory this launch was given (`%dynamic_smem_size`).
#[inline(always)]
pub fn dynamic_size_bytes() -> u32 {
    device!("shared::dynamic_size_bytes", {
        let bytes: u32;
        // SAFETY: reads a special register; no memory access.
        unsafe {
            core::arch::asm!(
                "mov.u32 {b}, %dynamic_smem_size;",
                b = out(reg32) bytes,
                options(pure, nomem, nostack),
            )
        };
        bytes
    }, sim: { crate::sim::intrinsics::dynamic_shared_bytes() })
}

/// Shared-window address of the dynamic region (16-byte aligned).
#[inline(always)]
fn base() -> u32 {
    device!("shared::dynamic", {
        let addr: u32;
        // SAFETY: takes the address of the region declared above; no memory access.
        unsafe {
            core::arch::asm!(
                "mov.u32 {a}, __gpu_dynamic_shared;",
                a = out(reg32) addr,
                options(pure, nomem, nostack),
            )
        };
        addr
    }, sim: {
        // The simulator puts the dynamic region at the start of the arena.
        0
    })
}

/// The whole dynamic region as `dynamic_size_bytes() / size_of::<T>()` elements of `T`.
///
/// Every call (with any `T`) views the same bytes; to hold several arrays, split the view
/// ([`SharedSlice::split_at`]) or use [`dynamic_at`]. `T` may not need more than 16-byte
/// alignment (compile-time check).
#[inline(always)]
pub fn dynamic<T: DeviceCopy>() -> SharedSlice<T> {
    const {
        assert!(
            size_of::<T>() > 0 && align_of::<T>() <= 16,
            "shared::dynamic: T must be sized and at most 16-byte aligned"
        )
    };
    let len = dynamic_size_bytes() / size_of::<T>() as u32;
    SharedSlice {
        addr: base(),
        len,
        _marker: PhantomData,
    }
}

/// `len` elements of `T` starting `byte_offset` bytes into the dynamic region.
///
/// Panics if the range does not fit in [`dynamic_size_bytes`], or if `byte_offset` is not a
/// multiple of `T`'s access width (the largest power of two dividing `size_of::<T>()`, at most
/// 16; 16 always works).
#[inline(always)]
#[track_caller]
pub fn dynamic_at<T: DeviceCopy>(byte_offset: usize, len: usize) -> SharedSlice<T> {
    const {
        assert!(
            size_of::<T>() > 0 && align_of::<T>() <= 16,
            "shared::dynamic_at: T must be sized and at most 16-byte aligned"
        )
    };
    assert!(
        byte_offset.is_multiple_of(access_width::<T>()),
        "shared::dynamic_at: misaligned byte offset"
    );
    let end = len
        .checked_mul(size_of::<T>())
        .and_then(|bytes| bytes.checked_add(byte_offset));
    match end {
        Some(end) if end <= dynamic_size_bytes() as usize => {}
        _ => panic!("shared::dynamic_at: range past the end of the dynamic shared memory"),
    }
    SharedSlice {
        addr: base() + byte_offset as u32,
        len: len as u32,
        _marker: PhantomData,
    }
}
