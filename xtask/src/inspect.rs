//! Inspection commands: annotated PTX (`ptx`), ptxas resource reports (`resources`,
//! `check-ptx`), SASS (`sass`) and build-to-build comparison (`ptx-diff`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use gpu_builder::annotate::{self, Annotator};
use gpu_builder::compile::{self, BuiltModule, CompileOptions};
use gpu_builder::ptxas::{self, Resources};
use gpu_builder::toolchain::Rustc;
use gpu_builder::workspace::{KernelCrate, Workspace};
use gpu_builder::{Arch, Error, Result, diff};

use crate::{relative, workspace};

const PTXAS_MISSING: &str = "ptxas not found. Install it with:\n  python3 -m venv .venv && .venv/bin/pip install 'nvidia-cuda-nvcc==13.0.*'\n\
     or set $PTXAS, or put a CUDA toolkit's bin/ on PATH";

/// Options shared by the inspection commands, parsed from the command line.
#[derive(Debug, Default)]
pub struct Opts {
    pub arches: Vec<Arch>,
    pub positional: Vec<String>,
    pub raw: bool,
    pub hide_std: bool,
    pub resources: bool,
    pub stat: bool,
    pub save_baseline: Option<String>,
    pub compare: Option<String>,
    pub context: usize,
}

impl Opts {
    pub fn parse(args: &[String], allowed: &[&str], help: &str) -> Result<Opts> {
        let mut opts = Opts {
            context: 3,
            ..Default::default()
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            if !flag.starts_with('-') {
                opts.positional.push(arg.clone());
                continue;
            }
            if !allowed.contains(&flag) {
                return Err(Error::msg(format!("unknown option `{arg}`\n\n{help}")));
            }
            let mut value = || -> Result<String> {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| Error::msg(format!("{flag} needs a value")))
            };
            match flag {
                "--arch" => opts.arches.push(value()?.parse()?),
                "--raw" => opts.raw = true,
                "--no-std" => opts.hide_std = true,
                "--resources" => opts.resources = true,
                "--stat" => opts.stat = true,
                "--save-baseline" => opts.save_baseline = Some(value()?),
                "--compare" => opts.compare = Some(value()?),
                "--context" | "-U" => {
                    opts.context = value()?
                        .parse()
                        .map_err(|_| Error::msg("--context needs a number of lines"))?
                }
                _ => unreachable!("allowed list and match agree"),
            }
        }
        Ok(opts)
    }

    /// The one architecture a single-arch command uses: `--arch`, `$GPU_ARCH`, or sm_80.
    fn arch(&self) -> Result<Arch> {
        match self.arches.as_slice() {
            [] => compile::arch_from_env(),
            [one] => Ok(*one),
            _ => Err(Error::msg("this command takes one --arch")),
        }
    }
}

/// `crate` or `crate::kernel`.
fn split_target(target: &str) -> (&str, Option<&str>) {
    match target.split_once("::") {
        Some((c, k)) if !k.is_empty() => (c, Some(k)),
        Some((c, _)) => (c, None),
        None => (target, None),
    }
}

fn build_one(
    ws: &Workspace,
    krate: &KernelCrate,
    arch: Arch,
    options: CompileOptions,
) -> Result<BuiltModule> {
    let rustc = Rustc::detect()?;
    compile::compile_with(ws, krate, arch, &rustc, options)
}

fn kernel_names(module: &BuiltModule) -> String {
    module
        .manifest
        .kernels
        .iter()
        .map(|k| k.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_kernel(module: &BuiltModule, kernel: Option<&str>) -> Result<()> {
    if let Some(k) = kernel
        && !module.manifest.kernels.iter().any(|m| m.name == k)
    {
        return Err(Error::msg(format!(
            "crate `{}` has no kernel `{k}`; its kernels: {}",
            module.krate.crate_name,
            kernel_names(module)
        )));
    }
    Ok(())
}

/// One kernel's text (with the `.func`s it calls), or the whole module.
fn select(ptx: &str, kernel: Option<&str>) -> String {
    match kernel {
        Some(k) => annotate::kernel_with_callees(ptx, k).unwrap_or_default(),
        None => ptx.to_string(),
    }
}

pub fn resources_line(arch: Arch, r: &Resources) -> String {
    let wgmma = if r.wgmma_serialized.is_some() {
        "  WGMMA SERIALIZED".to_string()
    } else if r.wgmma_fences_injected > 0 {
        format!("  WGMMA FENCES INJECTED x{}", r.wgmma_fences_injected)
    } else {
        String::new()
    };
    format!(
        "{arch} {:<28} regs {:>3}  stack {:>4} B  spill st/ld {:>3}/{:<3} B  smem {:>6} B  barriers {}{}{wgmma}",
        r.function,
        r.registers,
        r.stack_frame_bytes,
        r.spill_store_bytes,
        r.spill_load_bytes,
        r.shared_bytes,
        r.barriers,
        if r.spills() {
            "  SPILLS"
        } else if r.local_frame() {
            "  LOCAL ARRAY"
        } else {
            ""
        }
    )
}

/// `cargo xtask ptx <crate>[::<kernel>]`: PTX interleaved with the Rust lines it came from.
pub fn ptx(args: &[String], help: &str) -> Result<()> {
    let opts = Opts::parse(args, &["--arch", "--raw", "--no-std", "--resources"], help)?;
    let [target] = opts.positional.as_slice() else {
        return Err(Error::msg(format!(
            "ptx takes one CRATE or CRATE::KERNEL\n\n{help}"
        )));
    };
    let (crate_name, kernel) = split_target(target);
    let ws = workspace()?;
    let krate = ws.find(crate_name)?;
    let arch = opts.arch()?;
    let plain = build_one(&ws, &krate, arch, CompileOptions::default())?;
    check_kernel(&plain, kernel)?;
    // A crate with `[package.metadata.gpu] arch` is built for that architecture.
    let arch = plain.arch;

    let resources = if opts.resources || !opts.raw {
        ptxas::find(&ws.root)
            .map(|p| ptxas::assemble(&p, &plain.ptx_path, plain.arch))
            .transpose()?
    } else {
        None
    };

    let text = if opts.raw {
        let ptx = fs::read_to_string(&plain.ptx_path).map_err(|e| Error::io(&plain.ptx_path, e))?;
        println!(
            "// {} {arch}: {}",
            target,
            relative(&plain.ptx_path, &ws.root).display()
        );
        select(&ptx, kernel)
    } else {
        let lines = build_one(&ws, &krate, arch, CompileOptions { line_tables: true })?;
        let ptx = fs::read_to_string(&lines.ptx_path).map_err(|e| Error::io(&lines.ptx_path, e))?;
        let files = annotate::file_table(&ptx);
        let mut annotator = Annotator::new(&ws.root);
        annotator.hide_std = opts.hide_std;
        println!(
            "// {target} {arch}: {} with Rust source lines (`//> file:line  source`); built with line tables",
            relative(&lines.ptx_path, &ws.root).display()
        );
        annotator.annotate_ptx(&select(&ptx, kernel), &files)
    };
    if let Some(resources) = &resources {
        for r in resources
            .iter()
            .filter(|r| r.is_entry && kernel.is_none_or(|k| r.function == k))
        {
            println!("// ptxas: {}", resources_line(arch, r));
        }
    } else if opts.resources {
        return Err(Error::msg(PTXAS_MISSING));
    }
    print!("{text}");
    Ok(())
}

/// Assembles every selected module for each architecture and prints per-kernel resources
/// (`resources` and `check-ptx`). Returns the kernels that spill.
pub fn report_resources(arches: &[Arch], crates: &[String]) -> Result<Vec<String>> {
    let ws = workspace()?;
    let ptxas = ptxas::find(&ws.root).ok_or_else(|| Error::msg(PTXAS_MISSING))?;
    println!("using {}", ptxas.display());
    let mut spilling = Vec::new();
    let mut serialized = Vec::new();
    for &arch in arches {
        for module in crate::build(&ws, arch, crates)? {
            let resources = ptxas::assemble(&ptxas, &module.ptx_path, module.arch)?;
            for r in resources.iter().filter(|r| r.is_entry) {
                println!("    {}", resources_line(module.arch, r));
                if let Some(warning) = r.wgmma_warning() {
                    serialized.push(format!(
                        "{} ({}): {warning}",
                        module.krate.crate_name, module.arch
                    ));
                }
                if r.spills() {
                    spilling.push(format!(
                        "{}::{} ({})",
                        module.krate.crate_name, r.function, module.arch
                    ));
                }
            }
            println!(
                "  ptxas ok: {} ({})",
                relative(&module.ptx_path, &ws.root).display(),
                module.arch
            );
        }
    }
    if !spilling.is_empty() {
        println!(
            "note: kernels that spill registers: {}",
            spilling.join(", ")
        );
    }
    for warning in serialized {
        println!("warning: {warning}");
    }
    Ok(spilling)
}

/// `cargo xtask resources [--arch sm_XX]... [CRATE...]`.
pub fn resources(args: &[String], help: &str) -> Result<()> {
    let opts = Opts::parse(args, &["--arch"], help)?;
    let arches = if opts.arches.is_empty() {
        vec![compile::arch_from_env()?]
    } else {
        opts.arches
    };
    report_resources(&arches, &opts.positional).map(|_| ())
}

/// `cargo xtask sass <crate>[::<kernel>]`: ptxas (with `-lineinfo`) + nvdisasm, annotated with
/// the Rust source lines.
pub fn sass(args: &[String], help: &str) -> Result<()> {
    let opts = Opts::parse(args, &["--arch", "--raw", "--no-std"], help)?;
    let [target] = opts.positional.as_slice() else {
        return Err(Error::msg(format!(
            "sass takes one CRATE or CRATE::KERNEL\n\n{help}"
        )));
    };
    let (crate_name, kernel) = split_target(target);
    let ws = workspace()?;
    let krate = ws.find(crate_name)?;
    let arch = opts.arch()?;
    let ptxas = ptxas::find(&ws.root).ok_or_else(|| Error::msg(PTXAS_MISSING))?;
    let nvdisasm = ptxas::find_tool(&ws.root, "nvdisasm", "NVDISASM");
    let cuobjdump = ptxas::find_tool(&ws.root, "cuobjdump", "CUOBJDUMP");
    if nvdisasm.is_none() && cuobjdump.is_none() {
        return Err(Error::msg(
            "nvdisasm not found: .venv/bin/pip install 'nvidia-cuda-nvdisasm==13.*', set $NVDISASM, \
             or put a CUDA toolkit's bin/ on PATH (cuobjdump works too, without source lines)",
        ));
    }
    let module = build_one(&ws, &krate, arch, CompileOptions { line_tables: true })?;
    check_kernel(&module, kernel)?;
    let arch = module.arch;
    let cubin = module
        .ptx_path
        .with_extension(format!("{}.cubin", module.arch));
    ptxas::assemble_to(
        &ptxas,
        &module.ptx_path,
        module.arch,
        &["-lineinfo"],
        &cubin,
    )?;
    let (tool, output) = match &nvdisasm {
        Some(nvdisasm) => {
            let mut cmd = Command::new(nvdisasm);
            cmd.arg("-c");
            if !opts.raw {
                cmd.arg("-g");
            }
            (nvdisasm, cmd.arg(&cubin).output())
        }
        None => {
            let cuobjdump = cuobjdump.as_ref().expect("checked above");
            (
                cuobjdump,
                Command::new(cuobjdump).arg("-sass").arg(&cubin).output(),
            )
        }
    };
    let output = output.map_err(|e| Error::msg(format!("running {}: {e}", tool.display())))?;
    if !output.status.success() {
        return Err(Error::msg(format!(
            "{} failed on {}:\n{}",
            tool.display(),
            cubin.display(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let text = match kernel {
        Some(k) => sass_section(&text, k).ok_or_else(|| {
            Error::msg(format!("no SASS section for `{k}` in {}", tool.display()))
        })?,
        None => text.into_owned(),
    };
    println!(
        "// {target} {arch}: SASS of {} from {}",
        relative(&cubin, &ws.root).display(),
        tool.display()
    );
    if opts.raw {
        print!("{text}");
    } else {
        let mut annotator = Annotator::new(&ws.root);
        annotator.hide_std = opts.hide_std;
        print!("{}", annotator.annotate_sass(&text));
    }
    Ok(())
}

/// The `.text.<kernel>` section of nvdisasm output (or cuobjdump's `Function : <kernel>` block).
fn sass_section(sass: &str, kernel: &str) -> Option<String> {
    let lines: Vec<&str> = sass.lines().collect();
    let nv_start = format!(".text.{kernel},");
    let cu_start = format!("Function : {kernel}");
    // `.section` as a whole word: `.sectioninfo`/`.sectionflags` lines belong to the section.
    let is_section = |t: &str| t.split_whitespace().next() == Some(".section");
    let start = lines.iter().position(|l| {
        let t = l.trim();
        (is_section(t) && t.contains(&nv_start)) || t == cu_start
    })?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| {
            let t = l.trim();
            is_section(t) || t.starts_with("Function : ")
        })
        .map_or(lines.len(), |p| start + 1 + p);
    Some(lines[start..end].iter().map(|l| format!("{l}\n")).collect())
}

fn baseline_dir(ws: &Workspace, name: &str, arch: Arch) -> Result<PathBuf> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(Error::msg(format!(
            "baseline name `{name}` must be letters, digits, '-', '_' or '.'"
        )));
    }
    Ok(ws
        .target_dir
        .join("ptx-baselines")
        .join(name)
        .join(arch.to_string()))
}

/// `cargo xtask ptx-diff --save-baseline NAME | --compare NAME [--arch] [CRATE[::KERNEL]...]`.
pub fn ptx_diff(args: &[String], help: &str) -> Result<()> {
    let opts = Opts::parse(
        args,
        &[
            "--arch",
            "--save-baseline",
            "--compare",
            "--stat",
            "--context",
            "-U",
        ],
        help,
    )?;
    let arch = opts.arch()?;
    let ws = workspace()?;
    let ptxas = ptxas::find(&ws.root);
    if ptxas.is_none() {
        eprintln!("note: ptxas not found, so no resource figures ({PTXAS_MISSING})");
    }
    let targets: Vec<(&str, Option<&str>)> =
        opts.positional.iter().map(|t| split_target(t)).collect();
    let crate_names: Vec<String> = targets.iter().map(|(c, _)| c.to_string()).collect();

    match (&opts.save_baseline, &opts.compare) {
        (Some(name), None) => {
            let dir = baseline_dir(&ws, name, arch)?;
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            for module in crate::build(&ws, arch, &crate_names)? {
                let name = &module.krate.crate_name;
                let ptx_copy = dir.join(format!("{name}.ptx"));
                fs::copy(&module.ptx_path, &ptx_copy).map_err(|e| Error::io(&ptx_copy, e))?;
                if let Some(ptxas) = &ptxas {
                    let resources = ptxas::assemble(ptxas, &module.ptx_path, module.arch)?;
                    let json = serde_json::to_string_pretty(&resources)
                        .map_err(|e| Error::msg(e.to_string()))?;
                    let path = dir.join(format!("{name}.resources.json"));
                    fs::write(&path, json).map_err(|e| Error::io(&path, e))?;
                }
            }
            println!(
                "ptx-diff: saved baseline `{}` in {}",
                opts.save_baseline.as_deref().unwrap_or_default(),
                relative(&dir, &ws.root).display()
            );
            Ok(())
        }
        (None, Some(name)) => {
            let dir = baseline_dir(&ws, name, arch)?;
            if !dir.is_dir() {
                return Err(Error::msg(format!(
                    "no baseline `{name}` for {arch} (save one with `cargo xtask ptx-diff --save-baseline {name} --arch {arch}`)"
                )));
            }
            let crates: Vec<String> = if crate_names.is_empty() {
                saved_crates(&dir)?
            } else {
                crate_names
            };
            let mut changed = 0;
            for module in crate::build(&ws, arch, &crates)? {
                changed += compare_module(&ws, &dir, &module, ptxas.as_deref(), &targets, &opts)?;
            }
            println!("ptx-diff: {changed} kernel(s) changed against baseline `{name}` ({arch})");
            Ok(())
        }
        _ => Err(Error::msg(format!(
            "ptx-diff needs exactly one of --save-baseline NAME or --compare NAME\n\n{help}"
        ))),
    }
}

fn saved_crates(dir: &Path) -> Result<Vec<String>> {
    let mut crates = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.extension().is_some_and(|e| e == "ptx")
            && let Some(stem) = path.file_stem()
        {
            crates.push(stem.to_string_lossy().into_owned());
        }
    }
    crates.sort();
    Ok(crates)
}

/// Prints resource deltas and PTX diffs of one module's kernels; returns how many changed.
fn compare_module(
    ws: &Workspace,
    dir: &Path,
    module: &BuiltModule,
    ptxas: Option<&Path>,
    targets: &[(&str, Option<&str>)],
    opts: &Opts,
) -> Result<usize> {
    let name = &module.krate.crate_name;
    let old_path = dir.join(format!("{name}.ptx"));
    let old_ptx = fs::read_to_string(&old_path).map_err(|_| {
        Error::msg(format!(
            "the baseline has no `{name}` (saved crates: {})",
            saved_crates(dir).unwrap_or_default().join(", ")
        ))
    })?;
    let new_ptx =
        fs::read_to_string(&module.ptx_path).map_err(|e| Error::io(&module.ptx_path, e))?;
    let old_res: Vec<Resources> = fs::read_to_string(dir.join(format!("{name}.resources.json")))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let new_res = match ptxas {
        Some(p) => ptxas::assemble(p, &module.ptx_path, module.arch)?,
        None => Vec::new(),
    };
    // Kernels: those named for this crate, else every entry of either build.
    let wanted: Vec<&str> = targets
        .iter()
        .filter(|(c, _)| c.replace('-', "_") == module.krate.crate_name)
        .filter_map(|(_, k)| *k)
        .collect();
    let mut kernels: BTreeSet<String> = annotate::functions(&old_ptx)
        .into_iter()
        .chain(annotate::functions(&new_ptx))
        .filter(|f| f.is_entry)
        .map(|f| f.name)
        .collect();
    if !wanted.is_empty() {
        kernels.retain(|k| wanted.contains(&k.as_str()));
        for w in &wanted {
            if !kernels.contains(*w) {
                return Err(Error::msg(format!(
                    "no kernel `{w}` in `{name}` in either build"
                )));
            }
        }
    }
    let mut changed = 0;
    for kernel in &kernels {
        let old_text = annotate::kernel_with_callees(&old_ptx, kernel).unwrap_or_default();
        let new_text = annotate::kernel_with_callees(&new_ptx, kernel).unwrap_or_default();
        let old_r = old_res.iter().find(|r| &r.function == kernel);
        let new_r = new_res.iter().find(|r| &r.function == kernel);
        let patch = diff::unified(
            &format!("{name}::{kernel} (baseline)"),
            &format!("{name}::{kernel} (now)"),
            &old_text,
            &new_text,
            opts.context,
        );
        let resources_changed = old_r != new_r && old_r.is_some() && new_r.is_some();
        if patch.is_empty() && !resources_changed {
            println!("  {name}::{kernel}: unchanged");
            continue;
        }
        changed += 1;
        let added = patch
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .count();
        let removed = patch
            .lines()
            .filter(|l| l.starts_with('-') && !l.starts_with("---"))
            .count();
        println!(
            "  {name}::{kernel}: PTX {} -> {} lines (+{added} -{removed})",
            old_text.lines().count(),
            new_text.lines().count()
        );
        match (old_r, new_r) {
            (Some(o), Some(n)) => println!("    {}", resource_delta(o, n)),
            (None, Some(_)) if !old_text.is_empty() => {
                println!("    (the baseline has no resource figures: it was saved without ptxas)")
            }
            _ => {}
        }
        if !opts.stat && !patch.is_empty() {
            print!("{patch}");
        }
    }
    let _ = ws;
    Ok(changed)
}

/// `regs 20 -> 24 (+4)  stack 32 -> 32  ...` for the figures of two builds of a kernel.
pub fn resource_delta(old: &Resources, new: &Resources) -> String {
    let field = |label: &str, unit: &str, a: u32, b: u32| {
        if a == b {
            format!("{label} {a}{unit}")
        } else {
            format!(
                "{label} {a} -> {b}{unit} ({:+})",
                i64::from(b) - i64::from(a)
            )
        }
    };
    let mut parts = vec![
        field("regs", "", old.registers, new.registers),
        field("stack", " B", old.stack_frame_bytes, new.stack_frame_bytes),
        field(
            "spill st",
            " B",
            old.spill_store_bytes,
            new.spill_store_bytes,
        ),
        field("spill ld", " B", old.spill_load_bytes, new.spill_load_bytes),
        field("smem", " B", old.shared_bytes, new.shared_bytes),
        field("barriers", "", old.barriers, new.barriers),
    ];
    if new.spills() && !old.spills() {
        parts.push("NOW SPILLS".into());
    }
    parts.join("  ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_deltas() {
        assert_eq!(split_target("seed"), ("seed", None));
        assert_eq!(split_target("seed::saxpy"), ("seed", Some("saxpy")));
        let old = Resources {
            function: "k".into(),
            registers: 20,
            ..Default::default()
        };
        let new = Resources {
            registers: 24,
            spill_store_bytes: 8,
            ..old.clone()
        };
        let d = resource_delta(&old, &new);
        assert!(d.starts_with("regs 20 -> 24 (+4)  stack 0 B"), "{d}");
        assert!(
            d.contains("spill st 0 -> 8 B (+8)") && d.ends_with("NOW SPILLS"),
            "{d}"
        );
    }

    #[test]
    fn sass_section_of_one_kernel() {
        let sass = "\t.section\t.text.a,\"ax\",@progbits\n\t.sectioninfo\t@\"SHI_REGISTERS=12\"\n.text.a:\n  IADD3\n\t.section\t.text.b,\"ax\",@progbits\n.text.b:\n  EXIT\n";
        assert_eq!(
            sass_section(sass, "b").unwrap(),
            "\t.section\t.text.b,\"ax\",@progbits\n.text.b:\n  EXIT\n"
        );
        assert!(sass_section(sass, "a").unwrap().contains("IADD3"));
        assert!(sass_section(sass, "c").is_none());
    }
}
