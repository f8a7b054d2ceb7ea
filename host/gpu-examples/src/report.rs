//! Printing example results and turning them into an exit status.

use std::process::ExitCode;

use gpu_host::{Error, Gpu};

/// Opens the device `GPU_BACKEND` asks for (the first GPU by default, the CPU simulator with
/// `GPU_BACKEND=sim`) and says which one ran, or explains why there is none.
pub fn open_gpu() -> Result<Gpu, ExitCode> {
    match Gpu::from_env() {
        Ok(gpu) if gpu.is_simulator() => {
            println!(
                "backend: CPU simulator ({} worker threads; sizes reduced for the simulator)",
                gpu.properties().multiprocessor_count
            );
            Ok(gpu)
        }
        Ok(gpu) => {
            let p = gpu.properties();
            println!(
                "backend: GPU {} (sm_{}{}, {} SMs)",
                p.name, p.compute_capability.0, p.compute_capability.1, p.multiprocessor_count
            );
            Ok(gpu)
        }
        Err(err @ (Error::NoDriver { .. } | Error::NoDevice)) => {
            eprintln!("no GPU to run on: {err}");
            eprintln!(
                "The examples need an NVIDIA GPU and its driver (libcuda), or the CPU simulator: \
                 GPU_BACKEND=sim. The kernels still build: cargo xtask build-kernels"
            );
            Err(ExitCode::from(2))
        }
        Err(err) => {
            eprintln!("error: {err}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// `gpu_size` on a GPU, `sim_size` on the CPU simulator (which runs kernels thousands of times
/// slower, so the examples pick sizes that finish in seconds there).
pub fn size_for<T>(gpu: &Gpu, gpu_size: T, sim_size: T) -> T {
    if gpu.is_simulator() {
        sim_size
    } else {
        gpu_size
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
