//! Flash-attention forward on tensor cores (`mma.sync`, any sm_80+ GPU).
//!
//! `O = softmax(Q·Kᵀ·scale [+ causal mask]) · V` per (batch, head), with Q, K, V, O bf16 tensors
//! of shape `[batch, heads, seq, head_dim]`, contiguous. The kernel never materializes the
//! `seq_q × seq_k` score matrix: each block streams 64-key tiles of K and V through shared memory
//! and keeps a running softmax (FlashAttention-2), so memory traffic is one read of Q, K, V per
//! query block and one write of O. On compute capability 9.0 `Dense::attention` runs the
//! FlashAttention-3 style kernel of `hopper_attention` instead.

use gpu_host::{DeviceBuffer, Error, LaunchConfig, Result, Stream};
use half::bf16;

use crate::hopper_attention::{Varlen, WgmmaSchedule};
use crate::{AttentionElement, Dense, dense_kernels};
use ::dense_kernels::attention::{self as kernel, AttentionParams};

/// The inputs `(q, k, v)` of an attention call, passed as one argument.
pub type AttentionInputs<'a, T = bf16> = (
    &'a DeviceBuffer<T>,
    &'a DeviceBuffer<T>,
    &'a DeviceBuffer<T>,
);

/// The gradients `(dq, dk, dv)` the backward pass writes, passed as one argument.
pub type AttentionGrads<'a, T = bf16> = (
    &'a mut DeviceBuffer<T>,
    &'a mut DeviceBuffer<T>,
    &'a mut DeviceBuffer<T>,
);

/// The sizes of one attention call. Q and O are `[batch, heads, seq_q, head_dim]`, K and V
/// `[batch, kv_heads, seq_k, head_dim]`, all contiguous (row-major, `head_dim` fastest).
/// `kv_heads` divides `heads`: query head `h` attends with K/V head `h / (heads / kv_heads)`
/// (grouped-query attention; `kv_heads == heads` is multi-head, `kv_heads == 1` multi-query).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub seq_q: usize,
    pub seq_k: usize,
    pub head_dim: usize,
}

impl AttentionShape {
    /// Multi-head attention (`kv_heads == heads`).
    pub fn new(batch: usize, heads: usize, seq_q: usize, seq_k: usize, head_dim: usize) -> Self {
        AttentionShape {
            batch,
            heads,
            kv_heads: heads,
            seq_q,
            seq_k,
            head_dim,
        }
    }

    /// The same shape with `kv_heads` K/V heads (grouped-query attention).
    pub fn with_kv_heads(self, kv_heads: usize) -> Self {
        AttentionShape { kv_heads, ..self }
    }

    /// Values of the logsumexp output: one per query row, `[batch, heads, seq_q]`.
    pub fn lse_len(&self) -> usize {
        self.batch * self.heads * self.seq_q
    }

    /// Elements of Q (and of O).
    pub fn q_len(&self) -> usize {
        self.batch * self.heads * self.seq_q * self.head_dim
    }

    /// Elements of K (and of V).
    pub fn kv_len(&self) -> usize {
        self.batch * self.kv_heads * self.seq_k * self.head_dim
    }

    /// Floating-point operations of the two matrix products, the usual figure for attention
    /// throughput: `4 · batch · heads · seq_q · seq_k · head_dim`, halved when causal (about half
    /// of the scores are masked; exact only for `seq_q == seq_k` and long sequences).
    pub fn flops(&self, causal: bool) -> f64 {
        let full = 4.0
            * self.batch as f64
            * self.heads as f64
            * self.seq_q as f64
            * self.seq_k as f64
            * self.head_dim as f64;
        if causal { full / 2.0 } else { full }
    }
}

impl Dense {
    /// Flash-attention forward: `o = softmax(q·kᵀ / sqrt(head_dim) [causal]) · v` for every
    /// (batch, head), bf16 (or f16 on Hopper) in and out, f32 scores and accumulators. On a
    /// compute capability 9.0 GPU this runs the Hopper kernel ([`Dense::attention_wgmma`]:
    /// wgmma + TMA), elsewhere (and on the simulator) the `mma.sync` kernel, which takes bf16
    /// only: f16 there is an error, nothing launched.
    ///
    /// `causal` masks key `j` for query `i` when `j > i` (top-left aligned, like torch's
    /// `scaled_dot_product_attention(is_causal=True)`), and skips key tiles that are entirely
    /// masked. `head_dim` must be 64 or 128, or 256 on a compute capability 9.0 GPU (the
    /// Hopper kernel only: elsewhere an error, nothing launched); `seq_q` and `seq_k` are
    /// arbitrary (`seq_k >= 1` when `seq_q >= 1`: a softmax over no keys is undefined).
    /// Asynchronous on `stream`.
    // The signature the issue asks for: three inputs, an output, the shape and the mask flag.
    #[allow(clippy::too_many_arguments)]
    pub fn attention<T: AttentionElement>(
        &self,
        stream: &Stream,
        q: &DeviceBuffer<T>,
        k: &DeviceBuffer<T>,
        v: &DeviceBuffer<T>,
        o: &mut DeviceBuffer<T>,
        shape: AttentionShape,
        causal: bool,
    ) -> Result<()> {
        self.attention_with_lse(stream, q, k, v, o, None, shape, causal)
    }

    /// [`Dense::attention`] that also writes, when `lse` is given, each query row's logsumexp
    /// `ln Σ_j exp(q·k_j / sqrt(head_dim))` over the keys it sees (f32, `[batch, heads,
    /// seq_q]`, [`AttentionShape::lse_len`] values): the softmax's normalizer, which a backward
    /// pass uses to recompute the probabilities.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_with_lse<T: AttentionElement>(
        &self,
        stream: &Stream,
        q: &DeviceBuffer<T>,
        k: &DeviceBuffer<T>,
        v: &DeviceBuffer<T>,
        o: &mut DeviceBuffer<T>,
        lse: Option<&mut DeviceBuffer<f32>>,
        shape: AttentionShape,
        causal: bool,
    ) -> Result<()> {
        if self.wgmma_attention_fits(stream, shape) {
            return self.attention_wgmma(stream, q, k, v, o, lse, shape, causal);
        }
        self.attention_mma(stream, (q, k, v), o, lse, shape, causal, None)
    }

    /// The forward on the `mma.sync` kernels (bf16, head dimension 64 or 128), for fixed or
    /// (`varlen`) variable lengths; other elements and head dimension 256 are errors naming
    /// the device, after the shape checks.
    #[allow(clippy::too_many_arguments)]
    fn attention_mma<T: AttentionElement>(
        &self,
        stream: &Stream,
        (q, k, v): AttentionInputs<'_, T>,
        o: &mut DeviceBuffer<T>,
        lse: Option<&mut DeviceBuffer<f32>>,
        shape: AttentionShape,
        causal: bool,
        varlen: Option<(&[u32], &[u32])>,
    ) -> Result<()> {
        let name = match shape.head_dim {
            64 => "attention_fwd_bf16_d64",
            128 => "attention_fwd_bf16_d128",
            256 => "attention_fwd_bf16_d256",
            _ => "attention_fwd_bf16",
        };
        // Refused here, after the shape checks (bad shapes are reported as such on every
        // device): `name` is the kernel the Hopper path would have run.
        let (o_len, lse_len) = (o.len(), lse.as_ref().map(|l| l.len()));
        let refuse = |message: String| -> Result<()> {
            let name = name.replacen("bf16", T::NAME, 1);
            check_forward(
                &name,
                (q.len(), k.len(), v.len(), o_len),
                lse_len,
                shape,
                varlen,
            )?;
            Err(Error::LaunchConfig {
                kernel: name,
                message,
            })
        };
        if shape.head_dim == 256 {
            // The device, as the mma.sync kernel that runs there was loaded on.
            let p = self.dense.raw().kernel("attention_fwd_bf16_d64")?.device();
            let device = if stream.is_simulator() {
                format!("the CPU simulator ({})", p.name)
            } else {
                format!(
                    "{} (compute capability {}.{})",
                    p.name, p.compute_capability.0, p.compute_capability.1
                )
            };
            return refuse(format!(
                "head_dim 256 runs on the Hopper kernel only (compute capability 9.0: \
                     wgmma and TMA); {device} runs the mma.sync kernels, which take head_dim \
                     64 or 128"
            ));
        }
        let bf16s = (T::as_bf16(q), T::as_bf16(k), T::as_bf16(v));
        match (bf16s, T::as_bf16_mut(o)) {
            ((Some(q), Some(k), Some(v)), Some(o)) => {
                self.launch_attention_in(name, stream, q, k, v, o, lse, shape, causal, varlen)
            }
            _ => refuse(format!(
                "{} attention needs a compute capability 9.0 GPU (the wgmma kernel); the \
                 mma.sync kernel other GPUs and the simulator run takes bf16 only",
                T::NAME
            )),
        }
    }

    /// Flash-attention forward on a batch of sequences of different lengths, packed without
    /// padding (flash-attention's "varlen" layout): `q` and `o` are `[total_q, heads,
    /// head_dim]` and `k`, `v` are `[total_k, kv_heads, head_dim]`, contiguous; sequence `b`'s
    /// queries are rows `cu_seqlens_q[b] .. cu_seqlens_q[b + 1]`, its keys rows
    /// `cu_seqlens_k[b] .. cu_seqlens_k[b + 1]`. Each sequence attends only to its own keys;
    /// `causal` masks key `j` for query `i` when `j > i` within the sequence (top-left
    /// aligned, as [`Dense::attention`]). `lse`, when given, gets each query row's logsumexp as
    /// `[heads, total_q]`.
    ///
    /// On a compute capability 9.0 GPU this runs the Hopper kernel ([`Dense::attention_wgmma`]:
    /// bf16 or f16, head dimension 64, 128 or 256; its tiles start at each sequence's first
    /// row and mask or drop what lies past its end), elsewhere the `mma.sync` kernel (bf16,
    /// head dimension 64 or 128).
    ///
    /// Errors (nothing launched): sequence starts that do not begin at 0, decrease, or differ in
    /// count between queries and keys; a sequence with queries but no keys; tensors whose
    /// lengths do not match the totals (the last sequence starts); what [`Dense::attention`]
    /// refuses.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_varlen<T: AttentionElement>(
        &self,
        stream: &Stream,
        qkv: AttentionInputs<'_, T>,
        o: &mut DeviceBuffer<T>,
        lse: Option<&mut DeviceBuffer<f32>>,
        cu_seqlens: (&[u32], &[u32]),
        heads: (usize, usize, usize),
        causal: bool,
    ) -> Result<()> {
        let hopper = self.hopper.is_some() && !stream.is_simulator();
        let kernel = hopper.then(WgmmaSchedule::default);
        self.attention_varlen_with(kernel, stream, qkv, o, lse, cu_seqlens, heads, causal)
    }

    /// [`Dense::attention_varlen`] on the Hopper kernel with a chosen schedule (`Some`: an
    /// error off Hopper, as [`Dense::attention_wgmma_with`]), or on the `mma.sync` kernel
    /// (`None`: any device, bf16, head dimension 64 or 128), whatever the default would pick:
    /// for the tests and the benchmark.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn attention_varlen_with<T: AttentionElement>(
        &self,
        schedule: Option<WgmmaSchedule>,
        stream: &Stream,
        (q, k, v): AttentionInputs<'_, T>,
        o: &mut DeviceBuffer<T>,
        lse: Option<&mut DeviceBuffer<f32>>,
        (cu_seqlens_q, cu_seqlens_k): (&[u32], &[u32]),
        (heads, kv_heads, head_dim): (usize, usize, usize),
        causal: bool,
    ) -> Result<()> {
        let name = match head_dim {
            64 | 128 | 256 => format!("attention_fwd_{}_d{head_dim}", T::NAME),
            _ => format!("attention_fwd_{}", T::NAME),
        };
        let name = name.as_str();
        let bad = |argument: &str, message: String| Error::Argument {
            kernel: name.to_string(),
            argument: argument.to_string(),
            message,
        };
        if cu_seqlens_q.len() < 2 || cu_seqlens_q.len() != cu_seqlens_k.len() {
            return Err(bad(
                "cu_seqlens",
                format!(
                    "{} query and {} key sequence starts: both need batch + 1 >= 2 entries",
                    cu_seqlens_q.len(),
                    cu_seqlens_k.len()
                ),
            ));
        }
        let lengths = |cu: &[u32], which: &str| -> Result<Vec<usize>> {
            if cu[0] != 0 {
                return Err(bad(which, format!("starts at {}, not 0", cu[0])));
            }
            cu.windows(2)
                .enumerate()
                .map(|(b, w)| {
                    w[1].checked_sub(w[0]).map(|n| n as usize).ok_or_else(|| {
                        bad(
                            which,
                            format!("decreases at sequence {b}: {} then {}", w[0], w[1]),
                        )
                    })
                })
                .collect()
        };
        let (lq, lk) = (
            lengths(cu_seqlens_q, "cu_seqlens_q")?,
            lengths(cu_seqlens_k, "cu_seqlens_k")?,
        );
        if let Some(b) = (0..lq.len()).find(|&b| lq[b] > 0 && lk[b] == 0) {
            return Err(bad(
                "cu_seqlens_k",
                format!("sequence {b} has {} queries and no keys", lq[b]),
            ));
        }
        // Rows are addressed with 32-bit (TMA: signed) coordinates.
        for (which, cu) in [
            ("cu_seqlens_q", cu_seqlens_q),
            ("cu_seqlens_k", cu_seqlens_k),
        ] {
            let total = cu[cu.len() - 1];
            if total > i32::MAX as u32 {
                return Err(bad(
                    which,
                    format!("{total} rows in all: at most {} (32-bit rows)", i32::MAX),
                ));
            }
        }
        let shape = AttentionShape {
            batch: lq.len(),
            heads,
            kv_heads,
            seq_q: lq.iter().copied().max().unwrap_or(0),
            seq_k: lk.iter().copied().max().unwrap_or(0).max(1),
            head_dim,
        };
        match schedule {
            Some(schedule) => {
                let varlen = Some(Varlen {
                    cu_q: cu_seqlens_q,
                    cu_k: cu_seqlens_k,
                });
                self.launch_wgmma(stream, (q, k, v), o, lse, shape, causal, schedule, varlen)
            }
            None => {
                let varlen = Some((cu_seqlens_q, cu_seqlens_k));
                self.attention_mma(stream, (q, k, v), o, lse, shape, causal, varlen)
            }
        }
    }

    /// [`Dense::attention`] through one named kernel of `dense_kernels::attention::TILINGS`
    /// (the default kernels and the tuning variants, e.g. `attention_fwd_bf16_d64_w8m1`), for
    /// the benchmark's comparison of tilings. An unknown name, or one for another head
    /// dimension, is an argument error.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn attention_kernel(
        &self,
        name: &str,
        stream: &Stream,
        q: &DeviceBuffer<bf16>,
        k: &DeviceBuffer<bf16>,
        v: &DeviceBuffer<bf16>,
        o: &mut DeviceBuffer<bf16>,
        shape: AttentionShape,
        causal: bool,
    ) -> Result<()> {
        self.launch_attention(name, stream, q, k, v, o, None, shape, causal)
    }

    #[allow(clippy::too_many_arguments)]
    fn launch_attention(
        &self,
        name: &str,
        stream: &Stream,
        q: &DeviceBuffer<bf16>,
        k: &DeviceBuffer<bf16>,
        v: &DeviceBuffer<bf16>,
        o: &mut DeviceBuffer<bf16>,
        lse: Option<&mut DeviceBuffer<f32>>,
        shape: AttentionShape,
        causal: bool,
    ) -> Result<()> {
        self.launch_attention_in(name, stream, q, k, v, o, lse, shape, causal, None)
    }

    /// The forward launch, for fixed lengths (`varlen` `None`: `shape` gives the tensors) or
    /// for a variable-length batch (`varlen`: the cumulative sequence starts, already checked,
    /// with `shape.seq_q`/`seq_k` the longest sequences and the tensors `[total, heads, dim]`).
    #[allow(clippy::too_many_arguments)]
    fn launch_attention_in(
        &self,
        name: &str,
        stream: &Stream,
        q: &DeviceBuffer<bf16>,
        k: &DeviceBuffer<bf16>,
        v: &DeviceBuffer<bf16>,
        o: &mut DeviceBuffer<bf16>,
        lse: Option<&mut DeviceBuffer<f32>>,
        shape: AttentionShape,
        causal: bool,
        varlen: Option<(&[u32], &[u32])>,
    ) -> Result<()> {
        let bad = |argument: &str, message: String| Error::Argument {
            kernel: name.to_string(),
            argument: argument.to_string(),
            message,
        };
        if !check_forward(
            name,
            (q.len(), k.len(), v.len(), o.len()),
            lse.as_ref().map(|l| l.len()),
            shape,
            varlen,
        )? {
            return Ok(());
        }
        let tiling = kernel::TILINGS
            .iter()
            .find(|(n, _)| *n == name)
            .filter(|_| attention_kernel_names(shape.head_dim).any(|n| n == name))
            .map(|&(_, t)| t)
            .ok_or_else(|| {
                bad(
                    "name",
                    format!(
                        "no attention kernel `{name}` for head_dim {}",
                        shape.head_dim
                    ),
                )
            })?;
        let bh = shape.batch * shape.heads;
        let params = AttentionParams {
            seq_q: shape.seq_q as u32,
            seq_k: shape.seq_k as u32,
            // softmax(x·scale) = 2^(x·scale·log2 e − max) / Σ: prescaling lets ex2.approx do it.
            scale_log2: (1.0 / (shape.head_dim as f64).sqrt() * std::f64::consts::LOG2_E) as f32,
            causal: causal as u32,
            heads: shape.heads as u32,
            group: (shape.heads / shape.kv_heads) as u32,
        };
        let blocks_m = shape.seq_q.div_ceil(tiling.block_m()) as u32;
        let cfg = LaunchConfig::new((blocks_m, bh as u32, 1), (tiling.threads(), 1, 1))
            .with_shared_mem(tiling.shared_bytes(shape.head_dim) as u32);
        // No logsumexp wanted: an empty buffer (nothing allocated), which the kernel skips;
        // likewise no sequence starts for fixed lengths.
        let mut none = stream.alloc_zeroed::<f32>(0)?;
        let lse = lse.unwrap_or(&mut none);
        let (cu_q, cu_k) = match varlen {
            Some((cq, ck)) => (stream.to_device(cq)?, stream.to_device(ck)?),
            None => (
                stream.alloc_zeroed::<u32>(0)?,
                stream.alloc_zeroed::<u32>(0)?,
            ),
        };
        let m = &self.dense;
        match name {
            "attention_fwd_bf16_d64" => {
                m.attention_fwd_bf16_d64(stream, cfg, q, k, v, o, lse, &cu_q, &cu_k, params)
            }
            "attention_fwd_bf16_d128" => {
                m.attention_fwd_bf16_d128(stream, cfg, q, k, v, o, lse, &cu_q, &cu_k, params)
            }
            "attention_fwd_bf16_d64_w4m1" => {
                m.attention_fwd_bf16_d64_w4m1(stream, cfg, q, k, v, o, lse, &cu_q, &cu_k, params)
            }
            "attention_fwd_bf16_d128_w4m1" => {
                m.attention_fwd_bf16_d128_w4m1(stream, cfg, q, k, v, o, lse, &cu_q, &cu_k, params)
            }
            "attention_fwd_bf16_d64_w8m1" => {
                m.attention_fwd_bf16_d64_w8m1(stream, cfg, q, k, v, o, lse, &cu_q, &cu_k, params)
            }
            "attention_fwd_bf16_d128_w8m1" => {
                m.attention_fwd_bf16_d128_w8m1(stream, cfg, q, k, v, o, lse, &cu_q, &cu_k, params)
            }
            "attention_fwd_bf16_d64_w4m2" => {
                m.attention_fwd_bf16_d64_w4m2(stream, cfg, q, k, v, o, lse, &cu_q, &cu_k, params)
            }
            _ => Err(bad("name", format!("no launcher for `{name}`"))),
        }
    }
}

/// The checks the forward and the backward share: a supported head dimension, and K/V heads
/// that divide the query heads. `bad` makes the argument error.
fn check_heads(shape: AttentionShape, bad: &impl Fn(&str, String) -> Error) -> Result<()> {
    if !matches!(shape.head_dim, 64 | 128 | 256) {
        return Err(bad(
            "shape.head_dim",
            format!(
                "head_dim {} is not supported: 64 or 128, or 256 (forward, on compute \
                 capability 9.0 GPUs)",
                shape.head_dim
            ),
        ));
    }
    if shape.kv_heads == 0 || !shape.heads.is_multiple_of(shape.kv_heads) {
        return Err(bad(
            "shape.kv_heads",
            format!(
                "{} K/V heads for {} query heads: it must divide them (grouped-query \
                 attention)",
                shape.kv_heads, shape.heads
            ),
        ));
    }
    Ok(())
}

/// Checks a forward call's arguments for kernel `name` (the errors name it): head dimension,
/// K/V heads, buffer lengths (`lens`: q, k, v, o; `lse`'s when given), sizes the kernels index.
/// `Ok(false)`: there is nothing to compute (no queries). `varlen` as in `launch_attention_in`.
pub(crate) fn check_forward(
    name: &str,
    lens: (usize, usize, usize, usize),
    lse: Option<usize>,
    shape: AttentionShape,
    varlen: Option<(&[u32], &[u32])>,
) -> Result<bool> {
    let bad = |argument: &str, message: String| Error::Argument {
        kernel: name.to_string(),
        argument: argument.to_string(),
        message,
    };
    check_heads(shape, &bad)?;
    // Every product below must fit; a shape whose tensors overflow usize is nonsense.
    let checked = |dims: &[usize]| dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let (q_rows, k_rows) = match varlen {
        None => (shape.batch * shape.seq_q, shape.batch * shape.seq_k),
        Some((cq, ck)) => (cq[cq.len() - 1] as usize, ck[ck.len() - 1] as usize),
    };
    let q_len = checked(&[q_rows, shape.heads, shape.head_dim])
        .ok_or_else(|| bad("shape", format!("{shape:?}: Q's element count overflows")))?;
    let kv_len = checked(&[k_rows, shape.kv_heads, shape.head_dim])
        .ok_or_else(|| bad("shape", format!("{shape:?}: K's element count overflows")))?;
    let lse_len = q_rows * shape.heads;
    for (argument, len, want) in [
        ("q", lens.0, q_len),
        ("k", lens.1, kv_len),
        ("v", lens.2, kv_len),
        ("o", lens.3, q_len),
    ] {
        if len != want {
            return Err(bad(
                argument,
                format!(
                    "has {len} elements; shape {shape:?} needs {want} \
                     ([batch, heads, seq, head_dim] contiguous)"
                ),
            ));
        }
    }
    if let Some(l) = lse
        && l != lse_len
    {
        return Err(bad(
            "lse",
            format!(
                "has {l} elements; shape {shape:?} needs {lse_len} (one per query row and \
                 head)",
            ),
        ));
    }
    if q_len == 0 {
        return Ok(false);
    }
    if shape.seq_k == 0 {
        return Err(bad(
            "shape.seq_k",
            "is 0: a softmax over no keys is undefined".to_string(),
        ));
    }
    // The kernel indexes rows with 32-bit arithmetic per (batch, head) and the grid's y
    // dimension holds batch * heads.
    let bh = shape.batch * shape.heads;
    if bh > 65_535 {
        return Err(bad(
            "shape",
            format!("batch * heads = {bh}: at most 65535 (the grid's y dimension)"),
        ));
    }
    if shape.seq_q.max(shape.seq_k) > (u32::MAX / 256) as usize {
        return Err(bad(
            "shape",
            format!(
                "sequence length {} is too long",
                shape.seq_q.max(shape.seq_k)
            ),
        ));
    }
    Ok(true)
}

impl Dense {
    /// Flash-attention backward: from the forward's inputs `q, k, v`, its output `o` and
    /// logsumexp `lse` ([`Dense::attention_with_lse`]) and the output gradient `d_o`, writes the
    /// gradients `dq`, `dk`, `dv` (bf16, the shapes of `q`, `k`, `v`). Asynchronous on
    /// `stream`; allocates the rows' Δ (f32) on it.
    ///
    /// The fastest kernels the device has: on a compute capability 9.0 GPU the Hopper kernel
    /// (wgmma + TMA, FlashAttention-3's design, [`Dense::attention_backward_wgmma`]), whose dQ
    /// is summed in f32 by bulk reductions in arrival order, so the last bits of dQ can differ
    /// between runs (as with FlashAttention and torch's SDPA); elsewhere FlashAttention-2's
    /// algorithm on `mma.sync` with the deterministic dQ of
    /// [`Dense::attention_backward_deterministic`], which is the faster one there. For
    /// bit-identical gradients on every device call that one.
    ///
    /// `causal` and `shape` must be the forward's; grouped-query shapes sum each K/V head's
    /// gradients over its query heads. Errors (nothing launched): `head_dim` other than 64 or
    /// 128, `kv_heads` not dividing `heads`, a buffer whose length does not match the shape,
    /// `seq_k == 0` with queries.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward(
        &self,
        stream: &Stream,
        qkv: AttentionInputs<'_>,
        o: &DeviceBuffer<bf16>,
        lse: &DeviceBuffer<f32>,
        d_o: &DeviceBuffer<bf16>,
        grads: AttentionGrads<'_>,
        shape: AttentionShape,
        causal: bool,
    ) -> Result<()> {
        let deterministic = !self.wgmma_attention_fits(stream, shape);
        self.backward(
            stream,
            qkv,
            o,
            lse,
            d_o,
            grads,
            shape,
            causal,
            deterministic,
            true,
        )
    }

    /// [`Dense::attention_backward`] with gradients that are the same bits on every run: a
    /// block per 64 keys computes dK and dV, and a second kernel per 64 query rows computes
    /// dQ, each element summed by one thread in a fixed order (it recomputes the scores and dP
    /// for that). On a compute capability 9.0 GPU the Hopper kernel, its key blocks adding
    /// each dQ tile in a fixed order ([`Dense::attention_backward_wgmma`]).
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward_deterministic(
        &self,
        stream: &Stream,
        qkv: AttentionInputs<'_>,
        o: &DeviceBuffer<bf16>,
        lse: &DeviceBuffer<f32>,
        d_o: &DeviceBuffer<bf16>,
        grads: AttentionGrads<'_>,
        shape: AttentionShape,
        causal: bool,
    ) -> Result<()> {
        self.backward(stream, qkv, o, lse, d_o, grads, shape, causal, true, true)
    }

    /// [`Dense::attention_backward`] with dQ added up by the key blocks in f32 on every device:
    /// atomics on `mma.sync` GPUs (FlashAttention-2's way: no recomputation, but slower there
    /// than the deterministic dQ kernel; the benchmark's `bwd-at` rows), bulk reductions in the
    /// Hopper kernel (what [`Dense::attention_backward`] runs there). The rounding of dQ can
    /// differ between runs in the last bits.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward_atomic_dq(
        &self,
        stream: &Stream,
        qkv: AttentionInputs<'_>,
        o: &DeviceBuffer<bf16>,
        lse: &DeviceBuffer<f32>,
        d_o: &DeviceBuffer<bf16>,
        grads: AttentionGrads<'_>,
        shape: AttentionShape,
        causal: bool,
    ) -> Result<()> {
        self.backward(stream, qkv, o, lse, d_o, grads, shape, causal, false, true)
    }

    /// The `mma.sync` backward on every device, even where [`Dense::attention_backward`] picks
    /// the Hopper kernel: for the benchmark's comparison (`deterministic`: dQ by the dQ kernel,
    /// else by atomics).
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward_mma(
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
        self.backward(
            stream,
            qkv,
            o,
            lse,
            d_o,
            grads,
            shape,
            causal,
            deterministic,
            false,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn backward(
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
        allow_wgmma: bool,
    ) -> Result<()> {
        let name = match shape.head_dim {
            64 => "attention_bwd_bf16_d64",
            128 => "attention_bwd_bf16_d128",
            _ => "attention_bwd_bf16",
        };
        let lens = [
            q.len(),
            k.len(),
            v.len(),
            o.len(),
            lse.len(),
            d_o.len(),
            dq.len(),
            dk.len(),
            dv.len(),
        ];
        if !check_backward(name, lens, shape)? {
            return Ok(());
        }
        if allow_wgmma && self.wgmma_attention_fits(stream, shape) {
            return self.launch_backward_wgmma(
                stream,
                (q, k, v),
                o,
                lse,
                d_o,
                (dq, dk, dv),
                shape,
                causal,
                deterministic,
            );
        }
        let (q_len, bh) = (shape.q_len(), shape.batch * shape.heads);
        let rows = bh * shape.seq_q;
        let scale = 1.0 / (shape.head_dim as f64).sqrt();
        let params = AttentionParams {
            seq_q: shape.seq_q as u32,
            seq_k: shape.seq_k as u32,
            scale_log2: (scale * std::f64::consts::LOG2_E) as f32,
            causal: causal as u32,
            heads: shape.heads as u32,
            group: (shape.heads / shape.kv_heads) as u32,
        };
        let m = &self.dense;
        // Δ = rowsum(dO ∘ O): a warp per row.
        let mut delta = stream.alloc_zeroed::<f32>(rows)?;
        let warps = (kernel::BWD_ROW_THREADS / 32) as usize;
        let cfg = LaunchConfig::new(rows.div_ceil(warps) as u32, kernel::BWD_ROW_THREADS);
        m.attention_bwd_delta_bf16(
            stream,
            cfg,
            o,
            d_o,
            &mut delta,
            rows as u32,
            shape.head_dim as u32,
        )?;
        // The atomics' f32 accumulator, or nothing (the deterministic kernel writes dQ itself).
        let mut dq_acc = stream.alloc_zeroed::<f32>(if deterministic { 0 } else { q_len })?;
        let kv_bh = shape.batch * shape.kv_heads;
        let cfg = LaunchConfig::new(
            (
                shape.seq_k.div_ceil(kernel::BLOCK_N) as u32,
                kv_bh as u32,
                1,
            ),
            (kernel::BWD_THREADS, 1, 1),
        )
        .with_shared_mem(kernel::bwd_shared_bytes(shape.head_dim) as u32);
        let launch = if shape.head_dim == 64 {
            dense_kernels::Module::attention_bwd_bf16_d64
        } else {
            dense_kernels::Module::attention_bwd_bf16_d128
        };
        launch(
            m,
            stream,
            cfg,
            q,
            k,
            v,
            d_o,
            lse,
            &delta,
            &mut dq_acc,
            dk,
            dv,
            params,
        )?;
        if deterministic {
            let cfg = LaunchConfig::new(
                (
                    shape.seq_q.div_ceil(kernel::BWD_BLOCK_M) as u32,
                    bh as u32,
                    1,
                ),
                (kernel::BWD_THREADS, 1, 1),
            )
            .with_shared_mem(kernel::bwd_dq_shared_bytes(shape.head_dim) as u32);
            let launch = if shape.head_dim == 64 {
                dense_kernels::Module::attention_bwd_dq_bf16_d64
            } else {
                dense_kernels::Module::attention_bwd_dq_bf16_d128
            };
            return launch(m, stream, cfg, q, k, v, d_o, lse, &delta, dq, params);
        }
        m.attention_bwd_dq_bf16(
            stream,
            LaunchConfig::for_elements(q_len, kernel::BWD_ROW_THREADS),
            &dq_acc,
            dq,
            scale as f32,
        )
    }
}

/// The backward pass's argument checks (every device): head dimension, K/V heads, the
/// lengths `[q, k, v, o, lse, d_o, dq, dk, dv]` against `shape`, and sizes. `Ok(false)`: an
/// empty problem, nothing to launch.
pub(crate) fn check_backward(name: &str, lens: [usize; 9], shape: AttentionShape) -> Result<bool> {
    let bad = |argument: &str, message: String| Error::Argument {
        kernel: name.to_string(),
        argument: argument.to_string(),
        message,
    };
    check_heads(shape, &bad)?;
    if shape.head_dim == 256 {
        return Err(bad(
            "shape.head_dim",
            "head_dim 256: the backward pass takes head_dim 64 or 128 (the forward only has a \
             head_dim 256 kernel)"
                .to_string(),
        ));
    }
    let checked = |dims: &[usize]| dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let q_len = checked(&[shape.batch, shape.heads, shape.seq_q, shape.head_dim])
        .ok_or_else(|| bad("shape", format!("{shape:?}: Q's element count overflows")))?;
    let kv_len = checked(&[shape.batch, shape.kv_heads, shape.seq_k, shape.head_dim])
        .ok_or_else(|| bad("shape", format!("{shape:?}: K's element count overflows")))?;
    let rows = shape.batch * shape.heads * shape.seq_q;
    for (argument, len, want) in [
        ("q", lens[0], q_len),
        ("k", lens[1], kv_len),
        ("v", lens[2], kv_len),
        ("o", lens[3], q_len),
        ("lse", lens[4], rows),
        ("d_o", lens[5], q_len),
        ("dq", lens[6], q_len),
        ("dk", lens[7], kv_len),
        ("dv", lens[8], kv_len),
    ] {
        if len != want {
            return Err(bad(
                argument,
                format!("has {len} elements; shape {shape:?} needs {want}"),
            ));
        }
    }
    if q_len == 0 && kv_len == 0 {
        return Ok(false);
    }
    if shape.seq_k == 0 || shape.seq_q == 0 {
        return Err(bad(
            "shape",
            format!("{shape:?}: the backward pass needs queries and keys"),
        ));
    }
    let bh = shape.batch * shape.heads;
    if bh > 65_535 || shape.seq_q.max(shape.seq_k) > (u32::MAX / 256) as usize {
        return Err(bad(
            "shape",
            format!("{shape:?}: batch · heads over 65535 or a sequence too long"),
        ));
    }
    Ok(true)
}

/// Names of every attention kernel (defaults and tuning variants) for `head_dim`, for
/// [`Dense::attention_kernel`].
#[doc(hidden)]
pub fn attention_kernel_names(head_dim: usize) -> impl Iterator<Item = &'static str> {
    let prefix = format!("attention_fwd_bf16_d{head_dim}");
    kernel::TILINGS
        .iter()
        .map(|&(n, _)| n)
        .filter(move |n| *n == prefix || n.starts_with(&format!("{prefix}_")))
}
