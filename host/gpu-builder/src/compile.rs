//! Kernel crate → one PTX module (+ manifest), through a nested `cargo rustc` for the nvptx64
//! target with fat LTO and `--emit=asm`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use crate::arch::Arch;
use crate::checks::Checks;
use crate::error::{Error, Result};
use crate::manifest::Manifest;
use crate::sass::{self, BuiltUnit};
use crate::sysroot::{self, Sysroot};
use crate::toolchain::{self, Rustc};
use crate::workspace::{KernelCrate, Workspace};
use crate::{NVPTX_TARGET, dep_cache, launchers, ptx, ptxas, units};

/// Environment variable that overrides the default architecture (`sm_80`) in build scripts and
/// `cargo xtask`, e.g. `GPU_ARCH=sm_90`.
pub const ARCH_ENV: &str = "GPU_ARCH";

/// Lets LLVM's NVPTX backend fuse a multiply and an add into one `fma` (and emit plain `mul`/`add`
/// that ptxas may fuse), as nvcc (`-fmad=true`) and NVVM do by default. Without it every
/// `a * b + c` stays two correctly rounded operations (`mul.rn` + `add.rn`): about half the
/// floating-point throughput in multiply-add loops. Results may differ from the CPU's in the last bits.
const FP_CONTRACT_FLAG: &str = "-Cllvm-args=-nvptx-fma-level=1";

/// Environment variable that turns multiply-add fusion off (`0`) or on (`1`) for every crate.
pub const FMA_ENV: &str = "GPU_KERNEL_FMA";

/// `GPU_KERNEL_BRANCHES=llvm` keeps every crate's branches as LLVM emitted them, `ptxas`
/// reshapes them (see [`crate::branches`]), overriding the crates' own settings.
pub const BRANCHES_ENV: &str = "GPU_KERNEL_BRANCHES";

/// Whether `krate`'s PTX has its branches reshaped for ptxas ([`crate::branches`]):
/// `GPU_KERNEL_BRANCHES`, else `[package.metadata.gpu] branches`, else yes.
fn reshape_branches(krate: &KernelCrate) -> Result<bool> {
    let expected = "`ptxas` (branches reshaped for ptxas, the default) or `llvm` (as LLVM emitted \
                    them)";
    let value = krate.branches.as_deref();
    named_switch(krate, BRANCHES_ENV, "branches", value, "ptxas", expected)
}

/// LLVM's full-unroll threshold (in its size units; LLVM's own at `-O3` is 300) for `trap`
/// builds of crates that keep `unroll = "checks"`. In `trap` mode every checked index in a loop
/// adds a compare and a branch to the loop's size estimate, so loops that `unchecked` mode (and
/// nvcc) unroll completely stay rolled, and with them every check of a value the unrolled
/// copies would have made constant: CUDA's shared-memory bitonic sort (a loop of loops whose
/// trip counts become constants once the outer one is unrolled) stayed rolled in `trap` builds
/// and unrolled in `unchecked` ones. Twice LLVM's threshold makes room for the checks.
const CHECKED_UNROLL_FLAG: &str = "-Cllvm-args=-unroll-threshold=600";

/// `GPU_KERNEL_UNROLL=llvm` keeps LLVM's full-unroll threshold in every crate's `trap` build,
/// `checks` raises it (`-unroll-threshold=600`), overriding the crates' own settings.
pub const UNROLL_ENV: &str = "GPU_KERNEL_UNROLL";

/// Whether `krate`'s `trap` build raises LLVM's full-unroll threshold for its checks
/// ([`CHECKED_UNROLL_FLAG`]): `GPU_KERNEL_UNROLL`, else `[package.metadata.gpu] unroll`, else
/// yes.
fn unroll_for_checks(krate: &KernelCrate) -> Result<bool> {
    let expected = "`checks` (a full-unroll threshold that makes room for the checks, the \
                    default) or `llvm` (LLVM's threshold)";
    named_switch(
        krate,
        UNROLL_ENV,
        "unroll",
        krate.unroll.as_deref(),
        "checks",
        expected,
    )
}

/// A [`crate_switch`] between the builder's default `on` and `llvm` (LLVM's own way), on
/// unless set.
fn named_switch(
    krate: &KernelCrate,
    env_var: &str,
    key: &str,
    value: Option<&str>,
    on: &str,
    expected: &str,
) -> Result<bool> {
    let parse = |v: &str| match v {
        "llvm" => Some(false),
        v if v == on => Some(true),
        _ => None,
    };
    crate_switch(krate, env_var, key, value, parse, expected).map(|v| v.unwrap_or(true))
}

/// `GPU_KERNEL_PEEPHOLE=0` keeps every crate's float-to-integer clamps as LLVM emitted them,
/// `1` removes the redundant ones (see [`crate::peephole`]), overriding the crates' own settings.
pub const PEEPHOLE_ENV: &str = "GPU_KERNEL_PEEPHOLE";

/// Whether `krate`'s PTX goes through [`crate::peephole`]: `GPU_KERNEL_PEEPHOLE`, else
/// `[package.metadata.gpu] peephole`, else yes.
fn peephole(krate: &KernelCrate) -> Result<bool> {
    on_off_switch(krate, PEEPHOLE_ENV, "peephole", krate.peephole.as_deref())
}

/// `GPU_KERNEL_RECOMPUTE_INDICES=0` keeps every crate's indices live through loop nests as LLVM
/// wrote them, `1` recomputes them after the loops (see [`crate::remat`]), overriding the
/// crates' own settings.
pub const RECOMPUTE_ENV: &str = "GPU_KERNEL_RECOMPUTE_INDICES";

/// `GPU_KERNEL_INDEX32=0` builds no 32-bit index variants, `1` builds them in every crate (see
/// [`crate::index32`]), overriding the crates' own settings.
pub const INDEX32_ENV: &str = "GPU_KERNEL_INDEX32";

/// Whether `krate`'s kernels get 32-bit index variants ([`crate::index32`]):
/// `GPU_KERNEL_INDEX32`, else `[package.metadata.gpu] index32`, else yes.
fn index32_variants(krate: &KernelCrate) -> Result<bool> {
    on_off_switch(krate, INDEX32_ENV, "index32", krate.index32.as_deref())
}

/// Whether `krate`'s PTX goes through [`crate::remat`]: `GPU_KERNEL_RECOMPUTE_INDICES`, else
/// `[package.metadata.gpu] recompute_indices`, else yes.
fn recompute_indices(krate: &KernelCrate) -> Result<bool> {
    on_off_switch(
        krate,
        RECOMPUTE_ENV,
        "recompute_indices",
        krate.recompute_indices.as_deref(),
    )
}

/// Whether `krate`'s device build fuses multiply-adds: `GPU_KERNEL_FMA`, else
/// `[package.metadata.gpu] fma = false` turns it off, else on.
fn fp_contract(krate: &KernelCrate) -> Result<bool> {
    on_off_switch(krate, FMA_ENV, "fma", krate.fma.as_deref())
}

/// A [`crate_switch`] that is on or off (`true`/`false`, `1`/`0`), on unless set.
fn on_off_switch(
    krate: &KernelCrate,
    env_var: &str,
    key: &str,
    value: Option<&str>,
) -> Result<bool> {
    let parse = |v: &str| match v {
        "1" | "true" => Some(true),
        "0" | "false" => Some(false),
        _ => None,
    };
    crate_switch(krate, env_var, key, value, parse, "true/false (1/0)").map(|v| v.unwrap_or(true))
}

/// A per-crate build switch: the environment variable `env_var` when set, else the crate's
/// `[package.metadata.gpu] key` (`value`), else `None`. An unknown value is an error naming
/// where it came from and what `expected` values are.
fn crate_switch(
    krate: &KernelCrate,
    env_var: &str,
    key: &str,
    value: Option<&str>,
    parse: impl Fn(&str) -> Option<bool>,
    expected: &str,
) -> Result<Option<bool>> {
    let check = |v: &str, what: &str| {
        parse(v.trim())
            .map(Some)
            .ok_or_else(|| Error::msg(format!("{what}: expected {expected}, found `{}`", v.trim())))
    };
    match env::var(env_var) {
        Ok(v) if !v.trim().is_empty() => check(&v, env_var),
        _ => value.map_or(Ok(None), |v| {
            check(
                v,
                &format!(
                    "[package.metadata.gpu] {key} in {}",
                    krate.manifest_path.display()
                ),
            )
        }),
    }
}

/// Environment variable with extra rustc flags for the device build of every kernel crate
/// (space-separated), e.g. `-Cllvm-args=...`: an escape hatch for experiments.
pub const EXTRA_RUSTFLAGS_ENV: &str = "GPU_KERNEL_RUSTFLAGS";

/// Nightly features kernel crates (and the `gpu` crate) need. Injected with `-Zcrate-attr` so
/// kernel sources carry no `#![feature]` lines and still build for the host on stable.
const DEVICE_FEATURES: &[&str] = &["abi_ptx", "asm_experimental_arch", "stdarch_nvptx"];

/// One compiled PTX module.
#[derive(Debug, Clone)]
pub struct BuiltModule {
    pub krate: KernelCrate,
    pub arch: Arch,
    pub ptx_path: PathBuf,
    pub manifest_path: PathBuf,
    pub manifest: Manifest,
    /// `false` when nothing changed since the last build.
    pub rebuilt: bool,
    pub elapsed: Duration,
    /// Source files the module was compiled from (from rustc's dep-info).
    pub sources: Vec<PathBuf>,
    /// The module's code units (normally one per kernel) with their PTX and cubin files; empty
    /// for line-table builds.
    pub units: Vec<BuiltUnit>,
    /// Why the units have no SASS, when they have none (no ptxas, or no architectures asked
    /// for): their first load on a GPU JIT-compiles the PTX.
    pub no_sass: Option<String>,
}

/// Builds one kernel crate; the entry point for build scripts.
///
/// ```no_run
/// // build.rs of an application that embeds its kernels:
/// gpu_builder::KernelBuild::new("../kernels/my-kernels").build_script();
/// // then, in the application: gpu_host::include_kernels!("my_kernels");
/// ```
#[derive(Debug, Clone)]
pub struct KernelBuild {
    crate_dir: PathBuf,
    arch: Option<Arch>,
}

impl KernelBuild {
    /// `crate_dir` is the kernel crate's directory; relative paths are taken from the current
    /// directory (a build script runs in its package's directory).
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        KernelBuild {
            crate_dir: crate_dir.into(),
            arch: None,
        }
    }

    /// Target architecture; default: `$GPU_ARCH`, else `sm_80`.
    pub fn arch(mut self, arch: Arch) -> Self {
        self.arch = Some(arch);
        self
    }

    /// Compiles the crate (if it changed) and returns the module.
    pub fn build(&self) -> Result<BuiltModule> {
        let manifest = self.crate_dir.join("Cargo.toml");
        let workspace = Workspace::load(&manifest)?;
        let krate = workspace.find_by_manifest(&manifest)?;
        let arch = match self.arch {
            Some(arch) => arch,
            None => arch_from_env()?,
        };
        let rustc = Rustc::detect()?;
        compile(&workspace, &krate, arch, &rustc)
    }

    /// For `build.rs`: builds the module, writes `$OUT_DIR/<crate_name>.rs` with its typed
    /// launchers (include it with `gpu_host::include_kernels!`), and tells cargo to rerun when a
    /// kernel source changes. On failure prints the error and exits, failing the build.
    pub fn build_script(self) {
        if let Err(err) = self.try_build_script() {
            eprintln!(
                "error: building kernel crate {}: {err}",
                self.crate_dir.display()
            );
            std::process::exit(1);
        }
    }

    fn try_build_script(&self) -> Result<()> {
        println!("cargo:rerun-if-env-changed={ARCH_ENV}");
        println!("cargo:rerun-if-env-changed={}", sass::SASS_ARCHS_ENV);
        println!("cargo:rerun-if-env-changed={}", ptxas::PTXAS_ENV);
        println!("cargo:rerun-if-env-changed={EXTRA_RUSTFLAGS_ENV}");
        println!("cargo:rerun-if-env-changed={FMA_ENV}");
        println!("cargo:rerun-if-env-changed={BRANCHES_ENV}");
        println!("cargo:rerun-if-env-changed={PEEPHOLE_ENV}");
        println!("cargo:rerun-if-env-changed={UNROLL_ENV}");
        println!("cargo:rerun-if-env-changed={RECOMPUTE_ENV}");
        println!("cargo:rerun-if-env-changed={INDEX32_ENV}");
        println!("cargo:rerun-if-env-changed={}", crate::checks::CHECKS_ENV);
        let module = self.build()?;
        for source in &module.sources {
            println!("cargo:rerun-if-changed={}", source.display());
        }
        println!(
            "cargo:rerun-if-changed={}",
            module.krate.manifest_path.display()
        );
        let out_dir = PathBuf::from(env::var_os("OUT_DIR").ok_or_else(|| {
            Error::msg("OUT_DIR is not set: build_script() runs only from a build script")
        })?);
        if let Some(reason) = &module.no_sass {
            note_no_sass_once(&module, reason);
        }
        for warning in crate::sass::wgmma_warnings(&module.units) {
            println!("cargo:warning={}: {warning}", module.krate.crate_name);
        }
        let code = launchers::generate(&module.manifest, &module.units)?;
        let path = out_dir.join(format!("{}.rs", module.krate.crate_name));
        fs::write(&path, code).map_err(|e| Error::io(&path, e))
    }
}

/// Tells the user, once per target directory, that kernels are embedded as PTX only (a cargo
/// warning from the build script).
fn note_no_sass_once(module: &BuiltModule, reason: &str) {
    let marker = module
        .ptx_path
        .parent()
        .and_then(Path::parent)
        .map(|ptx| ptx.join("NO_SASS_NOTED"));
    if marker.as_ref().is_some_and(|m| m.exists()) {
        return;
    }
    println!("cargo:warning={}", no_sass_message(reason));
    if let Some(marker) = marker {
        let _ = fs::write(marker, reason);
    }
}

/// What a build without SASS means for the user, and how to get SASS.
pub fn no_sass_message(reason: &str) -> String {
    format!(
        "kernels are embedded as PTX only ({reason}): on a GPU, the first load of each kernel \
         JIT-compiles it (the driver caches the result). For precompiled SASS install ptxas: \
         python3 -m venv .venv && .venv/bin/pip install 'nvidia-cuda-nvcc==13.0.*'"
    )
}

/// The architecture named by `$GPU_ARCH`, or the default.
pub fn arch_from_env() -> Result<Arch> {
    match env::var(ARCH_ENV) {
        Ok(value) if !value.trim().is_empty() => value
            .parse()
            .map_err(|e: Error| e.context(format!("${ARCH_ENV}"))),
        _ => Ok(Arch::default()),
    }
}

/// Where the nvptx64 sysroot is cached for this workspace.
pub fn sysroot_cache(workspace: &Workspace) -> PathBuf {
    workspace.target_dir.join("nvptx-sysroot")
}

/// Where PTX modules and manifests for `arch` are written.
pub fn ptx_dir(workspace: &Workspace, arch: Arch) -> PathBuf {
    workspace.target_dir.join("ptx").join(arch.to_string())
}

/// Where PTX built with line tables ([`CompileOptions::line_tables`]) is written; kept apart
/// from [`ptx_dir`] so applications never embed it.
pub fn annotated_ptx_dir(workspace: &Workspace, arch: Arch) -> PathBuf {
    workspace
        .target_dir
        .join("ptx-annotated")
        .join(arch.to_string())
}

/// Variations of a kernel build for inspection tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompileOptions {
    /// Build with `debug = "line-tables-only"`, so the PTX carries `.file`/`.loc` directives
    /// mapping instructions to Rust source lines (see [`crate::annotate`]). Uses its own cargo
    /// target directory and writes to [`annotated_ptx_dir`], so the normal build (and its
    /// freshness) is untouched. The DWARF sections LLVM adds are stripped: ptxas cannot read
    /// them, but it accepts the `.loc` lines (`ptxas -lineinfo` keeps them for SASS).
    pub line_tables: bool,
}

/// Compiles `krate` for `arch`. Cargo decides what is stale; an unchanged crate costs one no-op
/// cargo call.
pub fn compile(
    workspace: &Workspace,
    krate: &KernelCrate,
    arch: Arch,
    rustc: &Rustc,
) -> Result<BuiltModule> {
    compile_with(workspace, krate, arch, rustc, CompileOptions::default())
}

/// The nvptx sysroot for a `checks` mode, built on first use (a minute, once per rustc version
/// and mode); `log` receives a line per step that takes time.
pub fn sysroot_for(
    workspace: &Workspace,
    rustc: &Rustc,
    checks: Checks,
    log: &mut dyn FnMut(&str),
) -> Result<Sysroot> {
    sysroot::ensure(rustc, &sysroot_cache(workspace), checks, log)
}

/// [`compile`] with [`CompileOptions`].
pub fn compile_with(
    workspace: &Workspace,
    krate: &KernelCrate,
    arch: Arch,
    rustc: &Rustc,
    options: CompileOptions,
) -> Result<BuiltModule> {
    let started = Instant::now();
    let arch = krate.build_arch(arch)?;
    let checks = krate.checks()?;
    let sysroot = &sysroot_for(workspace, rustc, checks, &mut |line| {
        eprintln!("gpu-builder: {line}")
    })?;
    let kind = if options.line_tables {
        "kernels-lines"
    } else {
        "kernels"
    };
    // One cargo target directory per crate: cargo locks a target directory for the whole
    // build, so crates sharing one would build one at a time. A new one starts from the
    // configuration's prebuilt dependencies ([`dep_cache`]).
    let cargo_target = workspace
        .target_dir
        .join(kind)
        .join(sysroot.key())
        .join(arch.to_string())
        .join(&krate.crate_name);
    if sysroot
        .dir
        .display()
        .to_string()
        .contains(char::is_whitespace)
    {
        return Err(Error::msg(format!(
            "the target directory path contains whitespace ({}), which cargo's RUSTFLAGS cannot carry; build from a path without spaces",
            sysroot.dir.display()
        )));
    }
    let mut rustflags = vec![
        "--sysroot".to_string(),
        sysroot.dir.display().to_string(),
        format!("-Ctarget-cpu={arch}"),
        format!("-Clinker={}", sysroot.noop_linker().display()),
    ];
    rustflags.extend(arch.cfgs().iter().map(|c| format!("--cfg={c}")));
    rustflags.extend(checks.panic_flags().iter().map(|f| f.to_string()));
    rustflags.extend(checks.cfgs().iter().map(|c| format!("--cfg={c}")));
    rustflags.extend(checks.llvm_flags().iter().map(|f| f.to_string()));
    if checks == Checks::Trap && unroll_for_checks(krate)? {
        rustflags.push(CHECKED_UNROLL_FLAG.to_string());
    }
    if fp_contract(krate)? {
        rustflags.push(FP_CONTRACT_FLAG.to_string());
    }
    rustflags.extend(
        DEVICE_FEATURES
            .iter()
            .map(|f| format!("-Zcrate-attr=feature({f})")),
    );
    if let Ok(extra) = env::var(EXTRA_RUSTFLAGS_ENV) {
        rustflags.extend(extra.split_whitespace().map(str::to_string));
    }

    // Cargo with this build's environment; the dependency cache's build and the crate's add
    // their arguments.
    let cargo = || {
        let mut cmd = Command::new(toolchain::cargo_path());
        clear_outer_cargo_env(&mut cmd);
        cmd.env("RUSTC_BOOTSTRAP", "1").env(
            "CARGO_TARGET_NVPTX64_NVIDIA_CUDA_RUSTFLAGS",
            rustflags.join(" "),
        );
        if options.line_tables {
            cmd.env("CARGO_PROFILE_KERNEL_DEBUG", "line-tables-only");
        }
        cmd
    };
    let config_args = ["--profile", "kernel", "--target", NVPTX_TARGET];
    dep_cache::prime(&cargo_target, cargo(), &config_args, &krate.manifest_path);
    let mut cmd = cargo();
    cmd.args(["rustc", "--quiet", "--lib"])
        .args(config_args)
        .args(["--crate-type", "cdylib"])
        .arg("--manifest-path")
        .arg(&krate.manifest_path)
        .arg("--target-dir")
        .arg(&cargo_target)
        .args(["--", "--emit=asm"]);
    let status = cmd
        .status()
        .map_err(|e| Error::msg(format!("running cargo: {e}")))?;
    if !status.success() {
        return Err(Error::msg(format!(
            "kernel crate `{}` failed to compile for {arch} (rustc's diagnostics are above)",
            krate.package
        )));
    }

    let out_dir = cargo_target.join(NVPTX_TARGET).join("kernel");
    let asm_path = out_dir.join("deps").join(format!("{}.s", krate.crate_name));
    let dir = if options.line_tables {
        annotated_ptx_dir(workspace, arch)
    } else {
        ptx_dir(workspace, arch)
    };
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let ptx_path = dir.join(format!("{}.ptx", krate.crate_name));
    let manifest_path = dir.join(format!("{}.manifest.json", krate.crate_name));
    let sources = dep_info_sources(&out_dir.join(format!("{}.d", krate.crate_name)));

    // The PTX file is shared by the builds of every checks mode (each has its own cargo target
    // directory): `<crate>.from` names the assembly it came from, so switching modes rewrites it.
    // The branch shape and the peephole and index rewrites are part of it: switching
    // `GPU_KERNEL_BRANCHES`, `GPU_KERNEL_PEEPHOLE`, `GPU_KERNEL_RECOMPUTE_INDICES` or
    // `GPU_KERNEL_INDEX32` rewrites the PTX too.
    let from_path = dir.join(format!("{}.from", krate.crate_name));
    let reshape = reshape_branches(krate)?;
    let simplify = peephole(krate)?;
    let recompute = recompute_indices(krate)?;
    // 32-bit index variants are kept where ptxas makes them shorter (see `code_units`), so they
    // are built only when there is SASS to choose them by; a change of it rebuilds the module.
    let variants_for = if index32_variants(krate)? && !options.line_tables {
        let targets = sass::targets(arch, &sass::archs_from_env()?);
        let newest = targets.iter().max_by_key(|a| a.sm).copied();
        newest.filter(|_| ptxas::find(&workspace.root).is_some())
    } else {
        None
    };
    let from = format!(
        "{} (branches: {}; conversions: {}; indices: {}; variants: {})",
        asm_path.display(),
        if reshape {
            crate::branches::REVISION
        } else {
            "LLVM's"
        },
        if simplify {
            crate::peephole::REVISION
        } else {
            "LLVM's"
        },
        if recompute {
            crate::remat::REVISION
        } else {
            "LLVM's"
        },
        match variants_for {
            Some(newest) => format!(
                "{} kept where shorter for {newest}",
                crate::index32::REVISION
            ),
            None => "none".to_string(),
        }
    );
    let rebuilt = modified(&asm_path)? > modified(&ptx_path).unwrap_or(SystemTime::UNIX_EPOCH)
        || !manifest_path.is_file()
        || fs::read_to_string(&from_path).ok().as_deref() != Some(from.as_str());
    let manifest = if rebuilt {
        let mut asm = fs::read_to_string(&asm_path).map_err(|e| Error::io(&asm_path, e))?;
        if options.line_tables {
            asm = crate::annotate::strip_debug_sections(&asm);
        }
        let (cleaned, module) = ptx::parse(&asm).map_err(|e| e.context(asm_path.display()))?;
        let cleaned = if reshape {
            crate::branches::reshape(&cleaned)
        } else {
            cleaned
        };
        let cleaned = if simplify {
            crate::peephole::simplify(&cleaned)
        } else {
            cleaned
        };
        let cleaned = if recompute {
            crate::remat::recompute(&cleaned)
        } else {
            cleaned
        };
        let ptx_file = format!("{}.ptx", krate.crate_name);
        let manifest = module.manifest(&krate.crate_name, &arch.to_string(), &ptx_file)?;
        // Line tables (`xtask ptx`) show the kernels as written; the variants are launch-time
        // copies.
        let cleaned = if variants_for.is_some() {
            crate::index32::add_variants(&cleaned, &manifest)
        } else {
            cleaned
        };
        let json =
            serde_json::to_string_pretty(&manifest).map_err(|e| Error::msg(e.to_string()))?;
        fs::write(&manifest_path, json).map_err(|e| Error::io(&manifest_path, e))?;
        fs::write(&ptx_path, cleaned).map_err(|e| Error::io(&ptx_path, e))?;
        fs::write(&from_path, &from).map_err(|e| Error::io(&from_path, e))?;
        manifest
    } else {
        read_manifest(&manifest_path)?
    };
    let (units, no_sass) = if options.line_tables {
        (Vec::new(), None)
    } else {
        code_units(workspace, krate, arch, &dir, &ptx_path)?
    };
    Ok(BuiltModule {
        krate: krate.clone(),
        arch,
        ptx_path,
        manifest_path,
        manifest,
        rebuilt,
        elapsed: started.elapsed(),
        sources,
        units,
        no_sass,
    })
}

/// Splits the module into code units, writes their PTX next to the module (in
/// `<crate>.units/`) and assembles them for the SASS architectures when ptxas is found.
fn code_units(
    workspace: &Workspace,
    krate: &KernelCrate,
    arch: Arch,
    dir: &Path,
    ptx_path: &Path,
) -> Result<(Vec<BuiltUnit>, Option<String>)> {
    let text = fs::read_to_string(ptx_path).map_err(|e| Error::io(ptx_path, e))?;
    let split = units::split(&text).map_err(|e| e.context(ptx_path.display()))?;
    let targets = sass::targets(arch, &sass::archs_from_env()?);
    let ptxas = if targets.is_empty() {
        None
    } else {
        ptxas::find(&workspace.root)
    };
    let no_sass = if targets.is_empty() {
        Some(format!(
            "no SASS architectures for {arch} (${})",
            sass::SASS_ARCHS_ENV
        ))
    } else if ptxas.is_none() {
        if sass::ptxas_required() {
            return Err(Error::msg(format!(
                "{} is set but ptxas was not found (pip install 'nvidia-cuda-nvcc==13.0.*' into \
                 .venv, set $PTXAS, or put a CUDA toolkit's bin/ on PATH)",
                sass::REQUIRE_PTXAS_ENV
            )));
        }
        Some("ptxas not found".to_string())
    } else {
        None
    };
    let units_dir = dir.join(format!("{}.units", krate.crate_name));
    let built = sass::build_units(workspace, &units_dir, &split, ptxas.as_deref(), &targets)?;
    // 32-bit index variants stay where ptxas made them shorter than their kernels for the
    // newest architecture built (without SASS none stay): a variant that is no shorter was
    // measured no faster, or slower (ptxas scheduled or if-converted it differently).
    let entries: Vec<String> = split.iter().flat_map(|u| u.kernels.clone()).collect();
    if !entries
        .iter()
        .any(|e| gpu_abi::index32::kernel_of_variant(e).is_some())
    {
        return Ok((built, no_sass));
    }
    let mut counts = std::collections::HashMap::new();
    if let Some(newest) = targets.iter().max_by_key(|a| a.sm) {
        for unit in &built {
            if let Some((_, cubin)) = unit.sass.iter().find(|(a, _)| a == newest) {
                let bytes = fs::read(cubin).map_err(|e| Error::io(cubin, e))?;
                counts.extend(crate::index32::instruction_counts(&bytes));
            }
        }
    }
    let dropped = crate::index32::unprofitable(&entries, &counts);
    if dropped.is_empty() {
        return Ok((built, no_sass));
    }
    let text = crate::index32::remove_variants(&text, &dropped);
    fs::write(ptx_path, &text).map_err(|e| Error::io(ptx_path, e))?;
    let split = units::split(&text).map_err(|e| e.context(ptx_path.display()))?;
    let built = sass::build_units(workspace, &units_dir, &split, ptxas.as_deref(), &targets)?;
    Ok((built, no_sass))
}

pub fn read_manifest(path: &Path) -> Result<Manifest> {
    let text = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", path.display())))
}

fn modified(path: &Path) -> Result<SystemTime> {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| Error::io(path, e))
}

/// Sources listed in a rustc dep-info file (`out: src1 src2 ...`).
fn dep_info_sources(dep_info: &Path) -> Vec<PathBuf> {
    let Ok(text) = fs::read_to_string(dep_info) else {
        return Vec::new();
    };
    let Some(first) = text.lines().next() else {
        return Vec::new();
    };
    let Some((_, deps)) = first.split_once(": ") else {
        return Vec::new();
    };
    deps.replace("\\ ", "\u{0}")
        .split_whitespace()
        .map(|p| PathBuf::from(p.replace('\u{0}', " ")))
        .collect()
}

/// A nested cargo must not inherit the outer build's settings: build-script variables, the
/// outer target directory, flags, and `cargo clippy`'s rustc wrapper.
pub(crate) fn clear_outer_cargo_env(cmd: &mut Command) {
    const KEEP: &[&str] = &[
        "CARGO_HOME",
        "CARGO_NET_OFFLINE",
        "CARGO_HTTP_",
        "CARGO_NET_",
        "CARGO_REGISTRIES_",
        "CARGO_REGISTRY_",
    ];
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let cargo_var = key.starts_with("CARGO_") && !KEEP.iter().any(|k| key.starts_with(k));
        let build_var = matches!(
            key,
            "RUSTFLAGS"
                | "RUSTDOCFLAGS"
                | "RUSTC_WORKSPACE_WRAPPER"
                | "OUT_DIR"
                | "TARGET"
                | "HOST"
                | "PROFILE"
                | "OPT_LEVEL"
                | "DEBUG"
                | "NUM_JOBS"
                | "RUSTC_LINKER"
        );
        if cargo_var || build_var || key.starts_with("DEP_") {
            cmd.env_remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn krate(unroll: Option<&str>) -> KernelCrate {
        KernelCrate {
            package: "user-kernels".into(),
            crate_name: "user_kernels".into(),
            manifest_path: PathBuf::from("/ws/user-kernels/Cargo.toml"),
            required_arch: None,
            checks: None,
            fma: None,
            branches: None,
            peephole: None,
            unroll: unroll.map(str::to_string),
            recompute_indices: None,
            index32: None,
        }
    }

    /// The full-unroll threshold is raised unless the crate keeps LLVM's; a misspelt setting
    /// is an error naming the key, the manifest and the accepted values.
    #[test]
    fn unroll_setting() {
        if env::var(UNROLL_ENV).is_ok() {
            eprintln!("SKIPPED unroll_setting: {UNROLL_ENV} is set and overrides the crates");
            return;
        }
        assert!(unroll_for_checks(&krate(None)).unwrap());
        assert!(unroll_for_checks(&krate(Some("checks"))).unwrap());
        assert!(!unroll_for_checks(&krate(Some("llvm"))).unwrap());
        let e = unroll_for_checks(&krate(Some("more")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unroll")
                && e.contains("/ws/user-kernels/Cargo.toml")
                && e.contains("`llvm`"),
            "{e}"
        );
    }
}
