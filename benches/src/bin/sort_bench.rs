//! `sort-bench [--peers sort_peers.json] [--quick] [--log2 K,...] [--check] [CASE...]`:
//! times `gpu-algorithms`' radix sort with CUDA events over sizes 2^10 … 2^28 and prints, per
//! case and size, our Gkeys/s, each peer's (torch.sort, cupy.sort, timed by
//! `benches/peers/sort.py` in the same session) and the ratio peer time / our time (> 1: we
//! are faster). The fastest peer at each size is marked: issue targets compare with it.
//!
//! Cases: `sort_keys_u32`, `sort_keys_f32` (keys only; cupy.sort is CUB onesweep SortKeys),
//! `sort_pairs_u32_u64` (u32 keys with u64 index values: what torch.sort computes, int32 keys
//! with int64 indices), `sort_pairs_u32_u32`; 64-bit keys: `sort_keys_i64` and `sort_pairs_i64_u64`
//! (keys over the whole i64 range), `sort_keys_f64`. Integer keys are uniform over their
//! type's range, float keys standard normal values, as the peers' (`torch.randn`).
//!
//! `--check` first prints how long loading the module took and checks a few sorts against the
//! CPU (printing each step, and giving up with exit code 3 if one step takes over 200 s).

use gpu_test_kit::XorShift64;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use benches::time_us;
use gpu_algorithms::Algorithms;
use gpu_host::{Gpu, Result, Stream};

fn random_u32(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = XorShift64::new(seed | 1);
    (0..n)
        .map(|_| {
            let state = rng.next_u64();
            (state >> 32) as u32
        })
        .collect()
}

/// Standard normal values (Box–Muller over `XorShift64`): the float keys, distributed as the
/// peers' (`torch.randn`), since a radix sort's speed depends on how the digits spread.
fn random_normal(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = XorShift64::new(seed | 1);
    let mut uniform = move || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (0..n)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        })
        .collect()
}

/// Keys over the whole `i64` range (every digit of every pass varies, as for the peers).
fn random_i64(n: usize, seed: u64) -> Vec<i64> {
    let mut rng = XorShift64::new(seed | 1);
    (0..n).map(|_| rng.next_u64() as i64).collect()
}

type Run<'a> = Box<dyn FnMut(&Stream) -> Result<()> + 'a>;

fn prepare<'a>(gpu: &'a Gpu, algos: &'a Algorithms, case: &str, n: usize) -> Result<Run<'a>> {
    let raw = random_u32(n, n as u64 ^ 0x9e37_79b9);
    Ok(match case {
        "sort_keys_u32" => {
            let keys = gpu.to_device(&raw)?;
            let mut out = gpu.alloc_zeroed::<u32>(n)?;
            Box::new(move |s: &Stream| algos.sort_keys(s, &keys, &mut out))
        }
        "sort_keys_f32" => {
            let f: Vec<f32> = random_normal(n, n as u64)
                .iter()
                .map(|&x| x as f32)
                .collect();
            let keys = gpu.to_device(&f)?;
            let mut out = gpu.alloc_zeroed::<f32>(n)?;
            Box::new(move |s: &Stream| algos.sort_keys(s, &keys, &mut out))
        }
        "sort_pairs_u32_u64" => {
            let keys = gpu.to_device(&raw)?;
            let values = gpu.to_device(&(0..n as u64).collect::<Vec<_>>())?;
            let (mut ko, mut vo) = (gpu.alloc_zeroed::<u32>(n)?, gpu.alloc_zeroed::<u64>(n)?);
            Box::new(move |s: &Stream| algos.sort_pairs(s, &keys, &values, &mut ko, &mut vo))
        }
        "sort_pairs_u32_u32" => {
            let keys = gpu.to_device(&raw)?;
            let values = gpu.to_device(&(0..n as u32).collect::<Vec<_>>())?;
            let (mut ko, mut vo) = (gpu.alloc_zeroed::<u32>(n)?, gpu.alloc_zeroed::<u32>(n)?);
            Box::new(move |s: &Stream| algos.sort_pairs(s, &keys, &values, &mut ko, &mut vo))
        }
        "sort_keys_i64" => {
            let keys = gpu.to_device(&random_i64(n, n as u64))?;
            let mut out = gpu.alloc_zeroed::<i64>(n)?;
            Box::new(move |s: &Stream| algos.sort_keys(s, &keys, &mut out))
        }
        "sort_keys_f64" => {
            let keys = gpu.to_device(&random_normal(n, n as u64))?;
            let mut out = gpu.alloc_zeroed::<f64>(n)?;
            Box::new(move |s: &Stream| algos.sort_keys(s, &keys, &mut out))
        }
        "sort_pairs_i64_u64" => {
            let keys = gpu.to_device(&random_i64(n, n as u64))?;
            let values = gpu.to_device(&(0..n as u64).collect::<Vec<_>>())?;
            let (mut ko, mut vo) = (gpu.alloc_zeroed::<i64>(n)?, gpu.alloc_zeroed::<u64>(n)?);
            Box::new(move |s: &Stream| algos.sort_pairs(s, &keys, &values, &mut ko, &mut vo))
        }
        other => panic!("unknown case {other}"),
    })
}

/// Steps done so far in `--check` mode; a watchdog thread ends the process when it stalls.
static STEP: AtomicU64 = AtomicU64::new(0);

fn step(start: Instant, what: &str) {
    let n = STEP.fetch_add(1, Ordering::SeqCst) + 1;
    eprintln!("[{:7.2} s] {n}: {what}", start.elapsed().as_secs_f64());
}

fn watchdog(limit: Duration) {
    std::thread::spawn(move || {
        let mut last = (0, Instant::now());
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let s = STEP.load(Ordering::SeqCst);
            if s != last.0 {
                last = (s, Instant::now());
            } else if last.1.elapsed() > limit {
                eprintln!("sort-bench: no progress for {limit:?} after step {s}; giving up");
                std::process::exit(3);
            }
        }
    });
}

/// Sorts a few inputs (keys and pairs, several sizes) and compares with the CPU.
fn check(algos: &Algorithms, gpu: &Gpu, start: Instant) -> Result<bool> {
    let stream = gpu.default_stream();
    let mut ok = true;
    for &n in &[1usize, 1000, 4097, 70_000, 1 << 20, 1 << 24] {
        let keys = random_u32(n, n as u64);
        let index: Vec<u32> = (0..n as u32).collect();
        let (k, v) = (gpu.to_device(&keys)?, gpu.to_device(&index)?);
        let (mut ko, mut vo) = (gpu.alloc_zeroed::<u32>(n)?, gpu.alloc_zeroed::<u32>(n)?);
        algos.sort_keys(stream, &k, &mut ko)?;
        let got_keys = ko.to_vec()?;
        algos.sort_pairs(stream, &k, &v, &mut ko, &mut vo)?;
        let (got_pairs, got_values) = (ko.to_vec()?, vo.to_vec()?);
        let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(0..).collect();
        want.sort_by_key(|p| p.0);
        let want_keys: Vec<u32> = want.iter().map(|p| p.0).collect();
        let want_values: Vec<u32> = want.iter().map(|p| p.1).collect();
        let good = got_keys == want_keys && got_pairs == want_keys && got_values == want_values;
        ok &= good;
        step(
            start,
            &format!("check n={n}: {}", if good { "ok" } else { "WRONG" }),
        );
    }
    Ok(ok)
}

const CASES: &[&str] = &[
    "sort_keys_u32",
    "sort_keys_f32",
    "sort_pairs_u32_u64",
    "sort_pairs_u32_u32",
    "sort_keys_i64",
    "sort_keys_f64",
    "sort_pairs_i64_u64",
];

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sort-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args = benches::TableArgs::parse()?;
    let sizes = args.pick_sizes(
        vec![1 << 10, 1 << 16, 1 << 20, 1 << 24],
        (10..=28).step_by(2).map(|k| 1usize << k).collect(),
    );
    let benches::TableArgs {
        peers, mut only, ..
    } = args;
    // `--check` is this bench's own flag; TableArgs took it for a case name.
    let checking = only.iter().any(|a| a == "--check");
    only.retain(|a| a != "--check");
    let start = Instant::now();
    if checking {
        watchdog(Duration::from_secs(200));
    }
    let gpu = Gpu::first()?;
    let algos = Algorithms::load(&gpu)?;
    step(start, "module loaded");
    if checking && !check(&algos, &gpu, start)? {
        return Err("a sort gave a wrong result".into());
    }
    println!(
        "GPU: {} ({} SMs)",
        gpu.properties().name,
        gpu.properties().multiprocessor_count
    );
    println!(
        "{:<20}{:>10}{:>11}  {:<18}{:>11}{:>7}",
        "case", "size", "ours Gk/s", "peer", "peer Gk/s", "ratio"
    );
    let stream = gpu.default_stream();
    for case in CASES {
        if !only.is_empty() && !only.iter().any(|o| case.contains(o.as_str())) {
            continue;
        }
        for &n in &sizes {
            STEP.fetch_add(1, Ordering::SeqCst);
            let mut run = prepare(&gpu, &algos, case, n)?;
            let ours = time_us(stream, &mut *run)?;
            drop(run);
            let gks = |us: f64| n as f64 / us / 1e3;
            let timed: Vec<(&String, f64)> = peers
                .get(*case)
                .into_iter()
                .flatten()
                .filter_map(|(peer, times)| Some((peer, *times.get(&n.to_string())?)))
                .collect();
            // The fastest peer at this size is the one the target is measured against.
            let best = timed
                .iter()
                .map(|&(_, us)| us)
                .fold(f64::INFINITY, f64::min);
            let mut printed = false;
            for &(peer, us) in &timed {
                println!(
                    "{:<20}{:>10}{:>11.3}  {:<18}{:>11.3}{:>6.2}x{}",
                    case,
                    n,
                    gks(ours),
                    peer,
                    gks(us),
                    us / ours,
                    if us == best && timed.len() > 1 {
                        "  <- best peer"
                    } else {
                        ""
                    }
                );
                printed = true;
            }
            if !printed {
                println!(
                    "{:<20}{:>10}{:>11.3}  {:<18}{:>11}{:>7}",
                    case,
                    n,
                    gks(ours),
                    "-",
                    "-",
                    "-"
                );
            }
        }
    }
    Ok(())
}
