//! The rustc and cargo this build uses.

use std::env;
use std::path::PathBuf;
use std::process::Command;

use crate::error::{Error, Result};

/// The host rustc: its path, version and sysroot.
#[derive(Debug, Clone)]
pub struct Rustc {
    pub path: PathBuf,
    /// Output of `rustc -vV`.
    pub version_verbose: String,
    pub sysroot: PathBuf,
}

impl Rustc {
    /// The rustc cargo would use: `$RUSTC` (set by cargo for build scripts) or `rustc` on PATH.
    pub fn detect() -> Result<Rustc> {
        let path = env::var_os("RUSTC")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("rustc"));
        let version_verbose = run(Command::new(&path).arg("-vV"))?;
        let sysroot = PathBuf::from(run(Command::new(&path).args(["--print", "sysroot"]))?.trim());
        Ok(Rustc {
            path,
            version_verbose,
            sysroot,
        })
    }

    fn field(&self, key: &str) -> Option<&str> {
        self.version_verbose
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
    }

    pub fn release(&self) -> &str {
        self.field("release:").unwrap_or("unknown")
    }

    /// A directory name unique to this exact compiler: release plus commit hash.
    pub fn cache_key(&self) -> String {
        let hash = self.field("commit-hash:").unwrap_or("unknown");
        format!("{}-{}", self.release(), &hash[..hash.len().min(12)])
    }
}

/// The cargo to run for nested builds: `$CARGO` (set by cargo for build scripts) or `cargo`.
pub fn cargo_path() -> PathBuf {
    env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("cargo"))
}

fn run(cmd: &mut Command) -> Result<String> {
    let output = cmd
        .output()
        .map_err(|e| Error::msg(format!("running {cmd:?}: {e}")))?;
    if !output.status.success() {
        return Err(Error::msg(format!(
            "{cmd:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    String::from_utf8(output.stdout)
        .map_err(|e| Error::msg(format!("{cmd:?}: output is not UTF-8: {e}")))
}
