//! Embeds the example kernel crate (PTX, code units, SASS when ptxas is found, typed launchers)
//! and its manifest, so `gk.load_kernels("example_kernels")` works without a separate kernel build
//! and on the CPU simulator (which needs the crate's host build, linked in here).
use std::path::PathBuf;

/// The kernel crates embedded in the extension, relative to this crate.
const EMBEDDED: &[&str] = &["../../kernels/example-kernels"];

fn main() {
    let out_dir =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set for build scripts"));
    for dir in EMBEDDED {
        // Compiles the crate and writes `<crate>.rs` (the launchers) into OUT_DIR.
        gpu_builder::KernelBuild::new(*dir).build_script();
        // Unchanged since the line above, so this only reads the result back.
        let module = gpu_builder::KernelBuild::new(*dir)
            .build()
            .unwrap_or_else(|e| {
                eprintln!("error: reading back kernel crate {dir}: {e}");
                std::process::exit(1);
            });
        let json = serde_json::to_string(&module.manifest).expect("a manifest serializes");
        let path = out_dir.join(format!("{}.manifest.json", module.krate.crate_name));
        std::fs::write(&path, json).unwrap_or_else(|e| {
            eprintln!("error: writing {}: {e}", path.display());
            std::process::exit(1);
        });
    }
}
