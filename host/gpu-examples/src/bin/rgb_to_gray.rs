//! `cargo run --release -p gpu-examples --bin rgb_to_gray [INPUT.png] [OUTPUT.png]`.
//! Without an input, a 1920x1080 test picture (640x360 on the CPU simulator) is generated
//! (and saved beside the output).
use std::path::PathBuf;
use std::process::ExitCode;

use gpu_examples::report::{exit, fail, line, open_gpu};
use gpu_examples::{ExampleKernels, image};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let input = args.first().map(PathBuf::from);
    let output = args
        .get(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/gray.png"));
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("error: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    match ExampleKernels::load(&gpu).and_then(|k| image::run(&gpu, &k, input.as_deref(), &output)) {
        Ok((cmp, ms, img)) => {
            let bytes = img.pixels.len() * 4 / 3;
            let detail = format!(
                "{}x{}: {cmp} | {ms:.3} ms, {:.0} GB/s -> {}",
                img.width,
                img.height,
                gpu_examples::check::gb_per_s(bytes, ms),
                output.display()
            );
            exit(line("rgb_to_gray", cmp.passed(), detail))
        }
        Err(err) => fail(err),
    }
}
