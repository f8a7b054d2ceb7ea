//! Atomic read-modify-write operations on global and shared memory.
//!
//! Every function returns the value that was in memory before the operation. The plain forms
//! (`add`, `min`, ...) are *relaxed* and atomic at [`Scope::Device`], like CUDA's `atomicAdd`;
//! the `_scoped` forms choose the scope. Relaxed means atomic, but not ordering other memory
//! accesses: pair with [`crate::sync::fence_acq_rel`] (or a barrier) to publish data.
//!
//! They take raw pointers because the target is shared between threads by design: a generic
//! address works for both global and shared memory (`atom.relaxed.<scope>.<op>`). For shared
//! arrays, prefer the methods of [`crate::shared::SharedArray`] / [`crate::shared::SharedSlice`]
//! (`atomic_add(i, v)`, ...), which are safe, bounds-checked, and address the shared window
//! directly (`atom.shared`), which is cheaper than a generic address.
//!
//! | operation            | types                                   | PTX                    |
//! |----------------------|-----------------------------------------|------------------------|
//! | `add`, `sub`         | `u32 i32 u64 i64 f32 f64`               | `atom.add` (sub: add of the negation) |
//! | `min`, `max`         | `u32 i32 u64 i64`; `f32 f64` emulated   | `atom.min/max.{u,s}` |
//! | `and`, `or`, `xor`   | `u32 i32 u64 i64`                       | `atom.and/or/xor.b`    |
//! | `exch`, `cas`        | all six                                 | `atom.exch/cas.b`      |
//! | `inc_wrap`, `dec_wrap` | `u32`                                 | `atom.inc/dec.u32`     |
//!
//! Float `min`/`max`: PTX has `atom.min/max.f32` only from PTX ISA 8.1 on sm_90, so for every
//! target they use the integer trick: a non-negative float orders like its bits as a signed
//! integer (`atom.max.s32`), a negative one inversely like its bits as an unsigned integer
//! (`atom.min.u32`). Results are exact for non-NaN values (`-0.0 < +0.0` as in `total_cmp`);
//! NaNs are not treated specially. Float `cas` compares bits.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

mod ptx;

#[doc(hidden)]
pub use ptx::Addr;

/// The set of threads an atomic operation or fence is atomic / ordered with respect to.
/// Narrower is cheaper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The threads of this block (`.cta`). Enough for shared memory.
    Block,
    /// All threads of the GPU (`.gpu`). The default.
    Device,
    /// The GPU, the host and peer GPUs (`.sys`), for mapped or managed memory.
    System,
}

mod sealed {
    pub trait Sealed {}
}

/// Types with atomic exchange and compare-and-swap: `u32 i32 u64 i64 f32 f64`.
pub trait AtomicValue: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn __exch(addr: Addr, v: Self, scope: Scope) -> Self;
    #[doc(hidden)]
    unsafe fn __cas(addr: Addr, expected: Self, new: Self, scope: Scope) -> Self;
}

/// Types with atomic add, sub, min and max: `u32 i32 u64 i64 f32 f64`.
pub trait AtomicArith: AtomicValue {
    #[doc(hidden)]
    unsafe fn __add(addr: Addr, v: Self, scope: Scope) -> Self;
    #[doc(hidden)]
    unsafe fn __sub(addr: Addr, v: Self, scope: Scope) -> Self;
    #[doc(hidden)]
    unsafe fn __min(addr: Addr, v: Self, scope: Scope) -> Self;
    #[doc(hidden)]
    unsafe fn __max(addr: Addr, v: Self, scope: Scope) -> Self;
}

/// Integer types with atomic and, or, xor: `u32 i32 u64 i64`.
pub trait AtomicBitwise: AtomicValue {
    #[doc(hidden)]
    unsafe fn __and(addr: Addr, v: Self, scope: Scope) -> Self;
    #[doc(hidden)]
    unsafe fn __or(addr: Addr, v: Self, scope: Scope) -> Self;
    #[doc(hidden)]
    unsafe fn __xor(addr: Addr, v: Self, scope: Scope) -> Self;
}

/// Defines `name(ptr, v)` (device scope) and `name_scoped(ptr, v, scope)` for one operation.
macro_rules! public_rmw {
    ($($trait:ident::$method:ident => $name:ident, $scoped:ident: $doc:literal;)*) => { $(
        #[doc = concat!("Atomically ", $doc, " at device scope (relaxed); returns the old value.")]
        ///
        /// # Safety
        /// `ptr` must be a valid, aligned address of a `T` in global or shared memory for the
        /// duration of the call. Other threads may access it concurrently only atomically (or
        /// under the caller's own synchronization).
        #[inline(always)]
        pub unsafe fn $name<T: $trait>(ptr: *mut T, v: T) -> T {
            // SAFETY: forwarded to the caller.
            unsafe { T::$method(Addr::generic(ptr), v, Scope::Device) }
        }

        #[doc = concat!("Atomically ", $doc, " at `scope` (relaxed); returns the old value.")]
        ///
        /// # Safety
        #[doc = concat!("As for [`", stringify!($name), "`]; with `Scope::Block`, only threads of this block may access it concurrently.")]
        #[inline(always)]
        pub unsafe fn $scoped<T: $trait>(ptr: *mut T, v: T, scope: Scope) -> T {
            // SAFETY: forwarded to the caller.
            unsafe { T::$method(Addr::generic(ptr), v, scope) }
        }
    )* };
}

public_rmw! {
    AtomicArith::__add => add, add_scoped: "adds `v` to `*ptr`";
    AtomicArith::__sub => sub, sub_scoped: "subtracts `v` from `*ptr`";
    AtomicArith::__min => min, min_scoped: "stores `min(*ptr, v)`";
    AtomicArith::__max => max, max_scoped: "stores `max(*ptr, v)`";
    AtomicBitwise::__and => and, and_scoped: "stores `*ptr & v`";
    AtomicBitwise::__or => or, or_scoped: "stores `*ptr | v`";
    AtomicBitwise::__xor => xor, xor_scoped: "stores `*ptr ^ v`";
    AtomicValue::__exch => exch, exch_scoped: "stores `v`";
}

/// Atomic compare-and-swap at device scope (relaxed): if `*ptr == expected` (bitwise), stores
/// `new`. Returns the old value either way; the swap happened iff it equals `expected`.
///
/// # Safety
/// As for [`add`].
#[inline(always)]
pub unsafe fn cas<T: AtomicValue>(ptr: *mut T, expected: T, new: T) -> T {
    // SAFETY: forwarded to the caller.
    unsafe { T::__cas(Addr::generic(ptr), expected, new, Scope::Device) }
}

/// [`cas`] at `scope`.
///
/// # Safety
/// As for [`add_scoped`].
#[inline(always)]
pub unsafe fn cas_scoped<T: AtomicValue>(ptr: *mut T, expected: T, new: T, scope: Scope) -> T {
    // SAFETY: forwarded to the caller.
    unsafe { T::__cas(Addr::generic(ptr), expected, new, scope) }
}

/// `atomicInc`: stores `if old >= limit { 0 } else { old + 1 }` (a wrapping counter in
/// `0..=limit`), at device scope. Returns the old value.
///
/// # Safety
/// As for [`add`].
#[inline(always)]
pub unsafe fn inc_wrap(ptr: *mut u32, limit: u32) -> u32 {
    // SAFETY: forwarded to the caller.
    unsafe { ptx::inc_u32(Addr::generic(ptr), limit, Scope::Device) }
}

/// `atomicDec`: stores `if old == 0 || old > limit { limit } else { old - 1 }`, at device
/// scope. Returns the old value.
///
/// # Safety
/// As for [`add`].
#[inline(always)]
pub unsafe fn dec_wrap(ptr: *mut u32, limit: u32) -> u32 {
    // SAFETY: forwarded to the caller.
    unsafe { ptx::dec_u32(Addr::generic(ptr), limit, Scope::Device) }
}

/// Defines a module of scoped operations on one kind of address.
macro_rules! space_module {
    ($(#[$doc:meta])* $module:ident, $addr:ty, $variant:ident, $safety:literal) => {
        $(#[$doc])*
        pub mod $module {
            use super::{Addr, AtomicArith, AtomicBitwise, AtomicValue, Scope};

            space_fn!(AtomicArith::__add => add, $addr, $variant, $safety, "adds `v`");
            space_fn!(AtomicArith::__sub => sub, $addr, $variant, $safety, "subtracts `v`");
            space_fn!(AtomicArith::__min => min, $addr, $variant, $safety, "stores the minimum");
            space_fn!(AtomicArith::__max => max, $addr, $variant, $safety, "stores the maximum");
            space_fn!(AtomicBitwise::__and => and, $addr, $variant, $safety, "stores the bitwise and");
            space_fn!(AtomicBitwise::__or => or, $addr, $variant, $safety, "stores the bitwise or");
            space_fn!(AtomicBitwise::__xor => xor, $addr, $variant, $safety, "stores the bitwise xor");
            space_fn!(AtomicValue::__exch => exch, $addr, $variant, $safety, "stores `v`");

            /// Compare-and-swap at `scope` (see [`super::cas`]).
            ///
            /// # Safety
            #[doc = $safety]
            #[inline(always)]
            pub unsafe fn cas<T: AtomicValue>(addr: $addr, expected: T, new: T, scope: Scope) -> T {
                // SAFETY: forwarded to the caller.
                unsafe { T::__cas(Addr::$variant(addr), expected, new, scope) }
            }
        }
    };
}

/// One function of a [`space_module!`].
macro_rules! space_fn {
    ($trait:ident::$method:ident => $name:ident, $addr:ty, $variant:ident, $safety:literal, $what:literal) => {
        #[doc = concat!("Atomically ", $what, " at `scope` (relaxed); returns the old value.")]
        ///
        /// # Safety
        #[doc = $safety]
        #[inline(always)]
        pub unsafe fn $name<T: $trait>(addr: $addr, v: T, scope: Scope) -> T {
            // SAFETY: forwarded to the caller.
            unsafe { T::$method(Addr::$variant(addr), v, scope) }
        }
    };
}

space_module! {
    /// Operations on a 32-bit shared-window address (what
    /// [`crate::shared::SharedArray::addr_of`] returns), for custom shared-memory layouts. They
    /// emit `atom.shared`, which is cheaper than a generic address.
    shared, u32, shared,
    "`addr` must be the shared-window address of a valid, aligned `T` in this block's shared memory, accessed concurrently by other threads only atomically."
}

space_module! {
    /// Operations on pointers known to point to global memory (e.g. from
    /// [`crate::DisjointSlice::as_mut_ptr`]). They emit `atom.global`; the generic `atomic::add`
    /// etc. also work on global memory, but ptxas then adds a run-time check for shared
    /// addresses and a second code path.
    global, *mut T, global,
    "`addr` must be a valid, aligned address of a `T` in global memory for the duration of the call, accessed concurrently by other threads only atomically (with `Scope::Block`: only by threads of this block)."
}
