//! `cargo xtask sanitize`: run examples and GPU test binaries under NVIDIA compute-sanitizer.
//!
//! Runs each target under each tool (memcheck, racecheck, synccheck, initcheck) and prints one
//! line per run with the error count the tool reported. `selftest` runs the planted bugs of
//! `gpu-tests/tests/faults.rs` and passes only when the tools *do* report them (an out-of-bounds
//! write under memcheck, a shared-memory race under racecheck): proof that the tooling works.
//!
//! Binaries are not built here, so that this also runs on a GPU machine without Rust: they are
//! looked up next to this executable (and in `../tests` from it), in `.gpu/bin` and `.gpu/tests`
//! (made by `cargo xtask gpu-bundle`), then in `target/release` and `target/release/deps`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use gpu_builder::{Error, Result};

pub const TOOLS: [&str; 4] = ["memcheck", "racecheck", "synccheck", "initcheck"];

/// Examples with inputs small enough for the sanitizer's slowdown.
const EXAMPLES: [(&str, &[&str]); 5] = [
    ("vector_add", &["4096"]),
    ("matmul", &["64", "48", "32"]),
    ("segmented_reduce", &["64", "40"]),
    ("rgb_to_gray", &[]),
    ("monte_carlo", &["1024", "16"]),
];

/// A GPU test binary to run under the sanitizer.
struct TestBin {
    name: &'static str,
    /// libtest arguments: one thread (the tools serialize kernels anyway), and filters.
    args: &'static [&'static str],
    /// Its tests call the driver with bad input on purpose (allocations larger than the device,
    /// PTX that does not assemble, kernels that do not exist) and check the clear error that
    /// comes back. memcheck would count those deliberate failures as API errors, so it runs
    /// with `--report-api-errors no` for these binaries; device memory errors (out-of-bounds or
    /// misaligned accesses, leaks of device allocations) are reported as for every other target.
    deliberate_api_errors: bool,
}

/// GPU test binaries, with small fuzz/soak/input sizes (see [`run`]). `faults` runs only its
/// `clean_` tests (the `fault_` ones crash kernels on purpose; `selftest` runs the planted bugs).
const TESTS: [TestBin; 8] = [
    TestBin {
        name: "gpu_examples",
        args: &["--test-threads=1"],
        deliberate_api_errors: false,
    },
    TestBin {
        name: "device_selftest",
        args: &["--test-threads=1"],
        deliberate_api_errors: false,
    },
    TestBin {
        name: "launch_limits",
        args: &["--test-threads=1"],
        deliberate_api_errors: false,
    },
    TestBin {
        name: "gpu",
        args: &["--test-threads=1"],
        deliberate_api_errors: true,
    },
    TestBin {
        name: "faults",
        args: &["--test-threads=1", "clean_"],
        deliberate_api_errors: true,
    },
    TestBin {
        name: "algorithms",
        args: &["--test-threads=1"],
        deliberate_api_errors: false,
    },
    TestBin {
        name: "algorithms_sort",
        args: &["--test-threads=1"],
        deliberate_api_errors: false,
    },
    TestBin {
        name: "random",
        args: &["--test-threads=1"],
        deliberate_api_errors: false,
    },
];

/// The input-length cap (`GPU_TEST_MAX_LEN`) for the tests under a sanitizer: keeps 2^16 + 1
/// (several tiles of every algorithm) and drops the 2^20..2^24 sizes, which take minutes each
/// under racecheck.
const SANITIZE_MAX_LEN: &str = "70000";

/// Runs `cargo xtask sanitize ARGS` from the workspace root (the current directory: on a GPU
/// machine without cargo there is no manifest to ask).
pub fn sanitize(args: &[String]) -> Result<()> {
    let root = std::env::current_dir().map_err(|e| Error::msg(format!("current dir: {e}")))?;
    let root = root.as_path();
    let mut tools: Vec<String> = TOOLS.iter().map(|t| t.to_string()).collect();
    let mut targets = Vec::new();
    let mut extra = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            extra.extend(it.by_ref().cloned());
        } else if let Some(v) = a.strip_prefix("--tool=") {
            tools = v.split(',').map(str::to_string).collect();
        } else if a == "--tool" {
            let v = it
                .next()
                .ok_or_else(|| Error::msg("--tool needs a value"))?;
            tools = v.split(',').map(str::to_string).collect();
        } else {
            targets.push(a.clone());
        }
    }
    if let Some(bad) = tools.iter().find(|t| !TOOLS.contains(&t.as_str())) {
        return Err(Error::msg(format!(
            "unknown tool `{bad}`; use {}",
            TOOLS.join(", ")
        )));
    }
    if targets.is_empty() {
        return Err(Error::msg(
            "name what to check: an example (vector_add, matmul, segmented_reduce, rgb_to_gray, \
             monte_carlo), a GPU test binary (faults, device_selftest, gpu_examples, \
             launch_limits, gpu, algorithms, algorithms_sort, random), \
             `all` for every one of them, or `selftest` for the planted bugs",
        ));
    }
    let Some(sanitizer) = find_sanitizer() else {
        println!(
            "sanitize: compute-sanitizer not found (looked at $COMPUTE_SANITIZER, PATH, \
             /usr/local/cuda/bin); nothing checked. It ships with the CUDA toolkit."
        );
        return Ok(());
    };
    let mut runs = Vec::new();
    for target in &targets {
        match target.as_str() {
            "selftest" => {
                let bin = find_test(root, "faults")?;
                for (test, tool) in [
                    ("planted_oob_write", "memcheck"),
                    ("planted_shared_race", "racecheck"),
                ] {
                    let args = ["--ignored", "--exact", test, "--test-threads=1"];
                    runs.push(run(&sanitizer, tool, &bin, &args, test, true, false)?);
                }
            }
            "all" => {
                for (name, args) in EXAMPLES {
                    let bin = find_example(root, name)?;
                    for tool in &tools {
                        runs.push(run(&sanitizer, tool, &bin, args, name, false, false)?);
                    }
                }
                for t in &TESTS {
                    let bin = find_test(root, t.name)?;
                    for tool in &tools {
                        let api = t.deliberate_api_errors;
                        runs.push(run(&sanitizer, tool, &bin, t.args, t.name, false, api)?);
                    }
                }
            }
            name => {
                let (bin, default_args, api) =
                    if let Some((_, a)) = EXAMPLES.iter().find(|(n, _)| *n == name) {
                        (find_example(root, name)?, *a, false)
                    } else {
                        let t = TESTS.iter().find(|t| t.name == name);
                        let a = t.map_or(&["--test-threads=1"][..], |t| t.args);
                        let api = t.is_some_and(|t| t.deliberate_api_errors);
                        (find_test(root, name)?, a, api)
                    };
                let args: Vec<&str> = if extra.is_empty() {
                    default_args.to_vec()
                } else {
                    extra.iter().map(String::as_str).collect()
                };
                for tool in &tools {
                    runs.push(run(&sanitizer, tool, &bin, &args, name, false, api)?);
                }
            }
        }
    }
    let failed: Vec<&Run> = runs.iter().filter(|r| !r.passed).collect();
    let clean = runs.iter().filter(|r| r.passed && !r.expect_errors).count();
    let caught = runs.iter().filter(|r| r.passed && r.expect_errors).count();
    println!(
        "sanitize: {} run(s): {clean} clean, {caught} planted bug(s) caught, {} failed",
        runs.len(),
        failed.len()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "sanitizer runs failed: {}",
            failed
                .iter()
                .map(|r| format!("{} under {}", r.target, r.tool))
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }
}

struct Run {
    target: String,
    tool: String,
    passed: bool,
    expect_errors: bool,
}

fn run(
    sanitizer: &Path,
    tool: &str,
    bin: &Path,
    args: &[&str],
    target: &str,
    expect_errors: bool,
    deliberate_api_errors: bool,
) -> Result<Run> {
    let started = Instant::now();
    let mut cmd = Command::new(sanitizer);
    cmd.args(["--tool", tool, "--print-limit", "20"]);
    if tool == "racecheck" {
        cmd.args(["--racecheck-report", "hazard"]);
    }
    if tool == "memcheck" && deliberate_api_errors {
        cmd.args(["--report-api-errors", "no"]);
    }
    // Small sizes for the fuzz and soak tests, which run thousands of launches, and for the
    // inputs of the algorithm tests.
    cmd.env("FUZZ_ITERS", "300")
        .env("SOAK_ITERS", "50")
        .env("GPU_TEST_MAX_LEN", SANITIZE_MAX_LEN);
    let output = cmd
        .arg(bin)
        .args(args)
        .output()
        .map_err(|e| Error::msg(format!("running {}: {e}", sanitizer.display())))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let errors = summary_count(&text, "ERROR SUMMARY:");
    let hazards = summary_count(&text, "RACECHECK SUMMARY:");
    let reported = errors.unwrap_or(0) + hazards.unwrap_or(0);
    let passed = if expect_errors {
        reported > 0
    } else {
        output.status.success() && reported == 0 && (errors.is_some() || hazards.is_some())
    };
    println!(
        "  {:<9} {:<18} {:>4} error(s){}  exit {:>3}  {:>6.1}s  {}",
        tool,
        target,
        reported,
        hazards.map_or(String::new(), |h| format!(" ({h} hazard(s))")),
        output.status.code().unwrap_or(-1),
        started.elapsed().as_secs_f64(),
        match (passed, expect_errors) {
            (true, false) => "clean",
            (true, true) => "CAUGHT (planted bug)",
            (false, true) => "FAILED: the planted bug was not reported",
            (false, false) => "FAILED",
        }
    );
    if !passed {
        for line in text
            .lines()
            .filter(|l| {
                l.starts_with("=========") || l.contains("panicked") || l.contains("FAILED")
            })
            .take(40)
        {
            println!("      {line}");
        }
    }
    Ok(Run {
        target: target.to_string(),
        tool: tool.to_string(),
        passed,
        expect_errors,
    })
}

/// The number after `marker` in compute-sanitizer's summary line ("ERROR SUMMARY: 3 errors").
fn summary_count(text: &str, marker: &str) -> Option<u64> {
    let line = text.lines().rev().find(|l| l.contains(marker))?;
    let after = &line[line.find(marker)? + marker.len()..];
    after.split_whitespace().next()?.parse().ok()
}

fn find_sanitizer() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("COMPUTE_SANITIZER") {
        return Some(PathBuf::from(p));
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join("compute-sanitizer");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    let p = PathBuf::from("/usr/local/cuda/bin/compute-sanitizer");
    p.is_file().then_some(p)
}

fn search_dirs(root: &Path, bundle: &str, target: &str) -> Vec<PathBuf> {
    // Next to this executable first (a bundle carried to a GPU machine), then the workspace.
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        dirs.push(dir.clone());
        if let Some(up) = dir.parent() {
            dirs.push(up.join(bundle));
        }
    }
    dirs.push(root.join(".gpu").join(bundle));
    dirs.push(root.join("target").join("release").join(target));
    dirs
}

fn find_example(root: &Path, name: &str) -> Result<PathBuf> {
    search_dirs(root, "bin", "")
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::msg(format!(
                "example binary `{name}` not found: run `cargo xtask gpu-bundle` (or `cargo \
                 build --release -p gpu-examples`) first"
            ))
        })
}

/// The newest `NAME-<hash>` executable in the bundle or `target/release/deps`.
fn find_test(root: &Path, name: &str) -> Result<PathBuf> {
    let prefix = format!("{name}-");
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for dir in search_dirs(root, "tests", "deps") {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            let hash = file.strip_prefix(&prefix);
            if hash.is_none_or(|h| h.contains('.') || h.contains('-')) {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            if best.as_ref().is_none_or(|(t, _)| modified > *t) {
                best = Some((modified, e.path()));
            }
        }
        if best.is_some() {
            break;
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| {
        Error::msg(format!(
            "test binary `{name}` not found: run `cargo xtask gpu-bundle` (or `cargo test \
             --release --no-run`) first"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::summary_count;

    #[test]
    fn reads_the_summary_lines() {
        let out = "========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 2 hazards displayed \
                   (2 errors, 0 warnings)\n========= ERROR SUMMARY: 0 errors\n";
        assert_eq!(summary_count(out, "ERROR SUMMARY:"), Some(0));
        assert_eq!(summary_count(out, "RACECHECK SUMMARY:"), Some(2));
        assert_eq!(summary_count("nothing", "ERROR SUMMARY:"), None);
    }
}
