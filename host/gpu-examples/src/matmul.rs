//! Matrix multiply C = A·B (row-major f32): a naive kernel and a shared-memory tiled one.

use example_kernels::matmul::{MatDims, TILE};
use gpu_host::{Error, Gpu, LaunchConfig, Result};

use crate::ExampleKernels;
use crate::check::{Comparison, compare};

/// Which kernel computes the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// One thread per element of C, reading A and B straight from global memory.
    Naive,
    /// 16×16 tiles of A and B staged in shared memory; each value loaded from global memory
    /// once per tile instead of once per multiply.
    Tiled,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Naive => "matmul_naive",
            Variant::Tiled => "matmul_tiled",
        }
    }
}

/// Reference product, accumulated in f64.
pub fn matmul_cpu(a: &[f32], b: &[f32], dims: MatDims) -> Vec<f32> {
    let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        let mut row = vec![0.0f64; n];
        for p in 0..k {
            let aip = a[i * k + p] as f64;
            for (j, acc) in row.iter_mut().enumerate() {
                *acc += aip * b[p * n + j] as f64;
            }
        }
        for (j, v) in row.into_iter().enumerate() {
            c[i * n + j] = v as f32;
        }
    }
    c
}

/// C = A·B on the GPU; returns C and the kernel time in ms.
pub fn matmul(
    gpu: &Gpu,
    kernels: &ExampleKernels,
    variant: Variant,
    a: &[f32],
    b: &[f32],
    dims: MatDims,
) -> Result<(Vec<f32>, f32)> {
    let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
    for (what, len, expected) in [("A (m*k)", a.len(), m * k), ("B (k*n)", b.len(), k * n)] {
        if len != expected {
            return Err(Error::SizeMismatch {
                operation: format!("{}: matrix {what}", variant.name()),
                expected,
                actual: len,
            });
        }
    }
    let (da, db) = (gpu.to_device(a)?, gpu.to_device(b)?);
    let mut dc = gpu.alloc_zeroed::<f32>(m * n)?;
    let config = LaunchConfig::tiles_2d(dims.n, dims.m, (TILE, TILE));
    let ((), ms) = gpu.default_stream().time(|s| match variant {
        Variant::Naive => kernels.matmul_naive(s, config, &da, &db, &mut dc, dims),
        Variant::Tiled => kernels.matmul_tiled(s, config, &da, &db, &mut dc, dims),
    })?;
    Ok((dc.to_vec()?, ms))
}

/// TFLOP/s of an m×k by k×n product that took `ms`.
pub fn tflops(dims: MatDims, ms: f32) -> f64 {
    2.0 * dims.m as f64 * dims.n as f64 * dims.k as f64 / (ms as f64 * 1e-3) / 1e12
}

/// Multiplies random matrices with `variant` and checks every element against the CPU
/// (relative tolerance scaled by sqrt(k), for f32 accumulation in a different order).
pub fn run(
    gpu: &Gpu,
    kernels: &ExampleKernels,
    variant: Variant,
    dims: MatDims,
) -> Result<(Comparison, f32)> {
    let a = crate::random_f32(dims.m as usize * dims.k as usize, 3);
    let b = crate::random_f32(dims.k as usize * dims.n as usize, 4);
    let (c, ms) = matmul(gpu, kernels, variant, &a, &b, dims)?;
    let tol = 1e-5 * (dims.k as f64).sqrt();
    Ok((compare(&c, &matmul_cpu(&a, &b, dims), tol, tol), ms))
}
