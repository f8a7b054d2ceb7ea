//! `cargo run --release -p gpu-examples --bin vector_add [N]`: vector add and saxpy.
use std::process::ExitCode;

use gpu_examples::report::{exit, fail, line, open_gpu, size_for};
use gpu_examples::{ExampleKernels, vector};

fn main() -> ExitCode {
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    let n = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| size_for(&gpu, 1 << 24, 1 << 18));
    let result = ExampleKernels::load(&gpu).and_then(|k| vector::run(&gpu, &k, n));
    match result {
        Ok(runs) => {
            let mut all = true;
            for r in &runs {
                let detail = format!(
                    "n={n}: {} | {:.3} ms, {:.0} GB/s",
                    r.comparison, r.kernel_ms, r.gb_per_s
                );
                all &= line(r.name, r.comparison.passed(), detail);
            }
            exit(all)
        }
        Err(err) => fail(err),
    }
}
