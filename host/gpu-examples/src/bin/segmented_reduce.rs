//! `cargo run --release -p gpu-examples --bin segmented_reduce [SEGMENTS MEAN_LEN]`.
use std::process::ExitCode;

use gpu_examples::report::{exit, fail, line, open_gpu, size_for};
use gpu_examples::{ExampleKernels, reduce};

fn main() -> ExitCode {
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    let (segments, mean_len) = match args[..] {
        [s, l] => (s, l),
        _ => size_for(&gpu, (10_000, 4_096), (1_000, 1_024)),
    };
    match ExampleKernels::load(&gpu).and_then(|k| reduce::run(&gpu, &k, segments, mean_len)) {
        Ok((cmp, ms, values)) => {
            let gbs = gpu_examples::check::gb_per_s(values * 4, ms);
            exit(line(
                "segmented_sum",
                cmp.passed(),
                format!("{segments} segments, {values} values: {cmp} | {ms:.3} ms, {gbs:.0} GB/s"),
            ))
        }
        Err(err) => fail(err),
    }
}
