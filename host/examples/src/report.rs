//! Printing example results and turning them into an exit status.

use std::process::ExitCode;

use gpu_host::{Error, Gpu};

/// Opens the first GPU, or explains why there is none.
pub fn open_gpu() -> Result<Gpu, ExitCode> {
    match Gpu::first() {
        Ok(gpu) => {
            let p = gpu.properties();
            println!(
                "GPU: {} (sm_{}{}, {} SMs)",
                p.name, p.compute_capability.0, p.compute_capability.1, p.multiprocessor_count
            );
            Ok(gpu)
        }
        Err(err @ (Error::NoDriver { .. } | Error::NoDevice)) => {
            eprintln!("no GPU to run on: {err}");
            eprintln!(
                "The examples need an NVIDIA GPU and its driver (libcuda). The kernels still build: cargo xtask build-kernels"
            );
            Err(ExitCode::from(2))
        }
        Err(err) => {
            eprintln!("error: {err}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// Prints one line per check; `true` when all passed.
pub fn line(name: &str, passed: bool, detail: impl std::fmt::Display) -> bool {
    println!(
        "{:<16} {} {detail}",
        name,
        if passed { "PASS" } else { "FAIL" }
    );
    passed
}

pub fn exit(all_passed: bool) -> ExitCode {
    if all_passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub fn fail(err: Error) -> ExitCode {
    eprintln!("error: {err}");
    ExitCode::FAILURE
}
