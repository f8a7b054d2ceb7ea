//! `gpu_host::isolate` without a GPU: each test starts this test binary again for itself as a
//! child job and checks what the parent sees (output, failures, crashes, refused recursion).

use gpu_host::Error;
use gpu_host::isolate::{self, Isolated, JOB_ENV};

#[test]
fn a_child_job_runs_and_its_output_comes_back() {
    let name = "a_child_job_runs_and_its_output_comes_back";
    if isolate::is_job(name) {
        assert_eq!(std::env::var("ISOLATE_TEST_VALUE").as_deref(), Ok("42"));
        println!("CHILD says {}", std::process::id());
        return;
    }
    assert_eq!(isolate::current_job(), None, "the parent is no job");
    let report = Isolated::test(name)
        .env("ISOLATE_TEST_VALUE", "42")
        .run()
        .unwrap();
    assert!(report.success(), "{}", report.failure());
    let pid = std::process::id().to_string();
    let line = report
        .stdout
        .lines()
        .find_map(|l| l.find("CHILD says ").map(|i| &l[i + 11..]))
        .unwrap_or_else(|| panic!("no child output: {}", report.stdout));
    assert_ne!(line.trim(), pid, "ran in another process");
}

#[test]
fn a_failing_child_is_reported_and_the_parent_goes_on() {
    let name = "a_failing_child_is_reported_and_the_parent_goes_on";
    if isolate::is_job(name) {
        panic!("simulated kernel fault: CUDA_ERROR_ILLEGAL_ADDRESS");
    }
    let report = Isolated::test(name).run().unwrap();
    assert!(!report.success());
    let failure = report.failure();
    assert!(
        failure.contains("exited with status 101")
            && failure.contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
        "{failure}"
    );
    // Again: the parent is unaffected and can start more children.
    assert!(!Isolated::test(name).run().unwrap().success());
}

#[cfg(unix)]
#[test]
fn a_crashing_child_reports_its_signal() {
    let name = "a_crashing_child_reports_its_signal";
    if isolate::is_job(name) {
        std::process::abort();
    }
    let report = Isolated::test(name).run().unwrap();
    assert!(!report.success());
    assert!(
        report.failure().contains("killed by signal 6"),
        "{}",
        report.failure()
    );
}

#[test]
fn a_child_starting_its_own_job_again_is_refused() {
    let name = "a_child_starting_its_own_job_again_is_refused";
    if isolate::is_job(name) {
        let err = Isolated::test(name).run().unwrap_err();
        assert!(matches!(err, Error::Isolation { .. }), "{err}");
        assert!(err.to_string().contains("serve"), "{err}");
        println!("REFUSED");
        return;
    }
    let report = Isolated::test(name).run().unwrap();
    assert!(report.success(), "{}", report.failure());
    assert!(report.stdout.contains("REFUSED"), "{}", report.stdout);
}

fn job_ok() -> Result<(), String> {
    println!("JOB OK ran");
    Ok(())
}

fn job_err() -> Result<(), String> {
    Err("the input was bad".to_string())
}

#[test]
fn serve_runs_the_named_job_and_exits() {
    let name = "serve_runs_the_named_job_and_exits";
    if let Some(job) = isolate::current_job() {
        if job.starts_with(name) {
            // `serve` exits the process for its own jobs; the test would fail past it.
            isolate::serve(&[
                (&format!("{name}/ok"), job_ok),
                (&format!("{name}/err"), job_err),
            ]);
            panic!("serve returned for job {job}");
        }
        return;
    }
    // A job this process does not serve: `serve` returns.
    isolate::serve(&[("some other job", job_err)]);
    let run = |job: &str| {
        Isolated::new(format!("{name}/{job}"))
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .run()
            .unwrap()
    };
    let ok = run("ok");
    assert!(ok.success(), "{}", ok.failure());
    assert!(ok.stdout.contains("JOB OK ran"), "{}", ok.stdout);
    let err = run("err");
    assert_eq!(err.status.code(), Some(1), "{}", err.failure());
    assert!(
        err.stderr.contains("failed: the input was bad"),
        "{}",
        err.stderr
    );
}

#[test]
fn bad_jobs_are_clear_errors() {
    let err = Isolated::new("").run().unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    let err = Isolated::new("x")
        .program("/nonexistent/program")
        .run()
        .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/program"), "{err}");
    assert_eq!(JOB_ENV, "GPU_HOST_ISOLATED_JOB");
}
