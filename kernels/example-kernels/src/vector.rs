//! Element-wise kernels: one thread per element.

use gpu::prelude::*;

/// `out[i] = a[i] + b[i]`.
#[kernel]
pub fn vector_add(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::global_index();
    if let Some(o) = out.get_mut(i) {
        *o = a[i.get()] + b[i.get()];
    }
}

/// `out[i] = alpha * x[i] + y[i]`, with a grid-stride loop so any grid size covers any length.
#[kernel]
pub fn saxpy(alpha: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    for i in thread::grid_stride(out.len()) {
        out.set(i, alpha * x[i.get()] + y[i.get()]);
    }
}
