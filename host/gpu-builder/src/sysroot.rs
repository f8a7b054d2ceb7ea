//! A private sysroot holding `core` and `compiler_builtins` compiled for `nvptx64-nvidia-cuda`.
//!
//! rustup ships no standard library for the nvptx64 target, so we build `core` ourselves, once per
//! rustc version, and cache it under the target directory. The cache key includes rustc's commit
//! hash: a toolchain update rebuilds it, and an unchanged toolchain never does. Each
//! [`Checks`] mode has its own sysroot (its own panic strategy, see [`crate::checks`]).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::NVPTX_TARGET;
use crate::checks::{self, Checks};
use crate::core_source::{self, LibrarySource, SourceOrigin};
use crate::error::{Error, Result};
use crate::toolchain::Rustc;

/// Bumped whenever what goes into the sysroot changes, so a stale one is never reused.
const LAYOUT_VERSION: &str = "v2";

/// A sysroot directory to pass to rustc as `--sysroot` for nvptx64 builds.
#[derive(Debug, Clone)]
pub struct Sysroot {
    pub dir: PathBuf,
}

impl Sysroot {
    pub fn lib_dir(&self) -> PathBuf {
        lib_dir(&self.dir)
    }

    /// Names this exact sysroot (rustc version + layout); kernel build directories are keyed
    /// by it because cargo does not notice when a custom sysroot's `core` is rebuilt.
    pub fn key(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The linker to give rustc for kernel cdylibs (see `NOOP_LINKER_SRC`).
    pub fn noop_linker(&self) -> PathBuf {
        self.dir
            .join("bin")
            .join(format!("gpu-noop-linker{}", std::env::consts::EXE_SUFFIX))
    }
}

/// rustc still "links" a kernel cdylib although the PTX comes from `--emit=asm`. This stand-in
/// linker creates the `-o` file (empty) so cargo sees its output and knows an unchanged crate is
/// up to date; without it every build would recompile the kernel crate.
const NOOP_LINKER_SRC: &str = r#"
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "-o") {
        if let Some(out) = args.get(i + 1) {
            if let Err(e) = std::fs::write(out, b"") {
                eprintln!("gpu-noop-linker: cannot write {out}: {e}");
                std::process::exit(1);
            }
        }
    }
}
"#;

fn lib_dir(sysroot: &Path) -> PathBuf {
    sysroot.join("lib/rustlib").join(NVPTX_TARGET).join("lib")
}

/// `compiler_builtins` for nvptx64. Every `cdylib` links it, but kernels need none of its
/// routines: LLVM lowers integer and float arithmetic to PTX instructions directly. The one gap
/// is 128-bit division, which LLVM turns into calls to `__udivti3` and friends; ptxas then
/// reports an unresolved symbol, which `crate::ptxas` explains.
const COMPILER_BUILTINS_SRC: &str = "\
#![feature(compiler_builtins)]
#![compiler_builtins]
#![no_builtins]
#![no_std]
#![allow(internal_features)]
";

/// Returns the nvptx64 sysroot for `rustc` and the `checks` mode, building it under
/// `cache_root` first if needed. `log` receives one line per step that takes time.
pub fn ensure(
    rustc: &Rustc,
    cache_root: &Path,
    checks: Checks,
    log: &mut dyn FnMut(&str),
) -> Result<Sysroot> {
    let dir = cache_root.join(format!(
        "{}-{LAYOUT_VERSION}{}",
        rustc.cache_key(),
        checks.sysroot_suffix()
    ));
    let stamp = dir.join("sysroot.complete");
    if stamp.is_file() {
        return Ok(Sysroot { dir });
    }
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    // Build scripts of several crates may ask at once: one builds, the others wait.
    let lock_path = dir.join(".lock");
    let lock = File::create(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
    lock.lock().map_err(|e| Error::io(&lock_path, e))?;
    if stamp.is_file() {
        return Ok(Sysroot { dir });
    }

    let started = Instant::now();
    let mut source = core_source::locate_or_extract(&rustc.sysroot, &dir.join("src"))?;
    if checks == Checks::Unchecked {
        source = patched_copy(&source, &dir.join("src/patched-library"))?;
    }
    let origin = match source.origin {
        SourceOrigin::RustSrcComponent => "the rust-src component",
        SourceOrigin::RustDocsPages => "the rust-docs source pages",
    };
    log(&format!(
        "building core for {NVPTX_TARGET} from {origin} (once per rustc version and checks mode \
         `{checks}`, about a minute)"
    ));

    let libs = lib_dir(&dir);
    fs::create_dir_all(&libs).map_err(|e| Error::io(&libs, e))?;
    let panic: Vec<String> = checks.panic_flags().iter().map(|f| f.to_string()).collect();
    compile_rlib(rustc, &dir, "core", &source.core_lib_rs(), &panic)?;
    let builtins_src = dir.join("src/compiler_builtins.rs");
    fs::write(&builtins_src, COMPILER_BUILTINS_SRC).map_err(|e| Error::io(&builtins_src, e))?;
    compile_rlib(
        rustc,
        &dir,
        "compiler_builtins",
        &builtins_src,
        &[&["--sysroot".into(), dir.display().to_string()], &panic[..]].concat(),
    )?;

    build_noop_linker(rustc, &Sysroot { dir: dir.clone() })?;

    fs::write(&stamp, rustc.version_verbose.as_bytes()).map_err(|e| Error::io(&stamp, e))?;
    log(&format!(
        "built the {NVPTX_TARGET} sysroot in {:.1}s: {}",
        started.elapsed().as_secs_f64(),
        dir.display()
    ));
    Ok(Sysroot { dir })
}

/// Copies `library/{core,stdarch,portable-simd}` to `dest` and patches core for
/// [`Checks::Unchecked`] (the original may be the shared rust-src component).
fn patched_copy(source: &LibrarySource, dest: &Path) -> Result<LibrarySource> {
    if dest.exists() {
        fs::remove_dir_all(dest).map_err(|e| Error::io(dest, e))?;
    }
    for part in ["core", "stdarch", "portable-simd"] {
        let from = source.library_dir.join(part);
        if from.exists() {
            copy_dir(&from, &dest.join(part))?;
        }
    }
    let panicking = dest.join("core/src/panicking.rs");
    let text = fs::read_to_string(&panicking).map_err(|e| Error::io(&panicking, e))?;
    let patched = checks::patch_core_for_unchecked(&text)?;
    fs::write(&panicking, patched).map_err(|e| Error::io(&panicking, e))?;
    Ok(LibrarySource {
        library_dir: dest.to_path_buf(),
        origin: source.origin,
    })
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).map_err(|e| Error::io(to, e))?;
    for entry in fs::read_dir(from).map_err(|e| Error::io(from, e))? {
        let entry = entry.map_err(|e| Error::io(from, e))?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &target)?;
        } else {
            fs::copy(&path, &target).map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok(())
}

fn build_noop_linker(rustc: &Rustc, sysroot: &Sysroot) -> Result<()> {
    let src = sysroot.dir.join("src/gpu_noop_linker.rs");
    fs::write(&src, NOOP_LINKER_SRC).map_err(|e| Error::io(&src, e))?;
    let exe = sysroot.noop_linker();
    if let Some(parent) = exe.parent() {
        fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let output = Command::new(&rustc.path)
        .args(["--edition", "2024", "-C", "opt-level=1", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| Error::msg(format!("running {}: {e}", rustc.path.display())))?;
    if !output.status.success() {
        return Err(Error::msg(format!(
            "building the no-op linker failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(())
}

fn compile_rlib(
    rustc: &Rustc,
    sysroot: &Path,
    name: &str,
    root: &Path,
    extra: &[String],
) -> Result<()> {
    let out_dir = lib_dir(sysroot);
    let mut cmd = Command::new(&rustc.path);
    cmd.env("RUSTC_BOOTSTRAP", "1")
        .args([
            "--edition",
            "2024",
            "--crate-type",
            "rlib",
            "--crate-name",
            name,
        ])
        .args(["--target", NVPTX_TARGET])
        .args([
            "-C",
            "opt-level=3",
            "-C",
            "embed-bitcode=yes",
            "-C",
            "debuginfo=0",
        ])
        .args(["-Z", "force-unstable-if-unmarked", "--cap-lints", "allow"])
        .arg("--out-dir")
        .arg(&out_dir)
        .args(extra)
        .arg(root);
    let output = cmd
        .output()
        .map_err(|e| Error::msg(format!("running {}: {e}", rustc.path.display())))?;
    if !output.status.success() {
        return Err(Error::msg(format!(
            "building `{name}` for {NVPTX_TARGET} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(())
}
