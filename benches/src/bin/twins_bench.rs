//! `twins-bench [--only NAME,...]`: each Rust twin (kernels/twin-kernels) beside its CUDA C++ twin
//! (kernels/twin-kernels/cuda/twins.cu, compiled by nvcc), on the same inputs with the same launch
//! shapes, in one process on one GPU:
//!
//! ```text
//! twin                     problem                   Rust ms   C++ ms  ratio  Rust rate   regs R/C  PTX R/C  check
//! transpose_tiled          8192x8192 f32               0.195    0.194  1.00x  2750 GB/s   16/14    61/46   ok/ok
//! ```
//! `ratio` = C++ time / Rust time (> 1: Rust is faster). Both outputs are checked against the
//! CPU reference first. Times are the best of two interleaved rounds of [`benches::time_us`].
//! `regs` are registers per thread as loaded (`cuFuncGetAttribute`), `PTX` the instructions in
//! each kernel's PTX entry body. With `GPU_FORCE_PTX=1` the Rust side is JIT-compiled from PTX
//! by the driver, like the C++ side; by default it runs the SASS that ptxas built.

use std::process::ExitCode;

use gpu_host::{Gpu, Kernel};
use gpu_twins::{CUDA_PTX, Kernels, Side, Size, cases, kernels::twin_kernels, ptx_stats};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("twins-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn rust_ptx(name: &str) -> Option<&'static str> {
    twin_kernels::UNITS
        .iter()
        .find(|u| u.kernels.contains(&name))
        .map(|u| u.ptx)
}

fn regs(k: &Kernel) -> String {
    let a = k.attributes();
    if a.local_bytes_per_thread > 0 {
        format!("{}+{}B", a.registers_per_thread, a.local_bytes_per_thread)
    } else {
        a.registers_per_thread.to_string()
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut only: Option<Vec<String>> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--only" => {
                let list = args.next().ok_or("--only needs a list of twin names")?;
                only = Some(list.split(',').map(str::to_string).collect());
            }
            "-h" | "--help" => {
                println!("twins-bench [--only NAME,...]: Rust twins beside their CUDA C++ twins");
                return Ok(true);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let gpu = Gpu::first()?;
    let kernels = Kernels::load(&gpu)?;
    let cuda_ptx = CUDA_PTX.map_err(|why| format!("no C++ twins to compare with: {why}"))?;
    let cuda = kernels.cuda()?;
    let p = gpu.properties();
    println!(
        "GPU: {} ({} SMs); Rust side built with checks = {} (GPU_KERNEL_CHECKS), fma {}",
        p.name,
        p.multiprocessor_count,
        option_env!("GPU_KERNEL_CHECKS").unwrap_or("trap (default)"),
        option_env!("GPU_KERNEL_FMA").map_or("on (default)", |v| if v == "0" {
            "off"
        } else {
            "on"
        }),
    );
    let stream = gpu.default_stream();
    let mut twins = cases::all(&gpu, Size::Bench)?;
    if let Some(only) = &only {
        for name in only {
            if !twins.iter().any(|t| t.name() == name) {
                return Err(format!("no twin named `{name}`").into());
            }
        }
        twins.retain(|t| only.iter().any(|n| n == t.name()));
    }
    println!(
        "{:<25}{:<40}{:>9}{:>9}{:>7}  {:<14}{:>11}{:>10}  {:<10}Rust code",
        "twin",
        "problem",
        "Rust ms",
        "C++ ms",
        "ratio",
        "Rust rate",
        "regs R/C",
        "PTX R/C",
        "check"
    );
    let mut all_ok = true;
    for twin in &mut twins {
        let name = twin.name();
        let mut verdict = |side| match cases::check(twin.as_mut(), side, &kernels, stream) {
            Ok(Ok(())) => Ok("ok".to_string()),
            Ok(Err(mismatch)) => {
                eprintln!("{name} ({side}): WRONG: {mismatch}");
                Ok("WRONG".to_string())
            }
            Err(e) => Err(e),
        };
        let checks = [verdict(Side::Rust)?, verdict(Side::Cuda)?];
        all_ok &= checks.iter().all(|c| c == "ok");
        let (mut rust_us, mut cuda_us) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..2 {
            rust_us = rust_us.min(benches::time_us(stream, &mut |s| {
                twin.launch(Side::Rust, &kernels, s)
            })?);
            cuda_us = cuda_us.min(benches::time_us(stream, &mut |s| {
                twin.launch(Side::Cuda, &kernels, s)
            })?);
        }
        let (rk, ck) = (kernels.rust.raw().kernel(name)?, cuda.kernel(name)?);
        let count = |ptx: Option<&str>| {
            ptx.and_then(|p| ptx_stats::entry_instructions(p, name))
                .map_or("?".to_string(), |n| n.to_string())
        };
        println!(
            "{:<25}{:<40}{:>9.4}{:>9.4}{:>6.2}x  {:<14}{:>11}{:>10}  {:<10}{}",
            name,
            twin.problem(),
            rust_us / 1e3,
            cuda_us / 1e3,
            cuda_us / rust_us,
            twin.work().rate((rust_us / 1e3) as f32),
            format!("{}/{}", regs(rk), regs(ck)),
            format!("{}/{}", count(rust_ptx(name)), count(Some(cuda_ptx))),
            format!("{}/{}", checks[0], checks[1]),
            rk.code()
        );
    }
    Ok(all_ok)
}
