//! Kernel output slices that give each thread only its own elements.
//!
//! A kernel's threads all run the same function, so a `&mut [T]` parameter would hand the same
//! mutable slice to thousands of threads at once: aliased `&mut`, undefined behaviour in Rust.
//! `DisjointSlice` is the safe alternative: a thread gets `&mut` access only to the element
//! named by a [`ThreadIndex`], a value that only the thread-indexing functions create and that
//! is different in every thread of a launch. Scatter writes (several threads choosing targets
//! at run time) go through the `unsafe` escape hatches, where the kernel author promises that
//! no two threads touch the same element.

use core::marker::PhantomData;

/// An index that is unique to the calling thread within the launch.
///
/// Created by [`crate::thread::global_index`] (the thread's linear index over the whole grid)
/// and [`ThreadIndex::strided`]; it cannot be built from an arbitrary integer in safe code, which
/// is what makes [`DisjointSlice::get_mut`] sound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadIndex(usize);

impl ThreadIndex {
    /// # Safety
    /// `index` must differ between every pair of threads of the launch that use it to access the
    /// same `DisjointSlice`.
    #[inline(always)]
    pub const unsafe fn new_unchecked(index: usize) -> Self {
        ThreadIndex(index)
    }

    /// The index value, for reading inputs at the same position.
    #[inline(always)]
    pub const fn get(self) -> usize {
        self.0
    }

    /// `self + k * stride` for grid-stride loops: unique per thread as long as `stride` is at
    /// least the number of threads in the launch (e.g. [`crate::thread::grid_size`]) and `k`
    /// is the same loop counter in every thread. Returns `None` on overflow.
    ///
    /// # Safety
    /// `stride` must be at least the total number of threads in the launch.
    #[inline(always)]
    pub unsafe fn strided(self, k: usize, stride: usize) -> Option<Self> {
        k.checked_mul(stride).and_then(|o| o.checked_add(self.0)).map(ThreadIndex)
    }
}

/// A kernel output: `len` elements of `T` in device memory, written by distinct threads.
pub struct DisjointSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _marker: PhantomData<&'a mut [T]>,
}

impl<'a, T> DisjointSlice<'a, T> {
    /// Rebuilds a kernel parameter from the pointer and length the host passed.
    ///
    /// # Safety
    /// `ptr` must address `len` elements that no other parameter of the launch aliases, valid for
    /// the whole kernel.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn __from_raw(ptr: *mut T, len: usize) -> Self {
        DisjointSlice { ptr, len, _marker: PhantomData }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// This thread's element, or `None` when the index is past the end (the usual bounds check of
    /// a grid that is larger than the data).
    #[inline(always)]
    pub fn get_mut(&mut self, index: ThreadIndex) -> Option<&mut T> {
        if index.0 < self.len {
            // SAFETY: in bounds; `ThreadIndex` values differ between threads, so no other thread
            // obtains a reference to this element, and `&mut self` prevents a second one here.
            Some(unsafe { &mut *self.ptr.add(index.0) })
        } else {
            None
        }
    }

    /// Writes `value` to this thread's element; returns `false` when the index is out of bounds.
    #[inline(always)]
    pub fn set(&mut self, index: ThreadIndex, value: T) -> bool {
        match self.get_mut(index) {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
        }
    }

    /// Writes `value` at an arbitrary `index` (scatter). Panics (traps) when out of bounds.
    ///
    /// # Safety
    /// No other thread may read or write element `index` during this kernel unless all such
    /// accesses are ordered by barriers or atomics.
    #[inline(always)]
    pub unsafe fn write_unchecked_race(&self, index: usize, value: T) {
        assert!(index < self.len, "DisjointSlice::write_unchecked_race: index out of bounds");
        // SAFETY: in bounds; exclusivity is the caller's promise.
        unsafe { self.ptr.add(index).write(value) }
    }

    /// The raw pointer, for atomics and inline PTX.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}
