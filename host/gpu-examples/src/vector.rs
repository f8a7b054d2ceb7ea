//! Vector add and saxpy: the "hello world" of GPU programming.

use gpu_host::{Gpu, LaunchConfig, Result};

use crate::ExampleKernels;
use crate::check::{Comparison, compare, gb_per_s};

/// Outcome of one example run.
#[derive(Debug, Clone)]
pub struct Run {
    pub name: &'static str,
    pub comparison: Comparison,
    pub kernel_ms: f32,
    pub gb_per_s: f64,
}

pub fn vector_add_cpu(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

pub fn saxpy_cpu(alpha: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(x, y)| alpha * x + y).collect()
}

/// `a + b` on the GPU.
pub fn vector_add(
    gpu: &Gpu,
    kernels: &ExampleKernels,
    a: &[f32],
    b: &[f32],
) -> Result<(Vec<f32>, f32)> {
    let stream = gpu.default_stream();
    let (da, db) = (gpu.to_device(a)?, gpu.to_device(b)?);
    let mut out = gpu.alloc_zeroed::<f32>(a.len().min(b.len()))?;
    let config = LaunchConfig::for_elements(out.len(), 256);
    let ((), ms) = stream.time(|s| kernels.vector_add(s, config, &da, &db, &mut out))?;
    Ok((out.to_vec()?, ms))
}

/// `alpha * x + y` on the GPU, with a fixed grid (grid-stride loop inside the kernel).
pub fn saxpy(
    gpu: &Gpu,
    kernels: &ExampleKernels,
    alpha: f32,
    x: &[f32],
    y: &[f32],
) -> Result<(Vec<f32>, f32)> {
    let stream = gpu.default_stream();
    let (dx, dy) = (gpu.to_device(x)?, gpu.to_device(y)?);
    let mut out = gpu.alloc_zeroed::<f32>(x.len().min(y.len()))?;
    let sms = gpu.properties().multiprocessor_count;
    let blocks = (out.len().div_ceil(256) as u32).clamp(1, sms * 8);
    let config = LaunchConfig::new(blocks, 256);
    let ((), ms) = stream.time(|s| kernels.saxpy(s, config, alpha, &dx, &dy, &mut out))?;
    Ok((out.to_vec()?, ms))
}

/// Runs both on `n` elements and checks them against the CPU.
pub fn run(gpu: &Gpu, kernels: &ExampleKernels, n: usize) -> Result<Vec<Run>> {
    let a = crate::random_f32(n, 1);
    let b = crate::random_f32(n, 2);
    let (sum, add_ms) = vector_add(gpu, kernels, &a, &b)?;
    let (axpy, saxpy_ms) = saxpy(gpu, kernels, 2.5, &a, &b)?;
    let bytes = 3 * n * size_of::<f32>();
    Ok(vec![
        Run {
            name: "vector_add",
            comparison: compare(&sum, &vector_add_cpu(&a, &b), 0.0, 0.0),
            kernel_ms: add_ms,
            gb_per_s: gb_per_s(bytes, add_ms),
        },
        Run {
            name: "saxpy",
            comparison: compare(&axpy, &saxpy_cpu(2.5, &a, &b), 1e-6, 1e-6),
            kernel_ms: saxpy_ms,
            gb_per_s: gb_per_s(bytes, saxpy_ms),
        },
    ])
}
