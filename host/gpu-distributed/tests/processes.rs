//! One process per rank, started by the launcher (as one machine, or as two machines: two
//! launchers with `nnodes = 2` on this host): correct results, and a rank that panics, exits or
//! passes a wrong length is named on the other ranks (no hang) and in the launcher's report.
//! Runs on simulated devices everywhere (ranks talk through the TCP rendezvous), and with NCCL
//! on real GPUs when the machine has two and NCCL is installed (else a SKIPPED line); the
//! two-machine tests on simulated devices only.
//!
//! The ranks are this test binary started again with `GPU_DIST_CHILD=<scenario>`: the test
//! `child_rank_entry` is the rank's body then, and does nothing in a normal run.

use std::time::Duration;

use gpu_distributed::launch::{LaunchReport, Launcher};
use gpu_distributed::{Communicator, Error, ReduceOp};

const CHILD: &str = "GPU_DIST_CHILD";

/// The rank's side of each scenario.
#[test]
fn child_rank_entry() {
    let Ok(scenario) = std::env::var(CHILD) else {
        return; // not started by a launcher test
    };
    // A rank that fails early can do so before the others have joined: they learn of it
    // while joining, and report it like any other error.
    let comm = match Communicator::from_env() {
        Ok(comm) => comm,
        Err(e) => {
            println!(
                "rank {}: error while joining: {e}",
                std::env::var("RANK").unwrap_or_default()
            );
            std::process::exit(3);
        }
    };
    let rank = comm.rank();
    let len = if scenario == "wrong_length" && rank == 1 {
        1000
    } else {
        1024
    };
    if rank == 1 && scenario == "panic" {
        panic!("planted panic on rank 1 before the collective");
    }
    if rank == 1 && scenario == "exit" {
        std::process::exit(7);
    }
    let run = || -> Result<Vec<f32>, Error> {
        let mut x = comm.gpu().to_device(&vec![rank as f32 + 1.0; len])?;
        comm.all_reduce_in_place(&mut x, ReduceOp::Sum)?;
        comm.synchronize()?;
        comm.barrier()?;
        Ok(x.to_vec()?)
    };
    match run() {
        Ok(v) => {
            let n = comm.size() as f32;
            assert!(v.iter().all(|&x| x == n * (n + 1.0) / 2.0), "wrong sum");
            println!("rank {rank}: all_reduce correct on {}", comm.backend_name());
        }
        Err(e) => {
            println!("rank {rank}: error: {e}");
            std::process::exit(3);
        }
    }
}

/// Two ranks of this test binary running `scenario` (quiet, 120 s at most), on simulated
/// devices if `sim`.
fn rank_launcher(scenario: &str, sim: bool) -> Launcher {
    let me = std::env::current_exe().unwrap();
    let mut l = Launcher::new(me, 2)
        .args([
            "--exact",
            "child_rank_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, scenario)
        .env("GPU_DIST_TIMEOUT_S", "30");
    if sim {
        l = l.env("GPU_BACKEND", "sim");
    }
    l.timeout = Some(Duration::from_secs(120));
    l.echo = false;
    l
}

fn launch(scenario: &str, sim: bool) -> LaunchReport {
    rank_launcher(scenario, sim)
        .run()
        .expect("starting the ranks")
}

fn output(report: &LaunchReport, rank: usize) -> String {
    report.ranks[rank].tail.join("\n")
}

fn each_backend(test: &str, check: impl Fn(bool)) {
    check(true);
    match gpu_distributed::nccl_gpu_count() {
        Ok(_) => check(false),
        Err(why) => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test} with NCCL: {why} (ran on simulated devices only)"
            );
        }
    }
}

#[test]
fn ranks_in_processes_all_reduce() {
    each_backend("ranks_in_processes_all_reduce", |sim| {
        let r = launch("ok", sim);
        assert!(r.success(), "{}", r.failure());
        for rank in 0..2 {
            assert!(
                output(&r, rank).contains("all_reduce correct"),
                "{}",
                output(&r, rank)
            );
        }
    });
}

#[test]
fn a_panicking_process_is_named() {
    each_backend("a_panicking_process_is_named", |sim| {
        let r = launch("panic", sim);
        assert!(!r.success());
        assert!(!r.ranks[1].success(), "{}", r.failure());
        assert!(r.failure().contains("planted panic"), "{}", r.failure());
        let zero = output(&r, 0);
        assert!(
            zero.contains("rank 1 failed") && zero.contains("planted panic"),
            "{zero}"
        );
    });
}

#[test]
fn an_exiting_process_is_named() {
    each_backend("an_exiting_process_is_named", |sim| {
        let r = launch("exit", sim);
        assert!(
            r.failure().contains("rank 1 exited with status 7"),
            "{}",
            r.failure()
        );
        let zero = output(&r, 0);
        assert!(zero.contains("rank 1 failed"), "{zero}");
        assert!(zero.contains("exited or lost its connection"), "{zero}");
    });
}

#[test]
fn a_wrong_length_fails_every_rank() {
    each_backend("a_wrong_length_fails_every_rank", |sim| {
        let r = launch("wrong_length", sim);
        assert!(!r.success());
        for rank in 0..2 {
            let out = output(&r, rank);
            assert!(out.contains("does not match"), "rank {rank}: {out}");
            assert!(
                out.contains("1000 x f32") && out.contains("1024 x f32"),
                "rank {rank}: {out}"
            );
        }
    });
}

/// Two launchers of two processes each, as on two machines (`--nnodes 2`, node ranks 0 and 1,
/// node 0's address as the master), with `scenario`: one world of four ranks. Simulated devices
/// only: on one host the two "machines" would put two ranks on each GPU, which NCCL refuses.
fn launch_two_nodes(scenario: &str) -> [LaunchReport; 2] {
    // A port free now, for both launchers (a multi-machine launch names one).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let node = |node_rank: usize| {
        let mut l = rank_launcher(scenario, true);
        l.nnodes = 2;
        l.node_rank = node_rank;
        l.master_addr = "127.0.0.1".into();
        l.master_port = Some(port);
        l
    };
    let (zero, one) = (node(0), node(1));
    std::thread::scope(|s| {
        let one = s.spawn(move || one.run().expect("starting node 1's ranks"));
        let zero = zero.run().expect("starting node 0's ranks");
        [zero, one.join().expect("node 1's launcher")]
    })
}

#[test]
fn two_nodes_form_one_world() {
    let [zero, one] = launch_two_nodes("ok");
    assert!(zero.success(), "node 0: {}", zero.failure());
    assert!(one.success(), "node 1: {}", one.failure());
    // Ranks 0 and 1 on node 0, 2 and 3 on node 1; each checked the sum over all four.
    for (report, ranks) in [(&zero, [0, 1]), (&one, [2, 3])] {
        for (i, rank) in ranks.into_iter().enumerate() {
            assert_eq!(report.ranks[i].rank, rank);
            let out = output(report, i);
            assert!(
                out.contains(&format!("rank {rank}: all_reduce correct")),
                "{out}"
            );
        }
    }
}

#[test]
fn a_failure_on_one_node_is_named_on_the_other() {
    // Rank 1, on node 0, panics: node 1's ranks learn it through rank 0 and name it.
    let [zero, one] = launch_two_nodes("panic");
    assert!(
        zero.failure().contains("planted panic"),
        "{}",
        zero.failure()
    );
    assert!(!one.success(), "node 1 should fail too");
    for i in 0..2 {
        let out = output(&one, i);
        assert!(
            out.contains("rank 1 failed"),
            "node 1, rank {}: {out}",
            2 + i
        );
    }
}
