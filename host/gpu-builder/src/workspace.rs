//! Finding kernel crates and the target directory through `cargo metadata`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::arch::Arch;
use crate::checks::Checks;
use crate::error::{Error, Result};
use crate::toolchain;

/// A package whose library is compiled to a PTX module.
#[derive(Debug, Clone)]
pub struct KernelCrate {
    /// Package name, e.g. `example-kernels`.
    pub package: String,
    /// Library crate name, e.g. `example_kernels`: names the PTX file and the host module.
    pub crate_name: String,
    pub manifest_path: PathBuf,
    /// `[package.metadata.gpu] arch = "sm_90a"` in its `Cargo.toml`: the architecture the crate
    /// must be built for, set by crates that use instructions only that architecture has (e.g.
    /// `wgmma`). It replaces the architecture a build asks for.
    pub required_arch: Option<String>,
    /// `[package.metadata.gpu] checks = "report"`: what a failed check does in this crate's
    /// kernels (see [`crate::checks`]); `None` for the default.
    pub checks: Option<String>,
    /// `[package.metadata.gpu] fma = false`: keep every multiply and add separately rounded.
    pub fma: Option<String>,
    /// `[package.metadata.gpu] branches = "llvm"`: keep the PTX's branches as LLVM emitted them
    /// (see [`crate::branches`]).
    pub branches: Option<String>,
    /// `[package.metadata.gpu] peephole = false`: keep the clamps LLVM writes around
    /// float-to-integer conversions (see [`crate::peephole`]).
    pub peephole: Option<String>,
    /// `[package.metadata.gpu] unroll = "llvm"`: keep LLVM's full-unroll threshold in `trap`
    /// builds (by default it is raised to make room for the checks).
    pub unroll: Option<String>,
    /// `[package.metadata.gpu] recompute_indices = false`: keep indices live through loop nests
    /// as LLVM wrote them (see [`crate::remat`]).
    pub recompute_indices: Option<String>,
    /// `[package.metadata.gpu] index32 = false`: no 32-bit index variants of the kernels (see
    /// [`crate::index32`]).
    pub index32: Option<String>,
}

impl KernelCrate {
    /// What a failed check does in this crate's kernels: `GPU_KERNEL_CHECKS`, else its
    /// `checks` setting, else the default ([`Checks::Trap`]).
    pub fn checks(&self) -> Result<Checks> {
        Checks::resolve(self.checks.as_deref()).map_err(|e| {
            e.context(format!(
                "[package.metadata.gpu] checks in {}",
                self.manifest_path.display()
            ))
        })
    }

    /// The architecture to build for: `requested`, replaced by the crate's
    /// `required_arch` if it has one.
    pub fn build_arch(&self, requested: Arch) -> Result<Arch> {
        match &self.required_arch {
            None => Ok(requested),
            Some(arch) => arch.parse().map_err(|e: Error| {
                e.context(format!(
                    "[package.metadata.gpu] arch in {}",
                    self.manifest_path.display()
                ))
            }),
        }
    }

    pub fn dir(&self) -> &Path {
        self.manifest_path
            .parent()
            .expect("a manifest path has a parent")
    }
}

/// The cargo workspace a kernel crate belongs to.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub target_dir: PathBuf,
    packages: Vec<Package>,
}

#[derive(Debug, Clone, Deserialize)]
struct Metadata {
    workspace_root: PathBuf,
    target_directory: PathBuf,
    packages: Vec<Package>,
}

#[derive(Debug, Clone, Deserialize)]
struct Package {
    name: String,
    manifest_path: PathBuf,
    targets: Vec<Target>,
    dependencies: Vec<Dependency>,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
struct Target {
    name: String,
    kind: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Dependency {
    name: String,
}

impl Workspace {
    /// Reads the workspace containing `manifest_path` (a `Cargo.toml`).
    pub fn load(manifest_path: &Path) -> Result<Workspace> {
        let mut cmd = Command::new(toolchain::cargo_path());
        cmd.args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(manifest_path);
        crate::compile::clear_outer_cargo_env(&mut cmd);
        let output = cmd
            .output()
            .map_err(|e| Error::msg(format!("running cargo metadata: {e}")))?;
        if !output.status.success() {
            return Err(Error::msg(format!(
                "cargo metadata for {} failed: {}",
                manifest_path.display(),
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        let meta: Metadata = serde_json::from_slice(&output.stdout)
            .map_err(|e| Error::msg(format!("cargo metadata output: {e}")))?;
        Ok(Workspace {
            root: meta.workspace_root,
            target_dir: meta.target_directory,
            packages: meta.packages,
        })
    }

    /// Kernel crates: workspace packages under `kernels/` with a library that depends on `gpu`.
    pub fn kernel_crates(&self) -> Vec<KernelCrate> {
        let kernels_dir = self.root.join("kernels");
        let mut crates: Vec<KernelCrate> = self
            .packages
            .iter()
            .filter(|p| {
                p.manifest_path.starts_with(&kernels_dir)
                    && p.dependencies.iter().any(|d| d.name == "gpu")
            })
            .filter_map(|p| self.kernel_crate_of(p))
            .collect();
        crates.sort_by(|a, b| a.package.cmp(&b.package));
        crates
    }

    /// The kernel crate whose package is named `name` (package or crate name).
    pub fn find(&self, name: &str) -> Result<KernelCrate> {
        let wanted = name.replace('-', "_");
        self.packages
            .iter()
            .find(|p| p.name.replace('-', "_") == wanted)
            .and_then(|p| self.kernel_crate_of(p))
            .ok_or_else(|| {
                let known: Vec<String> = self
                    .kernel_crates()
                    .into_iter()
                    .map(|k| k.package)
                    .collect();
                Error::msg(format!(
                    "no kernel crate named `{name}` in {}; kernel crates: {}",
                    self.root.display(),
                    known.join(", ")
                ))
            })
    }

    /// The kernel crate whose `Cargo.toml` is `manifest_path`.
    pub fn find_by_manifest(&self, manifest_path: &Path) -> Result<KernelCrate> {
        let wanted = manifest_path
            .canonicalize()
            .map_err(|e| Error::io(manifest_path, e))?;
        self.packages
            .iter()
            .find(|p| p.manifest_path.canonicalize().is_ok_and(|m| m == wanted))
            .and_then(|p| self.kernel_crate_of(p))
            .ok_or_else(|| {
                Error::msg(format!(
                    "{} is not a workspace package with a library",
                    manifest_path.display()
                ))
            })
    }

    fn kernel_crate_of(&self, p: &Package) -> Option<KernelCrate> {
        let lib = p.targets.iter().find(|t| {
            t.kind
                .iter()
                .any(|k| k == "lib" || k == "rlib" || k == "cdylib")
        })?;
        let setting = |key: &str| {
            p.metadata
                .as_ref()
                .and_then(|m| m.get("gpu"))
                .and_then(|g| g.get(key))
                .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_string))
        };
        let (required_arch, checks, fma) = (setting("arch"), setting("checks"), setting("fma"));
        let (branches, peephole, unroll) =
            (setting("branches"), setting("peephole"), setting("unroll"));
        Some(KernelCrate {
            package: p.name.clone(),
            crate_name: lib.name.replace('-', "_"),
            manifest_path: p.manifest_path.clone(),
            required_arch,
            checks,
            fma,
            branches,
            peephole,
            unroll,
            recompute_indices: setting("recompute_indices"),
            index32: setting("index32"),
        })
    }
}
