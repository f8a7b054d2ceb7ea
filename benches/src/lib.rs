//! Helpers for GPU benchmarks: criterion measures what CUDA events report, not the wall-clock
//! time of an asynchronous launch.

use std::time::Duration;

use gpu_host::{Result, Stream};

/// Runs `launch` `iters` times between two events on `stream` and returns the GPU time, for
/// criterion's `iter_custom`.
pub fn gpu_time(
    stream: &Stream,
    iters: u64,
    mut launch: impl FnMut(&Stream) -> Result<()>,
) -> Result<Duration> {
    let ((), ms) = stream.time(|s| {
        for _ in 0..iters {
            launch(s)?;
        }
        Ok(())
    })?;
    Ok(Duration::from_secs_f64(ms as f64 * 1e-3))
}

/// Mean microseconds per call of `run` on `stream`: three warm-up calls, then the best of five
/// trials, each the mean over enough repetitions to take at least 20 ms (the same procedure as
/// the python peers in `benches/peers/timing.py`, so ratios compare like with like).
pub fn time_us(stream: &Stream, run: &mut dyn FnMut(&Stream) -> Result<()>) -> Result<f64> {
    for _ in 0..3 {
        run(stream)?;
    }
    let ((), once_ms) = stream.time(|s| run(s))?;
    let reps = (20.0 / once_ms.max(1e-3)).clamp(10.0, 10_000.0) as usize;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let ((), ms) = stream.time(|s| {
            for _ in 0..reps {
                run(s)?;
            }
            Ok(())
        })?;
        best = best.min(ms as f64 * 1000.0 / reps as f64);
    }
    Ok(best)
}

/// [`time_us`] after running `run` for `warm` first, untimed. A GPU that was idle (while the
/// bench prepared the next case) runs at a higher clock for its first tenths of a second than
/// under sustained load, so rows timed one after another from an idle start favour the first:
/// warming each row up to a sustained clock makes rows of one case comparable.
pub fn time_us_warm(
    stream: &Stream,
    warm: Duration,
    run: &mut dyn FnMut(&Stream) -> Result<()>,
) -> Result<f64> {
    let start = std::time::Instant::now();
    while start.elapsed() < warm {
        for _ in 0..4 {
            run(stream)?;
        }
        stream.synchronize()?;
    }
    time_us(stream, run)
}

/// Peer timings written by a `benches/peers/*.py` script: `{case: {peer: {size: microseconds}}}`.
pub type Peers = std::collections::BTreeMap<
    String,
    std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>,
>;

/// Reads the `--peers` file, or no peers without one (the bench then prints only our figures).
pub fn load_peers(path: Option<&str>) -> std::result::Result<Peers, Box<dyn std::error::Error>> {
    Ok(match path {
        Some(p) => {
            // Entries named `_...` describe the run (`_info`: GPU, library versions).
            let all: std::collections::BTreeMap<String, serde_json::Value> =
                serde_json::from_str(&std::fs::read_to_string(p)?)?;
            let mut peers = Peers::new();
            for (case, timings) in all.into_iter().filter(|(k, _)| !k.starts_with('_')) {
                let timings = serde_json::from_value(timings)
                    .map_err(|e| format!("{p}: case {case:?}: {e}"))?;
                peers.insert(case, timings);
            }
            peers
        }
        None => Peers::new(),
    })
}

/// The command line shared by the table benches: `[--peers FILE] [--quick] [--log2
/// K,...] [CASE...]`.
pub struct TableArgs {
    /// Peer timings (`--peers`), empty without the option.
    pub peers: Peers,
    /// Fewer sizes (`--quick`).
    pub quick: bool,
    /// Only these sizes (`--log2 20,28`: 2^20 and 2^28), e.g. to profile one size.
    pub sizes: Option<Vec<usize>>,
    /// Cases to run (substrings of their names); all when empty.
    pub only: Vec<String>,
}

impl TableArgs {
    /// Parses the process's arguments and reads the peers file.
    pub fn parse() -> std::result::Result<TableArgs, Box<dyn std::error::Error>> {
        let mut args = std::env::args().skip(1);
        let (mut peers_path, mut quick, mut only, mut sizes) = (None, false, Vec::new(), None);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--peers" => peers_path = Some(args.next().ok_or("--peers needs a file")?),
                "--quick" => quick = true,
                "--log2" => {
                    let list = args.next().ok_or("--log2 needs a list, e.g. 20,28")?;
                    let parsed = list
                        .split(',')
                        .map(|k| match k.trim().parse::<u32>() {
                            Ok(k) if k < usize::BITS => Ok(1usize << k),
                            _ => Err(format!("--log2 {list:?}: {k:?} is not a power 0..63")),
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()?;
                    sizes = Some(parsed);
                }
                _ => only.push(a),
            }
        }
        Ok(TableArgs {
            peers: load_peers(peers_path.as_deref())?,
            quick,
            sizes,
            only,
        })
    }

    /// The sizes to time: `--log2` if given, else `quick` or `full`.
    pub fn pick_sizes(&self, quick: Vec<usize>, full: Vec<usize>) -> Vec<usize> {
        match &self.sizes {
            Some(s) => s.clone(),
            None if self.quick => quick,
            None => full,
        }
    }
}
