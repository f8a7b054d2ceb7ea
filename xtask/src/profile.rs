//! `cargo xtask profile <example> [args]`: runs a program under Nsight Compute (`ncu`) and prints
//! the key metrics per kernel.
//!
//! The GPU machine has no Rust toolchain, so this also runs from a bundle: `cargo xtask
//! gpu-bundle` copies the xtask binary into `.gpu/bin/` next to the example binaries, and
//! `./.gpu/bin/xtask profile demo` finds `demo` beside itself.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use gpu_builder::{Error, Result};

/// The metrics collected, in the order shown.
pub const METRICS: [&str; 4] = [
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
];

/// The metrics of one profiled kernel launch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchMetrics {
    pub id: u64,
    pub kernel: String,
    pub block: String,
    pub grid: String,
    /// `gpu__time_duration.sum`, in nanoseconds.
    pub duration_ns: Option<f64>,
    /// DRAM throughput, % of peak.
    pub dram_pct: Option<f64>,
    /// Achieved occupancy: active warps, % of the SM's maximum.
    pub occupancy_pct: Option<f64>,
    /// SM throughput, % of peak.
    pub sm_pct: Option<f64>,
}

/// Splits one CSV record (RFC 4180 quoting: `"a,b"`, `""` for a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// A number as ncu prints it (`1,234.5`, `n/a`).
fn number(text: &str) -> Option<f64> {
    text.trim().replace(',', "").parse().ok()
}

/// Nanoseconds from a duration in ncu's unit.
fn to_ns(value: f64, unit: &str) -> f64 {
    match unit.trim() {
        "second" | "s" => value * 1e9,
        "msecond" | "ms" => value * 1e6,
        "usecond" | "us" => value * 1e3,
        _ => value, // "nsecond"
    }
}

/// Parses `ncu --csv --page details` output: one row per (launch, metric), with columns `ID`,
/// `Kernel Name`, `Block Size`, `Grid Size`, `Metric Name`, `Metric Unit`, `Metric Value`
/// (found by name; other columns and lines before the header, such as `==PROF==` messages, are
/// ignored). Returns the launches in ID order.
pub fn parse_details_csv(text: &str) -> Result<Vec<LaunchMetrics>> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("\"ID\""));
    let header = lines.next().ok_or_else(|| {
        Error::msg(
            "ncu printed no CSV table (no line starting with \"ID\"): did it profile any kernel?",
        )
    })?;
    let header = csv_fields(header);
    let col = |name: &str| -> Result<usize> {
        header.iter().position(|h| h == name).ok_or_else(|| {
            Error::msg(format!(
                "ncu's CSV has no `{name}` column (columns: {})",
                header.join(", ")
            ))
        })
    };
    let (id, kernel, metric, unit, value) = (
        col("ID")?,
        col("Kernel Name")?,
        col("Metric Name")?,
        col("Metric Unit")?,
        col("Metric Value")?,
    );
    let block = col("Block Size").ok();
    let grid = col("Grid Size").ok();
    let mut launches: Vec<LaunchMetrics> = Vec::new();
    for line in lines {
        if line.trim().is_empty() || line.starts_with("==") {
            continue;
        }
        let f = csv_fields(line);
        let get = |i: usize| f.get(i).map(String::as_str).unwrap_or("");
        let Ok(launch_id) = get(id).trim().parse::<u64>() else {
            continue;
        };
        let at = match launches.iter().position(|l| l.id == launch_id) {
            Some(at) => at,
            None => {
                launches.push(LaunchMetrics {
                    id: launch_id,
                    kernel: get(kernel).to_string(),
                    block: block.map(|b| get(b).to_string()).unwrap_or_default(),
                    grid: grid.map(|g| get(g).to_string()).unwrap_or_default(),
                    ..Default::default()
                });
                launches.len() - 1
            }
        };
        let launch = &mut launches[at];
        let v = number(get(value));
        match get(metric) {
            "gpu__time_duration.sum" => launch.duration_ns = v.map(|v| to_ns(v, get(unit))),
            "dram__throughput.avg.pct_of_peak_sustained_elapsed" => launch.dram_pct = v,
            "sm__warps_active.avg.pct_of_peak_sustained_active" => launch.occupancy_pct = v,
            "sm__throughput.avg.pct_of_peak_sustained_elapsed" => launch.sm_pct = v,
            _ => {}
        }
    }
    launches.sort_by_key(|l| l.id);
    Ok(launches)
}

/// Per-kernel averages over its launches, in first-launch order.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSummary {
    pub kernel: String,
    pub launches: usize,
    pub mean: LaunchMetrics,
}

pub fn summarize(launches: &[LaunchMetrics]) -> Vec<KernelSummary> {
    let mut names: Vec<&str> = Vec::new();
    for l in launches {
        if !names.contains(&l.kernel.as_str()) {
            names.push(&l.kernel);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let of: Vec<&LaunchMetrics> = launches.iter().filter(|l| l.kernel == name).collect();
            let mean = |f: fn(&LaunchMetrics) -> Option<f64>| {
                let values: Vec<f64> = of.iter().filter_map(|l| f(l)).collect();
                (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
            };
            KernelSummary {
                kernel: name.to_string(),
                launches: of.len(),
                mean: LaunchMetrics {
                    id: of[0].id,
                    kernel: name.to_string(),
                    block: of[0].block.clone(),
                    grid: of[0].grid.clone(),
                    duration_ns: mean(|l| l.duration_ns),
                    dram_pct: mean(|l| l.dram_pct),
                    occupancy_pct: mean(|l| l.occupancy_pct),
                    sm_pct: mean(|l| l.sm_pct),
                },
            }
        })
        .collect()
}

fn fmt_duration(ns: Option<f64>) -> String {
    match ns {
        None => "-".into(),
        Some(ns) if ns >= 1e6 => format!("{:.3} ms", ns / 1e6),
        Some(ns) if ns >= 1e3 => format!("{:.2} us", ns / 1e3),
        Some(ns) => format!("{ns:.0} ns"),
    }
}

fn fmt_pct(p: Option<f64>) -> String {
    p.map_or("-".into(), |p| format!("{p:.1} %"))
}

/// The per-kernel table `profile` prints.
pub fn table(summaries: &[KernelSummary]) -> String {
    let width = summaries
        .iter()
        .map(|s| s.kernel.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut out = format!(
        "{:<width$}  {:>8}  {:>12}  {:>10}  {:>10}  {:>8}  {:>16}  {:>12}\n",
        "kernel", "launches", "duration", "DRAM peak", "achv. occ", "SM peak", "grid", "block"
    );
    for s in summaries {
        let m = &s.mean;
        out.push_str(&format!(
            "{:<width$}  {:>8}  {:>12}  {:>10}  {:>10}  {:>8}  {:>16}  {:>12}\n",
            s.kernel,
            s.launches,
            fmt_duration(m.duration_ns),
            fmt_pct(m.dram_pct),
            fmt_pct(m.occupancy_pct),
            fmt_pct(m.sm_pct),
            m.grid,
            m.block
        ));
    }
    out
}

/// Finds `ncu`: `$NCU`, `PATH`, `/usr/local/cuda/bin`.
fn find_ncu() -> Result<PathBuf> {
    if let Some(p) = env::var_os("NCU") {
        return Ok(PathBuf::from(p));
    }
    env::var_os("PATH")
        .map(|p| env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/local/cuda/bin")])
        .map(|d| d.join("ncu"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::msg(
                "ncu not found: install Nsight Compute (part of the CUDA toolkit) or set NCU=path",
            )
        })
}

/// The program to profile: a path, a binary next to this xtask (the `.gpu/bin` bundle), or a
/// workspace binary built here with `cargo build --release --bin NAME`.
pub(crate) fn find_program(name: &str) -> Result<PathBuf> {
    let as_path = Path::new(name);
    if name.contains('/') && as_path.is_file() {
        return Ok(as_path.to_path_buf());
    }
    if let Ok(me) = env::current_exe()
        && let Some(dir) = me.parent()
    {
        let beside = dir.join(name);
        if beside.is_file() {
            return Ok(beside);
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root");
    if !root.join("Cargo.toml").is_file() {
        return Err(Error::msg(format!(
            "no program `{name}` next to {} and no workspace to build it in",
            env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        )));
    }
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(["build", "--release", "--quiet", "--bin", name])
        .current_dir(root)
        .status()
        .map_err(|e| Error::msg(format!("running cargo: {e}")))?;
    if !status.success() {
        return Err(Error::msg(format!(
            "could not build `{name}` (cargo build --release --bin {name}); examples: demo, vector_add, matmul, rgb_to_gray, segmented_reduce, examples-profile"
        )));
    }
    let target = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    Ok(target.join("release").join(name))
}

/// `profile [--kernel NAME] [--launch-count N] [--nvtx-include RANGE] [--csv FILE] <program> [args...]`
pub fn profile(args: &[String], help: &str) -> Result<()> {
    let mut ncu_filters: Vec<String> = Vec::new();
    let mut csv_out: Option<PathBuf> = None;
    let mut it = args.iter();
    let mut program = None;
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| Error::msg(format!("{flag} needs a value")))
        };
        match arg.as_str() {
            "--kernel" | "-k" => {
                ncu_filters.extend(["--kernel-name".into(), format!("regex:{}", value(arg)?)])
            }
            "--launch-count" | "-c" => ncu_filters.extend(["--launch-count".into(), value(arg)?]),
            "--nvtx-include" => {
                ncu_filters.extend(["--nvtx".into(), "--nvtx-include".into(), value(arg)?])
            }
            "--csv" => csv_out = Some(PathBuf::from(value(arg)?)),
            flag if flag.starts_with('-') => {
                return Err(Error::msg(format!("unknown option `{flag}`\n\n{help}")));
            }
            name => {
                program = Some(name.to_string());
                break;
            }
        }
    }
    let Some(program) = program else {
        return Err(Error::msg(format!(
            "profile needs a program, e.g. `cargo xtask profile demo`\n\n{help}"
        )));
    };
    let program_args: Vec<String> = it.cloned().collect();
    let ncu = find_ncu()?;
    let exe = find_program(&program)?;
    let scratch = env::temp_dir().join(format!("gpu-profile-{}", std::process::id()));
    fs::create_dir_all(&scratch).map_err(|e| Error::io(&scratch, e))?;
    let report = scratch.join("profile");
    println!(
        "profile: {} under {} (metrics: {})",
        exe.display(),
        ncu.display(),
        METRICS.join(", ")
    );
    let status = Command::new(&ncu)
        .arg("--metrics")
        .arg(METRICS.join(","))
        .args(&ncu_filters)
        .arg("--export")
        .arg(&report)
        .arg("--force-overwrite")
        .arg(&exe)
        .args(&program_args)
        .status()
        .map_err(|e| Error::msg(format!("running {}: {e}", ncu.display())))?;
    if !status.success() {
        return Err(Error::msg(format!(
            "{} exited with {status} under ncu (its output is above; ncu needs access to GPU \
             performance counters: run as root or allow profiling for all users)",
            exe.display()
        )));
    }
    let output = Command::new(&ncu)
        .arg("--import")
        .arg(report.with_extension("ncu-rep"))
        // ncu scales units itself (`us`, `ms`); the parser converts them to nanoseconds.
        .args(["--csv", "--page", "details", "--print-metric-name", "name"])
        .output()
        .map_err(|e| Error::msg(format!("running {}: {e}", ncu.display())))?;
    let csv = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        return Err(Error::msg(format!(
            "ncu --import failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    if let Some(path) = &csv_out {
        fs::write(path, &csv).map_err(|e| Error::io(path, e))?;
    }
    let _ = fs::remove_dir_all(&scratch);
    let launches = parse_details_csv(&csv)?;
    println!(
        "\nprofile: {} kernel launch(es) profiled; averages per kernel:",
        launches.len()
    );
    print!("{}", table(&summarize(&launches)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of `ncu --import r.ncu-rep --csv --page details --print-metric-name name`
    /// (Nsight Compute 2025.x), with program output and ncu messages before it.
    const SAMPLE: &str = r#"==PROF== Connected to process 4242 (/root/.gpu/bin/demo)
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","demo","127.0.0.1","vector_add","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","91.52"
"0","4242","demo","127.0.0.1","vector_add","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","1,024.00"
"0","4242","demo","127.0.0.1","vector_add","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","Command line profiler metrics","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","20.10"
"0","4242","demo","127.0.0.1","vector_add","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","80.00"
"1","4242","demo","127.0.0.1","vector_add","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","976000"
"1","4242","demo","127.0.0.1","vector_add","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","n/a"
"2","4242","demo","127.0.0.1","matmul_tiled","1","7","(16, 16, 1)","(128, 128, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","2.5"
"#;

    #[test]
    fn parses_ncu_details_csv() {
        let launches = parse_details_csv(SAMPLE).unwrap();
        assert_eq!(launches.len(), 3);
        assert_eq!(launches[0].kernel, "vector_add");
        assert_eq!(launches[0].duration_ns, Some(1_024_000.0));
        assert_eq!(launches[0].dram_pct, Some(91.52));
        assert_eq!(launches[0].occupancy_pct, Some(80.0));
        assert_eq!(launches[0].sm_pct, Some(20.1));
        assert_eq!(launches[0].grid, "(65536, 1, 1)");
        assert_eq!(launches[1].dram_pct, None);
        assert_eq!(launches[2].duration_ns, Some(2_500_000.0));

        let summary = summarize(&launches);
        assert_eq!(summary.len(), 2);
        assert_eq!(summary[0].launches, 2);
        assert_eq!(summary[0].mean.duration_ns, Some(1_000_000.0));
        assert_eq!(summary[0].mean.dram_pct, Some(91.52));
        let t = table(&summary);
        assert!(t.contains("vector_add"), "{t}");
        assert!(t.contains("1.000 ms") && t.contains("2.500 ms"), "{t}");
        assert!(t.contains("91.5 %"), "{t}");
    }

    /// Captured on the H100 device machine: `xtask profile --launch-count 40 demo` with
    /// Nsight Compute 2025.3.1 (default, auto-scaled units).
    const H100_DEMO: &str = include_str!("../testdata/ncu_details_h100.csv");

    #[test]
    fn parses_captured_h100_csv() {
        let launches = parse_details_csv(H100_DEMO).unwrap();
        let names: Vec<&str> = launches.iter().map(|l| l.kernel.as_str()).collect();
        assert_eq!(
            names,
            [
                "vector_add",
                "saxpy",
                "rgb_to_gray",
                "matmul_naive",
                "matmul_tiled",
                "segmented_sum"
            ]
        );
        let vector_add = &launches[0];
        assert_eq!(vector_add.duration_ns, Some(77_470.0));
        assert_eq!(vector_add.dram_pct, Some(73.64));
        assert_eq!(vector_add.occupancy_pct, Some(77.89));
        assert_eq!(vector_add.sm_pct, Some(50.91));
        assert_eq!(vector_add.block, "(256, 1, 1)");
        assert_eq!(launches[3].duration_ns, Some(1_370_000.0), "ms converted");
        assert!(launches.iter().all(|l| l.duration_ns.is_some()
            && l.dram_pct.is_some()
            && l.occupancy_pct.is_some()
            && l.sm_pct.is_some()));
    }

    #[test]
    fn csv_quoting_and_missing_table() {
        assert_eq!(
            csv_fields(r#""a,b","say ""hi""",3"#),
            ["a,b", "say \"hi\"", "3"]
        );
        let err = parse_details_csv("==PROF== No kernels were profiled.\n").unwrap_err();
        assert!(err.to_string().contains("no CSV table"), "{err}");
    }
}
