//! Generic kernels (`#[kernel(instances(...))]`): one PTX entry per listed type, one generic
//! launcher on the host (`module.selftest_axpy::<f32>(...)`).

use core::ops::{Add, Mul};

use gpu::prelude::*;

/// `out[i] = a * x[i] + y[i]` for `T` in `f32`, `f64`, `u32` (entries `selftest_axpy_f32`,
/// `selftest_axpy_f64`, `selftest_axpy_u32`).
///
/// Launch: any shape. Expected: `out[i] == a * x[i] + y[i]` (wrapping for `u32`: keep the
/// inputs small).
#[kernel(instances(f32, f64, u32))]
pub fn selftest_axpy<T: Copy + Add<Output = T> + Mul<Output = T>>(
    a: T,
    x: &[T],
    y: &[T],
    mut out: DisjointSlice<T>,
) {
    for i in thread::grid_stride(out.len()) {
        out.set(i, a * x[i.get()] + y[i.get()]);
    }
}

/// Two type parameters, a by-value array of one, and what only an instance can write: a
/// constant computed from a type parameter (a generic `fn` cannot name its parameters in a
/// `const` item) and an `as` conversion between them. Instances `selftest_widen_u32_f32` and
/// `selftest_widen_u8_f64`.
///
/// Launch: any shape. Expected: `out[i] == (input[i] as B) * coeffs[0] + coeffs[1] +
/// size_of::<A>() as B`.
#[kernel(instances((u32, f32), (u8, f64)))]
pub fn selftest_widen<A: Copy, B: Copy + Add<Output = B> + Mul<Output = B>>(
    input: &[A],
    coeffs: [B; 2],
    mut out: DisjointSlice<B>,
) {
    const BYTES: usize = core::mem::size_of::<A>();
    for i in thread::grid_stride(out.len()) {
        out.set(
            i,
            (input[i.get()] as B) * coeffs[0] + coeffs[1] + BYTES as B,
        );
    }
}
