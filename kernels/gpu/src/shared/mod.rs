//! Block-shared memory: static arrays ([`shared_array!`](crate::shared_array)) and the dynamic
//! region sized at launch ([`dynamic`]).
//!
//! Shared memory is on-chip, visible to all threads of one block and only during the block's
//! lifetime. It is **not initialized**: a kernel must write an element before reading it
//! (typically each thread writes its part, then [`crate::sync::sync_threads`], then everyone
//! reads). Nothing here pretends otherwise: there is no initializer.
//!
//! # Views, not references
//! Many threads read and write the same shared memory, so handing out `&mut T` (or even `&T`
//! while another thread writes) would be aliasing undefined behaviour. [`SharedArray`] and
//! [`SharedSlice`] are instead small `Copy` handles (a 32-bit shared-window address) whose
//! accessors move values in and out: [`SharedArray::read`] / [`SharedArray::write`] (bounds
//! checked), `read_unchecked` / `write_unchecked` (`unsafe`, no check), `read_volatile` /
//! `write_volatile`, and atomics (`atomic_add`, ...). Element types are [`DeviceCopy`]: every
//! bit pattern is a valid value, so a read of a never-written (or concurrently written) element
//! yields *some* value, never undefined behaviour; getting the right value is the kernel's job
//! (barriers). [`SharedArray::as_ptr`] gives a raw `*mut T` for code that needs a pointer.
//!
//! # Hot path
//! Accessors compile to `ld.shared` / `st.shared` with the 32-bit address (SASS `LDS`/`STS`,
//! offsets folded), one instruction for 1/2/4/8/16-byte types (`.v4.u32` for 16). A generic
//! pointer from `as_ptr` gives the slower generic `LD`/`ST`.
//!
//! # Static arrays
//! ```ignore
//! let tile = shared_array!(f32, 256);      // or shared_array!([f32; 256])
//! tile.write(t, x[i]);
//! sync::sync_threads();
//! let left = tile.read((t + 255) % 256);
//! ```
//! Each `shared_array!` call site declares one PTX `.shared` array, aligned to 16 bytes (or the
//! type's alignment if larger). Like CUDA's `__shared__`, it is one array per block, the same
//! for every call of the enclosing function: calling that function twice in a kernel reuses it.
//! The element type and length must be concrete (not generic parameters of the enclosing
//! function); the length may be a constant expression. Static shared memory is limited to
//! 48 KiB per block (ptxas reports an error beyond that).
//!
//! # Dynamic shared memory
//! ```ignore
//! let buf = shared::dynamic::<f32>();      // length = launch's dynamic bytes / 4
//! let (a, b) = buf.split_at(256);          // carve it up
//! ```
//! The size comes from the launch configuration (`shared_mem_bytes`) and is read from
//! `%dynamic_smem_size`; all views of it alias the same bytes.

use core::marker::PhantomData;
use core::mem::{align_of, size_of};

use crate::DeviceCopy;
use crate::atomic::{Addr, AtomicArith, AtomicBitwise, AtomicValue, Scope};

mod access;
mod dynamic;

pub use dynamic::{dynamic, dynamic_at, dynamic_size_bytes};

/// A statically sized array in block-shared memory, created by
/// [`shared_array!`](crate::shared_array). A `Copy` handle: see the [module docs](self).
pub struct SharedArray<T, const N: usize> {
    addr: u32,
    _marker: PhantomData<*mut T>,
}

/// A run of `T` in block-shared memory with a run-time length: the dynamic region ([`dynamic`])
/// or a part of a view ([`SharedSlice::split_at`], [`SharedArray::as_slice`]).
pub struct SharedSlice<T> {
    addr: u32,
    len: u32,
    _marker: PhantomData<*mut T>,
}

impl<T, const N: usize> Clone for SharedArray<T, N> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize> Copy for SharedArray<T, N> {}

impl<T> Clone for SharedSlice<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedSlice<T> {}

/// Panics (traps on the GPU) for an out-of-bounds shared index; kept out of line so the hot path
/// is a compare and a branch.
#[cold]
// Out of line when panics report (a call keeps the hot path short); inline when every panic is a
// plain `trap` (panic = "immediate-abort", see gpu_builder::Checks), where a call would cost more.
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
#[track_caller]
fn out_of_bounds(index: usize, len: usize) -> ! {
    #[cfg(all(target_arch = "nvptx64", gpu_unchecked_indexing))]
    // SAFETY: the kernel crate was built with unchecked indexing (`checks = "unchecked"`), whose
    // contract is that no index is out of bounds; the simulator and host builds keep the check.
    unsafe {
        let _ = (index, len);
        core::hint::unreachable_unchecked()
    }
    #[cfg(not(all(target_arch = "nvptx64", gpu_unchecked_indexing)))]
    panic!("shared memory index {index} out of bounds (length {len})")
}

/// The accessors common to [`SharedArray`] and [`SharedSlice`]; both provide `len()` and an
/// `addr` field (the 16-byte aligned, or element-boundary, start of the view).
macro_rules! view_methods {
    () => {
        /// Whether the view has no elements.
        #[inline(always)]
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// The 32-bit shared-window address of element 0, for inline PTX (`ld.shared`, ...) and
        /// [`crate::atomic::shared`].
        #[inline(always)]
        pub fn addr(&self) -> u32 {
            self.addr
        }

        /// The shared-window address of element `i`. Panics if `i >= len()`.
        #[inline(always)]
        #[track_caller]
        pub fn addr_of(&self, i: usize) -> u32 {
            if i >= self.len() {
                out_of_bounds(i, self.len());
            }
            self.addr + i as u32 * size_of::<T>() as u32
        }

        #[inline(always)]
        fn unchecked_addr(&self, i: usize) -> u32 {
            // In bounds (checked by callers or promised), so the byte offset fits in u32:
            // shared memory is far smaller than 4 GiB.
            self.addr
                .wrapping_add((i as u32).wrapping_mul(size_of::<T>() as u32))
        }

        /// A generic pointer to element 0 (`cvta.shared`). Dereferencing it is `unsafe` and
        /// slower than the accessors; other threads may be writing the memory.
        #[inline(always)]
        pub fn as_ptr(&self) -> *mut T {
            access::to_generic(self.addr).cast()
        }

        /// Reads element `i` (`ld.shared`). Panics if `i >= len()`.
        #[inline(always)]
        #[track_caller]
        pub fn read(&self, i: usize) -> T {
            let a = self.addr_of(i);
            // SAFETY: `a` is an in-bounds element address, aligned to the access width (module
            // invariant); `T: DeviceCopy` is valid for any bit pattern.
            unsafe { access::plain::load(a) }
        }

        /// Writes `value` to element `i` (`st.shared`). Panics if `i >= len()`.
        #[inline(always)]
        #[track_caller]
        pub fn write(&self, i: usize, value: T) {
            let a = self.addr_of(i);
            // SAFETY: `a` is an in-bounds, aligned element address.
            unsafe { access::plain::store(a, value) }
        }

        /// Reads element `i` without a bounds check.
        ///
        /// # Safety
        /// `i < self.len()`.
        #[inline(always)]
        pub unsafe fn read_unchecked(&self, i: usize) -> T {
            // SAFETY: the caller guarantees `i` is in bounds; see `read`.
            unsafe { access::plain::load(self.unchecked_addr(i)) }
        }

        /// Writes element `i` without a bounds check.
        ///
        /// # Safety
        /// `i < self.len()`.
        #[inline(always)]
        pub unsafe fn write_unchecked(&self, i: usize, value: T) {
            // SAFETY: the caller guarantees `i` is in bounds; see `write`.
            unsafe { access::plain::store(self.unchecked_addr(i), value) }
        }

        /// Reads element `i` with `ld.volatile.shared`: never merged with other reads or hoisted
        /// out of a loop, for polling a value another thread writes. Panics if out of bounds.
        #[inline(always)]
        #[track_caller]
        pub fn read_volatile(&self, i: usize) -> T {
            let a = self.addr_of(i);
            // SAFETY: as for `read`.
            unsafe { access::volatile::load(a) }
        }

        /// Writes element `i` with `st.volatile.shared`. Panics if out of bounds.
        #[inline(always)]
        #[track_caller]
        pub fn write_volatile(&self, i: usize, value: T) {
            let a = self.addr_of(i);
            // SAFETY: as for `write`.
            unsafe { access::volatile::store(a, value) }
        }

        /// Cooperative fill: thread `t` of the block writes elements `t, t + block_size, ...`.
        /// Call it from every thread of the block, then [`crate::sync::sync_threads`] before
        /// reading.
        #[inline(always)]
        pub fn block_fill(&self, value: T) {
            let step = crate::thread::block_size() as usize;
            let mut i = crate::thread::local_index() as usize;
            while i < self.len() {
                // SAFETY: `i < len()`.
                unsafe { self.write_unchecked(i, value) };
                i += step;
            }
        }

        /// Atomically adds `value` to element `i` at block scope (`atom.shared.add`); returns
        /// the old value. Panics if out of bounds.
        #[inline(always)]
        #[track_caller]
        pub fn atomic_add(&self, i: usize, value: T) -> T
        where
            T: AtomicArith,
        {
            self.atomic_add_scoped(i, value, Scope::Block)
        }

        /// [`Self::atomic_add`] at `scope` (wider than `Block` only matters when threads of
        /// other blocks reach this memory, e.g. through a cluster).
        #[inline(always)]
        #[track_caller]
        pub fn atomic_add_scoped(&self, i: usize, value: T, scope: Scope) -> T
        where
            T: AtomicArith,
        {
            let a = self.addr_of(i);
            // SAFETY: `a` is an in-bounds, aligned element of this block's shared memory.
            unsafe { T::__add(Addr::Shared(a), value, scope) }
        }

        /// Atomically subtracts `value` from element `i` (block scope); returns the old value.
        #[inline(always)]
        #[track_caller]
        pub fn atomic_sub(&self, i: usize, value: T) -> T
        where
            T: AtomicArith,
        {
            let a = self.addr_of(i);
            // SAFETY: as for `atomic_add_scoped`.
            unsafe { T::__sub(Addr::Shared(a), value, Scope::Block) }
        }

        /// Atomically stores `min(element, value)` (block scope); returns the old value.
        #[inline(always)]
        #[track_caller]
        pub fn atomic_min(&self, i: usize, value: T) -> T
        where
            T: AtomicArith,
        {
            let a = self.addr_of(i);
            // SAFETY: as for `atomic_add_scoped`.
            unsafe { T::__min(Addr::Shared(a), value, Scope::Block) }
        }

        /// Atomically stores `max(element, value)` (block scope); returns the old value.
        #[inline(always)]
        #[track_caller]
        pub fn atomic_max(&self, i: usize, value: T) -> T
        where
            T: AtomicArith,
        {
            let a = self.addr_of(i);
            // SAFETY: as for `atomic_add_scoped`.
            unsafe { T::__max(Addr::Shared(a), value, Scope::Block) }
        }

        /// Atomically stores `element & value` (block scope); returns the old value.
        #[inline(always)]
        #[track_caller]
        pub fn atomic_and(&self, i: usize, value: T) -> T
        where
            T: AtomicBitwise,
        {
            let a = self.addr_of(i);
            // SAFETY: as for `atomic_add_scoped`.
            unsafe { T::__and(Addr::Shared(a), value, Scope::Block) }
        }

        /// Atomically stores `element | value` (block scope); returns the old value.
        #[inline(always)]
        #[track_caller]
        pub fn atomic_or(&self, i: usize, value: T) -> T
        where
            T: AtomicBitwise,
        {
            let a = self.addr_of(i);
            // SAFETY: as for `atomic_add_scoped`.
            unsafe { T::__or(Addr::Shared(a), value, Scope::Block) }
        }

        /// Atomically stores `element ^ value` (block scope); returns the old value.
        #[inline(always)]
        #[track_caller]
        pub fn atomic_xor(&self, i: usize, value: T) -> T
        where
            T: AtomicBitwise,
        {
            let a = self.addr_of(i);
            // SAFETY: as for `atomic_add_scoped`.
            unsafe { T::__xor(Addr::Shared(a), value, Scope::Block) }
        }

        /// Atomically replaces element `i` with `value` (block scope); returns the old value.
        #[inline(always)]
        #[track_caller]
        pub fn atomic_exch(&self, i: usize, value: T) -> T
        where
            T: AtomicValue,
        {
            let a = self.addr_of(i);
            // SAFETY: as for `atomic_add_scoped`.
            unsafe { T::__exch(Addr::Shared(a), value, Scope::Block) }
        }

        /// Atomic compare-and-swap of element `i` (block scope, bitwise compare): stores `new`
        /// if the element equals `expected`. Returns the old value.
        #[inline(always)]
        #[track_caller]
        pub fn atomic_cas(&self, i: usize, expected: T, new: T) -> T
        where
            T: AtomicValue,
        {
            let a = self.addr_of(i);
            // SAFETY: as for `atomic_add_scoped`.
            unsafe { T::__cas(Addr::Shared(a), expected, new, Scope::Block) }
        }
    };
}

impl<T: DeviceCopy, const N: usize> SharedArray<T, N> {
    /// The number of elements.
    pub const LEN: usize = N;

    /// Wraps the shared-window address of a static array; used by `shared_array!`.
    ///
    /// # Safety
    /// `addr` must be the address of a `.shared` declaration of at least
    /// `size_of::<[T; N]>()` bytes aligned to 16 (or more), which nothing else uses.
    #[doc(hidden)]
    #[inline(always)]
    pub const unsafe fn __from_addr(addr: u32) -> Self {
        SharedArray {
            addr,
            _marker: PhantomData,
        }
    }

    /// The number of elements, `N`.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        N
    }

    /// The whole array as a [`SharedSlice`].
    #[inline(always)]
    pub fn as_slice(&self) -> SharedSlice<T> {
        SharedSlice {
            addr: self.addr,
            len: N as u32,
            _marker: PhantomData,
        }
    }

    view_methods!();
}

impl<T: DeviceCopy> SharedSlice<T> {
    /// The number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Splits into elements `[0, mid)` and `[mid, len)`. Panics if `mid > len()`. Both halves
    /// start on element boundaries of a 16-byte aligned region, so the accessors keep their
    /// single-instruction form.
    #[inline(always)]
    #[track_caller]
    pub fn split_at(&self, mid: usize) -> (SharedSlice<T>, SharedSlice<T>) {
        if mid > self.len() {
            out_of_bounds(mid, self.len());
        }
        let mid = mid as u32;
        (
            SharedSlice {
                addr: self.addr,
                len: mid,
                _marker: PhantomData,
            },
            SharedSlice {
                addr: self.addr + mid * size_of::<T>() as u32,
                len: self.len - mid,
                _marker: PhantomData,
            },
        )
    }

    /// The same bytes viewed as `U` (`len` = the byte length / `size_of::<U>()`, rounded
    /// down): lets one scratch region serve several element types, e.g. a block algorithm's
    /// temporary storage. Panics if the view's address is not aligned for `U`.
    #[inline(always)]
    #[track_caller]
    pub fn cast<U: DeviceCopy>(&self) -> SharedSlice<U> {
        if !self.addr.is_multiple_of(align_of::<U>() as u32) {
            misaligned_cast();
        }
        let bytes = self.len * size_of::<T>() as u32;
        SharedSlice {
            addr: self.addr,
            len: bytes / size_of::<U>() as u32,
            _marker: PhantomData,
        }
    }

    view_methods!();
}

#[cold]
// Out of line when panics report (a call keeps the hot path short); inline when every panic is a
// plain `trap` (panic = "immediate-abort", see gpu_builder::Checks), where a call would cost more.
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
#[track_caller]
fn misaligned_cast() -> ! {
    panic!("SharedSlice::cast: the view is not aligned for the new element type")
}

/// `.align` of a `shared_array!` declaration: 16 (so 16-byte vector accesses are legal), or
/// more if the element type asks for it.
#[doc(hidden)]
pub const fn __static_align<T>() -> usize {
    if align_of::<T>() > 16 {
        align_of::<T>()
    } else {
        16
    }
}

/// Byte size of a `shared_array!` declaration; a compile error for zero-sized arrays, which PTX
/// cannot declare.
#[doc(hidden)]
pub const fn __static_bytes<T, const N: usize>() -> usize {
    assert!(
        size_of::<T>() > 0 && N > 0,
        "shared_array!: the array must not be empty (and the element type not zero-sized)"
    );
    size_of::<[T; N]>()
}

/// What `shared_array!` evaluates to on the host, where there is no shared memory.
#[doc(hidden)]
#[track_caller]
pub fn __host_addr(site: usize, bytes: usize, align: usize) -> u32 {
    #[cfg(feature = "sim")]
    {
        crate::sim::intrinsics::static_shared_addr(site, bytes, align)
    }
    #[cfg(not(feature = "sim"))]
    {
        let _ = (site, bytes, align);
        crate::host::unsupported("shared_array!")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_layout() {
        assert_eq!(__static_align::<u8>(), 16);
        assert_eq!(__static_align::<f64>(), 16);
        assert_eq!(__static_bytes::<f32, 256>(), 1024);
        assert_eq!(__static_bytes::<[f32; 3], 10>(), 120);
    }
}
