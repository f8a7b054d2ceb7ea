//! `cargo xtask launch`: one process per GPU with torchrun's variables (see
//! `gpu_launcher`, re-exported as `gpu_distributed::launch`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use gpu_builder::{Error, Result};
use gpu_launcher::Launcher;

/// `launch -n N [--nnodes M --node-rank R --master-addr HOST] [--master-port P] [--timeout S]
/// PROGRAM [--] [ARGS...]`
pub fn launch(args: &[String], help: &str) -> Result<()> {
    let mut n = None;
    let mut nnodes = 1usize;
    let mut node_rank = 0usize;
    let mut master_addr = None;
    let mut master_port = None;
    let mut timeout = None;
    let mut it = args.iter();
    let number = |flag: &str, v: Option<&String>| -> Result<usize> {
        v.ok_or_else(|| Error::msg(format!("{flag} needs a number")))?
            .parse()
            .map_err(|_| Error::msg(format!("{flag} needs a number")))
    };
    let program = loop {
        let Some(a) = it.next() else {
            return Err(Error::msg(format!("launch: no PROGRAM given\n\n{help}")));
        };
        match a.as_str() {
            "-n" | "--nproc-per-node" => n = Some(number(a, it.next())?),
            "--nnodes" => nnodes = number(a, it.next())?,
            "--node-rank" => node_rank = number(a, it.next())?,
            "--master-addr" => {
                master_addr = Some(
                    it.next()
                        .ok_or_else(|| Error::msg("--master-addr needs a host"))?
                        .clone(),
                )
            }
            "--master-port" => {
                let p = number(a, it.next())?;
                master_port = Some(
                    u16::try_from(p).map_err(|_| Error::msg(format!("port {p} is too large")))?,
                )
            }
            "--timeout" => timeout = Some(Duration::from_secs(number(a, it.next())? as u64)),
            flag if flag.starts_with('-') => {
                return Err(Error::msg(format!(
                    "launch: unknown option `{flag}`\n\n{help}"
                )));
            }
            program => break program.to_string(),
        }
    };
    let rest: Vec<String> = it.skip_while(|a| a.as_str() == "--").cloned().collect();
    let n = n.ok_or_else(|| Error::msg("launch: say how many processes with -n N"))?;
    if nnodes > 1 && (master_addr.is_none() || master_port.is_none()) {
        return Err(Error::msg(
            "launch: with --nnodes > 1, give --master-addr (node 0's host, as the other machines \
             reach it) and --master-port, the same on every machine",
        ));
    }
    let mut launcher = Launcher::new(resolve(&program)?, n).args(rest);
    launcher.nnodes = nnodes;
    launcher.node_rank = node_rank;
    if let Some(a) = master_addr {
        launcher.master_addr = a;
    }
    launcher.master_port = master_port;
    launcher.timeout = timeout;
    let report = launcher
        .run()
        .map_err(|e| Error::msg(format!("launch: {e}")))?;
    if report.success() {
        eprintln!("launch: all {n} rank(s) of this machine succeeded");
        Ok(())
    } else {
        Err(Error::msg(format!("launch: {}", report.failure())))
    }
}

/// A path, a binary next to this xtask, an example built in target/release/examples, or a
/// workspace binary (built with `cargo build --release --bin NAME`).
fn resolve(name: &str) -> Result<PathBuf> {
    if Path::new(name).is_file() {
        // Absolute: `Command` looks a bare name (`distributed-sort`, no slash) up on PATH, not
        // in the current directory.
        return std::path::absolute(name).map_err(|e| Error::msg(format!("launch: {name}: {e}")));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let example = target.join("release").join("examples").join(name);
    if example.is_file() {
        return Ok(example);
    }
    crate::profile::find_program(name)
}
