//! Every kernel crate compiles to PTX that ptxas 13.0 assembles for sm_80 and sm_90, with no
//! Hopper kernel's `wgmma` products serialized.
//!
//! Needs no GPU. Without ptxas the test prints SKIPPED, unless `GPU_REQUIRE_PTXAS=1` (set by CI),
//! which makes a missing ptxas a failure.

use std::path::Path;

use gpu_builder::compile;
use gpu_builder::manifest::ParamKind;
use gpu_builder::toolchain::Rustc;
use gpu_builder::workspace::Workspace;
use gpu_builder::{Arch, ptxas};

fn workspace() -> Workspace {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    Workspace::load(&root.join("Cargo.toml")).unwrap()
}

#[test]
fn every_kernel_crate_assembles_for_sm80_and_sm90() {
    let ws = workspace();
    let Some(ptxas) = ptxas::find(&ws.root) else {
        if std::env::var_os("GPU_REQUIRE_PTXAS").is_some() {
            panic!(
                "GPU_REQUIRE_PTXAS is set but ptxas was not found (pip install 'nvidia-cuda-nvcc==13.0.*' into .venv)"
            );
        }
        gpu_tests::skipped(
            "every_kernel_crate_assembles_for_sm80_and_sm90",
            "ptxas not found (pip install 'nvidia-cuda-nvcc==13.0.*' into .venv)",
        );
        return;
    };
    let crates = ws.kernel_crates();
    assert!(
        crates.iter().any(|k| k.crate_name == "test_kernels"),
        "kernel crates found: {crates:?}"
    );
    let rustc = Rustc::detect().unwrap();
    for arch in [Arch::SM_80, Arch::SM_90] {
        for krate in &crates {
            let module = compile::compile(&ws, krate, arch, &rustc)
                .unwrap_or_else(|e| panic!("{}: {e}", krate.package));
            let ptx = std::fs::read_to_string(&module.ptx_path).unwrap();
            assert!(
                ptx.contains(&format!(".target {}", module.arch)),
                "{}: wrong .target",
                krate.crate_name
            );
            let resources = ptxas::assemble(&ptxas, &module.ptx_path, module.arch)
                .unwrap_or_else(|e| panic!("{e}"));
            for kernel in &module.manifest.kernels {
                let r = resources.iter().find(|r| r.function == kernel.name);
                let r = r.unwrap_or_else(|| {
                    panic!(
                        "ptxas reported nothing for {}::{}",
                        krate.crate_name, kernel.name
                    )
                });
                assert!(r.is_entry);
                // A serialized wgmma costs a Hopper kernel a quarter of its speed or more and
                // shows in no other figure (README, "Tuning a kernel").
                assert!(
                    r.wgmma_serialized.is_none(),
                    "{}::{}: {}",
                    krate.crate_name,
                    kernel.name,
                    r.wgmma_warning().unwrap_or_default()
                );
                println!(
                    "{arch} {}::{}: {} registers, {} B smem, {} B stack",
                    krate.crate_name, kernel.name, r.registers, r.shared_bytes, r.stack_frame_bytes
                );
            }
        }
    }
}

#[test]
fn test_kernels_manifest_describes_every_kernel() {
    let ws = workspace();
    let rustc = Rustc::detect().unwrap();
    let module =
        compile::compile(&ws, &ws.find("test-kernels").unwrap(), Arch::SM_80, &rustc).unwrap();
    let manifest = compile::read_manifest(&module.manifest_path).unwrap();
    assert_eq!(
        manifest, module.manifest,
        "the manifest on disk is the one returned"
    );
    assert_eq!(manifest.arch, "sm_80");
    let mut names: Vec<&str> = manifest.kernels.iter().map(|k| k.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["matmul_tiled", "saxpy", "vector_add"]);

    let saxpy = manifest.kernel("saxpy").unwrap();
    let kinds: Vec<(&str, ParamKind, &str)> = saxpy
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.kind, p.ty.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("alpha", ParamKind::Scalar, "f32"),
            ("x", ParamKind::Slice, "f32"),
            ("y", ParamKind::Slice, "f32"),
            ("out", ParamKind::Output, "f32")
        ]
    );
    assert_eq!(saxpy.ptx_params.len(), 7, "alpha + (ptr, len) x 3");
    assert_eq!(
        saxpy.rust_module.as_deref(),
        Some("test_kernels::elementwise")
    );

    let tiled = manifest.kernel("matmul_tiled").unwrap();
    assert_eq!(
        tiled.params.last().unwrap().kind,
        ParamKind::Value,
        "MatDims is passed by value"
    );
    assert_eq!(
        tiled.ptx_params.last().unwrap().size,
        12,
        "MatDims is three u32"
    );
    assert_eq!(
        tiled.static_shared_bytes,
        2 * 16 * 16 * 4,
        "two 16x16 f32 tiles"
    );
    assert_eq!(
        manifest.kernel("vector_add").unwrap().static_shared_bytes,
        0
    );
}
