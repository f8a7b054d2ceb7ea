//! Running GPU work that may fault in a child process, so that the fault ends only the child.
//!
//! # Why
//! After a kernel fault (a panic, an illegal address) some CUDA drivers refuse every new context
//! for the rest of the process (see [`crate::Gpu::recover`] and [`crate::Error::ProcessPoisoned`]):
//! the GPU is usable again only from a new process. A program that must survive a faulting
//! kernel (a server, a test harness, a fuzzer) runs that work in a child process: the child
//! reports the fault and exits, the parent reads the report and carries on with its own,
//! untouched CUDA context.
//!
//! # How
//! The child is the *current executable*, started again with an environment variable
//! ([`JOB_ENV`]) naming the job. The program recognises it and runs the job instead of its
//! usual work:
//!
//! ```no_run
//! use gpu_host::isolate::{self, Isolated};
//!
//! fn risky() -> Result<(), String> {
//!     let gpu = gpu_host::Gpu::first().map_err(|e| e.to_string())?;
//!     // ... launches that may panic or fault ...
//!     gpu.synchronize().map_err(|e| e.to_string())?;
//!     println!("risky job done");
//!     Ok(())
//! }
//!
//! fn main() {
//!     // First thing in main: in the child, run the job and exit; in the parent, return.
//!     isolate::serve(&[("risky", risky)]);
//!
//!     let report = Isolated::new("risky").run().expect("starting the child");
//!     if report.success() {
//!         print!("{}", report.stdout);
//!     } else {
//!         eprintln!("the risky job failed, the parent goes on: {}", report.failure());
//!     }
//! }
//! ```
//!
//! In a test binary (libtest's `main`), name the test as the job and pass libtest's filter:
//! [`Isolated::test`]. Inside the test, [`is_job`] tells the child apart from the parent.
//!
//! The child inherits the environment and the working directory; its standard output and
//! error are captured into the [`JobReport`]. Anything the program does before it reaches
//! [`serve`] (or the test) runs again in the child, so call `serve` first.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};

use crate::error::{Error, Result};

/// The environment variable that names the job a child process was started for.
pub const JOB_ENV: &str = "GPU_HOST_ISOLATED_JOB";

/// The job this process was started for, when it is a child started by [`Isolated::run`].
pub fn current_job() -> Option<String> {
    std::env::var(JOB_ENV).ok().filter(|j| !j.is_empty())
}

/// Whether this process is the child started for job `name`.
pub fn is_job(name: &str) -> bool {
    current_job().as_deref() == Some(name)
}

/// A job for [`serve`]: prints what it wants the parent to see, returns an error message on
/// failure.
pub type Job = fn() -> std::result::Result<(), String>;

/// In a child started for one of `jobs`, runs it and exits the process: status 0 when it
/// returned `Ok`, 1 (after printing the message to standard error) when it returned `Err`, 101
/// when it panicked. Returns at once in any other process. Call it first thing in `main`.
pub fn serve(jobs: &[(&str, Job)]) {
    let Some(name) = current_job() else { return };
    let Some((_, job)) = jobs.iter().find(|(n, _)| *n == name) else {
        return;
    };
    match job() {
        Ok(()) => std::process::exit(0),
        Err(message) => {
            eprintln!("job `{name}` failed: {message}");
            std::process::exit(1)
        }
    }
}

/// A job to run in a child process (the current executable, started again).
#[derive(Clone, Debug)]
pub struct Isolated {
    job: String,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    program: Option<PathBuf>,
}

impl Isolated {
    /// Job `job`, started with no arguments.
    pub fn new(job: impl Into<String>) -> Isolated {
        Isolated {
            job: job.into(),
            args: Vec::new(),
            envs: Vec::new(),
            program: None,
        }
    }

    /// The test `test` of the current test binary as the job: the child runs only that test
    /// (`TEST --exact --nocapture --test-threads=1`), and inside it [`is_job`]`(test)` holds.
    pub fn test(test: &str) -> Isolated {
        Isolated::new(test).args([test, "--exact", "--nocapture", "--test-threads=1"])
    }

    /// Adds command-line arguments for the child.
    pub fn args<I, S>(mut self, args: I) -> Isolated
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable in the child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Isolated {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Runs another executable instead of the current one (it must understand [`JOB_ENV`]).
    pub fn program(mut self, program: impl Into<PathBuf>) -> Isolated {
        self.program = Some(program.into());
        self
    }

    /// Starts the child, waits for it and returns what it reported. `Err` only when the child
    /// could not be started (or when a child tries to start its own job again, which would
    /// recurse forever: the program did not recognise [`JOB_ENV`]); a job that failed, faulted
    /// or crashed is an `Ok` report whose [`JobReport::success`] is false.
    pub fn run(&self) -> Result<JobReport> {
        if self.job.is_empty() {
            return Err(Error::Isolation {
                job: self.job.clone(),
                message: "the job name is empty".to_string(),
            });
        }
        if is_job(&self.job) && self.program.is_none() {
            return Err(Error::Isolation {
                job: self.job.clone(),
                message: "this process is already the child started for this job, and it \
                          tried to start the job again: call gpu_host::isolate::serve at the \
                          start of main (or check isolate::is_job in the test)"
                    .to_string(),
            });
        }
        let program = match &self.program {
            Some(p) => p.clone(),
            None => std::env::current_exe().map_err(|e| Error::Isolation {
                job: self.job.clone(),
                message: format!("cannot find the current executable to start again: {e}"),
            })?,
        };
        let output = Command::new(&program)
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .env(JOB_ENV, &self.job)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::Isolation {
                job: self.job.clone(),
                message: format!("starting {}: {e}", program.display()),
            })?;
        Ok(JobReport {
            job: self.job.clone(),
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }
}

/// What a child process started by [`Isolated::run`] reported.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// The job's name.
    pub job: String,
    /// How the child ended.
    pub status: ExitStatus,
    /// Everything the child printed to standard output.
    pub stdout: String,
    /// Everything the child printed to standard error.
    pub stderr: String,
}

impl JobReport {
    /// Whether the child exited with status 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// One paragraph on how the job ended: the exit status or signal, and the child's own
    /// explanation (its lines mentioning a failure or panic, else the last lines it printed).
    pub fn failure(&self) -> String {
        let how = match self.status.code() {
            Some(0) => "exited with status 0".to_string(),
            Some(c) => format!("exited with status {c}"),
            None => {
                #[cfg(unix)]
                {
                    use std::os::unix::process::ExitStatusExt;
                    match self.status.signal() {
                        Some(s) => format!("was killed by signal {s}"),
                        None => "ended without an exit status".to_string(),
                    }
                }
                #[cfg(not(unix))]
                {
                    "ended without an exit status".to_string()
                }
            }
        };
        let all: Vec<&str> = self
            .stderr
            .lines()
            .chain(self.stdout.lines())
            .filter(|l| !l.trim().is_empty())
            .collect();
        // Lines saying what failed, and the message line that follows a panic's location.
        let mut key: Vec<&str> = Vec::new();
        for (i, l) in all.iter().enumerate() {
            let panic = l.contains("panicked at");
            if panic || l.contains("failed") || l.contains("error") || l.contains("FAILED") {
                key.push(l);
                if panic && let Some(next) = all.get(i + 1) {
                    key.push(next);
                }
            }
        }
        key.dedup();
        key.truncate(8);
        let lines = if key.is_empty() {
            all[all.len().saturating_sub(8)..].to_vec()
        } else {
            key
        };
        if lines.is_empty() {
            format!("job `{}` {how} and printed nothing", self.job)
        } else {
            format!("job `{}` {how}: {}", self.job, lines.join(" | "))
        }
    }
}
