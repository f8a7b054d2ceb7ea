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
        k.checked_mul(stride)
            .and_then(|o| o.checked_add(self.0))
            .map(ThreadIndex)
    }
}

/// A 2-D index (column `x`, row `y`) that is unique to the calling thread within the launch.
///
/// Created by [`crate::thread::global_index_2d`]. [`DisjointSlice::get_mut_2d`] turns it into
/// the element `y * row_stride + x` of a row-major array, refusing `x >= row_stride` so that two
/// different (x, y) pairs can never land on the same element (for one stride shared by all
/// threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadIndex2D {
    x: usize,
    y: usize,
}

impl ThreadIndex2D {
    /// # Safety
    /// The pair `(x, y)` must differ between every pair of threads of the launch that use it to
    /// access the same `DisjointSlice`.
    #[inline(always)]
    pub const unsafe fn new_unchecked(x: usize, y: usize) -> Self {
        ThreadIndex2D { x, y }
    }

    /// The column.
    #[inline(always)]
    pub const fn x(self) -> usize {
        self.x
    }

    /// The row.
    #[inline(always)]
    pub const fn y(self) -> usize {
        self.y
    }

    /// `y * row_stride + x`, or `None` when `x >= row_stride` (the column is outside the row)
    /// or the product overflows. Distinct indices give distinct results for the same
    /// `row_stride`.
    #[inline(always)]
    pub fn linear(self, row_stride: usize) -> Option<usize> {
        if self.x >= row_stride {
            return None;
        }
        self.y
            .checked_mul(row_stride)
            .and_then(|r| r.checked_add(self.x))
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
        DisjointSlice {
            ptr,
            len,
            _marker: PhantomData,
        }
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

    /// This thread's element of a row-major 2-D array with rows of `row_stride` elements: element
    /// `y * row_stride + x`. `None` when `x >= row_stride` (outside the row: accepting it would
    /// let two threads reach the same element) or the element is past the end.
    ///
    /// # Safety
    /// Every thread of the launch that accesses this slice through a 2-D index must pass the
    /// same `row_stride` (typically a kernel parameter or a constant). With a fixed stride,
    /// distinct `(x, y)` with `x < row_stride` give distinct elements; if threads used different
    /// strides, `(0, 1)` with stride 10 and `(0, 2)` with stride 5 would both reach element 10.
    #[inline(always)]
    pub unsafe fn get_mut_2d(&mut self, index: ThreadIndex2D, row_stride: usize) -> Option<&mut T> {
        match index.linear(row_stride) {
            Some(i) if i < self.len => {
                // SAFETY: in bounds; `ThreadIndex2D` pairs differ between threads, `x` is below
                // `row_stride` and the caller promises every thread uses the same `row_stride`,
                // so `y * row_stride + x` differs between threads; `&mut self` prevents a second
                // reference from this thread.
                Some(unsafe { &mut *self.ptr.add(i) })
            }
            _ => None,
        }
    }

    /// Writes `value` to this thread's 2-D element (see [`Self::get_mut_2d`]); returns `false`
    /// when there is none.
    ///
    /// # Safety
    /// As for [`Self::get_mut_2d`]: every thread passes the same `row_stride`.
    #[inline(always)]
    pub unsafe fn set_2d(&mut self, index: ThreadIndex2D, row_stride: usize, value: T) -> bool {
        // SAFETY: forwarded to the caller.
        match unsafe { self.get_mut_2d(index, row_stride) } {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
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
        #[cfg(not(all(target_arch = "nvptx64", gpu_unchecked_indexing)))]
        assert!(
            index < self.len,
            "DisjointSlice::write_unchecked_race: index out of bounds"
        );
        // SAFETY: in bounds; exclusivity is the caller's promise.
        unsafe { self.ptr.add(index).write(value) }
    }

    /// Elements `range` alone, as a slice of their own (index 0 is `range.start`). Consumes
    /// `self`, so no second handle to them remains. Panics (traps) when the range is reversed
    /// or past the end.
    #[inline(always)]
    pub fn into_range(self, range: core::ops::Range<usize>) -> DisjointSlice<'a, T> {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "DisjointSlice::into_range: range out of bounds"
        );
        DisjointSlice {
            // SAFETY: `range.start <= len`, within (or one past) the allocation.
            ptr: unsafe { self.ptr.add(range.start) },
            len: range.end - range.start,
            _marker: PhantomData,
        }
    }

    /// The raw pointer, for atomics and inline PTX.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_d_indices_stay_inside_their_row() {
        // SAFETY: test values, no slice is accessed concurrently.
        let (a, b) = unsafe {
            (
                ThreadIndex2D::new_unchecked(3, 2),
                ThreadIndex2D::new_unchecked(10, 0),
            )
        };
        assert_eq!(a.linear(8), Some(19));
        assert_eq!(b.linear(8), None, "x past the row would alias the next row");
        assert_eq!(a.linear(usize::MAX), None, "overflow");

        let mut data = [0u32; 16];
        // SAFETY: `data` outlives the slice and nothing else touches it.
        let mut out = unsafe { DisjointSlice::__from_raw(data.as_mut_ptr(), data.len()) };
        // SAFETY: one thread, one stride.
        unsafe {
            assert!(out.set_2d(a, 4, 7)); // element 2 * 4 + 3 = 11
            assert!(!out.set_2d(a, 8, 7)); // element 19: out of bounds
            assert!(!out.set_2d(b, 4, 7)); // x >= row stride
        }
        assert_eq!(data[11], 7);
        assert_eq!(data.iter().filter(|&&v| v != 0).count(), 1);
    }
}
