//! The tuning tools on real kernels, without a GPU: PTX annotated with Rust source lines, the
//! ptxas resource report, SASS with source lines, and build-to-build diffs. The kernels are the
//! fixed ones of `kernels/test-kernels`, so the source lines checked here do not move when an
//! example changes.
//!
//! ptxas and nvdisasm checks print SKIPPED when the tools are missing, unless
//! `GPU_REQUIRE_PTXAS=1` (set by CI, which installs both wheels into .venv).

use std::path::{Path, PathBuf};
use std::process::Command;

use gpu_builder::annotate::{self, Annotator};
use gpu_builder::compile::{self, BuiltModule, CompileOptions};
use gpu_builder::toolchain::Rustc;
use gpu_builder::workspace::Workspace;
use gpu_builder::{Arch, diff, ptxas};

fn workspace() -> Workspace {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    Workspace::load(&root.join("Cargo.toml")).unwrap()
}

/// The tests of this file build the same crate; one at a time, so none reads a PTX file while
/// another rewrites it.
static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn build_test_kernels(ws: &Workspace, arch: Arch, options: CompileOptions) -> BuiltModule {
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let rustc = Rustc::detect().unwrap();
    compile::compile_with(ws, &ws.find("test-kernels").unwrap(), arch, &rustc, options)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn tool_or_skip(ws: &Workspace, test: &str, name: &str, env: &str) -> Option<PathBuf> {
    let found = ptxas::find_tool(&ws.root, name, env);
    if found.is_none() {
        if std::env::var_os("GPU_REQUIRE_PTXAS").is_some() {
            panic!(
                "GPU_REQUIRE_PTXAS is set but {name} was not found in .venv, PATH or /usr/local/cuda/bin"
            );
        }
        gpu_tests::skipped(test, &format!("{name} not found"));
    }
    found
}

/// The annotation expected above the PTX or SASS of saxpy's loop body: `//> path:line  source`,
/// with the line looked up in the source file.
fn saxpy_body_annotation(ws: &Workspace) -> String {
    let path = "kernels/test-kernels/src/elementwise.rs";
    let body = "out.set(i, alpha * x[i.get()] + y[i.get()]);";
    let source = std::fs::read_to_string(ws.root.join(path)).unwrap();
    let line = source
        .lines()
        .position(|l| l.trim() == body)
        .unwrap_or_else(|| panic!("{path} has no line `{body}`"));
    format!("//> {path}:{}  {body}", line + 1)
}

#[test]
fn annotated_ptx_shows_the_rust_source_of_saxpy() {
    let ws = workspace();
    let lines = build_test_kernels(&ws, Arch::SM_80, CompileOptions { line_tables: true });
    assert!(
        lines
            .ptx_path
            .starts_with(compile::annotated_ptx_dir(&ws, Arch::SM_80)),
        "line-table builds go to their own directory: {}",
        lines.ptx_path.display()
    );
    let ptx = std::fs::read_to_string(&lines.ptx_path).unwrap();
    assert!(ptx.contains(".target sm_80\n"), "no `, debug` on .target");
    assert!(!ptx.contains(".section"), "DWARF sections are stripped");
    let has_loc = |text: &str| text.lines().any(|l| l.trim_start().starts_with(".loc\t"));
    assert!(has_loc(&ptx), "line tables are kept");

    let files = annotate::file_table(&ptx);
    let elementwise_rs = ws.root.join("kernels/test-kernels/src/elementwise.rs");
    assert!(
        files.values().any(|p| p == &elementwise_rs),
        ".file table: {files:?}"
    );
    let saxpy = annotate::kernel_with_callees(&ptx, "saxpy").expect("saxpy entry");
    let annotated = Annotator::new(&ws.root).annotate_ptx(&saxpy, &files);
    println!("{annotated}");
    // The loop body's source line, shown above the PTX it became, and the PTX itself.
    assert!(
        annotated.contains(&saxpy_body_annotation(&ws)),
        "{annotated}"
    );
    assert!(
        annotated.contains("fma.rn.f32")
            || annotated.contains("mul.rn.f32")
            || annotated.contains("mul.f32")
    );
    assert!(annotated.contains(".visible .entry saxpy("));
    assert!(!has_loc(&annotated), "directives become comments");
    // The gpu library's lines show with their workspace path, core's with a short one.
    assert!(annotated.contains("//> kernels/gpu/src/"), "{annotated}");
    assert!(
        !annotated.contains("nvptx-sysroot"),
        "std paths are shortened: {annotated}"
    );

    // The normal build is unchanged: no line tables there.
    let plain = build_test_kernels(&ws, Arch::SM_80, CompileOptions::default());
    let plain_ptx = std::fs::read_to_string(&plain.ptx_path).unwrap();
    assert!(!has_loc(&plain_ptx) && !plain_ptx.contains(".file\t"));
    assert_eq!(
        plain.manifest.kernels.len(),
        lines.manifest.kernels.len(),
        "both builds have the same kernels"
    );
}

#[test]
fn ptxas_reports_resources_and_accepts_line_info() {
    let ws = workspace();
    let test = "ptxas_reports_resources_and_accepts_line_info";
    let Some(ptxas) = tool_or_skip(&ws, test, "ptxas", ptxas::PTXAS_ENV) else {
        return;
    };
    let plain = build_test_kernels(&ws, Arch::SM_80, CompileOptions::default());
    let resources = ptxas::assemble(&ptxas, &plain.ptx_path, Arch::SM_80).unwrap();
    let tiled = resources
        .iter()
        .find(|r| r.function == "matmul_tiled")
        .unwrap();
    assert!(tiled.is_entry && tiled.registers > 0, "{tiled:?}");
    assert_eq!(tiled.shared_bytes, 2 * 16 * 16 * 4, "two 16x16 f32 tiles");
    assert!(tiled.barriers >= 1, "{tiled:?}");

    // The line-table PTX assembles with -lineinfo, and nvdisasm maps SASS back to elementwise.rs.
    let lines = build_test_kernels(&ws, Arch::SM_80, CompileOptions { line_tables: true });
    let cubin = std::env::temp_dir().join(format!("inspect-test-{}.cubin", std::process::id()));
    let with_lines =
        ptxas::assemble_to(&ptxas, &lines.ptx_path, Arch::SM_80, &["-lineinfo"], &cubin)
            .unwrap_or_else(|e| panic!("{e}"));
    assert!(with_lines.iter().any(|r| r.function == "saxpy"));

    if let Some(nvdisasm) = tool_or_skip(&ws, test, "nvdisasm", "NVDISASM") {
        let out = Command::new(&nvdisasm)
            .args(["-c", "-g"])
            .arg(&cubin)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sass = Annotator::new(&ws.root).annotate_sass(&String::from_utf8_lossy(&out.stdout));
        assert!(sass.contains(&saxpy_body_annotation(&ws)), "{sass}");
        assert!(sass.contains("FFMA") || sass.contains("FMUL"), "{sass}");
    }
    let _ = std::fs::remove_file(&cubin);
}

#[test]
fn ptx_diff_between_architectures() {
    let ws = workspace();
    let sm80 = build_test_kernels(&ws, Arch::SM_80, CompileOptions::default());
    let sm90 = build_test_kernels(&ws, Arch::SM_90, CompileOptions::default());
    let read = |m: &BuiltModule| std::fs::read_to_string(&m.ptx_path).unwrap();
    let (a, b) = (read(&sm80), read(&sm90));
    let ka = annotate::kernel_with_callees(&a, "vector_add").unwrap();
    let kb = annotate::kernel_with_callees(&b, "vector_add").unwrap();
    assert!(diff::unified("a", "b", &ka, &ka, 3).is_empty());
    let whole = diff::unified("sm_80", "sm_90", &a, &b, 1);
    assert!(
        whole.contains("-.target sm_80") && whole.contains("+.target sm_90"),
        "{whole}"
    );
    let _ = kb;
}
