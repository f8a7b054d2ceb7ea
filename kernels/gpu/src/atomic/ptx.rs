//! The `atom` instructions behind [`crate::atomic`]: one inline-asm form per operation, type,
//! address space and scope, chosen by `match` on values that are constants after inlining.
//!
//! Floats travel as their bits (PTX `.f32` instructions accept `.b32` registers), so every asm
//! operand is an integer register.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables, unused_macros))]

use super::sealed::Sealed;
use super::{AtomicArith, AtomicBitwise, AtomicValue, Scope};

/// Where an atomic operates.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Addr {
    /// A generic address: global or shared memory (`atom.<op>`).
    Generic(*mut u8),
    /// A 32-bit address in this block's shared window (`atom.shared.<op>`).
    Shared(u32),
    /// A generic address known to point to global memory (`atom.global.<op>`): skips the run-time
    /// address-space check ptxas adds to generic atomics.
    Global(*mut u8),
}

impl Addr {
    #[inline(always)]
    pub fn generic<T>(ptr: *mut T) -> Self {
        Addr::Generic(ptr.cast())
    }

    #[inline(always)]
    pub fn shared(addr: u32) -> Self {
        Addr::Shared(addr)
    }

    #[inline(always)]
    pub fn global<T>(ptr: *mut T) -> Self {
        Addr::Global(ptr.cast())
    }
}

/// The global-window address of a generic pointer to global memory (`cvta.to.global.u64`; the
/// identity on current GPUs, but PTX asks for it).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn to_global(p: *mut u8) -> u64 {
    let g: u64;
    // SAFETY: an address conversion; no memory access.
    unsafe {
        core::arch::asm!("cvta.to.global.u64 {g}, {p};", g = out(reg64) g, p = in(reg64) p, options(pure, nomem, nostack))
    };
    g
}

/// The host pointer an atomic's address stands for on the simulator.
#[cfg(all(not(target_arch = "nvptx64"), feature = "sim"))]
fn sim_ptr(addr: Addr, size: usize) -> *mut u8 {
    match addr {
        Addr::Generic(p) | Addr::Global(p) => p,
        Addr::Shared(a) => crate::sim::intrinsics::shared_ptr(a, size),
    }
}

/// Expands `$mac!(scope, space, address register class, address, args...)` in each of the nine
/// (space, scope) combinations.
macro_rules! by_place {
    ($addr:expr, $scope:expr, $mac:ident!($($args:tt)*)) => {
        match ($addr, $scope) {
            (Addr::Generic(p), Scope::Block) => $mac!("cta", "", reg64, p, $($args)*),
            (Addr::Generic(p), Scope::Device) => $mac!("gpu", "", reg64, p, $($args)*),
            (Addr::Generic(p), Scope::System) => $mac!("sys", "", reg64, p, $($args)*),
            (Addr::Shared(a), Scope::Block) => $mac!("cta", ".shared", reg32, a, $($args)*),
            (Addr::Shared(a), Scope::Device) => $mac!("gpu", ".shared", reg32, a, $($args)*),
            (Addr::Shared(a), Scope::System) => $mac!("sys", ".shared", reg32, a, $($args)*),
            (Addr::Global(p), Scope::Block) => $mac!("cta", ".global", reg64, to_global(p), $($args)*),
            (Addr::Global(p), Scope::Device) => $mac!("gpu", ".global", reg64, to_global(p), $($args)*),
            (Addr::Global(p), Scope::System) => $mac!("sys", ".global", reg64, to_global(p), $($args)*),
        }
    };
}

/// `atom.relaxed.<scope><space>.<op> d, [a], b;`
macro_rules! atom2 {
    ($scope:literal, $space:literal, $areg:ident, $a:expr, $op:literal, $t:ty, $reg:ident, $b:expr) => {{
        let d: $t;
        core::arch::asm!(
            concat!("atom.relaxed.", $scope, $space, ".", $op, " {d}, [{a}], {b};"),
            d = out($reg) d,
            a = in($areg) $a,
            b = in($reg) $b,
            options(nostack),
        );
        d
    }};
}

/// `atom.relaxed.<scope><space>.cas.<type> d, [a], b, c;`
macro_rules! atom3 {
    ($scope:literal, $space:literal, $areg:ident, $a:expr, $op:literal, $t:ty, $reg:ident, $b:expr, $c:expr) => {{
        let d: $t;
        core::arch::asm!(
            concat!("atom.relaxed.", $scope, $space, ".", $op, " {d}, [{a}], {b}, {c};"),
            d = out($reg) d,
            a = in($areg) $a,
            b = in($reg) $b,
            c = in($reg) $c,
            options(nostack),
        );
        d
    }};
}

macro_rules! rmw_fns {
    ($($name:ident: $op:literal, $t:ty, $reg:ident;)*) => { $(
        #[inline(always)]
        pub(crate) unsafe fn $name(addr: Addr, v: $t, scope: Scope) -> $t {
            device!("atomic", {
                // SAFETY: the caller guarantees `addr` is a valid, aligned location of this size
                // that other threads access only atomically.
                unsafe { by_place!(addr, scope, atom2!($op, $t, $reg, v)) }
            }, sim: { // SAFETY: as on the GPU (the caller's guarantee on `addr`).
                unsafe { crate::sim::intrinsics::atomic(sim_ptr(addr, core::mem::size_of::<$t>()), $op, v as u64, 0) as $t } })
        }
    )* };
}

rmw_fns! {
    add_u32: "add.u32", u32, reg32;
    add_u64: "add.u64", u64, reg64;
    add_f32: "add.f32", u32, reg32;
    add_f64: "add.f64", u64, reg64;
    min_u32: "min.u32", u32, reg32;
    min_s32: "min.s32", u32, reg32;
    min_u64: "min.u64", u64, reg64;
    min_s64: "min.s64", u64, reg64;
    max_u32: "max.u32", u32, reg32;
    max_s32: "max.s32", u32, reg32;
    max_u64: "max.u64", u64, reg64;
    max_s64: "max.s64", u64, reg64;
    and_b32: "and.b32", u32, reg32;
    and_b64: "and.b64", u64, reg64;
    or_b32: "or.b32", u32, reg32;
    or_b64: "or.b64", u64, reg64;
    xor_b32: "xor.b32", u32, reg32;
    xor_b64: "xor.b64", u64, reg64;
    exch_b32: "exch.b32", u32, reg32;
    exch_b64: "exch.b64", u64, reg64;
    inc_u32: "inc.u32", u32, reg32;
    dec_u32: "dec.u32", u32, reg32;
}

macro_rules! cas_fns {
    ($($name:ident: $op:literal, $t:ty, $reg:ident;)*) => { $(
        #[inline(always)]
        pub(crate) unsafe fn $name(addr: Addr, expected: $t, new: $t, scope: Scope) -> $t {
            device!("atomic::cas", {
                // SAFETY: as for the read-modify-write functions above.
                unsafe { by_place!(addr, scope, atom3!($op, $t, $reg, expected, new)) }
            }, sim: { // SAFETY: as on the GPU (the caller's guarantee on `addr`).
                unsafe { crate::sim::intrinsics::atomic(sim_ptr(addr, core::mem::size_of::<$t>()), $op, expected as u64, new as u64) as $t } })
        }
    )* };
}

cas_fns! {
    cas_b32: "cas.b32", u32, reg32;
    cas_b64: "cas.b64", u64, reg64;
}

/// Implements the traits for an integer type through the bit-level functions; `$bits` is the
/// unsigned type of the same width, `as` converts losslessly between them.
macro_rules! impl_int {
    ($t:ty, $bits:ty, add: $add:ident, min: $min:ident, max: $max:ident, and: $and:ident, or: $or:ident,
     xor: $xor:ident, exch: $exch:ident, cas: $cas:ident) => {
        impl Sealed for $t {}

        impl AtomicValue for $t {
            #[inline(always)]
            unsafe fn __exch(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                unsafe { $exch(addr, v as $bits, scope) as $t }
            }
            #[inline(always)]
            unsafe fn __cas(addr: Addr, expected: Self, new: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                unsafe { $cas(addr, expected as $bits, new as $bits, scope) as $t }
            }
        }

        impl AtomicArith for $t {
            #[inline(always)]
            unsafe fn __add(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                unsafe { $add(addr, v as $bits, scope) as $t }
            }
            #[inline(always)]
            unsafe fn __sub(addr: Addr, v: Self, scope: Scope) -> Self {
                // Two's complement: subtracting v is adding its wrapping negation.
                // SAFETY: forwarded to the caller.
                unsafe { $add(addr, (v as $bits).wrapping_neg(), scope) as $t }
            }
            #[inline(always)]
            unsafe fn __min(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                unsafe { $min(addr, v as $bits, scope) as $t }
            }
            #[inline(always)]
            unsafe fn __max(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                unsafe { $max(addr, v as $bits, scope) as $t }
            }
        }

        impl AtomicBitwise for $t {
            #[inline(always)]
            unsafe fn __and(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                unsafe { $and(addr, v as $bits, scope) as $t }
            }
            #[inline(always)]
            unsafe fn __or(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                unsafe { $or(addr, v as $bits, scope) as $t }
            }
            #[inline(always)]
            unsafe fn __xor(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                unsafe { $xor(addr, v as $bits, scope) as $t }
            }
        }
    };
}

impl_int!(u32, u32, add: add_u32, min: min_u32, max: max_u32, and: and_b32, or: or_b32, xor: xor_b32, exch: exch_b32, cas: cas_b32);
impl_int!(i32, u32, add: add_u32, min: min_s32, max: max_s32, and: and_b32, or: or_b32, xor: xor_b32, exch: exch_b32, cas: cas_b32);
impl_int!(u64, u64, add: add_u64, min: min_u64, max: max_u64, and: and_b64, or: or_b64, xor: xor_b64, exch: exch_b64, cas: cas_b64);
impl_int!(i64, u64, add: add_u64, min: min_s64, max: max_s64, and: and_b64, or: or_b64, xor: xor_b64, exch: exch_b64, cas: cas_b64);

/// Implements the traits for a float type. `min`/`max` use the sign-split integer trick
/// described in the module docs: non-negative values order like their bits as signed integers,
/// negative values inversely like their bits as unsigned integers.
macro_rules! impl_float {
    ($t:ty, $sign_shift:literal, add: $add:ident, min_s: $min_s:ident, max_s: $max_s:ident,
     min_u: $min_u:ident, max_u: $max_u:ident, exch: $exch:ident, cas: $cas:ident) => {
        impl Sealed for $t {}

        impl AtomicValue for $t {
            #[inline(always)]
            unsafe fn __exch(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                <$t>::from_bits(unsafe { $exch(addr, v.to_bits(), scope) })
            }
            #[inline(always)]
            unsafe fn __cas(addr: Addr, expected: Self, new: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                <$t>::from_bits(unsafe { $cas(addr, expected.to_bits(), new.to_bits(), scope) })
            }
        }

        impl AtomicArith for $t {
            #[inline(always)]
            unsafe fn __add(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                <$t>::from_bits(unsafe { $add(addr, v.to_bits(), scope) })
            }
            #[inline(always)]
            unsafe fn __sub(addr: Addr, v: Self, scope: Scope) -> Self {
                // SAFETY: forwarded to the caller.
                unsafe { Self::__add(addr, -v, scope) }
            }
            #[inline(always)]
            unsafe fn __min(addr: Addr, v: Self, scope: Scope) -> Self {
                let bits = v.to_bits();
                // SAFETY: forwarded to the caller.
                let old = unsafe {
                    if bits >> $sign_shift == 0 {
                        $min_s(addr, bits, scope)
                    } else {
                        $max_u(addr, bits, scope)
                    }
                };
                <$t>::from_bits(old)
            }
            #[inline(always)]
            unsafe fn __max(addr: Addr, v: Self, scope: Scope) -> Self {
                let bits = v.to_bits();
                // SAFETY: forwarded to the caller.
                let old = unsafe {
                    if bits >> $sign_shift == 0 {
                        $max_s(addr, bits, scope)
                    } else {
                        $min_u(addr, bits, scope)
                    }
                };
                <$t>::from_bits(old)
            }
        }
    };
}

impl_float!(f32, 31, add: add_f32, min_s: min_s32, max_s: max_s32, min_u: min_u32, max_u: max_u32, exch: exch_b32, cas: cas_b32);
impl_float!(f64, 63, add: add_f64, min_s: min_s64, max_s: max_s64, min_u: min_u64, max_u: max_u64, exch: exch_b64, cas: cas_b64);
