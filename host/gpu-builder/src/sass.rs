//! Ahead-of-time machine code: each code unit of a module (see [`crate::units`]) assembled by
//! ptxas into a cubin for every architecture in a list, so that a GPU of one of them loads the
//! kernels without JIT-compiling PTX.
//!
//! - The list is `$GPU_SASS_ARCHS` (comma-separated, e.g. `sm_80,sm_90`; `none` for no SASS),
//!   by default [`DEFAULT_SASS_ARCHS`]. PTX built for an architecture is assembled only for
//!   that one and newer ones; a crate pinned to `sm_90a` gets an `sm_90a` cubin when the list
//!   has a 9.0 entry.
//! - Cubins are cached under `target/sass/` by the hash of (ptxas version, architecture, unit
//!   text): a rebuild assembles only the units whose PTX changed. ptxas runs in parallel.
//! - Without ptxas the units are embedded as PTX only and everything still works; the first
//!   load of each kernel then JIT-compiles it. `GPU_REQUIRE_PTXAS=1` makes that an error.

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::arch::Arch;
use crate::error::{Error, Result};
use crate::parallel::parallel_map;
use crate::ptxas;
use crate::units::CodeUnit;
use crate::workspace::Workspace;

/// Environment variable listing the architectures to assemble SASS for.
pub const SASS_ARCHS_ENV: &str = "GPU_SASS_ARCHS";

/// Environment variable that turns a missing ptxas into a build error (CI sets it).
pub const REQUIRE_PTXAS_ENV: &str = "GPU_REQUIRE_PTXAS";

/// Ampere (A100, RTX 30), Ada (RTX 40, L4, L40) and Hopper (H100, H200).
pub const DEFAULT_SASS_ARCHS: &[Arch] = &[
    Arch {
        sm: 80,
        specific: false,
    },
    Arch {
        sm: 86,
        specific: false,
    },
    Arch {
        sm: 89,
        specific: false,
    },
    Arch::SM_90,
];

/// A code unit on disk: its PTX file and its cubins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltUnit {
    pub kernels: Vec<String>,
    pub ptx_path: PathBuf,
    /// `(architecture, cubin)`, in the order of the architecture list.
    pub sass: Vec<(Arch, PathBuf)>,
}

/// The architectures `$GPU_SASS_ARCHS` names, or the defaults.
pub fn archs_from_env() -> Result<Vec<Arch>> {
    match env::var(SASS_ARCHS_ENV) {
        Ok(value) => parse_archs(&value).map_err(|e| e.context(format!("${SASS_ARCHS_ENV}"))),
        Err(_) => Ok(DEFAULT_SASS_ARCHS.to_vec()),
    }
}

/// `sm_80,sm_90` → the architectures; `none` or empty → none.
pub fn parse_archs(value: &str) -> Result<Vec<Arch>> {
    let value = value.trim();
    if value.is_empty() || value.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect()
}

/// The architectures PTX built for `ptx_arch` is assembled for, out of `wanted`.
pub fn targets(ptx_arch: Arch, wanted: &[Arch]) -> Vec<Arch> {
    if ptx_arch.specific {
        // Architecture-specific PTX runs on that exact architecture only.
        return if wanted.iter().any(|a| a.sm == ptx_arch.sm) {
            vec![ptx_arch]
        } else {
            Vec::new()
        };
    }
    let mut out: Vec<Arch> = wanted
        .iter()
        .copied()
        .filter(|a| a.sm >= ptx_arch.sm)
        .collect();
    out.dedup();
    out
}

/// Writes each unit's PTX to `dir` (only files whose text changed; files of units that no
/// longer exist are removed) and assembles it for `archs` with `ptxas` (cached). With no ptxas
/// or no architectures the units have no SASS.
pub fn build_units(
    workspace: &Workspace,
    dir: &Path,
    units: &[CodeUnit],
    ptxas: Option<&Path>,
    archs: &[Arch],
) -> Result<Vec<BuiltUnit>> {
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut built = Vec::with_capacity(units.len());
    let mut keep = Vec::with_capacity(units.len());
    for unit in units {
        let first = unit
            .kernels
            .first()
            .ok_or_else(|| Error::msg("a code unit without kernels"))?;
        let file = format!("{first}.ptx");
        let path = dir.join(&file);
        write_if_changed(&path, &unit.ptx)?;
        keep.push(file);
        built.push(BuiltUnit {
            kernels: unit.kernels.clone(),
            ptx_path: path,
            sass: Vec::new(),
        });
    }
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".ptx") && !keep.contains(&name) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    let Some(ptxas) = ptxas else {
        return Ok(built);
    };
    if archs.is_empty() {
        return Ok(built);
    }
    let identity = ptxas_identity(ptxas)?;
    let cache = workspace.target_dir.join("sass");
    let mut jobs = Vec::new();
    for (u, unit) in units.iter().enumerate() {
        for &arch in archs {
            let mut hasher = DefaultHasher::new();
            identity.hash(&mut hasher);
            // The cache's layout: cubins cached before the wgmma warnings were kept beside
            // them are assembled again.
            "wgmma warnings kept beside".hash(&mut hasher);
            arch.to_string().hash(&mut hasher);
            unit.ptx.hash(&mut hasher);
            let cubin = cache.join(arch.to_string()).join(format!(
                "{:016x}-{}.cubin",
                hasher.finish(),
                unit.ptx.len()
            ));
            if !cubin.is_file() {
                jobs.push((u, arch, cubin.clone()));
            }
            built[u].sass.push((arch, cubin));
        }
    }
    run_ptxas(ptxas, &built, &jobs)?;
    Ok(built)
}

/// Assembles `jobs` (unit, architecture, cubin path) on every core.
fn run_ptxas(ptxas: &Path, units: &[BuiltUnit], jobs: &[(usize, Arch, PathBuf)]) -> Result<()> {
    parallel_map(jobs, |(u, arch, cubin)| {
        assemble_unit(ptxas, &units[*u], *arch, cubin)
    })
    .into_iter()
    .collect()
}

fn assemble_unit(ptxas: &Path, unit: &BuiltUnit, arch: Arch, cubin: &Path) -> Result<()> {
    let dir = cubin.parent().expect("cubin paths have a directory");
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // Written under a temporary name and renamed, so a concurrent build never reads half a file.
    let partial = cubin.with_extension(format!("{}.partial", std::process::id()));
    let resources =
        ptxas::assemble_to(ptxas, &unit.ptx_path, arch, &[], &partial).map_err(|e| {
            e.context(format!(
                "assembling kernel(s) {} for {arch}",
                unit.kernels.join(", ")
            ))
        })?;
    // ptxas's warnings about serialized `wgmma`s go beside the cached cubin (the file names
    // its content), so a later build that reuses it still reports them.
    let warnings: Vec<String> = resources
        .iter()
        .filter_map(|r| r.wgmma_warning())
        .map(|w| format!("{arch}: {w}"))
        .collect();
    if !warnings.is_empty() {
        let notes = cubin.with_extension(WGMMA_NOTES);
        fs::write(&notes, warnings.join("\n")).map_err(|e| Error::io(&notes, e))?;
    }
    fs::rename(&partial, cubin).map_err(|e| Error::io(cubin, e))
}

/// Extension of the file beside a cached cubin that holds ptxas's `wgmma` warnings for it.
const WGMMA_NOTES: &str = "wgmma-warnings";

/// ptxas's warnings about the units' `wgmma` products (see
/// [`ptxas::Resources::wgmma_warning`]), one line per kernel and architecture: a serialized
/// `wgmma` costs a Hopper kernel much of its speed and shows in no other figure, so builds
/// print these.
pub fn wgmma_warnings(units: &[BuiltUnit]) -> Vec<String> {
    units
        .iter()
        .flat_map(|u| &u.sass)
        .filter_map(|(_, cubin)| fs::read_to_string(cubin.with_extension(WGMMA_NOTES)).ok())
        .flat_map(|text| text.lines().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// `ptxas --version`, once per binary: part of the cache key, so a new ptxas rebuilds.
fn ptxas_identity(ptxas: &Path) -> Result<String> {
    static SEEN: OnceLock<Mutex<BTreeMap<PathBuf, String>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(v) = seen.lock().ok().and_then(|m| m.get(ptxas).cloned()) {
        return Ok(v);
    }
    let output = Command::new(ptxas)
        .arg("--version")
        .output()
        .map_err(|e| Error::msg(format!("running {} --version: {e}", ptxas.display())))?;
    if !output.status.success() {
        return Err(Error::msg(format!(
            "{} --version failed: {}",
            ptxas.display(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let version = String::from_utf8_lossy(&output.stdout).into_owned();
    if let Ok(mut m) = seen.lock() {
        m.insert(ptxas.to_path_buf(), version.clone());
    }
    Ok(version)
}

fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// Whether a missing ptxas must fail the build (`GPU_REQUIRE_PTXAS` set and not `0`).
pub fn ptxas_required() -> bool {
    env::var(REQUIRE_PTXAS_ENV).is_ok_and(|v| !v.trim().is_empty() && v.trim() != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_architecture_list() {
        assert_eq!(
            parse_archs("sm_80, sm_90").unwrap(),
            [Arch::SM_80, Arch::SM_90]
        );
        assert!(parse_archs("none").unwrap().is_empty());
        assert!(parse_archs("").unwrap().is_empty());
        assert!(parse_archs("sm_80,hopper").is_err());
    }

    #[test]
    fn wgmma_warnings_are_read_from_beside_each_cubin() {
        let dir = env::temp_dir().join(format!("gpu-sass-notes-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (noted, plain) = (dir.join("a.cubin"), dir.join("b.cubin"));
        fs::write(
            noted.with_extension(WGMMA_NOTES),
            "sm_90a: one\nsm_90a: two",
        )
        .unwrap();
        let unit = |cubin: &PathBuf| BuiltUnit {
            kernels: vec!["k".into()],
            ptx_path: dir.join("k.ptx"),
            sass: vec![(Arch::SM_90, cubin.clone())],
        };
        assert_eq!(
            wgmma_warnings(&[unit(&plain), unit(&noted)]),
            ["sm_90a: one", "sm_90a: two"]
        );
        assert!(wgmma_warnings(&[unit(&plain)]).is_empty());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn ptx_is_assembled_for_its_architecture_and_newer_only() {
        let all = DEFAULT_SASS_ARCHS;
        let sm = |a: &[Arch]| a.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(
            sm(&targets(Arch::SM_80, all)),
            ["sm_80", "sm_86", "sm_89", "sm_90"]
        );
        assert_eq!(sm(&targets(Arch::SM_90, all)), ["sm_90"]);
        assert_eq!(sm(&targets(Arch::SM_90A, all)), ["sm_90a"]);
        assert!(targets(Arch::SM_90A, &[Arch::SM_80]).is_empty());
        assert!(targets(Arch::SM_80, &[]).is_empty());
    }
}
