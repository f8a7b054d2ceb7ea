//! Compiling CUDA C++ to PTX with NVIDIA's `nvcc`, so that a C++ kernel can be loaded and timed
//! beside its Rust twin (see `gpu-twins`) with the same host code.
//!
//! nvcc is optional: [`find`] looks for it and [`embed_ptx`] (for build scripts) records why
//! there is no PTX when it is missing, so that the crate still builds and its users can say
//! "skipped: no nvcc". `GPU_REQUIRE_NVCC=1` (CI) turns a missing nvcc into a build error.
//!
//! nvcc needs a host C++ compiler even for `-ptx` (it preprocesses with it); the system `g++`
//! is used. The `nvidia-cuda-nvcc` pip wheel has nvcc, and the `nvidia-nvvm` wheel its `cicc`:
//! keep both at the same CUDA version as the driver, since a newer cicc writes a PTX ISA
//! version that an older driver refuses.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::arch::Arch;
use crate::error::{Error, Result};
use crate::ptxas::find_tool;

/// Environment variable naming the nvcc binary to use.
pub const NVCC_ENV: &str = "NVCC";
/// Environment variable that turns a missing nvcc into a build error (CI sets it).
pub const REQUIRE_NVCC_ENV: &str = "GPU_REQUIRE_NVCC";

/// Finds nvcc: `$NVCC`, the `nvidia-cuda-nvcc` wheel in `<workspace>/.venv`, `PATH`, or
/// `/usr/local/cuda/bin`.
pub fn find(workspace_root: &Path) -> Option<PathBuf> {
    find_tool(workspace_root, "nvcc", NVCC_ENV)
}

/// Compiles `source` to PTX for the virtual architecture of `arch` (`compute_80` for `sm_80`)
/// with `-O3`, plus `extra` flags; returns the PTX text. A failure carries nvcc's messages.
pub fn compile_ptx(nvcc: &Path, source: &Path, arch: Arch, extra: &[&str]) -> Result<String> {
    let virtual_arch = arch.to_string().replace("sm_", "compute_");
    let out_dir = env::temp_dir().join(format!("gpu-nvcc-{}", std::process::id()));
    fs::create_dir_all(&out_dir).map_err(|e| Error::io(&out_dir, e))?;
    let stem = source.file_stem().unwrap_or_default().to_string_lossy();
    let out = out_dir.join(format!("{stem}.{virtual_arch}.ptx"));
    let output = Command::new(nvcc)
        .args(["-ptx", "-O3", &format!("-arch={virtual_arch}")])
        .args(extra)
        .arg(source)
        .arg("-o")
        .arg(&out)
        .output()
        .map_err(|e| Error::msg(format!("running {}: {e}", nvcc.display())))?;
    if !output.status.success() {
        return Err(Error::msg(format!(
            "{} -ptx {} failed ({}):\n{}{}",
            nvcc.display(),
            source.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let ptx = fs::read_to_string(&out).map_err(|e| Error::io(&out, e))?;
    let _ = fs::remove_dir_all(&out_dir);
    Ok(ptx)
}

/// For build scripts: compiles the CUDA C++ file `source` (relative to the crate) to PTX for
/// `arch` and writes `$OUT_DIR/<file name>.rs`, an expression of type
/// `Result<&'static str, &'static str>`: the PTX, or why there is none (no nvcc). Include it
/// with `include!(concat!(env!("OUT_DIR"), "/twins.cu.rs"))`.
///
/// A compile error fails the build; a missing nvcc fails it only under `GPU_REQUIRE_NVCC=1`.
pub fn embed_ptx(source: &str, arch: Arch) {
    if let Err(e) = try_embed_ptx(source, arch) {
        eprintln!("error: compiling {source} with nvcc: {e}");
        std::process::exit(1);
    }
}

fn try_embed_ptx(source: &str, arch: Arch) -> Result<()> {
    let var = |name: &str| {
        env::var_os(name)
            .map(PathBuf::from)
            .ok_or_else(|| Error::msg(format!("${name} is not set: call this from a build script")))
    };
    let (manifest_dir, out_dir) = (var("CARGO_MANIFEST_DIR")?, var("OUT_DIR")?);
    let source_path = manifest_dir.join(source);
    println!("cargo:rerun-if-changed={}", source_path.display());
    println!("cargo:rerun-if-env-changed={NVCC_ENV}");
    println!("cargo:rerun-if-env-changed={REQUIRE_NVCC_ENV}");
    let workspace_root = crate::workspace::Workspace::load(&manifest_dir.join("Cargo.toml"))?.root;
    let file_name = source_path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let expression = match find(&workspace_root) {
        Some(nvcc) => {
            let ptx = compile_ptx(&nvcc, &source_path, arch, &[])?;
            let ptx_path = out_dir.join(format!("{file_name}.ptx"));
            fs::write(&ptx_path, ptx).map_err(|e| Error::io(&ptx_path, e))?;
            format!("Ok(include_str!({:?}))", ptx_path.display().to_string())
        }
        None if env::var(REQUIRE_NVCC_ENV).is_ok_and(|v| v == "1") => {
            return Err(Error::msg(format!(
                "{REQUIRE_NVCC_ENV}=1 but no nvcc was found (${NVCC_ENV}, the nvidia-cuda-nvcc \
                 wheel in {}/.venv, PATH, /usr/local/cuda/bin)",
                workspace_root.display()
            )));
        }
        None => {
            let why = format!(
                "no nvcc when this crate was built (set ${NVCC_ENV}, or `pip install \
                 nvidia-cuda-nvcc==13.0.* nvidia-nvvm==13.0.*` into {}/.venv)",
                workspace_root.display()
            );
            format!("Err({why:?})")
        }
    };
    let rs = out_dir.join(format!("{file_name}.rs"));
    fs::write(&rs, expression).map_err(|e| Error::io(&rs, e))?;
    Ok(())
}
