//! The twin suite (`gpu-twins`): every Rust twin matches its CPU reference (on a GPU, or on the
//! CPU simulator without one), every CUDA C++ twin matches it on a GPU, and the C++ twins
//! compile with nvcc and assemble with ptxas (CI installs both).

use gpu_builder::ptxas;
use gpu_tests::{cuda_gpu_or_skip, gpu_or_skip, skipped};
use gpu_twins::{CUDA_PTX, Kernels, Side, Size, cases, kernels::twin_kernels, ptx_stats};

fn check_side(gpu: &gpu_host::Gpu, side: Side) {
    let kernels = Kernels::load(gpu).unwrap_or_else(|e| panic!("{e}"));
    let stream = gpu.default_stream();
    let mut failures = Vec::new();
    let mut twins = cases::all(gpu, Size::Test).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        twins.len(),
        twin_kernels::KERNELS.len(),
        "one case per kernel"
    );
    for twin in &mut twins {
        match cases::check(twin.as_mut(), side, &kernels, stream) {
            Ok(Ok(())) => {}
            Ok(Err(mismatch)) => failures.push(format!("{} ({side}): {mismatch}", twin.name())),
            Err(e) => failures.push(format!("{} ({side}): {e}", twin.name())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rust_twins_match_the_cpu_reference() {
    let Some(gpu) = gpu_or_skip("rust_twins_match_the_cpu_reference") else {
        return;
    };
    check_side(&gpu, Side::Rust);
}

#[test]
fn cuda_twins_match_the_cpu_reference() {
    let test = "cuda_twins_match_the_cpu_reference";
    let Some(gpu) = cuda_gpu_or_skip(test) else {
        return;
    };
    if let Err(why) = CUDA_PTX {
        skipped(test, why);
        return;
    }
    check_side(&gpu, Side::Cuda);
}

#[test]
fn cuda_twins_compile_and_assemble() {
    let test = "cuda_twins_compile_and_assemble";
    let ptx = match CUDA_PTX {
        Ok(ptx) => ptx,
        Err(why) => {
            assert!(
                std::env::var("GPU_REQUIRE_NVCC").as_deref() != Ok("1"),
                "GPU_REQUIRE_NVCC=1 but the C++ twins were not compiled: {why}"
            );
            return skipped(test, why);
        }
    };
    for name in twin_kernels::KERNELS {
        assert!(
            ptx_stats::entry_instructions(ptx, name).is_some(),
            "twins.cu has no kernel `{name}` (every Rust twin needs a C++ twin of the same name)"
        );
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let Some(ptxas) = ptxas::find(&root) else {
        assert!(
            std::env::var("GPU_REQUIRE_PTXAS").as_deref() != Ok("1"),
            "GPU_REQUIRE_PTXAS=1 but there is no ptxas"
        );
        return skipped(test, "no ptxas (pip install nvidia-cuda-nvcc into .venv)");
    };
    let dir = std::env::temp_dir().join(format!("twins-cu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("twins.cu.ptx");
    std::fs::write(&file, ptx).unwrap();
    for arch in ["sm_80", "sm_90"] {
        let resources = ptxas::assemble(&ptxas, &file, arch.parse().unwrap())
            .unwrap_or_else(|e| panic!("ptxas {arch}: {e}"));
        for name in twin_kernels::KERNELS {
            let r = resources
                .iter()
                .find(|r| r.function == *name)
                .unwrap_or_else(|| panic!("ptxas {arch} reported nothing for `{name}`"));
            assert!(!r.spills(), "{name} spills on {arch}: {r:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
