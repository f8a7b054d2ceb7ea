//! Dependencies built once per build configuration, not once per kernel crate.
//!
//! Each kernel crate has its own cargo target directory (cargo locks a target directory for a
//! whole build, so crates sharing one would build one at a time). Each would then compile the
//! same dependencies (`gpu`, `half`, `glam`, `libm`, `gpu-macros`) for itself: the same
//! artifacts, with the same hashes, since the flags are those of the configuration (checks
//! mode, architecture), not of the crate. On a cold build that was most of the CPU time of the
//! small crates.
//!
//! So before a crate's first build, its target directory is *primed*: the `gpu` crate and its
//! dependencies are built once into a cache directory beside the crates' (`.deps`, same flags),
//! and copied into the new directory with their modification times, which is what cargo's
//! freshness check compares. Cargo then reuses every artifact whose hash matches and rebuilds
//! the rest (a crate that enables other features of `gpu`, say), so priming never changes what
//! is built, only how often. Priming is best effort: if the cache cannot be built or copied, the
//! crate builds its dependencies itself, as before, and its own cargo run reports any error.

use std::fs;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};

/// Name of the dependency cache, a sibling of the crates' target directories.
pub const CACHE_DIR: &str = ".deps";

/// Primes `crate_target` (a crate's cargo target directory that does not exist yet) with the
/// configuration's dependency cache, building that first if needed. `cargo` is a cargo command
/// with the crate build's environment (flags, sysroot) and no arguments yet; `config_args` are
/// the build's profile and target arguments. Returns whether the directory was primed.
pub fn prime(
    crate_target: &Path,
    mut cargo: Command,
    config_args: &[&str],
    manifest_path: &Path,
) -> bool {
    if crate_target.exists() {
        return false;
    }
    let Some(cache) = crate_target.parent().map(|p| p.join(CACHE_DIR)) else {
        return false;
    };
    // Cargo decides whether the cache is fresh (a no-op run when it is) and serializes builders
    // that race to make it (its lock on the cache's target directory).
    let built = cargo
        .args(["build", "--quiet", "--lib", "--package", "gpu"])
        .args(config_args)
        .arg("--manifest-path")
        .arg(manifest_path)
        .arg("--target-dir")
        .arg(&cache)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        return false;
    }
    let partial = crate_target.with_extension("priming");
    let _ = fs::remove_dir_all(&partial);
    match copy_tree(&cache, &partial).and_then(|()| fs::rename(&partial, crate_target)) {
        Ok(()) => true,
        Err(_) => {
            let _ = fs::remove_dir_all(&partial);
            false
        }
    }
}

/// Copies the directory tree `from` to `to` (which must not exist), keeping each file's
/// modification time. Symbolic links are skipped (cargo makes none in a target directory).
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            fs::copy(&src, &dst)?;
            let modified = entry.metadata()?.modified()?;
            fs::File::options()
                .write(true)
                .open(&dst)?
                .set_modified(modified)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn copy_tree_keeps_contents_and_modification_times() {
        let root =
            std::env::temp_dir().join(format!("gpu-builder-dep-cache-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let from = root.join("from");
        fs::create_dir_all(from.join("deps")).unwrap();
        fs::write(from.join("deps/libgpu.rlib"), b"rlib").unwrap();
        fs::write(from.join(".fingerprint"), b"fp").unwrap();
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        fs::File::options()
            .write(true)
            .open(from.join("deps/libgpu.rlib"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let to = root.join("to");
        copy_tree(&from, &to).unwrap();
        assert_eq!(fs::read(to.join("deps/libgpu.rlib")).unwrap(), b"rlib");
        assert_eq!(fs::read(to.join(".fingerprint")).unwrap(), b"fp");
        let copied = fs::metadata(to.join("deps/libgpu.rlib"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(copied, old);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_existing_target_directory_is_left_alone() {
        let dir = std::env::temp_dir();
        assert!(!prime(
            &dir,
            Command::new("false"),
            &[],
            Path::new("Cargo.toml")
        ));
    }

    #[test]
    fn a_failed_cache_build_primes_nothing() {
        let root =
            std::env::temp_dir().join(format!("gpu-builder-dep-cache-fail-{}", std::process::id()));
        let target = root.join("sm_80").join("my_kernels");
        assert!(!prime(
            &target,
            Command::new("false"),
            &[],
            Path::new("Cargo.toml")
        ));
        assert!(!target.exists());
        let _ = fs::remove_dir_all(&root);
    }
}
