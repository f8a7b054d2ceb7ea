//! Sparse matrix–vector product `y = A·x`, A in CSR form, one thread per row ("scalar" kernel).

use gpu::prelude::*;

/// Threads per block.
pub const BLOCK: u32 = 256;

/// `y[row] = Σ values[j] · x[columns[j]]` over the row's entries `row_start[row]..row_start[row+1]`.
#[kernel(block(256), grid_dims(1))]
pub fn spmv_csr(
    row_start: &[u32],
    columns: &[u32],
    values: &[f32],
    x: &[f32],
    mut y: DisjointSlice<f32>,
) {
    let row = thread::global_index();
    if let Some(out) = y.get_mut(row) {
        let r = row.get();
        let mut sum = 0.0;
        for j in row_start[r] as usize..row_start[r + 1] as usize {
            sum += values[j] * x[columns[j] as usize];
        }
        *out = sum;
    }
}
