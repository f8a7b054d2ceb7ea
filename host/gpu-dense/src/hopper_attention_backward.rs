//! `Dense::attention_backward_wgmma`: the flash-attention backward on Hopper tensor cores
//! (wgmma + TMA, FlashAttention-3's design), see `hopper_kernels::attention_backward` for the
//! kernel. `Dense::attention_backward`, `attention_backward_atomic_dq` and (for dK and dV)
//! `attention_backward_deterministic` pick it on compute capability 9.0 devices.

use ::dense_kernels::attention::{self as dense_kernel, AttentionParams};
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
    /// `deterministic`: dQ by the `mma.sync` dQ kernel (a thread sums each element in a fixed
    /// order; repeated runs give the same bits), the Hopper kernel computing dK and dV only;
    /// else the Hopper kernel also adds each key block's dQ tiles to an f32 accumulator with
    /// bulk reductions (FlashAttention-3's way: faster, the last bits of dQ may differ between
    /// runs).
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
        let name = wgmma_name(shape.head_dim);
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
        let name = wgmma_name(shape.head_dim);
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
        // Δ and L·log2 e, padded per head.
        let mut delta = stream.alloc_zeroed::<f32>(rows_pad)?;
        let mut lse2 = stream.alloc_zeroed::<f32>(rows_pad)?;
        let warps = (kernel::PREP_THREADS / 32) as usize;
        module.attention_bwd_prep_bf16(
            stream,
            LaunchConfig::new(rows_pad.div_ceil(warps) as u32, kernel::PREP_THREADS),
            o,
            d_o,
            lse,
            &mut delta,
            &mut lse2,
            shape.seq_q as u32,
            seq_pad,
            d as u32,
        )?;
        let bm = kernel::block_m(d as u32);
        let maps = [
            encode_map(q.device_ptr(), bh, shape.seq_q, d, bm, name)?,
            encode_map(k.device_ptr(), kv_bh, shape.seq_k, d, kernel::BN, name)?,
            encode_map(v.device_ptr(), kv_bh, shape.seq_k, d, kernel::BN, name)?,
            encode_map(d_o.device_ptr(), bh, shape.seq_q, d, bm, name)?,
        ];
        let maps = stream.to_device(&maps)?;
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
        };
        // dQ's f32 accumulator (padded rows, the kernel's order: `kernel::dq_index`), or
        // nothing (the deterministic dQ kernel writes dQ).
        let q_len = shape.q_len();
        let acc_len = if deterministic { 0 } else { rows_pad * d };
        let mut dq_acc = stream.alloc_zeroed::<f32>(acc_len)?;
        let cfg = LaunchConfig::new(
            (
                shape.seq_k.div_ceil(kernel::BN as usize) as u32,
                kv_bh as u32,
                1,
            ),
            (kernel::THREADS, 1, 1),
        )
        .with_shared_mem(kernel::shared_bytes(d as u32));
        let launch = if d == 64 {
            crate::hopper_kernels::Module::attention_bwd_bf16_d64_wgmma
        } else {
            crate::hopper_kernels::Module::attention_bwd_bf16_d128_wgmma
        };
        launch(
            module,
            stream,
            cfg,
            q,
            k,
            v,
            d_o,
            &maps,
            &lse2,
            &delta,
            &mut dq_acc,
            dk,
            dv,
            params,
        )?;
        let m = &self.dense;
        if !deterministic {
            return module.attention_bwd_dq_convert_bf16(
                stream,
                LaunchConfig::for_elements(q_len, kernel::PREP_THREADS),
                &dq_acc,
                dq,
                shape.seq_q as u32,
                seq_pad,
                d as u32,
                scale as f32,
            );
        }
        // The mma.sync dQ kernel wants Δ unpadded.
        let rows = bh * shape.seq_q;
        let mut delta = stream.alloc_zeroed::<f32>(rows)?;
        let warps = (dense_kernel::BWD_ROW_THREADS / 32) as usize;
        m.attention_bwd_delta_bf16(
            stream,
            LaunchConfig::new(rows.div_ceil(warps) as u32, dense_kernel::BWD_ROW_THREADS),
            o,
            d_o,
            &mut delta,
            rows as u32,
            d as u32,
        )?;
        let params = AttentionParams {
            seq_q: shape.seq_q as u32,
            seq_k: shape.seq_k as u32,
            scale_log2: params.scale_log2,
            causal: causal as u32,
            heads: shape.heads as u32,
            group: params.group,
        };
        let cfg = LaunchConfig::new(
            (
                shape.seq_q.div_ceil(dense_kernel::BWD_BLOCK_M) as u32,
                bh as u32,
                1,
            ),
            (dense_kernel::BWD_THREADS, 1, 1),
        )
        .with_shared_mem(dense_kernel::bwd_dq_shared_bytes(d) as u32);
        let launch = if d == 64 {
            crate::dense_kernels::Module::attention_bwd_dq_bf16_d64
        } else {
            crate::dense_kernels::Module::attention_bwd_dq_bf16_d128
        };
        launch(m, stream, cfg, q, k, v, d_o, lse, &delta, dq, params)
    }
}

/// The Hopper backward kernel's name for error messages.
fn wgmma_name(head_dim: usize) -> &'static str {
    match head_dim {
        64 => "attention_bwd_bf16_d64_wgmma",
        128 => "attention_bwd_bf16_d128_wgmma",
        _ => "attention_bwd_bf16_wgmma",
    }
}
