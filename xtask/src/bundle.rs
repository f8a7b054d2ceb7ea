//! `cargo xtask gpu-bundle`: the binaries a GPU machine without a Rust toolchain needs, built
//! here and gathered in `.gpu/` (optionally a subset, optionally packed to carry).

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use gpu_builder::{Error, Result};

/// What `gpu-bundle` was asked for.
struct Options {
    /// Keep only binaries of these names (test binaries without cargo's hash suffix).
    only: Option<Vec<String>>,
    /// Also pack the bundle into `.gpu/bundle.tar.xz`.
    archive: bool,
}

fn parse(args: &[String], help: &str) -> Result<Options> {
    let mut options = Options {
        only: None,
        archive: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--only" => {
                let names = it
                    .next()
                    .ok_or_else(|| Error::msg("--only needs a comma-separated list of names"))?;
                options.only = Some(
                    names
                        .split(',')
                        .filter(|n| !n.is_empty())
                        .map(str::to_string)
                        .collect(),
                );
            }
            "--archive" => options.archive = true,
            other => {
                return Err(Error::msg(format!(
                    "gpu-bundle: unknown argument `{other}`\n\n{help}"
                )));
            }
        }
    }
    Ok(options)
}

/// `name` without cargo's `-<16 hex digits>` suffix of test binaries.
fn stem(name: &str) -> &str {
    match name.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            stem
        }
        _ => name,
    }
}

/// The names of `only` that no path in `copied` (`dir/name`) carries yet.
fn not_built<'a>(only: &'a [String], copied: &[String]) -> Vec<&'a String> {
    only.iter()
        .filter(|o| {
            !copied
                .iter()
                .any(|c| stem(c.rsplit('/').next().unwrap_or("")) == o.as_str())
        })
        .collect()
}

/// Builds what a GPU machine without Rust needs and copies it to `.gpu/`: the example binaries,
/// xtask and the benches crate's programs (`.gpu/bin/`), the criterion benchmarks
/// (`.gpu/bench/`), every release test binary (`.gpu/tests/`), and `.gpu/tests.txt` naming them;
/// with `--only`, those of the given names; with `--archive`, packed into
/// `.gpu/bundle.tar.xz` too.
pub fn gpu_bundle(args: &[String], help: &str) -> Result<()> {
    let options = parse(args, help)?;
    let workspace = crate::workspace()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let run = |args: &[&str]| -> Result<String> {
        let output = Command::new(&cargo)
            .args(args)
            .current_dir(&workspace.root)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| Error::msg(format!("running cargo: {e}")))?;
        if !output.status.success() {
            return Err(Error::msg(format!("cargo {} failed", args.join(" "))));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let wanted = |name: &str| {
        options
            .only
            .as_ref()
            .is_none_or(|only| name == "xtask" || only.iter().any(|o| o == stem(name)))
    };
    let bundle = workspace.root.join(".gpu");
    let _ = fs::remove_dir_all(&bundle);
    for dir in ["bin", "tests", "bench"] {
        fs::create_dir_all(bundle.join(dir)).map_err(|e| Error::io(&bundle, e))?;
    }
    let mut copied = Vec::new();
    for (args, dest) in [
        (
            &[
                "build",
                "--release",
                "-p",
                "gpu-examples",
                "--bins",
                "--message-format=json-render-diagnostics",
            ][..],
            "bin",
        ),
        (
            // xtask itself, so `.gpu/bin/xtask profile demo` runs on the GPU machine, and the
            // benches crate's programs (examples-profile).
            &[
                "build",
                "--release",
                "-p",
                "xtask",
                "-p",
                "benches",
                "-p",
                "distributed-examples",
                "--bins",
                "--message-format=json-render-diagnostics",
            ][..],
            "bin",
        ),
        (
            // Criterion benchmarks: run on the device as `.gpu/bench/seed --bench`.
            &[
                "bench",
                "-p",
                "benches",
                "--no-run",
                "--message-format=json-render-diagnostics",
            ][..],
            "bench",
        ),
        (
            &[
                "test",
                "--release",
                "--workspace",
                "--no-run",
                "--message-format=json-render-diagnostics",
            ][..],
            "tests",
        ),
    ] {
        // With `--only`, stop building once every named binary is in (test binaries come last
        // and take longest: a bundle of programs skips them).
        if options
            .only
            .as_ref()
            .is_some_and(|only| not_built(only, &copied).is_empty())
        {
            break;
        }
        for line in run(args)?.lines() {
            let Some((exe, kinds, harness)) = executable_of(line) else {
                continue;
            };
            if dest == "tests" && !harness {
                // The workspace's programs, built for the tests that start them: bin/ has them.
                continue;
            }
            let mut name = Path::new(&exe)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if dest == "bench" {
                // `cargo bench` also builds the library's test harness; keep the benchmarks,
                // named without cargo's hash suffix.
                if !kinds.iter().any(|k| k == "bench") {
                    continue;
                }
                name = stem(&name).to_string();
            }
            if !wanted(&name) {
                continue;
            }
            let target = bundle.join(dest).join(&name);
            fs::copy(&exe, &target).map_err(|e| Error::io(Path::new(&exe), e))?;
            copied.push(format!("{dest}/{name}"));
        }
    }
    if let Some(only) = &options.only {
        let missing = not_built(only, &copied);
        if !missing.is_empty() {
            return Err(Error::msg(format!(
                "gpu-bundle: no binary named {missing:?} was built (names are binaries of the \
                 examples, xtask, benches and distributed-examples, criterion benchmarks, and test \
                 targets such as `algorithms` or `processes`)"
            )));
        }
    }
    let tests: Vec<&String> = copied.iter().filter(|c| c.starts_with("tests/")).collect();
    let list = tests
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    fs::write(bundle.join("tests.txt"), list).map_err(|e| Error::io(&bundle, e))?;
    let bytes: u64 = copied
        .iter()
        .filter_map(|c| fs::metadata(bundle.join(c)).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "gpu-bundle: {} files, {:.1} MiB in .gpu/",
        copied.len(),
        bytes as f64 / (1 << 20) as f64
    );
    if options.archive {
        archive(&bundle, &copied)?;
    }
    Ok(())
}

/// Packs `files` (paths under `bundle`) and `tests.txt` into `bundle/bundle.tar.xz` with the
/// system's `tar` and `xz`.
fn archive(bundle: &Path, files: &[String]) -> Result<()> {
    let out = bundle.join("bundle.tar.xz");
    let status = Command::new("tar")
        .arg("-cJf")
        .arg(&out)
        .arg("-C")
        .arg(bundle)
        .arg("tests.txt")
        .args(files)
        .env("XZ_OPT", "-6 -T0")
        .status()
        .map_err(|e| Error::msg(format!("gpu-bundle --archive: running tar: {e}")))?;
    if !status.success() {
        return Err(Error::msg(format!(
            "gpu-bundle --archive: tar -cJf failed ({status}); it needs tar and xz on PATH"
        )));
    }
    let bytes = fs::metadata(&out).map_err(|e| Error::io(&out, e))?.len();
    println!(
        "gpu-bundle: .gpu/bundle.tar.xz, {:.1} MiB: carry it, then `tar xJf .gpu/bundle.tar.xz \
         -C .gpu` there{}",
        bytes as f64 / (1 << 20) as f64,
        if bytes > 60 << 20 {
            " (over 60 MiB: the device tool carries 64 MiB at most; bundle fewer with --only)"
        } else {
            ""
        }
    );
    Ok(())
}

/// The `"executable"` of a cargo JSON `compiler-artifact` message, if it has one, with its
/// target's kinds (`bin`, `test`, `bench`, ...) and whether it was built as a test harness.
fn executable_of(line: &str) -> Option<(String, Vec<String>, bool)> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if value.get("reason")?.as_str()? != "compiler-artifact" {
        return None;
    }
    let exe = value.get("executable")?.as_str()?.to_string();
    let kinds = value
        .get("target")
        .and_then(|t| t.get("kind"))
        .and_then(|k| k.as_array())
        .map(|k| {
            k.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let harness = value
        .get("profile")
        .and_then(|p| p.get("test"))
        .and_then(|t| t.as_bool())
        .unwrap_or(false);
    Some((exe, kinds, harness))
}
