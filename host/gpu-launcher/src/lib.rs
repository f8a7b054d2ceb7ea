//! Starting one process per GPU, torchrun-style, and stopping them all when one fails.
//!
//! [`Launcher`] starts `n` copies of a program with `RANK`, `WORLD_SIZE`, `LOCAL_RANK`,
//! `LOCAL_WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT` (torchrun's variables, which
//! `gpu_distributed::Communicator::from_env` reads) and `NCCL_NVLS_ENABLE=0`, prefixes each line of their
//! output with the rank, and waits. When a rank exits with a failure (or is killed), the others
//! are stopped (SIGTERM, then SIGKILL after a grace period) and the report names the rank, its
//! exit status and the tail of its output. `cargo xtask launch` is the command-line front;
//! `gpu_distributed::launch` re-exports this crate. It uses the standard library only, so the
//! build tool (`xtask`) does not compile the GPU runtime to get it.
//!
//! Across machines: run the launcher on each machine with the same `--nnodes`, its own
//! `--node-rank`, and `--master-addr` pointing at node 0 (which hosts rank 0).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lines of each rank's output kept for the failure report.
const TAIL_LINES: usize = 30;

/// How to start the ranks of one machine.
#[derive(Clone, Debug)]
pub struct Launcher {
    /// The program and its arguments.
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Processes on this machine (`--nproc-per-node`, `-n`).
    pub procs_per_node: usize,
    /// Machines in the world (`--nnodes`); the world size is `nnodes × procs_per_node`.
    pub nnodes: usize,
    /// This machine's index (`--node-rank`); its ranks are `node_rank × procs_per_node + i`.
    pub node_rank: usize,
    /// Rank 0's host, as the other machines reach it (`--master-addr`).
    pub master_addr: String,
    /// Rank 0's port (`--master-port`); `None` picks a free one (single machine only).
    pub master_port: Option<u16>,
    /// Extra environment for every rank.
    pub env: Vec<(String, String)>,
    /// Stop everything after this long (`None`: wait as long as the ranks run).
    pub timeout: Option<Duration>,
    /// After a rank fails: how long the others get to stop by themselves (they learn of the
    /// failure through their communicators and report it), and then between SIGTERM and
    /// SIGKILL.
    pub grace: Duration,
    /// Echo the ranks' output, each line prefixed `[rank R]` (to stdout / stderr).
    pub echo: bool,
}

/// How one rank ended.
#[derive(Clone, Debug)]
pub struct RankExit {
    pub rank: usize,
    /// `None` if the launcher stopped it (another rank failed first, or the timeout).
    pub status: Option<ExitStatus>,
    /// Whether the launcher stopped it.
    pub stopped: bool,
    /// The last lines of its stdout and stderr, interleaved as they came.
    pub tail: Vec<String>,
}

impl RankExit {
    /// Exited by itself with status 0.
    pub fn success(&self) -> bool {
        !self.stopped && self.status.is_some_and(|s| s.success())
    }

    /// "exited with status 3", "killed by signal 9", "stopped by the launcher".
    pub fn describe(&self) -> String {
        if self.stopped {
            return "stopped by the launcher".into();
        }
        match self.status {
            None => "still running".into(),
            Some(s) => describe_status(s),
        }
    }
}

fn describe_status(s: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = s.signal() {
            return format!("was killed by signal {sig}");
        }
    }
    match s.code() {
        Some(c) => format!("exited with status {c}"),
        None => "ended".into(),
    }
}

/// What the launch came to.
#[derive(Clone, Debug)]
pub struct LaunchReport {
    /// Every rank of this machine, in rank order.
    pub ranks: Vec<RankExit>,
    /// The first rank that failed, if one did.
    pub first_failure: Option<usize>,
    /// Whether the launcher's timeout ended the run.
    pub timed_out: bool,
}

impl LaunchReport {
    /// Every rank exited with status 0.
    pub fn success(&self) -> bool {
        !self.timed_out && self.ranks.iter().all(RankExit::success)
    }

    /// A paragraph for the user: which ranks failed and how, the first to exit first, each
    /// with its last output (a rank that failed because another one did usually says so).
    pub fn failure(&self) -> String {
        if self.success() {
            return "every rank succeeded".into();
        }
        let mut s = String::new();
        if self.timed_out {
            s.push_str("the launch timed out; ");
        }
        let first = self.first_failure;
        let mut failed: Vec<&RankExit> = self
            .ranks
            .iter()
            .filter(|r| !r.success() && !r.stopped)
            .collect();
        failed.sort_by_key(|r| Some(r.rank) != first);
        let all: Vec<String> = self
            .ranks
            .iter()
            .map(|x| format!("rank {} {}", x.rank, x.describe()))
            .collect();
        match first {
            Some(f) => s.push_str(&format!("rank {f} failed first ({})", all.join(", "))),
            None => s.push_str(&all.join(", ")),
        }
        for r in failed {
            if !r.tail.is_empty() {
                s.push_str(&format!(
                    "\nlast output of rank {}:\n  {}",
                    r.rank,
                    r.tail.join("\n  ")
                ));
            }
        }
        s
    }
}

impl Launcher {
    /// `n` processes of `program` on this machine, a world of `n`.
    pub fn new(program: impl Into<PathBuf>, n: usize) -> Launcher {
        Launcher {
            program: program.into(),
            args: Vec::new(),
            procs_per_node: n,
            nnodes: 1,
            node_rank: 0,
            master_addr: "127.0.0.1".into(),
            master_port: None,
            env: Vec::new(),
            timeout: None,
            grace: Duration::from_secs(5),
            echo: true,
        }
    }

    /// Sets the program's arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Launcher {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Adds an environment variable for every rank.
    pub fn env(mut self, key: &str, value: &str) -> Launcher {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Starts the ranks, waits for them, stops the rest when one fails, and reports.
    pub fn run(&self) -> std::io::Result<LaunchReport> {
        let n = self.procs_per_node;
        if n == 0 || self.nnodes == 0 || self.node_rank >= self.nnodes {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{n} process(es) per node, node {} of {}: need at least one process and \
                     node-rank < nnodes",
                    self.node_rank, self.nnodes
                ),
            ));
        }
        let world = n * self.nnodes;
        let port = match self.master_port {
            Some(p) => p,
            None if self.nnodes == 1 => free_port()?,
            None => 29500,
        };
        let tails: Vec<Arc<Mutex<VecDeque<String>>>> = (0..n).map(|_| Arc::default()).collect();
        let mut children: Vec<Child> = Vec::with_capacity(n);
        let mut pumps = Vec::new();
        for (local, tail) in tails.iter().enumerate() {
            let rank = self.node_rank * n + local;
            let mut cmd = Command::new(&self.program);
            cmd.args(&self.args)
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", world.to_string())
                .env("LOCAL_RANK", local.to_string())
                .env("LOCAL_WORLD_SIZE", n.to_string())
                .env("GROUP_RANK", self.node_rank.to_string())
                .env("MASTER_ADDR", &self.master_addr)
                .env("MASTER_PORT", port.to_string())
                .env("NCCL_NVLS_ENABLE", "0")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for (k, v) in &self.env {
                cmd.env(k, v);
            }
            let mut child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => {
                    for mut c in children {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("starting rank {rank} ({}): {e}", self.program.display()),
                    ));
                }
            };
            let out = child.stdout.take().expect("piped");
            let err = child.stderr.take().expect("piped");
            pumps.push(pump(out, rank, tail.clone(), self.echo, false));
            pumps.push(pump(err, rank, tail.clone(), self.echo, true));
            children.push(child);
        }
        // One waiter per rank reports its exit, so exits arrive in the order they happened.
        let pids: Vec<u32> = children.iter().map(Child::id).collect();
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Option<ExitStatus>)>();
        for (i, mut c) in children.into_iter().enumerate() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send((i, c.wait().ok()));
            });
        }
        drop(tx);
        let start = Instant::now();
        let mut status: Vec<Option<ExitStatus>> = vec![None; n];
        let mut exited = vec![false; n];
        let mut first_failure = None;
        let mut timed_out = false;
        let mut stopped = vec![false; n];
        let base = self.node_rank * n;
        let note = |(i, s): (usize, Option<ExitStatus>),
                    exited: &mut [bool],
                    status: &mut [Option<ExitStatus>],
                    first: &mut Option<usize>| {
            exited[i] = true;
            status[i] = s;
            if !s.is_some_and(|s| s.success()) && first.is_none() {
                *first = Some(base + i);
            }
        };
        // Until every rank has exited, one has failed, or the timeout.
        while exited.iter().any(|e| !e) && first_failure.is_none() {
            let left = self.timeout.map(|t| t.saturating_sub(start.elapsed()));
            if left == Some(Duration::ZERO) {
                timed_out = true;
                break;
            }
            match rx.recv_timeout(left.unwrap_or(Duration::from_secs(3600))) {
                Ok(e) => note(e, &mut exited, &mut status, &mut first_failure),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        // After a failure the others usually stop by themselves within moments (their
        // communicators learn of it): give them the grace period to report, then SIGTERM,
        // then after another grace period SIGKILL.
        for signal in [None, Some(15), Some(9)] {
            if let Some(sig) = signal {
                for i in 0..n {
                    if !exited[i] {
                        stopped[i] = true;
                        send_signal(pids[i], sig);
                    }
                }
            } else if first_failure.is_none() && !timed_out {
                continue;
            }
            let until = Instant::now() + self.grace;
            while exited.iter().any(|e| !e) {
                let left = until.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(e) => note(e, &mut exited, &mut status, &mut first_failure),
                    Err(_) => break,
                }
            }
        }
        for p in pumps {
            let _ = p.join();
        }
        let ranks = (0..n)
            .map(|i| RankExit {
                rank: self.node_rank * n + i,
                status: status[i],
                stopped: stopped[i],
                tail: tails[i]
                    .lock()
                    .map(|t| t.iter().cloned().collect())
                    .unwrap_or_default(),
            })
            .collect();
        Ok(LaunchReport {
            ranks,
            first_failure,
            timed_out,
        })
    }
}

/// Copies a rank's output line by line: echoed with its rank, and the last lines kept.
fn pump(
    stream: impl Read + Send + 'static,
    rank: usize,
    tail: Arc<Mutex<VecDeque<String>>>,
    echo: bool,
    is_err: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let reader = BufReader::new(stream);
        for line in reader.split(b'\n') {
            let Ok(line) = line else { break };
            let line = String::from_utf8_lossy(&line)
                .trim_end_matches('\r')
                .to_string();
            if echo {
                if is_err {
                    let _ = writeln!(std::io::stderr(), "[rank {rank}] {line}");
                } else {
                    let _ = writeln!(std::io::stdout(), "[rank {rank}] {line}");
                }
            }
            if let Ok(mut t) = tail.lock() {
                if t.len() == TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        }
    })
}

/// Sends `sig` to a child that has not been reaped yet (its waiter thread reaps it).
fn send_signal(pid: u32, sig: i32) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) on our own child's pid; it is reaped only by its waiter thread, after
        // it exits, and we signal only children whose exit has not been reported yet.
        unsafe { kill(pid, sig) };
    }
    #[cfg(not(unix))]
    let _ = (pid, sig);
}

#[cfg(unix)]
unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// A port that was free a moment ago (bound to 0 and released).
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
}
