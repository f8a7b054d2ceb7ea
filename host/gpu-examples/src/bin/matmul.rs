//! `cargo run --release -p gpu-examples --bin matmul [M N K]`: naive and tiled f32 GEMM.
use std::process::ExitCode;

use example_kernels::matmul::MatDims;
use gpu_examples::ExampleKernels;
use gpu_examples::matmul::{self, Variant};
use gpu_examples::report::{exit, fail, line, open_gpu, size_for};

fn main() -> ExitCode {
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    let dims: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    let side = size_for(&gpu, 1024, 256);
    let dims = match dims[..] {
        [m, n, k] => MatDims { m, n, k },
        _ => MatDims {
            m: side,
            n: side,
            k: side,
        },
    };
    let kernels = match ExampleKernels::load(&gpu) {
        Ok(k) => k,
        Err(err) => return fail(err),
    };
    let mut all = true;
    for variant in [Variant::Naive, Variant::Tiled] {
        match matmul::run(&gpu, &kernels, variant, dims) {
            Ok((cmp, ms)) => {
                let detail = format!(
                    "{}x{}x{}: {cmp} | {ms:.3} ms, {:.2} TFLOP/s",
                    dims.m,
                    dims.n,
                    dims.k,
                    matmul::tflops(dims, ms)
                );
                all &= line(variant.name(), cmp.passed(), detail);
            }
            Err(err) => return fail(err),
        }
    }
    exit(all)
}
