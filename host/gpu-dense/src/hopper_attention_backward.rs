//! `Dense::attention_backward_wgmma`: the flash-attention backward on Hopper tensor cores
//! (wgmma + TMA, FlashAttention-3's design), see `hopper_kernels::attention_backward` for the
//! kernel. `Dense::attention_backward`, `attention_backward_atomic_dq` and
//! `attention_backward_deterministic` pick it on compute capability 9.0 devices.

use ::hopper_kernels::attention_backward::{self as kernel, BwdParams};
use gpu_host::cudarc::driver::sys;
use gpu_host::{DeviceBuffer, Error, LaunchConfig, Result, Stream};
use half::bf16;

use crate::attention::check_backward;
use crate::{AttentionGrads, AttentionInputs, AttentionShape, Dense, TensorMap};

/// Encodes the 3-D tensor map of `matrices` row-major `rows × head_dim` bf16 matrices at
/// `addr`, read in boxes of `box_rows × 64` elements of one matrix with the 128-byte swizzle
/// (rows past a matrix's end read as zeros). The forward's encoder, with the backward's boxes.
fn encode_map(
    addr: u64,
    matrices: usize,
    rows: usize,
    head_dim: usize,
    box_rows: u32,
    name: &str,
) -> Result<TensorMap> {
    // The strides are multiples of 16 bytes (head_dim is 64 or 128).
    crate::tma_map::encode_tiled(
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        addr,
        &[head_dim as u64, rows as u64, matrices as u64],
        &[head_dim as u64 * 2, (rows * head_dim) as u64 * 2],
        &[64, box_rows, 1],
        || format!("{matrices} {rows}×{head_dim} matrices for `{name}`"),
    )
}

impl Dense {
    /// The flash-attention backward ([`Dense::attention_backward`]'s contract) through the
    /// Hopper kernel (wgmma + TMA, FlashAttention-3's design), whatever the default would pick:
    /// for tests and the benchmark's comparison with the `mma.sync` kernels.
    ///
    /// The key blocks add their dQ tiles to an f32 accumulator with bulk reductions
    /// (FlashAttention-3's way). `deterministic`: they add each tile in a fixed order, taking
    /// turns on a counter per query tile, so repeated runs give the same bits (the causal key
    /// blocks then start lightest first); else in the order they get there, and the last bits
    /// of dQ may differ between runs.
    ///
    /// Errors (nothing launched): what [`Dense::attention_backward`] refuses, and any device
    /// other than a compute capability 9.0 GPU (the simulator included).
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward_wgmma(
        &self,
        stream: &Stream,
        qkv: AttentionInputs<'_>,
        o: &DeviceBuffer<bf16>,
        lse: &DeviceBuffer<f32>,
        d_o: &DeviceBuffer<bf16>,
        grads: AttentionGrads<'_>,
        shape: AttentionShape,
        causal: bool,
        deterministic: bool,
    ) -> Result<()> {
        let name = wgmma_name(shape.head_dim, deterministic);
        let (q, k, v) = qkv;
        let lens = [
            q.len(),
            k.len(),
            v.len(),
            o.len(),
            lse.len(),
            d_o.len(),
            grads.0.len(),
            grads.1.len(),
            grads.2.len(),
        ];
        if !check_backward(name, lens, shape)? {
            return Ok(());
        }
        if self.hopper.is_none() || stream.is_simulator() {
            return Err(Error::LaunchConfig {
                kernel: name.to_string(),
                message: "needs a compute capability 9.0 GPU (H100/H200: wgmma and TMA exist on \
                          sm_90a only, and are not simulated); Dense::attention_backward runs \
                          the mma.sync kernels elsewhere"
                    .to_string(),
            });
        }
        self.launch_backward_wgmma(
            stream,
            qkv,
            o,
            lse,
            d_o,
            grads,
            shape,
            causal,
            deterministic,
        )
    }

    /// Launches the Hopper backward; the arguments were checked ([`check_backward`]) and
    /// describe a non-empty problem, and the device is a compute capability 9.0 GPU.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_backward_wgmma(
        &self,
        stream: &Stream,
        (q, k, v): AttentionInputs<'_>,
        o: &DeviceBuffer<bf16>,
        lse: &DeviceBuffer<f32>,
        d_o: &DeviceBuffer<bf16>,
        (dq, dk, dv): AttentionGrads<'_>,
        shape: AttentionShape,
        causal: bool,
        deterministic: bool,
    ) -> Result<()> {
        let name = wgmma_name(shape.head_dim, deterministic);
        let Some(module) = self.hopper.as_ref() else {
            return Err(Error::LaunchConfig {
                kernel: name.to_string(),
                message: "needs a compute capability 9.0 GPU".to_string(),
            });
        };
        let d = shape.head_dim;
        let (bh, kv_bh) = (shape.batch * shape.heads, shape.batch * shape.kv_heads);
        let seq_pad = kernel::padded_rows(shape.seq_q as u32);
        let rows_pad = bh * seq_pad as usize;
        // Δ and L·log2 e, padded per head, and dQ's f32 accumulator (padded rows, the kernel's
        // order: `kernel::dq_index`): the prep kernel writes all three in full (the
        // accumulator's zeros), so no memsets.
        let mut delta = stream.alloc_uninit::<f32>(rows_pad)?;
        let mut lse2 = stream.alloc_uninit::<f32>(rows_pad)?;
        let mut dq_acc = stream.alloc_uninit::<f32>(rows_pad * d)?;
        // dim / 8 threads a row (rows_pad is a multiple of kernel::PAD).
        let prep_threads = rows_pad * d / 8;
        module.attention_bwd_prep_bf16(
            stream,
            LaunchConfig::new(
                prep_threads.div_ceil(kernel::PREP_THREADS as usize) as u32,
                kernel::PREP_THREADS,
            ),
            o,
            d_o,
            lse,
            &mut delta,
            &mut lse2,
            &mut dq_acc,
            shape.seq_q as u32,
            seq_pad,
            d as u32,
        )?;
        let bm = kernel::block_m(d as u32);
        let blocks_n = shape.seq_k.div_ceil(kernel::BN as usize) as u32;
        // The maps depend only on the four addresses and the shape: cached, as the forward's
        // (encoding and uploading them took a host-to-device copy every call).
        let key = [
            q.device_ptr(),
            k.device_ptr(),
            v.device_ptr(),
            d_o.device_ptr(),
            shape.batch as u64,
            shape.heads as u64,
            shape.kv_heads as u64,
            shape.seq_q as u64,
            shape.seq_k as u64,
            d as u64,
            bm as u64,
            kernel::BN as u64,
            0,
            0,
        ];
        let cache = self.wgmma_attention_backward_maps.lookup(stream, key, || {
            Ok(vec![
                encode_map(key[0], bh, shape.seq_q, d, bm, name)?,
                encode_map(key[1], kv_bh, shape.seq_k, d, kernel::BN, name)?,
                encode_map(key[2], kv_bh, shape.seq_k, d, kernel::BN, name)?,
                encode_map(key[3], bh, shape.seq_q, d, bm, name)?,
            ])
        })?;
        let maps = &cache[&key];
        let scale = 1.0 / (d as f64).sqrt();
        let params = BwdParams {
            seq_q: shape.seq_q as u32,
            seq_k: shape.seq_k as u32,
            seq_pad,
            scale_log2: (scale * std::f64::consts::LOG2_E) as f32,
            scale: scale as f32,
            causal: causal as u32,
            heads: shape.heads as u32,
            group: (shape.heads / shape.kv_heads) as u32,
            dq_order: dq_order(deterministic, blocks_n, self.wgmma.sm_count),
        };
        // Deterministic: a turn counter per query tile.
        let turns = if deterministic {
            bh * shape.seq_q.div_ceil(bm as usize)
        } else {
            0
        };
        let mut dq_turns = stream.alloc_zeroed::<u32>(turns)?;
        let cfg = LaunchConfig::new((blocks_n, kv_bh as u32, 1), (kernel::THREADS, 1, 1))
            .with_shared_mem(kernel::shared_bytes(d as u32));
        let launch = match (d, deterministic) {
            (64, _) => crate::hopper_kernels::Module::attention_bwd_bf16_d64_wgmma,
            (_, false) => crate::hopper_kernels::Module::attention_bwd_bf16_d128_wgmma,
            (_, true) => crate::hopper_kernels::Module::attention_bwd_bf16_d128_ordered_wgmma,
        };
        launch(
            module,
            stream,
            cfg,
            q,
            k,
            v,
            d_o,
            maps,
            &lse2,
            &delta,
            &mut dq_acc,
            &mut dq_turns,
            dk,
            dv,
            params,
        )?;
        module.attention_bwd_dq_convert_bf16(
            stream,
            LaunchConfig::new((rows_pad * d / 4096) as u32, kernel::CONVERT_THREADS),
            &dq_acc,
            dq,
            shape.seq_q as u32,
            seq_pad,
            d as u32,
            scale as f32,
        )
    }
}

/// `BwdParams::dq_order`: unordered, or ordered and shifted when the `blocks_n` key blocks of a
/// K/V head are resident at once (one block per SM: the kernel takes most of the shared
/// memory), so that waiting for a block dispatched later cannot stall the grid.
fn dq_order(deterministic: bool, blocks_n: u32, sm_count: u32) -> u32 {
    match (deterministic, blocks_n <= sm_count) {
        (false, _) => 0,
        (true, false) => kernel::DqOrder::Plain as u32,
        (true, true) => kernel::DqOrder::Shifted as u32,
    }
}

/// The Hopper backward kernel's name for error messages (the one that would run).
fn wgmma_name(head_dim: usize, deterministic: bool) -> &'static str {
    match (head_dim, deterministic) {
        (64, _) => "attention_bwd_bf16_d64_wgmma",
        (128, false) => "attention_bwd_bf16_d128_wgmma",
        (128, true) => "attention_bwd_bf16_d128_ordered_wgmma",
        _ => "attention_bwd_bf16_wgmma",
    }
}

#[cfg(test)]
mod tests {
    use super::kernel::{BN, block_m, dq_shift, dq_turn};

    /// Runs the ordered dQ reductions of one K/V head as the kernel schedules them: blocks
    /// dispatched in grid order into `slots` resident places, each walking its tiles (the
    /// kernel's `tile_of`) and adding a tile only in its turn ([`dq_turn`]). Returns whether
    /// every block finished and, per tile, the blocks in the order they added.
    fn schedule(
        seq_q: u32,
        seq_k: u32,
        d: u32,
        causal: bool,
        order: u32,
        slots: usize,
    ) -> (bool, Vec<Vec<u32>>) {
        let bm = block_m(d);
        let (blocks_n, blocks_m) = (seq_k.div_ceil(BN), seq_q.div_ceil(bm));
        // Grid x to key block: causal ordered runs last-first.
        let n_of = |x: u32| if causal { blocks_n - 1 - x } else { x };
        let tiles = |n: u32| -> Vec<u32> {
            let m_start = if causal {
                (n * BN / bm).min(blocks_m)
            } else {
                0
            };
            let per_head = blocks_m - m_start;
            let first = dq_shift(blocks_n, blocks_m, order, causal) * n;
            (0..per_head)
                .map(|i| m_start + (i + first) % per_head)
                .collect()
        };
        let mut counters = vec![0u32; blocks_m as usize];
        let mut added = vec![Vec::new(); blocks_m as usize];
        let mut next = vec![0usize; blocks_n as usize];
        let (mut dispatched, mut resident) = (0u32, Vec::new());
        loop {
            while resident.len() < slots && dispatched < blocks_n {
                resident.push(n_of(dispatched));
                dispatched += 1;
            }
            if resident.is_empty() {
                return (true, added);
            }
            let mut progressed = false;
            resident.retain(|&n| {
                let walk = tiles(n);
                while let Some(&m) = walk.get(next[n as usize]) {
                    let turn = dq_turn(n, m, bm, blocks_n, blocks_m, order, causal);
                    if counters[m as usize] != turn {
                        return true;
                    }
                    counters[m as usize] += 1;
                    added[m as usize].push(n);
                    next[n as usize] += 1;
                    progressed = true;
                }
                // Finished (perhaps with no tiles at all): its slot frees.
                progressed = true;
                false
            });
            if !progressed {
                return (false, added);
            }
        }
    }

    #[test]
    fn ordered_dq_reductions_finish_in_one_fixed_order() {
        for d in [64, 128] {
            for causal in [false, true] {
                for (seq_q, seq_k) in [
                    (2048u32, 2048u32),
                    (1000, 3000),
                    (3000, 1000),
                    (128, 8192),
                    (77, 77),
                ] {
                    let blocks_n = seq_k.div_ceil(BN);
                    for order in [1, 2] {
                        // Order 2 only where every key block is resident (the host's rule);
                        // order 1 also with few slots.
                        let slot_counts: &[usize] = if order == 2 {
                            &[blocks_n as usize]
                        } else {
                            &[1, 3, blocks_n as usize]
                        };
                        for &slots in slot_counts {
                            let what = format!(
                                "d{d} causal={causal} seq {seq_q}x{seq_k} order {order} slots {slots}"
                            );
                            let (done, added) = schedule(seq_q, seq_k, d, causal, order, slots);
                            assert!(done, "{what}: the schedule stalls");
                            // Every tile got each of its key blocks once.
                            let bm = block_m(d);
                            for (m, blocks) in added.iter().enumerate() {
                                let want = (0..blocks_n)
                                    .filter(|&n| !causal || n * BN / bm <= m as u32)
                                    .count();
                                let mut sorted = blocks.clone();
                                sorted.sort_unstable();
                                sorted.dedup();
                                assert_eq!(
                                    (blocks.len(), sorted.len()),
                                    (want, want),
                                    "{what}: tile {m}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Shifted, the key blocks start at tiles spread evenly over the head, and the first
    /// tile of every block is its turn 0 (no block waits at the start).
    #[test]
    fn shifted_order_starts_without_waiting() {
        assert_eq!(super::dq_order(true, 64, 132), 2);
        assert_eq!(super::dq_order(true, 200, 132), 1);
        assert_eq!(super::dq_order(false, 64, 132), 0);
        for (seq_q, seq_k, d) in [(8192, 8192, 64), (8192, 8192, 128), (4096, 2048, 64)] {
            let bm = block_m(d);
            let (blocks_n, blocks_m) = (seq_k / BN, seq_q / bm);
            for n in 0..blocks_n {
                let m = dq_shift(blocks_n, blocks_m, 2, false) * n;
                assert_eq!(m, n * blocks_m / blocks_n);
                assert_eq!(
                    dq_turn(n, m, bm, blocks_n, blocks_m, 2, false),
                    0,
                    "block {n}"
                );
            }
        }
    }
}
