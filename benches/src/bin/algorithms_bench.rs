//! `algorithms-bench [--peers peers.json] [--quick] [--log2 K,...] [CASE...]`: times the
//! device-wide algorithms of `gpu-algorithms` with CUDA events over sizes 2^10 … 2^28 (or the
//! sizes `--log2 20,28` names) and prints a table against the peers (torch / cupy) timed by `benches/peers/algorithms.py` in the same session:
//!
//! ```text
//! case                      size   ours GB/s   peer GB/s  peer            ratio
//! reduce_sum_f32       268435456      3050.1      3048.0  torch.sum       1.00x
//! ```
//! `ratio` = peer time / our time (> 1: we are faster). Bandwidth counts the bytes each
//! algorithm must move (reduce: n reads; scan: n reads + n writes; convert f32 → bf16: 4n read,
//! 2n written). `merge_u32` (two sorted runs of n/2 into n) is set beside a copy of the same
//! bytes, the bound it can approach: neither torch nor cupy merges sorted runs. `pack_u32` and
//! `unpack_u32` (a sorted run of n random keys, frame-of-reference packed and back) count the
//! 4n bytes of keys alone, not the packed words.

use gpu_test_kit::XorShift64;
use half::{bf16, f16};
use std::process::ExitCode;

use benches::time_us;
use gpu_algorithms::Algorithms;
use gpu_host::gpu::device::{pack_width, packed_words};
use gpu_host::gpu::ops::{CompareOp, Max, Sum};
use gpu_host::{DeviceBuffer, Gpu, Result, Stream};

/// One timed call of an algorithm (its inputs and outputs captured).
type Run<'a> = Box<dyn FnMut(&Stream) -> Result<()> + 'a>;

/// One algorithm to time: its name, the bytes it moves for `n` elements, and a function that
/// sets up a call for `n` elements.
struct Case<'a> {
    name: &'static str,
    bytes: fn(usize) -> f64,
    prepare: Box<dyn Fn(usize) -> Result<Run<'a>> + 'a>,
}

fn random_f32(n: usize) -> Vec<f32> {
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15u64);
    (0..n)
        .map(|_| {
            let state = rng.next_u64();
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

fn cases<'a>(gpu: &'a Gpu, algos: &'a Algorithms) -> Vec<Case<'a>> {
    vec![
        Case {
            name: "reduce_sum_f32",
            bytes: |n| 4.0 * n as f64,
            prepare: Box::new(move |n| {
                let x = gpu.to_device(&random_f32(n))?;
                let mut out = gpu.alloc_zeroed::<f32>(1)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.reduce_into(s, &x, Sum, 0.0, &mut out)
                }))
            }),
        },
        Case {
            name: "reduce_sum_f64",
            bytes: |n| 8.0 * n as f64,
            prepare: Box::new(move |n| {
                let x: Vec<f64> = random_f32(n).into_iter().map(f64::from).collect();
                let x = gpu.to_device(&x)?;
                let mut out = gpu.alloc_zeroed::<f64>(1)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.reduce_into(s, &x, Sum, 0.0, &mut out)
                }))
            }),
        },
        Case {
            name: "reduce_sum_i32",
            bytes: |n| 4.0 * n as f64,
            prepare: Box::new(move |n| {
                let x: Vec<i32> = random_f32(n)
                    .into_iter()
                    .map(|v| (v * 1000.0) as i32)
                    .collect();
                let x = gpu.to_device(&x)?;
                let mut out = gpu.alloc_zeroed::<i32>(1)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.reduce_into(s, &x, Sum, 0, &mut out)
                }))
            }),
        },
        Case {
            name: "reduce_max_u32",
            bytes: |n| 4.0 * n as f64,
            prepare: Box::new(move |n| {
                let x: Vec<u32> = random_f32(n)
                    .into_iter()
                    .map(|v| (v * 1e9) as u32)
                    .collect();
                let x = gpu.to_device(&x)?;
                let mut out = gpu.alloc_zeroed::<u32>(1)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.reduce_into(s, &x, Max, 0, &mut out)
                }))
            }),
        },
        Case {
            name: "reduce_sum_f16",
            bytes: |n| 2.0 * n as f64,
            prepare: Box::new(move |n| {
                let x: Vec<f16> = random_f32(n).into_iter().map(f16::from_f32).collect();
                let x = gpu.to_device(&x)?;
                let mut out = gpu.alloc_zeroed::<f16>(1)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.reduce_into(s, &x, Sum, f16::ZERO, &mut out)
                }))
            }),
        },
        Case {
            name: "reduce_sum_bf16",
            bytes: |n| 2.0 * n as f64,
            prepare: Box::new(move |n| {
                let x: Vec<bf16> = random_f32(n).into_iter().map(bf16::from_f32).collect();
                let x = gpu.to_device(&x)?;
                let mut out = gpu.alloc_zeroed::<bf16>(1)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.reduce_into(s, &x, Sum, bf16::ZERO, &mut out)
                }))
            }),
        },
        Case {
            name: "inclusive_scan_sum_f32",
            bytes: |n| 8.0 * n as f64,
            prepare: Box::new(move |n| {
                let x = gpu.to_device(&random_f32(n))?;
                let mut out = gpu.alloc_zeroed::<f32>(n)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.inclusive_scan(s, &x, &mut out, Sum)
                }))
            }),
        },
        Case {
            name: "select_if_f32",
            // Reads n, writes the selected half.
            bytes: |n| 6.0 * n as f64,
            prepare: Box::new(move |n| {
                let x = gpu.to_device(&random_f32(n))?;
                let mut out = gpu.alloc_zeroed::<f32>(n)?;
                let mut count = gpu.alloc_zeroed::<u32>(1)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.select_if(s, &x, CompareOp::Greater, 0.5, &mut out, &mut count)
                }))
            }),
        },
        Case {
            name: "convert_f32_bf16",
            // Reads n f32, writes n bf16.
            bytes: |n| 6.0 * n as f64,
            prepare: Box::new(move |n| {
                let x = gpu.to_device(&random_f32(n))?;
                let mut out = gpu.alloc_zeroed::<half::bf16>(n)?;
                Ok(Box::new(move |s: &Stream| algos.convert(s, &x, &mut out)))
            }),
        },
        Case {
            name: "merge_u32",
            // Two sorted runs of n/2 keys merged into n: reads n, writes n.
            bytes: |n| 8.0 * n as f64,
            prepare: Box::new(move |n| {
                let run = |seed: u32| {
                    let mut v: Vec<u32> = random_f32(n / 2)
                        .into_iter()
                        .map(|x| (x * 4e9) as u32 ^ seed)
                        .collect();
                    v.sort_unstable();
                    gpu.to_device(&v)
                };
                let (a, b) = (run(0)?, run(1)?);
                let mut out = gpu.alloc_zeroed::<u32>(a.len() + b.len())?;
                Ok(Box::new(move |s: &Stream| {
                    algos.merge(s, &a, 0..a.len(), &b, 0..b.len(), &mut out, 0)
                }))
            }),
        },
        Case {
            name: "pack_u32",
            // Counts the keys read alone (4n); the packed words written come on top.
            bytes: |n| 4.0 * n as f64,
            prepare: Box::new(move |n| {
                let (keys, width, mut packed) = packed_run(gpu, algos, n)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.pack(s, &keys, 0..keys.len(), width, &mut packed, 0)
                }))
            }),
        },
        Case {
            name: "unpack_u32",
            // Counts the keys written alone (4n); the packed words read come on top.
            bytes: |n| 4.0 * n as f64,
            prepare: Box::new(move |n| {
                let (_, width, packed) = packed_run(gpu, algos, n)?;
                let mut out = gpu.alloc_zeroed::<u32>(n)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.unpack(s, &packed, 0, n, width, &mut out, 0)
                }))
            }),
        },
        Case {
            name: "histogram_even_f32_256",
            bytes: |n| 4.0 * n as f64,
            prepare: Box::new(move |n| {
                let x = gpu.to_device(&random_f32(n))?;
                let mut counts = gpu.alloc_zeroed::<u32>(256)?;
                Ok(Box::new(move |s: &Stream| {
                    algos.histogram_even(s, &x, 0.0, 1.0, &mut counts)
                }))
            }),
        },
    ]
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("algorithms-bench: {e}");
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
    let benches::TableArgs { peers, only, .. } = args;
    let started = std::time::Instant::now();
    let gpu = Gpu::first()?;
    eprintln!(
        "opened the GPU in {:.0} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let load = std::time::Instant::now();
    let algos = Algorithms::load(&gpu)?;
    println!(
        "GPU: {} ({} SMs); algorithm module loaded in {:.0} ms",
        gpu.properties().name,
        gpu.properties().multiprocessor_count,
        load.elapsed().as_secs_f64() * 1e3
    );
    println!(
        "{:<26}{:>11}{:>12}{:>12}  {:<14}{:>7}",
        "case", "size", "ours GB/s", "peer GB/s", "peer", "ratio"
    );
    let stream = gpu.default_stream();
    for case in cases(&gpu, &algos) {
        if !only.is_empty() && !only.iter().any(|o| case.name.contains(o.as_str())) {
            continue;
        }
        for &n in &sizes {
            let mut run = (case.prepare)(n)?;
            let ours = time_us(stream, &mut *run)?;
            drop(run);
            let gbs = |us: f64| (case.bytes)(n) / (us * 1e-6) / 1e9;
            let best_peer = peers.get(case.name).and_then(|by_peer| {
                by_peer
                    .iter()
                    .filter_map(|(peer, t)| t.get(&n.to_string()).map(|&us| (peer, us)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
            });
            match best_peer {
                Some((peer, us)) => println!(
                    "{:<26}{:>11}{:>12.1}{:>12.1}  {:<14}{:>6.2}x",
                    case.name,
                    n,
                    gbs(ours),
                    gbs(us),
                    peer,
                    us / ours
                ),
                None => println!(
                    "{:<26}{:>11}{:>12.1}{:>12}  {:<14}{:>7}",
                    case.name,
                    n,
                    gbs(ours),
                    "-",
                    "-",
                    "-"
                ),
            }
        }
    }
    Ok(())
}

/// `n` random keys over all of `u32`, sorted (a run as a radix sort leaves it), on the device;
/// the width they pack at (their largest group spread, measured there); and the packed run.
fn packed_run(
    gpu: &Gpu,
    algos: &Algorithms,
    n: usize,
) -> Result<(DeviceBuffer<u32>, u32, DeviceBuffer<u32>)> {
    let mut rng = XorShift64::new(n as u64 | 1);
    let mut sorted: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    sorted.sort_unstable();
    let keys = gpu.to_device(&sorted)?;
    let s = gpu.default_stream();
    let mut spread = gpu.alloc_zeroed::<u32>(1)?;
    algos.pack_spread(s, &keys, 0..n, &mut spread, 0)?;
    let width = pack_width(spread.to_vec()?[0]);
    let mut packed = gpu.alloc_zeroed::<u32>(packed_words(n, width))?;
    algos.pack(s, &keys, 0..n, width, &mut packed, 0)?;
    Ok((keys, width, packed))
}
