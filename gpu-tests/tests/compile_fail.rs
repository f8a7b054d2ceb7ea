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
    let cases = trybuild::TestCases::new();
    cases.compile_fail("gpu-tests/ui/*.rs");
}
