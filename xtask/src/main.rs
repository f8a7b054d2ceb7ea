//! Project tasks, one subcommand per job (run `cargo xtask help`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use gpu_builder::compile::{self, BuiltModule};
use gpu_builder::toolchain::Rustc;
use gpu_builder::workspace::Workspace;
use gpu_builder::{ptxas, sysroot, Arch, Error, Result};

const HELP: &str = "\
usage: cargo xtask <command> [options]

commands:
  build-kernels [--arch sm_XX] [CRATE...]
        Compile every kernel crate under kernels/ (or the named ones) to PTX + manifest in
        target/ptx/<arch>/. Unchanged crates are not rebuilt. Default arch: $GPU_ARCH or sm_80.
  check-ptx [--arch sm_XX]... [CRATE...]
        Build for each architecture (default: sm_80 and sm_90) and assemble every module with
        ptxas, printing per-kernel registers, spills, stack and shared memory.
        ptxas comes from $PTXAS, ./.venv (pip install nvidia-cuda-nvcc==13.0.*), PATH or
        /usr/local/cuda/bin.
  help  Show this message.
";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build-kernels") => build_kernels(&args[1..]),
        Some("check-ptx") => check_ptx(&args[1..]),
        Some("help") | Some("--help") | Some("-h") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => Err(Error::msg(format!("unknown command `{other}`\n\n{HELP}"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// `--arch` values (repeatable) and the remaining crate names.
fn parse_args(args: &[String]) -> Result<(Vec<Arch>, Vec<String>)> {
    let mut arches = Vec::new();
    let mut crates = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if let Some(value) = arg.strip_prefix("--arch=") {
            arches.push(value.parse()?);
        } else if arg == "--arch" {
            let value = it.next().ok_or_else(|| Error::msg("--arch needs a value, e.g. --arch sm_90"))?;
            arches.push(value.parse()?);
        } else if arg.starts_with('-') {
            return Err(Error::msg(format!("unknown option `{arg}`\n\n{HELP}")));
        } else {
            crates.push(arg.clone());
        }
    }
    Ok((arches, crates))
}

fn workspace() -> Result<Workspace> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace root");
    Workspace::load(&root.join("Cargo.toml"))
}

fn build(workspace: &Workspace, arch: Arch, crates: &[String]) -> Result<Vec<BuiltModule>> {
    let selected = if crates.is_empty() {
        workspace.kernel_crates()
    } else {
        crates.iter().map(|c| workspace.find(c)).collect::<Result<Vec<_>>>()?
    };
    let rustc = Rustc::detect()?;
    let sysroot = sysroot::ensure(&rustc, &compile::sysroot_cache(workspace), &mut |line| println!("  {line}"))?;
    let mut built = Vec::new();
    for krate in &selected {
        let module = compile::compile(workspace, krate, arch, &sysroot)?;
        let status = if module.rebuilt { "built" } else { "fresh" };
        let typed = module.manifest.kernels.iter().filter(|k| k.rust_module.is_some()).count();
        println!(
            "  {status:>5} {:<24} {arch}  {:>6.2}s  {} kernel(s), {typed} typed  -> {}",
            krate.crate_name,
            module.elapsed.as_secs_f64(),
            module.manifest.kernels.len(),
            relative(&module.ptx_path, &workspace.root).display()
        );
        built.push(module);
    }
    Ok(built)
}

fn build_kernels(args: &[String]) -> Result<()> {
    let (arches, crates) = parse_args(args)?;
    let arches = if arches.is_empty() { vec![compile::arch_from_env()?] } else { arches };
    let workspace = workspace()?;
    let started = Instant::now();
    let mut count = 0;
    for arch in arches {
        count += build(&workspace, arch, &crates)?.len();
    }
    println!("build-kernels: {count} module(s) in {:.2}s", started.elapsed().as_secs_f64());
    Ok(())
}

fn check_ptx(args: &[String]) -> Result<()> {
    let (arches, crates) = parse_args(args)?;
    let arches = if arches.is_empty() { vec![Arch::SM_80, Arch::SM_90] } else { arches };
    let workspace = workspace()?;
    let ptxas = ptxas::find(&workspace.root).ok_or_else(|| {
        Error::msg(
            "ptxas not found. Install it with:\n  python3 -m venv .venv && .venv/bin/pip install 'nvidia-cuda-nvcc==13.0.*'\n\
             or set $PTXAS, or put a CUDA toolkit's bin/ on PATH",
        )
    })?;
    println!("check-ptx: using {}", ptxas.display());
    let mut spilling = Vec::new();
    for arch in arches {
        for module in build(&workspace, arch, &crates)? {
            let resources = ptxas::assemble(&ptxas, &module.ptx_path, arch)?;
            for r in resources.iter().filter(|r| r.is_entry) {
                let flag = if r.spill_store_bytes + r.spill_load_bytes > 0 { "  SPILLS" } else { "" };
                println!(
                    "    {arch} {:<28} regs {:>3}  stack {:>4} B  spill st/ld {:>3}/{:<3} B  smem {:>6} B  barriers {}{flag}",
                    r.function, r.registers, r.stack_frame_bytes, r.spill_store_bytes, r.spill_load_bytes, r.shared_bytes, r.barriers
                );
                if !flag.is_empty() {
                    spilling.push(format!("{}::{} ({arch})", module.krate.crate_name, r.function));
                }
            }
            println!("  ptxas ok: {} ({arch})", relative(&module.ptx_path, &workspace.root).display());
        }
    }
    if !spilling.is_empty() {
        println!("note: kernels that spill registers: {}", spilling.join(", "));
    }
    Ok(())
}

fn relative(path: &Path, root: &Path) -> PathBuf {
    path.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf())
}
