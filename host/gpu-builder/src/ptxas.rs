//! Assembling PTX with NVIDIA's `ptxas`, to check it and to read per-kernel resource usage.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::arch::Arch;
use crate::error::{Error, Result};

/// Environment variable naming the ptxas binary to use.
pub const PTXAS_ENV: &str = "PTXAS";

/// Finds ptxas: `$PTXAS`, the `nvidia-cuda-nvcc` wheel in `<workspace>/.venv`, `PATH`, or
/// `/usr/local/cuda/bin`.
pub fn find(workspace_root: &Path) -> Option<PathBuf> {
    find_tool(workspace_root, "ptxas", PTXAS_ENV)
}

/// Finds a CUDA tool (`ptxas`, `nvdisasm`, `cuobjdump`, `ncu`): the environment variable `env`,
/// NVIDIA's pip wheels in `<workspace>/.venv` (`nvidia/cu13/bin`, ...), `PATH`, or
/// `/usr/local/cuda/bin`.
pub fn find_tool(workspace_root: &Path, name: &str, env: &str) -> Option<PathBuf> {
    if let Some(p) = env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    let lib = workspace_root.join(".venv/lib");
    if let Ok(entries) = fs::read_dir(&lib) {
        for entry in entries.flatten() {
            for cu in [
                "cu13",
                "cu12",
                "cuda_nvcc",
                "cuda_nvdisasm",
                "cuda_cuobjdump",
            ] {
                let candidate = entry
                    .path()
                    .join("site-packages/nvidia")
                    .join(cu)
                    .join("bin")
                    .join(name);
                if candidate.is_file() {
                    return Some(candidate);
                }
            }
        }
    }
    let path_dirs = env::var_os("PATH")
        .map(|p| env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain([PathBuf::from("/usr/local/cuda/bin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Resource usage of one function, from `ptxas -v`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resources {
    pub function: String,
    pub is_entry: bool,
    pub registers: u32,
    pub stack_frame_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    pub shared_bytes: u32,
    pub barriers: u32,
    /// Why ptxas serialized every `wgmma.mma_async` of the function, in its words, when it did
    /// (notes C7510-C7520, e.g. "insufficient register resources", "program dependence on
    /// compiler-inserted WG.AR in divergent path"): each product then waits for the one
    /// before, the tensor cores never overlap two batches, and nothing else in the report has
    /// to show it (a kernel slowed down by a quarter had the same registers and no spills).
    #[serde(default)]
    pub wgmma_serialized: Option<String>,
    /// How often ptxas put a `warpgroup.arrive` (`wgmma.fence`) of its own before a `wgmma`
    /// (note C7519): registers of the product were written after the kernel's last fence, so
    /// the product waits for them; cheap where it sits outside the hot loop.
    #[serde(default)]
    pub wgmma_fences_injected: u32,
}

impl Resources {
    /// Whether ptxas had to spill registers to local memory (slow: it goes through L1/L2).
    pub fn spills(&self) -> bool {
        self.spill_store_bytes + self.spill_load_bytes > 0
    }

    /// Whether the function has a stack frame without spilling: a local array indexed at run
    /// time (usually a loop over a thread's items that the compiler did not unroll; write it
    /// out with `gpu::unroll!`), or a call's frame. Each access goes through L1 and L2.
    pub fn local_frame(&self) -> bool {
        self.stack_frame_bytes > 0 && !self.spills()
    }

    /// ptxas's warning about this function's `wgmma` products, if it gave one: what a kernel
    /// author must know, since the slowdown shows nowhere else.
    pub fn wgmma_warning(&self) -> Option<String> {
        self.wgmma_serialized.as_ref().map(|why| {
            format!(
                "ptxas serialized every wgmma of `{}` (each product waits for the one before) \
                 due to {why}: keep the registers live beside products in flight within the \
                 budget (no spills), and issue products unconditionally (paths that meet must \
                 hold the same products in flight)",
                self.function
            )
        })
    }
}

/// Assembles `ptx` for `arch` (`-v`); returns per-function resources. A failure includes ptxas'
/// messages, and an explanation for the known cases.
pub fn assemble(ptxas: &Path, ptx: &Path, arch: Arch) -> Result<Vec<Resources>> {
    let cubin = ptx.with_extension(format!("{arch}.cubin"));
    let resources = assemble_to(ptxas, ptx, arch, &[], &cubin)?;
    let _ = fs::remove_file(&cubin);
    Ok(resources)
}

/// Like [`assemble`], with extra ptxas arguments (e.g. `-lineinfo`), keeping the cubin at
/// `cubin` (for `nvdisasm`).
pub fn assemble_to(
    ptxas: &Path,
    ptx: &Path,
    arch: Arch,
    extra_args: &[&str],
    cubin: &Path,
) -> Result<Vec<Resources>> {
    let output = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .args(extra_args)
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .map_err(|e| Error::msg(format!("running {}: {e}", ptxas.display())))?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        let mut message = format!("ptxas -arch={arch} rejected {}:\n{stderr}", ptx.display());
        if ["__udivti3", "__umodti3", "__divti3", "__modti3"]
            .iter()
            .any(|s| stderr.contains(s))
        {
            message.push_str(
                "\nhint: 128-bit integer division has no PTX instruction and no runtime routine in this build; \
                 use 64-bit arithmetic in kernels.",
            );
        }
        return Err(Error::msg(message));
    }
    Ok(parse_verbose(&stderr))
}

/// Parses `ptxas -v` output: the resources of each function, and its `wgmma` notes (which
/// ptxas prints before the functions' reports, naming the function).
pub fn parse_verbose(text: &str) -> Vec<Resources> {
    let mut all: Vec<Resources> = Vec::new();
    // (function, the reason of a serialization or None for an injected fence) per wgmma note.
    let mut wgmma_notes: Vec<(String, Option<String>)> = Vec::new();
    for line in text.lines() {
        let serialized = line.contains("wgmma.mma_async instructions are serialized");
        if (serialized || line.contains("warpgroup.arrive is injected"))
            && let Some(function) = quoted_function(line)
        {
            // "... serialized due to <reason> {in,for} the function 'name'".
            let reason = serialized.then(|| {
                let why = line.split_once(" due to ").map_or("", |(_, why)| why);
                let why = why
                    .rsplit_once(" the function '")
                    .map_or(why, |(why, _)| why);
                why.trim_end_matches(" in")
                    .trim_end_matches(" for")
                    .trim()
                    .to_string()
            });
            wgmma_notes.push((function.to_string(), reason));
        }
        let info = line
            .trim_start_matches("ptxas info")
            .trim_start_matches([' ', ':'])
            .trim();
        if let Some(rest) = info
            .strip_prefix("Compiling entry function '")
            .or_else(|| info.strip_prefix("Function properties for "))
        {
            let name = rest
                .split(['\'', ' '])
                .next()
                .unwrap_or("")
                .trim_end_matches(':')
                .to_string();
            if !all.iter().any(|r| r.function == name) {
                all.push(Resources {
                    function: name,
                    is_entry: info.starts_with("Compiling entry"),
                    ..Default::default()
                });
            }
            continue;
        }
        let Some(current) = all.last_mut() else {
            continue;
        };
        let number_before = |needle: &str| -> Option<u32> {
            let i = line.find(needle)?;
            line[..i]
                .split(|c: char| !c.is_ascii_digit())
                .rfind(|s| !s.is_empty())?
                .parse()
                .ok()
        };
        if line.contains("stack frame") {
            current.stack_frame_bytes = number_before(" bytes stack frame").unwrap_or(0);
            current.spill_store_bytes = number_before(" bytes spill stores").unwrap_or(0);
            current.spill_load_bytes = number_before(" bytes spill loads").unwrap_or(0);
        }
        if line.contains("Used ") {
            current.registers = number_before(" registers").unwrap_or(0);
            current.barriers = number_before(" barriers").unwrap_or(0);
            current.shared_bytes = number_before(" bytes smem").unwrap_or(0);
        }
    }
    for (function, reason) in wgmma_notes {
        if let Some(r) = all.iter_mut().find(|r| r.function == function) {
            match reason {
                Some(why) => r.wgmma_serialized = Some(why),
                None => r.wgmma_fences_injected += 1,
            }
        }
    }
    all
}

/// The function a ptxas note names: `... in [the] function 'name'`.
fn quoted_function(line: &str) -> Option<&str> {
    let rest = &line[line.rfind("function '")? + "function '".len()..];
    rest.split('\'').next().filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_verbose_output() {
        let text = "ptxas info    : 0 bytes gmem\n\
            ptxas info    : Compiling entry function 'tiled' for 'sm_80'\n\
            ptxas info    : Function properties for tiled\n\
            \x20   8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\
            ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]\n";
        let r = parse_verbose(text);
        assert_eq!(r.len(), 1);
        assert_eq!(
            r[0],
            Resources {
                function: "tiled".into(),
                is_entry: true,
                registers: 40,
                stack_frame_bytes: 8,
                spill_store_bytes: 4,
                spill_load_bytes: 4,
                shared_bytes: 2048,
                barriers: 1,
                ..Default::default()
            }
        );
    }

    #[test]
    fn reads_the_wgmma_notes_printed_before_the_functions() {
        let text = "ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.AR in divergent path in the function 'attn'\n\
            ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the function 'plain'\n\
            ptxas info    : (C7519) warpgroup.arrive is injected in around line 5206 by compiler to allow use of registers in GMMA in function 'bwd'\n\
            ptxas info    : (C7519) warpgroup.arrive is injected in around line 5265 by compiler to allow use of registers in GMMA in function 'bwd'\n\
            ptxas info    : Compiling entry function 'attn' for 'sm_90a'\n\
            ptxas info    : Used 168 registers, used 16 barriers\n\
            ptxas info    : Compiling entry function 'bwd' for 'sm_90a'\n\
            ptxas info    : Used 168 registers, used 16 barriers\n\
            ptxas info    : Compiling entry function 'plain' for 'sm_90a'\n\
            ptxas info    : Used 40 registers\n";
        let r = parse_verbose(text);
        assert_eq!(r.len(), 3);
        assert_eq!(
            r[0].wgmma_serialized.as_deref(),
            Some("program dependence on compiler-inserted WG.AR in divergent path")
        );
        assert_eq!(r[0].wgmma_fences_injected, 0);
        assert!(r[1].wgmma_serialized.is_none() && r[1].wgmma_fences_injected == 2);
        assert_eq!(
            r[2].wgmma_serialized.as_deref(),
            Some("insufficient register resources")
        );
        let warning = r[0]
            .wgmma_warning()
            .expect("a warning for the serialized one");
        assert!(
            warning.contains("`attn`") && warning.contains("divergent path:"),
            "{warning}"
        );
        assert_eq!(r[1].wgmma_warning(), None);
    }
}
