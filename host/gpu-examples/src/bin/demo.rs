//! `cargo run --release -p gpu-examples`: every example once, each checked on the CPU.
use std::path::Path;
use std::process::ExitCode;

use example_kernels::matmul::MatDims;
use gpu_examples::check::gb_per_s;
use gpu_examples::matmul::{self, Variant};
use gpu_examples::report::{exit, fail, line, open_gpu, size_for};
use gpu_examples::{ExampleKernels, image, reduce, vector};

fn main() -> ExitCode {
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    match run(&gpu) {
        Ok(all) => exit(all),
        Err(err) => fail(err),
    }
}

fn run(gpu: &gpu_host::Gpu) -> gpu_host::Result<bool> {
    let kernels = ExampleKernels::load(gpu)?;
    let mut all = true;
    let n = size_for(gpu, 1 << 24, 1 << 18);
    for r in vector::run(gpu, &kernels, n)? {
        all &= line(
            r.name,
            r.comparison.passed(),
            format!(
                "n={n}: {} | {:.3} ms, {:.0} GB/s",
                r.comparison, r.kernel_ms, r.gb_per_s
            ),
        );
    }

    std::fs::create_dir_all("target").map_err(|e| gpu_host::Error::Io {
        path: "target".into(),
        source: e,
    })?;
    let (cmp, ms, img) = image::run(gpu, &kernels, None, Path::new("target/gray.png"))?;
    let detail = format!(
        "{}x{}: {cmp} | {ms:.3} ms, {:.0} GB/s -> target/gray.png",
        img.width,
        img.height,
        gb_per_s(img.pixels.len() * 4 / 3, ms)
    );
    all &= line("rgb_to_gray", cmp.passed(), detail);

    let side = size_for(gpu, 1024, 256);
    let dims = MatDims {
        m: side,
        n: side,
        k: side,
    };
    for variant in [Variant::Naive, Variant::Tiled] {
        let (cmp, ms) = matmul::run(gpu, &kernels, variant, dims)?;
        all &= line(
            variant.name(),
            cmp.passed(),
            format!(
                "{side}^3: {cmp} | {ms:.3} ms, {:.2} TFLOP/s",
                matmul::tflops(dims, ms)
            ),
        );
    }

    let (segments, mean_len) = size_for(gpu, (10_000, 4_096), (1_000, 1_024));
    let (cmp, ms, values) = reduce::run(gpu, &kernels, segments, mean_len)?;
    all &= line(
        "segmented_sum",
        cmp.passed(),
        format!(
            "{segments} segments, {values} values: {cmp} | {ms:.3} ms, {:.0} GB/s",
            gb_per_s(values * 4, ms)
        ),
    );
    Ok(all)
}
