// A grid has at most 3 dimensions, and 3 is what a kernel without grid_dims allows.
use gpu::prelude::*;

#[kernel(block(256), grid_dims(3))]
pub fn fill(mut out: DisjointSlice<f32>) {
    out.set(thread::global_index(), 1.0);
}

fn main() {}
