//! Typed launchers turn wrong kernel arguments into compile errors.
//!
//! Runs cargo (trybuild); on a machine without cargo (the GPU machine) it prints SKIPPED.

#[test]
fn wrong_launch_arguments_fail_to_compile() {
    if std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .arg("--version")
        .output()
        .is_err()
    {
        gpu_tests::skipped(
            "wrong_launch_arguments_fail_to_compile",
            "cargo is not available on this machine",
        );
        return;
    }
    // trybuild passes when the pattern matches nothing (it did, silently, after a rename), so
    // count the cases first. Paths are relative to this crate's directory.
    let ui = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui");
    let count = std::fs::read_dir(&ui)
        .unwrap_or_else(|e| panic!("reading {}: {e}", ui.display()))
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "rs"))
        })
        .count();
    assert!(count > 0, "no compile-fail cases in {}", ui.display());
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
