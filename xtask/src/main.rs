//! Project tasks, one subcommand per job (run `cargo xtask help`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use gpu_builder::compile::{self, BuiltModule};
use gpu_builder::parallel::parallel_map;
use gpu_builder::toolchain::Rustc;
use gpu_builder::workspace::Workspace;
use gpu_builder::{Arch, Error, Result};

mod bundle;
mod inspect;
mod launch;
mod profile;
mod sanitize;

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
  resources [--arch sm_XX]... [CRATE...]
        The ptxas report per kernel (registers, stack frame, spill stores/loads, static shared
        memory, barriers) for one architecture (default $GPU_ARCH or sm_80); flags kernels that
        spill (SPILLS), kernels with a stack frame but no spills (LOCAL ARRAY: an array
        indexed at run time, usually a loop over a thread's items left rolled), kernels whose
        wgmma products ptxas serialized (WGMMA SERIALIZED: each waits for the one before) and
        those where it added fences of its own (WGMMA FENCES INJECTED).
  ptx CRATE[::KERNEL] [--arch sm_XX] [--raw] [--no-std] [--resources]
        The PTX of one kernel (or the whole crate) interleaved with the Rust source lines that
        produced it (`//> file:line  source`), from a build with line tables in
        target/ptx-annotated/<arch>/ (the normal build is untouched). --raw: the normal build's
        PTX without annotations; --no-std: hide core/stdarch lines; the ptxas figures of the
        kernel head the output when ptxas is found (--resources makes ptxas required).
        CRATE is the kernel package, e.g. example-kernels::saxpy.
  sass CRATE[::KERNEL] [--arch sm_XX] [--raw] [--no-std]
        SASS (machine code) of the kernel: ptxas -lineinfo then `nvdisasm -g`, annotated with
        Rust source lines. nvdisasm comes from $NVDISASM, ./.venv (pip install
        'nvidia-cuda-nvdisasm==13.*'), PATH or /usr/local/cuda/bin; cuobjdump is a fallback.
  ptx-diff --save-baseline NAME [--arch sm_XX] [CRATE...]
  ptx-diff --compare NAME [--arch sm_XX] [--stat] [--context N] [CRATE[::KERNEL]...]
        Save the PTX and ptxas figures of a build under target/ptx-baselines/NAME/, then compare
        a later build with it: per-kernel resource deltas (registers, stack, spills, shared
        memory) and a unified diff of each changed kernel's PTX (--stat: deltas only).
  profile [--kernel REGEX] [--launch-count N] [--nvtx-include RANGE] [--csv FILE] PROGRAM [ARGS...]
        Run PROGRAM under Nsight Compute (ncu: $NCU, PATH or /usr/local/cuda/bin) and print per
        kernel: duration, DRAM throughput and SM throughput (% of peak), achieved occupancy.
        PROGRAM is a path, a binary next to this xtask (the .gpu/bin bundle), or a workspace
        binary (demo, vector_add, matmul, ..., examples-profile) built with --release.
  gpu-bundle [--only NAME,...] [--archive]
        Build the examples, xtask, the benchmark binaries and the release test binaries, and copy
        them into .gpu/ (git-ignored) with a run list, for running on a GPU machine that has no
        Rust toolchain: .gpu/bin/xtask profile demo, .gpu/bench/seed --bench. --only keeps the
        binaries of those names (test binaries by their name without cargo's hash; xtask is
        always kept); --archive also packs them into .gpu/bundle.tar.xz (tar and xz), small
        enough to carry (the device tool takes 64 MiB): there, `tar xJf .gpu/bundle.tar.xz -C
        .gpu` restores bin/, tests/ and bench/.
  sanitize [--tool memcheck,racecheck,synccheck,initcheck] TARGET... [-- ARGS]
        Run examples or GPU test binaries under compute-sanitizer (all four tools unless
        --tool). TARGET: an example, a test binary (faults, device_selftest, gpu_examples,
        launch_limits, gpu, algorithms, algorithms_sort), `all`, or `selftest` (planted bugs
        that must be caught). Uses binaries next to the xtask executable, in .gpu/ (gpu-bundle)
        or target/release; builds nothing.
  launch -n N [--nnodes M --node-rank R --master-addr HOST --master-port P] [--timeout S]
         PROGRAM [--] [ARGS...]
        Start N processes of PROGRAM on this machine, one per GPU, with torchrun's variables
        (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
        NCCL_NVLS_ENABLE=0; each output line is prefixed [rank R]. When a rank fails the others
        are stopped and the report names the rank, its exit status and its last output.
        Across machines: the same command on each with its --node-rank and node 0's address.
        PROGRAM: a path, a binary next to this xtask, target/release/examples/NAME, or a
        workspace binary (built with --release).
  help  Show this message.
";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    // `cargo xtask <command> --help`: that command's part of the help (only right after the
    // command, so a program's own `--help` after `launch`/`profile` PROGRAM reaches it).
    if let [command, flag, ..] = &args[..]
        && (flag == "--help" || flag == "-h")
        && let Some(help) = command_help(command)
    {
        print!("usage: cargo xtask {help}");
        return ExitCode::SUCCESS;
    }
    let result = match args.first().map(String::as_str) {
        Some("build-kernels") => build_kernels(&args[1..]),
        Some("check-ptx") => check_ptx(&args[1..]),
        Some("resources") => inspect::resources(&args[1..], HELP),
        Some("ptx") => inspect::ptx(&args[1..], HELP),
        Some("sass") => inspect::sass(&args[1..], HELP),
        Some("ptx-diff") => inspect::ptx_diff(&args[1..], HELP),
        Some("profile") => profile::profile(&args[1..], HELP),
        Some("gpu-bundle") => bundle::gpu_bundle(&args[1..], HELP),
        Some("sanitize") => sanitize::sanitize(&args[1..]),
        Some("launch") => launch::launch(&args[1..], HELP),
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

/// The lines of [`HELP`] that describe `command` (its usage lines and their explanation), or
/// `None` for a command [`HELP`] does not list.
fn command_help(command: &str) -> Option<String> {
    let mut out = String::new();
    let mut inside = false;
    for line in HELP.lines() {
        let is_usage = line.starts_with("  ") && !line.starts_with("   ");
        if is_usage {
            let name = line.split_whitespace().next().unwrap_or("");
            inside = name == command;
        } else if !line.starts_with("   ") {
            inside = false;
        }
        if inside {
            out.push_str(if out.is_empty() {
                line.trim_start()
            } else {
                line
            });
            out.push('\n');
        }
    }
    (!out.is_empty()).then_some(out)
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
            let value = it
                .next()
                .ok_or_else(|| Error::msg("--arch needs a value, e.g. --arch sm_90"))?;
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root");
    Workspace::load(&root.join("Cargo.toml"))
}

fn build(workspace: &Workspace, arch: Arch, crates: &[String]) -> Result<Vec<BuiltModule>> {
    let selected = if crates.is_empty() {
        workspace.kernel_crates()
    } else {
        crates
            .iter()
            .map(|c| workspace.find(c))
            .collect::<Result<Vec<_>>>()?
    };
    let rustc = Rustc::detect()?;
    // One sysroot per checks mode in use (each builds `core` once per rustc version).
    let mut modes = selected
        .iter()
        .map(|k| k.checks())
        .collect::<Result<Vec<_>>>()?;
    modes.sort_by_key(|m| m.to_string());
    modes.dedup();
    // Built side by side: each is one single-threaded rustc run of `core`.
    parallel_map(&modes, |&checks| {
        compile::sysroot_for(workspace, &rustc, checks, &mut |line| println!("  {line}"))
    })
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    // Kernel crates build independently: one nested cargo each, as many at once as there are
    // cores (each is mostly one single-threaded LLVM run; ptxas then fans out itself).
    parallel_map(&selected, |krate| {
        let result = compile::compile(workspace, krate, arch, &rustc);
        if let Ok(module) = &result {
            report(module, workspace);
        }
        result
    })
    .into_iter()
    .collect()
}

/// One line per built module.
fn report(module: &BuiltModule, workspace: &Workspace) {
    let status = if module.rebuilt { "built" } else { "fresh" };
    let typed = module
        .manifest
        .kernels
        .iter()
        .filter(|k| k.rust_module.is_some())
        .count();
    let sass: Vec<String> = module
        .units
        .first()
        .map(|u| u.sass.iter().map(|(a, _)| a.to_string()).collect())
        .unwrap_or_default();
    let code = if sass.is_empty() {
        "PTX only".to_string()
    } else {
        format!("SASS {}", sass.join(","))
    };
    println!(
        "  {status:>5} {:<24} {}  {:>6.2}s  {} kernel(s), {typed} typed, {} unit(s), {code}  -> {}",
        module.krate.crate_name,
        module.arch,
        module.elapsed.as_secs_f64(),
        module.manifest.kernels.len(),
        module.units.len(),
        relative(&module.ptx_path, &workspace.root).display()
    );
    for warning in gpu_builder::sass::wgmma_warnings(&module.units) {
        println!("warning: {}: {warning}", module.krate.crate_name);
    }
}

fn build_kernels(args: &[String]) -> Result<()> {
    let (arches, crates) = parse_args(args)?;
    let arches = if arches.is_empty() {
        vec![compile::arch_from_env()?]
    } else {
        arches
    };
    let workspace = workspace()?;
    let started = Instant::now();
    let mut count = 0;
    let mut no_sass = None;
    for arch in arches {
        let built = build(&workspace, arch, &crates)?;
        count += built.len();
        no_sass = no_sass.or_else(|| built.iter().find_map(|m| m.no_sass.clone()));
    }
    if let Some(reason) = no_sass {
        println!("note: {}", compile::no_sass_message(&reason));
    }
    println!(
        "build-kernels: {count} module(s) in {:.2}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn check_ptx(args: &[String]) -> Result<()> {
    let (arches, crates) = parse_args(args)?;
    let arches = if arches.is_empty() {
        vec![Arch::SM_80, Arch::SM_90]
    } else {
        arches
    };
    println!("check-ptx:");
    inspect::report_resources(&arches, &crates).map(|_| ())
}

fn relative(path: &Path, root: &Path) -> PathBuf {
    path.strip_prefix(root)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::command_help;

    #[test]
    fn each_command_has_its_own_help() {
        let sass = command_help("sass").unwrap();
        assert!(sass.starts_with("sass CRATE[::KERNEL]"));
        assert!(sass.contains("nvdisasm") && !sass.contains("ptx-diff"));
        let diff = command_help("ptx-diff").unwrap();
        assert!(diff.contains("--save-baseline") && diff.contains("--compare"));
        let launch = command_help("launch").unwrap();
        assert!(launch.contains("PROGRAM [--] [ARGS...]") && launch.contains("--node-rank"));
        assert!(command_help("gpu-bundle").unwrap().contains("--archive"));
        assert_eq!(command_help("no-such-command"), None);
    }
}
