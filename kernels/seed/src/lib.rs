#![no_std]
use gpu::prelude::*;

#[kernel]
pub fn vector_add(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::global_index();
    if let Some(o) = out.get_mut(i) {
        *o = a[i.get()] + b[i.get()];
    }
}
