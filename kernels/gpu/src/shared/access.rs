//! Loads and stores through 32-bit shared-window addresses.
//!
//! Why not pointers: a generic (64-bit) pointer into shared memory compiles to generic `LD`/`ST`
//! in SASS, which check the address window at run time; neither LLVM nor ptxas recovers the
//! space. Addressing the shared window directly (`ld.shared`/`st.shared` with a 32-bit address)
//! gives `LDS`/`STS`, with constant offsets folded into the instruction.
//!
//! A value is moved in chunks of its *access width*: the largest power of two (at most 16
//! bytes) dividing its size. Types of 1, 2, 4, 8 and 16 bytes are therefore one instruction
//! (`.u8`, `.u16`, `.u32`, `.u64`, `.v4.u32`); a 12-byte `Vec3` is three `.u32`. The chunk loop
//! has a constant trip count and is unrolled. Every address handed to these functions is a
//! multiple of the access width: arrays start 16-byte aligned and elements are `size` apart.
#![cfg_attr(
    not(target_arch = "nvptx64"),
    allow(unused_variables, unused_macros, dead_code)
)]

use core::mem::{MaybeUninit, size_of};

/// The access width of `T` (see the module docs): the largest power of two dividing
/// `size_of::<T>()`, capped at 16.
#[inline(always)]
pub(crate) const fn access_width<T>() -> usize {
    let size = size_of::<T>();
    let low = size & size.wrapping_neg();
    if low == 0 || low > 16 { 16 } else { low }
}

/// `ld`/`st` primitives for one chunk width, in a normal and a volatile flavour.
macro_rules! chunk_ops {
    ($ld:literal, $st:literal, $ld_opts:tt) => {
        #[inline(always)]
        unsafe fn ld8(a: u32) -> u8 {
            device!("shared::read", {
                let v: u16;
                // SAFETY: the caller guarantees `a` is a valid shared address.
                unsafe { core::arch::asm!(concat!($ld, ".u8 {v}, [{a}];"), v = out(reg16) v, a = in(reg32) a, options $ld_opts) };
                v as u8
            }, sim: { crate::sim::intrinsics::shared_load::<u8>(a, $ld) })
        }
        #[inline(always)]
        unsafe fn ld16(a: u32) -> u16 {
            device!("shared::read", {
                let v: u16;
                // SAFETY: the caller guarantees `a` is a valid, 2-aligned shared address.
                unsafe { core::arch::asm!(concat!($ld, ".u16 {v}, [{a}];"), v = out(reg16) v, a = in(reg32) a, options $ld_opts) };
                v
            }, sim: { crate::sim::intrinsics::shared_load::<u16>(a, $ld) })
        }
        #[inline(always)]
        unsafe fn ld32(a: u32) -> u32 {
            device!("shared::read", {
                let v: u32;
                // SAFETY: the caller guarantees `a` is a valid, 4-aligned shared address.
                unsafe { core::arch::asm!(concat!($ld, ".u32 {v}, [{a}];"), v = out(reg32) v, a = in(reg32) a, options $ld_opts) };
                v
            }, sim: { crate::sim::intrinsics::shared_load::<u32>(a, $ld) })
        }
        #[inline(always)]
        unsafe fn ld64(a: u32) -> u64 {
            device!("shared::read", {
                let v: u64;
                // SAFETY: the caller guarantees `a` is a valid, 8-aligned shared address.
                unsafe { core::arch::asm!(concat!($ld, ".u64 {v}, [{a}];"), v = out(reg64) v, a = in(reg32) a, options $ld_opts) };
                v
            }, sim: { crate::sim::intrinsics::shared_load::<u64>(a, $ld) })
        }
        #[inline(always)]
        unsafe fn ld128(a: u32) -> [u32; 4] {
            device!("shared::read", {
                let (x, y, z, w): (u32, u32, u32, u32);
                // SAFETY: the caller guarantees `a` is a valid, 16-aligned shared address.
                unsafe {
                    core::arch::asm!(
                        concat!($ld, ".v4.u32 {{{x}, {y}, {z}, {w}}}, [{a}];"),
                        x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                        a = in(reg32) a, options $ld_opts,
                    )
                };
                [x, y, z, w]
            }, sim: { crate::sim::intrinsics::shared_load::<[u32; 4]>(a, $ld) })
        }
        #[inline(always)]
        unsafe fn st8(a: u32, v: u8) {
            device!("shared::write", {
                // SAFETY: the caller guarantees `a` is a valid shared address.
                unsafe { core::arch::asm!(concat!($st, ".u8 [{a}], {v};"), a = in(reg32) a, v = in(reg16) v as u16, options(nostack)) }
            }, sim: { crate::sim::intrinsics::shared_store::<u8>(a, v, $st) })
        }
        #[inline(always)]
        unsafe fn st16(a: u32, v: u16) {
            device!("shared::write", {
                // SAFETY: the caller guarantees `a` is a valid, 2-aligned shared address.
                unsafe { core::arch::asm!(concat!($st, ".u16 [{a}], {v};"), a = in(reg32) a, v = in(reg16) v, options(nostack)) }
            }, sim: { crate::sim::intrinsics::shared_store::<u16>(a, v, $st) })
        }
        #[inline(always)]
        unsafe fn st32(a: u32, v: u32) {
            device!("shared::write", {
                // SAFETY: the caller guarantees `a` is a valid, 4-aligned shared address.
                unsafe { core::arch::asm!(concat!($st, ".u32 [{a}], {v};"), a = in(reg32) a, v = in(reg32) v, options(nostack)) }
            }, sim: { crate::sim::intrinsics::shared_store::<u32>(a, v, $st) })
        }
        #[inline(always)]
        unsafe fn st64(a: u32, v: u64) {
            device!("shared::write", {
                // SAFETY: the caller guarantees `a` is a valid, 8-aligned shared address.
                unsafe { core::arch::asm!(concat!($st, ".u64 [{a}], {v};"), a = in(reg32) a, v = in(reg64) v, options(nostack)) }
            }, sim: { crate::sim::intrinsics::shared_store::<u64>(a, v, $st) })
        }
        #[inline(always)]
        unsafe fn st128(a: u32, v: [u32; 4]) {
            device!("shared::write", {
                // SAFETY: the caller guarantees `a` is a valid, 16-aligned shared address.
                unsafe {
                    core::arch::asm!(
                        concat!($st, ".v4.u32 [{a}], {{{x}, {y}, {z}, {w}}};"),
                        a = in(reg32) a,
                        x = in(reg32) v[0], y = in(reg32) v[1], z = in(reg32) v[2], w = in(reg32) v[3],
                        options(nostack),
                    )
                }
            }, sim: { crate::sim::intrinsics::shared_store::<[u32; 4]>(a, v, $st) })
        }

        /// Loads a `T` from shared address `addr`.
        ///
        /// # Safety
        /// `addr` must address `size_of::<T>()` bytes of this block's shared memory, aligned to
        /// `access_width::<T>()`, holding a valid `T` (any bit pattern is valid for the
        /// `DeviceCopy` types the public API allows).
        #[inline(always)]
        pub(crate) unsafe fn load<T: Copy>(addr: u32) -> T {
            let mut out = MaybeUninit::<T>::uninit();
            let dst = out.as_mut_ptr().cast::<u8>();
            let width = access_width::<T>();
            let mut offset = 0;
            while offset < size_of::<T>() {
                let a = addr + offset as u32;
                // SAFETY: `a` is in bounds and aligned to `width` (the caller's guarantee);
                // `dst + offset` has `width` bytes left inside `out` (width divides the size).
                unsafe {
                    let d = dst.add(offset);
                    match width {
                        1 => d.write(ld8(a)),
                        2 => d.cast::<u16>().write_unaligned(ld16(a)),
                        4 => d.cast::<u32>().write_unaligned(ld32(a)),
                        8 => d.cast::<u64>().write_unaligned(ld64(a)),
                        _ => d.cast::<[u32; 4]>().write_unaligned(ld128(a)),
                    }
                }
                offset += width;
            }
            // SAFETY: every byte of `out` was written above.
            unsafe { out.assume_init() }
        }

        /// Stores `value` to shared address `addr`.
        ///
        /// # Safety
        /// `addr` must address `size_of::<T>()` bytes of this block's shared memory, aligned to
        /// `access_width::<T>()`.
        #[inline(always)]
        pub(crate) unsafe fn store<T: Copy>(addr: u32, value: T) {
            let src = (&raw const value).cast::<u8>();
            let width = access_width::<T>();
            let mut offset = 0;
            while offset < size_of::<T>() {
                let a = addr + offset as u32;
                // SAFETY: as in `load`; `value` is a `DeviceCopy` type without padding, so all
                // bytes read from it are initialized.
                unsafe {
                    let s = src.add(offset);
                    match width {
                        1 => st8(a, s.read()),
                        2 => st16(a, s.cast::<u16>().read_unaligned()),
                        4 => st32(a, s.cast::<u32>().read_unaligned()),
                        8 => st64(a, s.cast::<u64>().read_unaligned()),
                        _ => st128(a, s.cast::<[u32; 4]>().read_unaligned()),
                    }
                }
                offset += width;
            }
        }
    };
}

/// Plain accesses: loads are `pure, readonly` so the compiler may merge repeated loads with no
/// store or barrier in between (stores and barriers are memory-clobbering asm, so nothing moves
/// across them).
pub(crate) mod plain {
    use super::*;
    chunk_ops!("ld.shared", "st.shared", (pure, readonly, nostack));
}

/// `ld.volatile.shared`/`st.volatile.shared`: every access is performed, in program order; for
/// polling a flag that another thread of the block writes.
pub(crate) mod volatile {
    use super::*;
    chunk_ops!(
        "ld.volatile.shared",
        "st.volatile.shared",
        (readonly, nostack)
    );
}

/// The generic address of shared-window address `addr` (`cvta.shared.u64`), for code that wants
/// an ordinary pointer. Accesses through it are slower generic loads/stores.
#[inline(always)]
pub(crate) fn to_generic(addr: u32) -> *mut u8 {
    device!("shared::as_ptr", {
        let p: u64;
        // SAFETY: an address conversion; no memory access.
        unsafe {
            core::arch::asm!(
                "cvta.shared.u64 {p}, {a};",
                p = out(reg64) p,
                a = in(reg64) addr as u64,
                options(pure, nomem, nostack),
            )
        };
        p as *mut u8
    }, sim: { crate::sim::intrinsics::shared_ptr(addr, 0) })
}

#[cfg(test)]
mod tests {
    use super::access_width;

    #[test]
    fn access_width_is_the_largest_power_of_two_dividing_the_size_up_to_16() {
        assert_eq!(access_width::<u8>(), 1);
        assert_eq!(access_width::<u16>(), 2);
        assert_eq!(access_width::<f32>(), 4);
        assert_eq!(access_width::<[f32; 3]>(), 4);
        assert_eq!(access_width::<[u8; 6]>(), 2);
        assert_eq!(access_width::<f64>(), 8);
        assert_eq!(access_width::<[f64; 3]>(), 8);
        assert_eq!(access_width::<[u32; 4]>(), 16);
        assert_eq!(access_width::<[u32; 16]>(), 16);
    }
}
