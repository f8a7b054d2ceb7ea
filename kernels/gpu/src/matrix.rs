//! Read-only 2-D views of kernel inputs: `image[(row, col)]` instead of `image[row * w + col]`.
//!
//! Why: in a kernel, `input[row * w + col]` is checked against `input.len()`, a bound the
//! compiler knows nothing about, so the check survives the kernel's own `row < h && col < w`
//! guard and each load waits behind a branch to the `trap` (ptxas moves no load across one).
//! [`Matrix::new`] checks once that the slice holds `rows × cols` elements; indexing then
//! checks `row < rows && col < cols`, which is the guard the kernel already wrote, so the
//! optimizer drops it and loads issue together, as in CUDA C++. Indices the kernel does not
//! guard are still checked (a failed check traps). In `checks = "unchecked"` device builds the
//! index check is removed like a slice's; the size check in `new` stays (it is once per thread).
//!
//! ```ignore
//! let input = Matrix::new(input, h, w); // traps unless input.len() >= h * w
//! if x < w && y < h {
//!     out.set_2d(idx, w, 2.0 * input[(y, x)]); // no check left
//! }
//! ```

use core::ops::Index;

/// A row-major `rows × cols` view of a slice: element `(r, c)` is `data[r * cols + c]`.
/// See the [module docs](self) for why kernels index through it.
#[derive(Debug)]
pub struct Matrix<'a, T> {
    data: &'a [T],
    rows: usize,
    cols: usize,
}

impl<T> Clone for Matrix<'_, T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Matrix<'_, T> {}

/// A failed check of a [`Matrix`]; out of line like the shared-memory checks.
#[cold]
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
#[track_caller]
fn too_small(len: usize, rows: usize, cols: usize) -> ! {
    panic!("matrix of {rows} x {cols} elements over a slice of {len}")
}

#[cold]
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
#[track_caller]
fn out_of_bounds(row: usize, col: usize, rows: usize, cols: usize) -> ! {
    #[cfg(all(target_arch = "nvptx64", gpu_unchecked_indexing))]
    // SAFETY: the kernel crate was built with unchecked indexing (`checks = "unchecked"`), whose
    // contract is that no index is out of bounds; the simulator and host builds keep the check.
    unsafe {
        let _ = (row, col, rows, cols);
        core::hint::unreachable_unchecked()
    }
    #[cfg(not(all(target_arch = "nvptx64", gpu_unchecked_indexing)))]
    panic!("matrix index ({row}, {col}) out of bounds ({rows} x {cols})")
}

impl<'a, T> Matrix<'a, T> {
    /// A `rows × cols` view of the first `rows * cols` elements of `data`. Panics (traps on the
    /// GPU) if `data` is shorter.
    #[inline(always)]
    #[track_caller]
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Self {
        match rows.checked_mul(cols) {
            Some(n) if n <= data.len() => {}
            _ => too_small(data.len(), rows, cols),
        }
        Matrix { data, rows, cols }
    }

    /// Rows (the height of an image).
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns (the width of an image, the row stride).
    #[inline(always)]
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Element `(row, col)`, or `None` outside the matrix.
    #[inline(always)]
    pub fn get(&self, row: usize, col: usize) -> Option<&'a T> {
        if row < self.rows && col < self.cols {
            // SAFETY: row * cols + col < rows * cols <= data.len() (checked in `new`).
            Some(unsafe { self.data.get_unchecked(row * self.cols + col) })
        } else {
            None
        }
    }

    /// Row `row` as a slice of `cols()` elements. Panics if `row >= rows()`.
    #[inline(always)]
    #[track_caller]
    pub fn row(&self, row: usize) -> &'a [T] {
        if row >= self.rows {
            out_of_bounds(row, 0, self.rows, self.cols);
        }
        // SAFETY: (row + 1) * cols <= rows * cols <= data.len() (checked in `new`).
        unsafe {
            self.data
                .get_unchecked(row * self.cols..(row + 1) * self.cols)
        }
    }
}

impl<T> Index<(usize, usize)> for Matrix<'_, T> {
    type Output = T;

    /// Element `(row, col)`. Panics (traps on the GPU) outside the matrix.
    #[inline(always)]
    #[track_caller]
    fn index(&self, (row, col): (usize, usize)) -> &T {
        match self.get(row, col) {
            Some(v) => v,
            None => out_of_bounds(row, col, self.rows, self.cols),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Matrix;

    #[test]
    fn indexes_row_major_and_checks_both_coordinates() {
        let data = [0, 1, 2, 3, 4, 5, 6];
        let m = Matrix::new(&data, 2, 3);
        assert_eq!((m.rows(), m.cols()), (2, 3));
        assert_eq!(m[(0, 0)], 0);
        assert_eq!(m[(1, 2)], 5);
        assert_eq!(m.row(1), &[3, 4, 5]);
        assert_eq!(m.get(0, 3), None, "col past the row, though data[3] exists");
        assert_eq!(m.get(2, 0), None);
    }

    #[test]
    #[should_panic(expected = "out of bounds (2 x 3)")]
    fn a_column_past_the_row_panics() {
        let data = [0; 6];
        let _ = Matrix::new(&data, 2, 3)[(0, 3)];
    }

    #[test]
    #[should_panic(expected = "matrix of 3 x 3 elements over a slice of 6")]
    fn a_short_slice_is_refused() {
        let data = [0; 6];
        let _ = Matrix::new(&data, 3, 3);
    }

    #[test]
    #[should_panic(expected = "over a slice of 6")]
    fn an_overflowing_shape_is_refused() {
        let data = [0; 6];
        let _ = Matrix::new(&data, usize::MAX, 2);
    }

    #[test]
    fn pixels_of_several_bytes_are_arrays() {
        let rgb = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        let m = Matrix::new(rgb.as_chunks::<3>().0, 2, 2);
        assert_eq!(m[(1, 0)], [7, 8, 9]);
    }
}
