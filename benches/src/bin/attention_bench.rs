//! `attention-bench [--peers peers.json] [--quick]`: times the flash-attention forward of
//! `gpu-dense` (`Dense::attention`, bf16) with CUDA events and prints a table against
//! `torch.nn.functional.scaled_dot_product_attention` timed by `benches/peers/attention.py` in
//! the same session:
//!
//! ```text
//! case                  seq    ours us  ours TF/s    peer us  peer TF/s   ratio  best peer
//! d64_b4_h16           4096     1234.5      222.8     1000.0      275.0   0.81x  torch.sdpa
//! ```
//! The peer columns are the fastest of the peers the file has for the row ([`FORWARD_PEERS`],
//! [`BACKWARD_PEERS`]: SDPA as it picks its backend, held to each backend, JAX's cuDNN
//! attention), named in the last column.
//! Each row runs its kernel for 200 ms (`--warm-ms N`) untimed first, so that every row is timed
//! at the GPU's sustained clock (`benches/peers/attention.py` times SDPA's rows the same way;
//! seconds of it reach the power-capped steady state, README "At the power cap").
//! TFLOP/s count the two matrix products, `4 · batch · heads · seq² · head_dim` (half of it
//! when causal); `ratio` = peer time / our time (> 1: we are faster). Rows `bwd` time the
//! `mma.sync` backward pass (gradients of q, k, v; `bwd-at` with atomic dQ; on an H100
//! `bwd-wg` the Hopper wgmma kernel with atomic dQ, `bwd-wgd` with the deterministic dQ: its
//! key blocks add each dQ tile in a fixed order) against SDPA's backward
//! (`torch.autograd.grad` from one forward), counting 2.5 times the forward's operations.
//! On an H100 the default rows (`wgmma`) run the Hopper kernel, `wg-nopp` rows the same without
//! its ping-pong schedule, `wg-grid` rows with one block per query tile instead of persistent
//! blocks, `wg-st4` rows (d64) with a 4-stage K/V ring, `wg-hgrp` rows (causal) with the tiles
//! ordered within balanced groups of heads at every length (the default groups them up to
//! 4096 rows) and O stored by each thread, `wg-m192` / `wg-m128` rows (d64) with three consumer
//! warpgroups and 192-row query tiles / two and 128 rows (the default picks by length),
//! `wg-tmas` rows with O stored through shared memory by TMA, `wg-f16` rows the default on f16
//! tensors and `f16-192` rows (d64) f16 with 192-row tiles, both against SDPA on f16
//! (`torch.sdpa.f16`), and `mma` rows the mma.sync kernel; `--backward` times the backward rows
//! only; `--tokens16k` runs FlashAttention-3's sweep (16k tokens, hidden 2048, seq 1k…16k) with
//! the Hopper rows only (default, `wg-tmas`, `wg-m128`, `wg-m192`, `wg-hgrp`, `wg-f16`; head
//! dimension 256 the default and `wg-f16`) followed by the variable-length rows, and with
//! `--backward` the sweep's backward rows instead (`bwd-wg`, `bwd-wgd`; d64 and d128);
//! `--d256-varlen` runs only the sweep's head dimension 256 rows and the variable-length rows;
//! `--head-dim D` (repeatable) keeps the rows of those head dimensions, `--defaults-only` the
//! default rows (and the backward rows), `--no-varlen` leaves the variable-length rows out,
//! `--seq N` (repeatable) keeps those sequence lengths and `--causal yes|no` those cases.
//! Grouped-query rows (case `d128_b2_h32_kv8`: 32 query heads reading 8 K/V heads, as Llama 3
//! 8B's layers; the default and `mma` kernels and the backward rows) against the faster of
//! SDPA with `enable_gqa=True` and SDPA on K/V repeated to 32 heads beforehand
//! (`torch.sdpa.expanded`; its backward includes the repeat's gradient, a sum over each group).
//! Variable-length rows (cases `d64_h32_varlen16k` ...): 16384 tokens in ragged sequences
//! ([`VARLEN_LENS`]) through `Dense::attention_varlen` (`wgmma`, `wg-f16` on f16, `mma` the
//! `mma.sync` kernel other GPUs run) against SDPA on nested (jagged) tensors
//! (`torch.sdpa.nested`), and the same `wgmma` time against SDPA on the batch padded to the
//! longest sequence (row `padded`, `torch.sdpa.padded`: no key-padding mask, which would move
//! SDPA off its flash kernel); TFLOP/s count each sequence's products.

use gpu_test_kit::XorShift64;
use std::process::ExitCode;

use benches::time_us_warm;
use gpu_dense::{AttentionShape, Dense, WgmmaSchedule, attention_kernel_names};
use gpu_host::{Gpu, Stream};
use half::{bf16, f16};

/// The row names of the wgmma kernel without its ping-pong schedule, and with one block per
/// query tile instead of persistent blocks.
const NO_PING_PONG: &str = "no-ping-pong";
const ONE_TILE_PER_BLOCK: &str = "one-tile-per-block";
/// ... and with a 4-stage K/V ring (head dimension 64).
const FOUR_STAGES: &str = "four-stages";
/// ... and (causal) with the tiles ordered heaviest first within balanced groups of heads
/// at every length (`WgmmaSchedule::head_group` = `u32::MAX`), O stored by each thread.
const HEAD_GROUPS: &str = "head-groups";
/// ... and (head dimension 64) with three consumer warpgroups, 192-row query tiles, or with
/// two, 128-row tiles (the default picks by length, see `WgmmaSchedule::consumers`).
const M192: &str = "m192";
const M128: &str = "m128";
/// The default schedule on f16 tensors, and (head dimension 64) f16 with 192-row tiles.
const F16: &str = "f16";
const F16_M192: &str = "f16-m192";
/// ... and with O stored through shared memory by TMA.
const TMA_STORE: &str = "tma-store";

/// Untimed running before each row ([`benches::time_us_warm`]), in milliseconds: rows timed
/// from an idle GPU's higher clock favoured whichever came first after the case's setup (the
/// default) over the variant rows of the same shape (README, "Attention on Hopper").
/// `--warm-ms N` sets it: seconds of it time a row at the GPU's power-limited steady state.
static WARM_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(200);

fn warm() -> std::time::Duration {
    std::time::Duration::from_millis(WARM_MS.load(std::sync::atomic::Ordering::Relaxed))
}

/// (head_dim, batch, heads, K/V heads); keep in sync with benches/peers/attention.py. The last
/// is grouped-query attention as Llama 3 8B's layers (32 query heads share 8 K/V heads); its
/// case names add `_kv8`.
const CONFIGS: &[(usize, usize, usize, usize)] =
    &[(64, 4, 16, 16), (128, 4, 8, 8), (128, 2, 32, 8)];

/// The variable-length rows' sequence lengths: 16384 tokens, 1 to 4096 per sequence, most not
/// multiples of the tiles; keep in sync with benches/peers/attention.py.
const VARLEN_LENS: &[usize] = &[3000, 517, 1, 1300, 4096, 129, 2222, 777, 64, 2500, 1778];
/// The variable-length rows' (head_dim, heads): hidden size 2048.
const VARLEN_CONFIGS: &[(usize, usize)] = &[(64, 32), (128, 16), (256, 8)];

fn random_bf16(n: usize, seed: u64) -> Vec<bf16> {
    let mut rng = XorShift64::from_seed(seed);
    (0..n)
        .map(|_| {
            let state = rng.next_u64();
            bf16::from_f32((state >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        })
        .collect()
}

/// `--help`: the flags (the module docs say what each row is).
const USAGE: &str = "\
usage: attention-bench [FLAGS]
  --peers FILE        peer timings (benches/peers/attention.py's JSON) for the ratio column
  --quick             fewer sequence lengths (1k, 4k)
  --variants          also the tuning variants (other tilings) of each head dimension
  --tokens16k         FlashAttention-3's sweep: 16k tokens, hidden 2048, seq 1k..16k
  --backward          the backward rows only (with --tokens16k: the sweep's, d64 and d128)
  --d256-varlen       the sweep's head dimension 256 rows and the variable-length rows only
  --head-dim D        only head dimension D (64, 128 or 256; repeatable)
  --seq N             only sequence length N (repeatable)
  --causal yes|no     only the causal or the non-causal rows
  --defaults-only     only the default rows (and the backward rows)
  --no-varlen         no variable-length rows
  --warm-ms N         untimed running before each row (default 200)
  --help              this text";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("attention-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut peers_path, mut quick, mut variants, mut tokens16k) = (None, false, false, false);
    // --backward: the backward rows only (with --tokens16k: the sweep's shapes, head
    // dimensions 64 and 128, as `benches/peers/attention.py --tokens16k --backward`).
    let mut backward_only = false;
    // --d256-varlen: the sweep's head dimension 256 rows and the variable-length rows only.
    let mut d256_varlen = false;
    // --head-dim D (repeatable): only these head dimensions; --defaults-only: only the default
    // rows (and the backward rows); --no-varlen: no variable-length rows.
    let (mut head_dims, mut defaults_only, mut no_varlen) = (Vec::<usize>::new(), false, false);
    // --seq N (repeatable): only these sequence lengths; --causal yes|no: only those cases
    // (for a profiler's --launch-skip to find one shape's launches).
    let (mut only_seqs, mut only_causal) = (Vec::<usize>::new(), None::<bool>);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            "--peers" => peers_path = Some(args.next().ok_or("--peers needs a file")?),
            "--quick" => quick = true,
            "--backward" => backward_only = true,
            // Also time the tuning variants (other tilings) of each head dimension.
            "--variants" => variants = true,
            // FlashAttention-3's sweep: 16k tokens (batch = 16384 / seq), hidden size 2048
            // (heads = 2048 / head_dim), seq 1k ... 16k; forward rows only unless --backward.
            "--tokens16k" => tokens16k = true,
            "--head-dim" => head_dims.push(
                args.next()
                    .and_then(|d| d.parse().ok())
                    .ok_or("--head-dim needs 64, 128 or 256")?,
            ),
            "--defaults-only" => defaults_only = true,
            "--seq" => only_seqs.push(
                args.next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--seq needs a sequence length")?,
            ),
            "--causal" => {
                only_causal = match args.next().as_deref() {
                    Some("yes") => Some(true),
                    Some("no") => Some(false),
                    _ => return Err("--causal needs yes or no".into()),
                }
            }
            "--no-varlen" => no_varlen = true,
            "--warm-ms" => WARM_MS.store(
                args.next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--warm-ms needs milliseconds")?,
                std::sync::atomic::Ordering::Relaxed,
            ),
            "--d256-varlen" => {
                tokens16k = true;
                d256_varlen = true;
            }
            other => return Err(format!("unknown argument {other} (--help lists them)").into()),
        }
    }
    let peers = benches::load_peers(peers_path.as_deref())?;
    let seqs: &[usize] = if tokens16k {
        &[1024, 2048, 4096, 8192, 16384]
    } else if quick {
        &[1024, 4096]
    } else {
        &[1024, 4096, 8192]
    };
    let gpu = Gpu::first()?;
    let dense = Dense::load(&gpu)?;
    // On compute capability 9.0 `Dense::attention` runs the wgmma kernel: its rows are labelled
    // `wgmma`, and `mma` rows time the mma.sync kernel beside it.
    let hopper = dense.has_hopper() && !gpu.is_simulator();
    println!(
        "GPU: {} ({} SMs)",
        gpu.properties().name,
        gpu.properties().multiprocessor_count
    );
    println!(
        "{:<26}{:<8}{:>6}{:>11}{:>11}{:>11}{:>11}{:>8}  best peer",
        "case", "kernel", "seq", "ours us", "ours TF/s", "peer us", "peer TF/s", "ratio"
    );
    let stream: &Stream = gpu.default_stream();
    let configs: Vec<(usize, usize, usize, usize)> = if d256_varlen {
        vec![(256, 0, 8, 8)]
    } else if tokens16k {
        vec![(64, 0, 32, 32), (128, 0, 16, 16), (256, 0, 8, 8)]
    } else {
        CONFIGS.to_vec()
    };
    let configs: Vec<_> = configs
        .into_iter()
        .filter(|(d, _, _, _)| head_dims.is_empty() || head_dims.contains(d))
        // The backward pass takes head dimensions 64 and 128.
        .filter(|(d, _, _, _)| !backward_only || *d != 256)
        .collect();
    for &(d, b, h, kv_heads) in &configs {
        let gqa = if kv_heads == h {
            String::new()
        } else {
            format!("_kv{kv_heads}")
        };
        for causal in [false, true] {
            if only_causal.is_some_and(|c| c != causal) {
                continue;
            }
            let case = if tokens16k {
                format!("d{d}_h{h}_t16k{}", if causal { "_causal" } else { "" })
            } else {
                format!("d{d}_b{b}_h{h}{gqa}{}", if causal { "_causal" } else { "" })
            };
            for &s in seqs {
                if !only_seqs.is_empty() && !only_seqs.contains(&s) {
                    continue;
                }
                let b = if tokens16k { 16384 / s } else { b };
                let shape = AttentionShape::new(b, h, s, s, d).with_kv_heads(kv_heads);
                let q = gpu.to_device(&random_bf16(shape.q_len(), 1))?;
                let k = gpu.to_device(&random_bf16(shape.kv_len(), 2))?;
                let v = gpu.to_device(&random_bf16(shape.kv_len(), 3))?;
                let mut o = gpu.alloc_zeroed::<bf16>(shape.q_len())?;
                // The same values as f16 (exact at these magnitudes), for the f16 rows.
                let to_f16 = |x: Vec<bf16>| -> Vec<f16> {
                    x.iter().map(|v| f16::from_f32(v.to_f32())).collect()
                };
                let mma_default = format!("attention_fwd_bf16_d{d}");
                let names: Vec<&str> = if variants {
                    attention_kernel_names(d).collect()
                } else if backward_only {
                    vec![]
                } else if hopper && !gqa.is_empty() {
                    // Grouped-query rows: the default and the mma.sync kernel.
                    vec!["", &mma_default]
                } else if d == 256 {
                    // Hopper only (elsewhere an error): the default and f16.
                    if hopper { vec!["", F16] } else { vec![] }
                } else if hopper && tokens16k {
                    // The sweep times the Hopper kernel's tile and element choices.
                    let mut names = vec!["", TMA_STORE];
                    if d == 64 {
                        names.extend([M128, M192]);
                    }
                    if causal {
                        names.push(HEAD_GROUPS);
                    }
                    names.push(F16);
                    names
                } else if hopper {
                    let mut names = vec!["", NO_PING_PONG, ONE_TILE_PER_BLOCK];
                    if d == 64 {
                        names.extend([FOUR_STAGES, M192]);
                    }
                    if causal {
                        names.push(HEAD_GROUPS);
                    }
                    names.push(F16);
                    if d == 64 {
                        names.push(F16_M192);
                    }
                    names.push(&mma_default);
                    names
                } else {
                    vec![""]
                };
                // The backward pass (default tiling rows only): gradients of q, k, v.
                let backward_row = !variants && (!tokens16k || backward_only);
                let f16s = if hopper && !variants {
                    Some((
                        gpu.to_device(&to_f16(random_bf16(shape.q_len(), 1)))?,
                        gpu.to_device(&to_f16(random_bf16(shape.kv_len(), 2)))?,
                        gpu.to_device(&to_f16(random_bf16(shape.kv_len(), 3)))?,
                        gpu.alloc_zeroed::<f16>(shape.q_len())?,
                    ))
                } else {
                    None
                };
                let mut f16s = f16s;
                let names = if defaults_only { vec![""] } else { names };
                for name in names {
                    // The f16 rows run the default schedule for the head dimension.
                    let f16_default = WgmmaSchedule::for_head_dim(d).tma_store;
                    let schedule = WgmmaSchedule {
                        ping_pong: name != NO_PING_PONG,
                        persistent: name != ONE_TILE_PER_BLOCK,
                        stages: if name == FOUR_STAGES { 4 } else { 0 },
                        // Enough heads per group to give every SM a tile.
                        head_group: if name == HEAD_GROUPS { u32::MAX } else { 0 },
                        consumers: match name {
                            M192 | F16_M192 => 3,
                            M128 => 2,
                            _ => 0,
                        },
                        tma_store: name == TMA_STORE || (name == F16 && f16_default),
                        max_blocks: 0,
                    };
                    let ours = time_us_warm(stream, warm(), &mut |st| {
                        if name.is_empty() {
                            dense.attention(st, &q, &k, &v, &mut o, shape, causal)
                        } else if [F16, F16_M192].contains(&name) {
                            let (q, k, v, o) = f16s.as_mut().expect("f16 rows run on Hopper");
                            dense
                                .attention_wgmma_with(schedule, st, q, k, v, o, None, shape, causal)
                        } else if [
                            NO_PING_PONG,
                            ONE_TILE_PER_BLOCK,
                            FOUR_STAGES,
                            HEAD_GROUPS,
                            M192,
                            M128,
                            TMA_STORE,
                        ]
                        .contains(&name)
                        {
                            dense.attention_wgmma_with(
                                schedule, st, &q, &k, &v, &mut o, None, shape, causal,
                            )
                        } else {
                            dense.attention_kernel(name, st, &q, &k, &v, &mut o, shape, causal)
                        }
                    })?;
                    let label = match name.rsplit_once('_') {
                        _ if name.is_empty() && hopper => "wgmma",
                        _ if name == NO_PING_PONG => "wg-nopp",
                        _ if name == ONE_TILE_PER_BLOCK => "wg-grid",
                        _ if name == FOUR_STAGES => "wg-st4",
                        _ if name == HEAD_GROUPS => "wg-hgrp",
                        _ if name == M192 => "wg-m192",
                        _ if name == M128 => "wg-m128",
                        _ if name == TMA_STORE => "wg-tmas",
                        _ if name == F16 => "wg-f16",
                        _ if name == F16_M192 => "f16-192",
                        _ if name == mma_default && hopper && !variants => "mma",
                        Some((_, tiling)) if tiling.starts_with('w') => tiling,
                        _ => "default",
                    };
                    let tflops = |us: f64| shape.flops(causal) / us * 1e-6;
                    let peer = if [F16, F16_M192].contains(&name) {
                        best_peer(&peers, &case, &["torch.sdpa.f16"], s)
                    } else {
                        best_peer(&peers, &case, &FORWARD_PEERS, s)
                    };
                    match peer {
                        Some((peer, p)) => println!(
                            "{case:<26}{label:<8}{s:>6}{ours:>11.1}{:>11.1}{p:>11.1}{:>11.1}{:>7.2}x  {peer}",
                            tflops(ours),
                            tflops(p),
                            p / ours
                        ),
                        None => println!(
                            "{case:<26}{label:<8}{s:>6}{ours:>11.1}{:>11.1}{:>11}{:>11}{:>8}",
                            tflops(ours),
                            "-",
                            "-",
                            "-"
                        ),
                    }
                }
                if backward_row {
                    let mut lse = gpu.alloc_zeroed::<f32>(shape.lse_len())?;
                    dense.attention_with_lse(
                        stream,
                        &q,
                        &k,
                        &v,
                        &mut o,
                        Some(&mut lse),
                        shape,
                        causal,
                    )?;
                    let d_o = gpu.to_device(&random_bf16(shape.q_len(), 4))?;
                    let mut dq = gpu.alloc_zeroed::<bf16>(shape.q_len())?;
                    let mut dk = gpu.alloc_zeroed::<bf16>(shape.kv_len())?;
                    let mut dv = gpu.alloc_zeroed::<bf16>(shape.kv_len())?;
                    // The mma.sync kernels (deterministic dQ, and FlashAttention-2's atomic
                    // dQ) and, on Hopper, the wgmma kernel with atomic dQ (`bwd-wg`) and with
                    // the dQ tiles added in a fixed order (`bwd-wgd`, deterministic).
                    // (The sweep's backward rows time the Hopper kernels only there.)
                    let mut rows = vec![("bwd", false, true), ("bwd-at", false, false)];
                    if hopper && tokens16k {
                        rows.clear();
                    }
                    if hopper {
                        rows.extend([("bwd-wg", true, false), ("bwd-wgd", true, true)]);
                    }
                    for (label, wgmma, deterministic) in rows {
                        let ours = time_us_warm(stream, warm(), &mut |st| {
                            let (qkv, grads) = ((&q, &k, &v), (&mut dq, &mut dk, &mut dv));
                            if wgmma {
                                dense.attention_backward_wgmma(
                                    st,
                                    qkv,
                                    &o,
                                    &lse,
                                    &d_o,
                                    grads,
                                    shape,
                                    causal,
                                    deterministic,
                                )
                            } else {
                                dense.attention_backward_mma(
                                    st,
                                    qkv,
                                    &o,
                                    &lse,
                                    &d_o,
                                    grads,
                                    shape,
                                    causal,
                                    deterministic,
                                )
                            }
                        })?;
                        // Five matrix products against the forward's two.
                        let tflops = |us: f64| 2.5 * shape.flops(causal) / us * 1e-6;
                        let peer = best_peer(&peers, &case, &BACKWARD_PEERS, s);
                        match peer {
                            Some((peer, p)) => println!(
                                "{case:<26}{label:<8}{s:>6}{ours:>11.1}{:>11.1}{p:>11.1}{:>11.1}{:>7.2}x  {peer}",
                                tflops(ours),
                                tflops(p),
                                p / ours
                            ),
                            None => println!(
                                "{case:<26}{label:<8}{s:>6}{ours:>11.1}{:>11.1}{:>11}{:>11}{:>8}",
                                tflops(ours),
                                "-",
                                "-",
                                "-"
                            ),
                        }
                    }
                }
            }
        }
    }
    if tokens16k && !no_varlen && !backward_only {
        varlen_rows(&gpu, &dense, &peers, hopper)?;
    }
    Ok(())
}

/// The fastest of `names`' times for `case` at sequence length `seq` (peers missing from the
/// file are skipped: the grouped-query rows' `torch.sdpa.expanded` exists for those only).
fn best_peer<'a>(
    peers: &benches::Peers,
    case: &str,
    names: &[&'a str],
    seq: usize,
) -> Option<(&'a str, f64)> {
    let times = peers.get(case)?;
    names
        .iter()
        .filter_map(|name| Some((*name, *times.get(*name)?.get(&seq.to_string())?)))
        .reduce(|a, b| if b.1 < a.1 { b } else { a })
}

/// The forward's bf16 peers (attention.py): SDPA with the backend it picks, on K/V repeated to
/// every query head (grouped-query cases only), held to torch's FlashAttention-2 kernels, held
/// to cuDNN's; JAX's cuDNN attention. A row is compared with the fastest one present.
const FORWARD_PEERS: [&str; 5] = [
    "torch.sdpa",
    "torch.sdpa.expanded",
    "torch.sdpa.flash",
    "torch.sdpa.cudnn",
    "jax.cudnn",
];

/// The backward's peers: the same as [`FORWARD_PEERS`], each timing the gradients.
const BACKWARD_PEERS: [&str; 5] = [
    "torch.sdpa.backward",
    "torch.sdpa.expanded.backward",
    "torch.sdpa.flash.backward",
    "torch.sdpa.cudnn.backward",
    "jax.cudnn.backward",
];

/// The variable-length rows (see the module docs).
fn varlen_rows(
    gpu: &Gpu,
    dense: &Dense,
    peers: &benches::Peers,
    hopper: bool,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let stream: &Stream = gpu.default_stream();
    let cu: Vec<u32> = std::iter::once(0)
        .chain(VARLEN_LENS.iter().scan(0, |acc, &n| {
            *acc += n as u32;
            Some(*acc)
        }))
        .collect();
    let total = *cu.last().unwrap() as usize;
    for &(d, h) in VARLEN_CONFIGS {
        for causal in [false, true] {
            let case = format!("d{d}_h{h}_varlen16k{}", if causal { "_causal" } else { "" });
            let n = total * h * d;
            let (q, k, v) = (random_bf16(n, 1), random_bf16(n, 2), random_bf16(n, 3));
            let to_f16 =
                |x: &[bf16]| -> Vec<f16> { x.iter().map(|v| f16::from_f32(v.to_f32())).collect() };
            let (dq, dk, dv) = (gpu.to_device(&q)?, gpu.to_device(&k)?, gpu.to_device(&v)?);
            let mut o = gpu.alloc_zeroed::<bf16>(n)?;
            let (hq, hk, hv) = (
                gpu.to_device(&to_f16(&q))?,
                gpu.to_device(&to_f16(&k))?,
                gpu.to_device(&to_f16(&v))?,
            );
            let mut ho = gpu.alloc_zeroed::<f16>(n)?;
            let flops: f64 = VARLEN_LENS
                .iter()
                .map(|&l| AttentionShape::new(1, h, l, l, d).flops(causal))
                .sum();
            let mut rows: Vec<(&str, &str)> = Vec::new();
            if hopper {
                rows.extend([
                    ("wgmma", "torch.sdpa.nested"),
                    ("wg-f16", "torch.sdpa.nested.f16"),
                ]);
            }
            if d != 256 {
                rows.push(("mma", "torch.sdpa.nested"));
            }
            let mut wgmma_us = None;
            for (label, peer_name) in rows {
                let cus = (&cu[..], &cu[..]);
                let ours = time_us_warm(stream, warm(), &mut |st| match label {
                    "wgmma" => dense.attention_varlen(
                        st,
                        (&dq, &dk, &dv),
                        &mut o,
                        None,
                        cus,
                        (h, h, d),
                        causal,
                    ),
                    "wg-f16" => dense.attention_varlen(
                        st,
                        (&hq, &hk, &hv),
                        &mut ho,
                        None,
                        cus,
                        (h, h, d),
                        causal,
                    ),
                    _ => dense.attention_varlen_with(
                        None,
                        st,
                        (&dq, &dk, &dv),
                        &mut o,
                        None,
                        cus,
                        (h, h, d),
                        causal,
                    ),
                })?;
                if label == "wgmma" {
                    wgmma_us = Some(ours);
                }
                print_row(
                    &case,
                    label,
                    total,
                    ours,
                    flops,
                    peer_of(peers, &case, peer_name, total),
                );
            }
            if let Some(ours) = wgmma_us {
                let peer = peer_of(peers, &case, "torch.sdpa.padded", total);
                print_row(&case, "padded", total, ours, flops, peer);
            }
        }
    }
    Ok(())
}

/// A peer's time for `case` and size `size`, when the peers file has it.
fn peer_of(peers: &benches::Peers, case: &str, peer: &str, size: usize) -> Option<f64> {
    peers
        .get(case)
        .and_then(|p| p.get(peer))
        .and_then(|t| t.get(&size.to_string()))
        .copied()
}

/// One table row: our time and TFLOP/s for `flops`, the peer's and the ratio when known.
fn print_row(case: &str, label: &str, size: usize, ours: f64, flops: f64, peer: Option<f64>) {
    let tflops = |us: f64| flops / us * 1e-6;
    match peer {
        Some(p) => println!(
            "{case:<26}{label:<8}{size:>6}{ours:>11.1}{:>11.1}{p:>11.1}{:>11.1}{:>7.2}x",
            tflops(ours),
            tflops(p),
            p / ours
        ),
        None => println!(
            "{case:<26}{label:<8}{size:>6}{ours:>11.1}{:>11.1}{:>11}{:>11}{:>8}",
            tflops(ours),
            "-",
            "-",
            "-"
        ),
    }
}
