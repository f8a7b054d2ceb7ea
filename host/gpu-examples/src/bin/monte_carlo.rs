//! `cargo run --release -p gpu-examples --bin monte_carlo [THREADS] [PATHS_PER_THREAD]`:
//! prices a European call (S = 100, K = 105, r = 5%, σ = 20%, T = 1 year) by Monte Carlo with
//! per-thread Philox4x32-10 streams (2^20 threads × 64 paths on a GPU, 4096 × 16 on the
//! simulator) and checks the price against Black–Scholes within 4 standard errors.
use std::process::ExitCode;

use gpu_examples::ExampleKernels;
use gpu_examples::monte_carlo::{CallOption, black_scholes_call, price_call};
use gpu_examples::report::{exit, fail, line, open_gpu, size_for};

fn main() -> ExitCode {
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().ok());
    let threads = args
        .next()
        .flatten()
        .unwrap_or_else(|| size_for(&gpu, 1 << 20, 4096))
        .next_multiple_of(256);
    let per_thread = args
        .next()
        .flatten()
        .unwrap_or_else(|| size_for(&gpu, 64, 16));
    let quads = per_thread.div_ceil(4) as u32;
    let option = CallOption {
        spot: 100.0,
        strike: 105.0,
        rate: 0.05,
        volatility: 0.2,
        maturity: 1.0,
    };
    let run = || -> gpu_host::Result<bool> {
        let kernels = ExampleKernels::load(&gpu)?;
        // Once to load the kernel, then timed.
        price_call(&gpu, &kernels, option, 1, 256, 1)?;
        let est = price_call(&gpu, &kernels, option, 2026, threads, quads)?;
        let exact = black_scholes_call(option);
        let z = (est.price - exact) / est.std_error;
        let rate = est.paths as f64 / (est.ms as f64 * 1e-3) / 1e9;
        Ok(line(
            "monte_carlo_call",
            z.abs() < 4.0,
            format!(
                "{} paths: {:.5} ± {:.5} vs Black–Scholes {exact:.5} ({z:+.2} standard errors) | \
                 {:.3} ms, {rate:.2} G paths/s",
                est.paths, est.price, est.std_error, est.ms
            ),
        ))
    };
    match run() {
        Ok(all) => exit(all),
        Err(err) => fail(err),
    }
}
