//! `first-use algorithms|dense|examples`: how long a fresh process waits for its first result.
//!
//! Times, in this process, opening the GPU (driver and context), then making the library ready
//! and running its first call until the result is back on the host:
//! - `algorithms`: `Algorithms::load` + `reduce` (f32 sum of 2^20 elements);
//! - `dense`: `Dense::load` + `gemm` (bf16, 512 x 512 x 512; wgmma on Hopper) + synchronize;
//! - `examples`: `ExampleKernels::load` + `saxpy` (2^20 elements) + copy back, the demo's first step.
//!
//! and prints which code each loaded kernel came from (SASS or PTX). Run it in a fresh process
//! per case with `CUDA_CACHE_DISABLE=1` to see what a new machine pays; add `GPU_FORCE_PTX=1` for
//! the JIT route.

use std::process::ExitCode;
use std::time::Instant;

use gpu_algorithms::Algorithms;
use gpu_dense::Dense;
use gpu_examples::ExampleKernels;
use gpu_host::gpu::ops::Sum;
use gpu_host::{Gpu, LaunchConfig, Module};
use half::bf16;

fn main() -> ExitCode {
    let case = std::env::args().nth(1).unwrap_or_default();
    match run(&case) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("first-use {case}: {e}");
            ExitCode::FAILURE
        }
    }
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn run(case: &str) -> Result<()> {
    let started = Instant::now();
    let gpu = Gpu::first()?;
    let opened = started.elapsed().as_secs_f64();
    let stream = gpu.default_stream();
    let n = 1 << 20;
    let (ready, loaded): (f64, Vec<String>) = match case {
        "algorithms" => {
            let x = gpu.to_device(&vec![1.0f32; n])?;
            gpu.synchronize()?;
            let t = Instant::now();
            let algos = Algorithms::load(&gpu)?;
            let sum = algos.reduce(stream, &x, Sum, 0.0)?;
            let elapsed = t.elapsed().as_secs_f64();
            check(sum == n as f32, "reduce")?;
            (elapsed, codes(&[algos.raw()]))
        }
        "dense" => {
            let s = 512;
            let a = gpu.to_device(&vec![bf16::from_f32(1.0); s * s])?;
            let b = gpu.to_device(&vec![bf16::from_f32(0.5); s * s])?;
            let mut c = gpu.alloc_zeroed::<bf16>(s * s)?;
            gpu.synchronize()?;
            let t = Instant::now();
            let dense = Dense::load(&gpu)?;
            dense.gemm(stream, &a, &b, &mut c, s, s, s)?;
            gpu.synchronize()?;
            let elapsed = t.elapsed().as_secs_f64();
            let out = c.to_vec()?;
            check(out.iter().all(|v| v.to_f32() == 256.0), "gemm")?;
            (elapsed, codes(&dense.raw_modules()))
        }
        "examples" => {
            let x = gpu.to_device(&vec![1.0f32; n])?;
            let y = gpu.to_device(&vec![2.0f32; n])?;
            let mut out = gpu.alloc_zeroed::<f32>(n)?;
            gpu.synchronize()?;
            let t = Instant::now();
            let kernels = ExampleKernels::load(&gpu)?;
            kernels.saxpy(
                stream,
                LaunchConfig::for_elements(n, 256),
                3.0,
                &x,
                &y,
                &mut out,
            )?;
            let result = out.to_vec()?;
            let elapsed = t.elapsed().as_secs_f64();
            check(result.iter().all(|&v| v == 5.0), "saxpy")?;
            (elapsed, codes(&[kernels.raw()]))
        }
        other => {
            return Err(
                format!("unknown case `{other}`: first-use algorithms|dense|examples").into(),
            );
        }
    };
    let jit_cache = std::env::var("CUDA_CACHE_DISABLE").unwrap_or_else(|_| "unset".into());
    let force_ptx = std::env::var(gpu_host::code::FORCE_PTX_ENV).unwrap_or_else(|_| "unset".into());
    println!(
        "first-use {case:<10} open GPU {opened:.3} s  load + first call {ready:.3} s  \
         (CUDA_CACHE_DISABLE={jit_cache}, GPU_FORCE_PTX={force_ptx}; {}, sm_{}{})",
        gpu.properties().name,
        gpu.properties().compute_capability.0,
        gpu.properties().compute_capability.1
    );
    println!("  loaded: {}", loaded.join(", "));
    Ok(())
}

fn codes(modules: &[&Module]) -> Vec<String> {
    modules
        .iter()
        .flat_map(|m| m.loaded_kernels())
        .map(|k| format!("{} ({})", k.name(), k.code()))
        .collect()
}

fn check(ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what} gave a wrong result").into())
    }
}
