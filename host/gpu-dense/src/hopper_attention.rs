//! `Dense::attention_wgmma`: the flash-attention forward on Hopper tensor cores (wgmma + TMA,
//! FlashAttention-3's design), see `hopper_kernels::attention` for the kernel. `Dense::attention`
//! picks it on compute capability 9.0 devices.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use ::hopper_kernels::attention::{self as kernel, FlashParams};
use gpu_host::cudarc::driver::sys;
use gpu_host::{DeviceBuffer, Error, LaunchConfig, Result, Stream};
use half::{bf16, f16};

use crate::attention::check_forward;
use crate::{AttentionInputs, AttentionShape, Dense, TensorMap};

/// Tensor maps of Q, K, V, O already on the device, by (the four addresses, batch, heads,
/// kv_heads, seq_q, seq_k, head_dim, Q rows per block, element type, and for a variable-length
/// batch its total query and key rows, else `u64::MAX`): a map's bytes depend only on these
/// (see `hopper_gemm`).
#[derive(Default)]
pub(crate) struct MapCache(Mutex<HashMap<[u64; 14], DeviceBuffer<TensorMap>>>);

impl MapCache {
    /// The cache, holding the maps of `key` (encoded by `encode` and uploaded on `stream` the
    /// first time; the cache is cleared when full): `&guard[&key]` while the guard lives.
    pub(crate) fn lookup(
        &self,
        stream: &Stream,
        key: [u64; 14],
        encode: impl FnOnce() -> Result<Vec<TensorMap>>,
    ) -> Result<MutexGuard<'_, HashMap<[u64; 14], DeviceBuffer<TensorMap>>>> {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !cache.contains_key(&key) {
            let maps = encode()?;
            if cache.len() >= MAP_CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(key, stream.to_device(&maps)?);
        }
        Ok(cache)
    }
}

/// Element types of the attention: bf16 everywhere, f16 on Hopper (the `mma.sync` kernels
/// other GPUs run are bf16 only). Scores, softmax and accumulators are f32 for both.
pub trait AttentionElement: gpu_host::gpu::DeviceCopy + sealed::Sealed {
    /// The element's name in kernel names: `bf16` or `f16`.
    const NAME: &'static str;
    /// The TMA element type.
    #[doc(hidden)]
    const TMA_TYPE: sys::CUtensorMapDataType;
    /// Launches the Hopper kernel for `variant` = (head dimension, consumer warpgroups): 64
    /// with 2 or 3, 128 and 256 with 2; `cu` the sequence starts and the work items of a
    /// variable-length batch (the `_varlen` kernels), `None` for fixed lengths (the kernels
    /// without those paths; head dimension 256 has one kernel for both, given empty lists).
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn launch_wgmma(
        module: &crate::hopper_kernels::Module,
        stream: &Stream,
        cfg: LaunchConfig,
        variant: (usize, u32),
        inputs: Inputs<'_, Self>,
        o: &mut DeviceBuffer<Self>,
        lse: &mut DeviceBuffer<f32>,
        cu: Option<CuLists<'_>>,
        params: FlashParams,
    ) -> Result<()>;
    /// The buffer as bf16, for the `mma.sync` kernels: `None` for other elements.
    #[doc(hidden)]
    fn as_bf16(buffer: &DeviceBuffer<Self>) -> Option<&DeviceBuffer<bf16>>;
    /// As [`AttentionElement::as_bf16`], mutable.
    #[doc(hidden)]
    fn as_bf16_mut(buffer: &mut DeviceBuffer<Self>) -> Option<&mut DeviceBuffer<bf16>>;
}

/// Q, K, V and their tensor maps, as the kernel receives them.
#[doc(hidden)]
pub type Inputs<'a, T> = (
    &'a DeviceBuffer<T>,
    &'a DeviceBuffer<T>,
    &'a DeviceBuffer<T>,
    &'a DeviceBuffer<TensorMap>,
);

/// A variable-length batch's sequence starts (queries, keys) and work items on the device.
#[doc(hidden)]
pub type CuLists<'a> = (
    &'a DeviceBuffer<u32>,
    &'a DeviceBuffer<u32>,
    &'a DeviceBuffer<u32>,
);

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

macro_rules! attention_elem {
    ($t:ty, $name:literal, $tma:ident, [$d64:ident, $d64m192:ident, $d128:ident],
     [$d64v:ident, $d64m192v:ident, $d128v:ident], $d256:ident, $bf16:expr, $bf16_mut:expr) => {
        impl AttentionElement for $t {
            const NAME: &'static str = $name;
            const TMA_TYPE: sys::CUtensorMapDataType = sys::CUtensorMapDataType::$tma;
            fn launch_wgmma(
                module: &crate::hopper_kernels::Module,
                stream: &Stream,
                cfg: LaunchConfig,
                variant: (usize, u32),
                (q, k, v, maps): Inputs<'_, Self>,
                o: &mut DeviceBuffer<Self>,
                lse: &mut DeviceBuffer<f32>,
                cu: Option<CuLists<'_>>,
                p: FlashParams,
            ) -> Result<()> {
                let (s, m) = (stream, module);
                match (variant, cu) {
                    ((256, _), Some(cu)) => {
                        m.$d256(s, cfg, q, k, v, maps, o, lse, cu.0, cu.1, cu.2, p)
                    }
                    ((256, _), None) => {
                        // Fixed lengths on the one head dimension 256 kernel: empty lists
                        // (nothing allocated).
                        let none = || stream.alloc_zeroed::<u32>(0);
                        let (cu_q, cu_k, order) = (none()?, none()?, none()?);
                        m.$d256(s, cfg, q, k, v, maps, o, lse, &cu_q, &cu_k, &order, p)
                    }
                    ((64, 3), None) => m.$d64m192(s, cfg, q, k, v, maps, o, lse, p),
                    ((64, _), None) => m.$d64(s, cfg, q, k, v, maps, o, lse, p),
                    (_, None) => m.$d128(s, cfg, q, k, v, maps, o, lse, p),
                    ((64, 3), Some(cu)) => {
                        m.$d64m192v(s, cfg, q, k, v, maps, o, lse, cu.0, cu.1, cu.2, p)
                    }
                    ((64, _), Some(cu)) => {
                        m.$d64v(s, cfg, q, k, v, maps, o, lse, cu.0, cu.1, cu.2, p)
                    }
                    (_, Some(cu)) => m.$d128v(s, cfg, q, k, v, maps, o, lse, cu.0, cu.1, cu.2, p),
                }
            }
            fn as_bf16(buffer: &DeviceBuffer<Self>) -> Option<&DeviceBuffer<bf16>> {
                $bf16(buffer)
            }
            fn as_bf16_mut(buffer: &mut DeviceBuffer<Self>) -> Option<&mut DeviceBuffer<bf16>> {
                $bf16_mut(buffer)
            }
        }
    };
}
attention_elem!(
    bf16,
    "bf16",
    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    [
        attention_fwd_bf16_d64_wgmma,
        attention_fwd_bf16_d64_m192_wgmma,
        attention_fwd_bf16_d128_wgmma
    ],
    [
        attention_fwd_bf16_d64_varlen_wgmma,
        attention_fwd_bf16_d64_m192_varlen_wgmma,
        attention_fwd_bf16_d128_varlen_wgmma
    ],
    attention_fwd_bf16_d256_wgmma,
    Some,
    Some
);
attention_elem!(
    f16,
    "f16",
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    [
        attention_fwd_f16_d64_wgmma,
        attention_fwd_f16_d64_m192_wgmma,
        attention_fwd_f16_d128_wgmma
    ],
    [
        attention_fwd_f16_d64_varlen_wgmma,
        attention_fwd_f16_d64_m192_varlen_wgmma,
        attention_fwd_f16_d128_varlen_wgmma
    ],
    attention_fwd_f16_d256_wgmma,
    |_| None,
    |_| None
);

/// How `attention_wgmma`'s blocks are scheduled (both on by default; the benchmark times each
/// part off).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgmmaSchedule {
    /// The two consumer warpgroups take turns issuing their products.
    pub ping_pong: bool,
    /// One block per SM walks the query tiles (else one block per tile).
    pub persistent: bool,
    /// Stages of the K/V ring: 2, or 4 (head dimension 64 only); head dimension 256 has room
    /// for 1 only; 0 picks the default.
    pub stages: u32,
    /// Causal: order the query tiles heaviest first within groups of this many heads
    /// (`u32::MAX`: the fewest heads per group that keep the blocks' work even, so the
    /// blocks running together share few heads' K and V in L2; 0, the default: that for
    /// query lengths up to 4096, all heads beyond).
    pub head_group: u32,
    /// Consumer warpgroups per block: 2 (128 query rows), or 3 (192 rows, head dimension 64
    /// only, FlashAttention-3's d64 tile); 0 picks the default ([`default_consumers`]).
    pub consumers: u32,
    /// O leaves through shared memory with TMA stores (one per warpgroup and 64 columns)
    /// instead of each thread's 4-byte stores (head dimension 64 and 128, fixed lengths; the
    /// default at 128: [`WgmmaSchedule::for_head_dim`]).
    pub tma_store: bool,
    /// Persistent: at most this many blocks (0, the default: one per SM). Fewer blocks each
    /// walk more work items, which is how the tests reach the item-to-item code (the next
    /// item's Q tile, scores and loads) on small shapes.
    pub max_blocks: u32,
}

impl WgmmaSchedule {
    /// The schedule [`Dense::attention`] runs at head dimension `head_dim` (fixed lengths):
    /// [`Default`], with O stored by TMA at head dimension 128, where it measured faster at
    /// every sequence length of the 16k-token sweep (at 64 the two measured the same; README,
    /// "Attention on Hopper").
    pub fn for_head_dim(head_dim: usize) -> Self {
        WgmmaSchedule {
            tma_store: head_dim == 128,
            ..WgmmaSchedule::default()
        }
    }
}

impl Default for WgmmaSchedule {
    fn default() -> Self {
        WgmmaSchedule {
            ping_pong: true,
            persistent: true,
            stages: 0,
            head_group: 0,
            consumers: 0,
            tma_store: false,
            max_blocks: 0,
        }
    }
}

/// Longest query length for which the default causal schedule orders tiles within head
/// groups (`balanced_head_group`): short rows gain from the L2 reuse (measured in
/// docs/gemm-tuning.md).
const HEAD_GROUP_MAX_SEQ: usize = 4096;

/// Heads per ordering group of the causal work items that keeps the persistent blocks'
/// work even: `2·grid / gcd(2·grid, blocks_m)` (at most `batch_heads`).
///
/// Why: the kernel sorts each group's items heaviest first (a query block's cost is its key
/// tiles: `blocks_m` levels, each `group` items wide) and deals them to the `grid` blocks in
/// snake order, so block `b` takes items `b` and `2·grid − 1 − b` of every two rounds. When a
/// group fills a whole number of such windows (`group · blocks_m` a multiple of `2·grid`) and
/// each window holds whole cost levels (`group` divides `2·grid`), the two costs of every
/// block in a window add up to the same sum. Groups of one SM's worth of heads (the rule
/// before) did not: at 1024 rows and 256 heads the busiest block had 1.4-1.5x the average
/// work and Nsight Compute counted the SMs active 70% of the kernel's time.
fn balanced_head_group(grid: u32, blocks_m: u32, batch_heads: u32) -> u32 {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    let window = 2 * grid.max(1);
    (window / gcd(window, blocks_m.max(1))).clamp(1, batch_heads.max(1))
}

/// The default depth of the K/V ring (head dimension 256: 1, all that fits beside its tiles).
const DEFAULT_STAGES: u32 = 2;

/// The default number of consumer warpgroups (the policy, measured in docs/gemm-tuning.md on
/// the 16k-token sweep): head dimension 64 takes 192-row tiles (3) once the rows per sequence
/// (the mean over a variable-length batch) are long enough; 2 else. Fixed lengths: from 1024
/// rows, causal from 2048 (1024 causal rows lose to the masked key tile of the first
/// warpgroup), as timed on 2026-12-04. Variable lengths keep the thresholds timed before that
/// day's changes (2048, causal 8192): the ragged batches were not timed again.
fn default_consumers(head_dim: usize, rows_per_seq: usize, causal: bool, varlen: bool) -> u32 {
    let min_rows = match (causal, varlen) {
        (false, false) => 1024,
        (true, false) => 2048,
        (false, true) => 2048,
        (true, true) => 8192,
    };
    if head_dim == 64 && rows_per_seq >= min_rows {
        3
    } else {
        2
    }
}

/// Most cached map sets; the cache is cleared when full (a set of four is 512 bytes of device
/// memory).
const MAP_CACHE_LIMIT: usize = 64;

/// Encodes the 3-D tensor map of `matrices` row-major `rows × head_dim` bf16 or f16 (`T`)
/// matrices at `addr` (`[matrices, rows, head_dim]` contiguous), read in boxes of
/// `box_rows × 64` elements of one matrix with the 128-byte swizzle: rows past a matrix's end
/// read as zeros. `packed`: the variable-length layout `[rows, matrices, head_dim]` instead
/// (a token's heads side by side; the map is still `[head_dim, rows, matrices]`, rows
/// `matrices · head_dim` apart, so a box reads one head's rows).
fn encode_map<T: AttentionElement>(
    addr: u64,
    (matrices, rows, head_dim): (usize, usize, usize),
    packed: bool,
    box_rows: u32,
    name: &str,
) -> Result<TensorMap> {
    // The strides are multiples of 16 bytes (head_dim is 64, 128 or 256).
    let (row, matrix) = if packed {
        (matrices * head_dim, head_dim)
    } else {
        (head_dim, rows * head_dim)
    };
    crate::tma_map::encode_tiled(
        T::TMA_TYPE,
        addr,
        &[head_dim as u64, rows as u64, matrices as u64],
        &[row as u64 * 2, matrix as u64 * 2],
        &[64, box_rows, 1],
        || format!("{matrices} {rows}×{head_dim} matrices for `{name}`"),
    )
}

/// A variable-length batch for the Hopper kernel: the checked cumulative sequence starts of
/// the queries and keys (`batch + 1` entries each).
#[derive(Clone, Copy)]
pub(crate) struct Varlen<'a> {
    pub cu_q: &'a [u32],
    pub cu_k: &'a [u32],
}

impl Varlen<'_> {
    fn totals(&self) -> (usize, usize) {
        (
            self.cu_q[self.cu_q.len() - 1] as usize,
            self.cu_k[self.cu_k.len() - 1] as usize,
        )
    }

    /// The kernel's work items: every (query block of `bm` rows, batch·head) that has query
    /// rows, as `[block, batch·head]` pairs, sorted by their key tiles (the cost), most first
    /// (stable: ties stay by head, then block, so blocks running together share K/V in L2).
    /// The persistent blocks deal them out in snake order, as the fixed-length causal tiles.
    fn work_items(&self, heads: usize, bm: usize, causal: bool) -> Vec<u32> {
        let bn = kernel::BN as usize;
        let mut items: Vec<(usize, u32, u32)> = Vec::new();
        for (b, (q, k)) in self.cu_q.windows(2).zip(self.cu_k.windows(2)).enumerate() {
            let (len_q, len_k) = ((q[1] - q[0]) as usize, (k[1] - k[0]) as usize);
            for h in 0..heads {
                for mb in 0..len_q.div_ceil(bm) {
                    let tiles = if causal {
                        len_k
                            .div_ceil(bn)
                            .min((len_q.min((mb + 1) * bm) - 1) / bn + 1)
                    } else {
                        len_k.div_ceil(bn)
                    };
                    items.push((tiles, mb as u32, (b * heads + h) as u32));
                }
            }
        }
        items.sort_by_key(|&(tiles, _, _)| std::cmp::Reverse(tiles));
        items.iter().flat_map(|&(_, mb, bh)| [mb, bh]).collect()
    }
}

impl Dense {
    /// Whether [`Dense::attention`] runs the Hopper kernel for `shape` on `stream`: a compute
    /// capability 9.0 GPU (not the simulator) and head dimension 64, 128 or 256 (bf16 or f16).
    pub(crate) fn wgmma_attention_fits(&self, stream: &Stream, shape: AttentionShape) -> bool {
        self.hopper.is_some() && !stream.is_simulator() && matches!(shape.head_dim, 64 | 128 | 256)
    }

    /// [`Dense::attention_with_lse`] through the Hopper kernel (wgmma + TMA, FlashAttention-3's
    /// design), whatever the default would pick: for tests and the benchmark's comparison
    /// with the `mma.sync` kernel ([`Dense::attention_kernel`]).
    ///
    /// bf16 or f16 elements.
    ///
    /// Errors (nothing launched): what [`Dense::attention`] refuses, and any device other than
    /// a compute capability 9.0 GPU (the simulator included: wgmma, TMA and mbarrier
    /// transaction counts are not simulated).
    #[allow(clippy::too_many_arguments)]
    pub fn attention_wgmma<T: AttentionElement>(
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
        self.launch_wgmma(
            stream,
            (q, k, v),
            o,
            lse,
            shape,
            causal,
            WgmmaSchedule::for_head_dim(shape.head_dim),
            None,
        )
    }

    /// [`Dense::attention_wgmma`] with a chosen schedule (the default is both parts on): for
    /// the benchmark's comparison and the tests.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn attention_wgmma_with<T: AttentionElement>(
        &self,
        schedule: WgmmaSchedule,
        stream: &Stream,
        q: &DeviceBuffer<T>,
        k: &DeviceBuffer<T>,
        v: &DeviceBuffer<T>,
        o: &mut DeviceBuffer<T>,
        lse: Option<&mut DeviceBuffer<f32>>,
        shape: AttentionShape,
        causal: bool,
    ) -> Result<()> {
        self.launch_wgmma(stream, (q, k, v), o, lse, shape, causal, schedule, None)
    }

    /// The Hopper kernel for fixed lengths (`varlen` `None`: `shape` gives the tensors) or for
    /// a variable-length batch (`varlen`: the checked sequence starts, `shape.seq_q`/`seq_k`
    /// the longest sequences, the tensors `[total, heads, head_dim]`, see
    /// [`Dense::attention_varlen`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_wgmma<T: AttentionElement>(
        &self,
        stream: &Stream,
        (q, k, v): AttentionInputs<'_, T>,
        o: &mut DeviceBuffer<T>,
        lse: Option<&mut DeviceBuffer<f32>>,
        shape: AttentionShape,
        causal: bool,
        schedule: WgmmaSchedule,
        varlen: Option<Varlen<'_>>,
    ) -> Result<()> {
        // The default tile height by the typical length: the mean over a variable-length
        // batch's sequences.
        let rows_per_seq = match varlen {
            Some(v) => v.totals().0 / shape.batch.max(1),
            None => shape.seq_q,
        };
        let consumers = match schedule.consumers {
            0 => default_consumers(shape.head_dim, rows_per_seq, causal, varlen.is_some()),
            n => n,
        };
        let dim = match shape.head_dim {
            64 | 128 | 256 => format!("_d{}", shape.head_dim),
            _ => String::new(),
        };
        let m192 = if consumers == 3 { "_m192" } else { "" };
        // The kernel that runs: `_varlen` ones for variable lengths, except at head dimension
        // 256 (one kernel for both).
        let vl = if varlen.is_some() && shape.head_dim != 256 {
            "_varlen"
        } else {
            ""
        };
        let name = &format!("attention_fwd_{}{dim}{m192}{vl}_wgmma", T::NAME);
        // Shapes first (they are wrong on any device), then the device.
        let work = check_forward(
            name,
            (q.len(), k.len(), v.len(), o.len()),
            lse.as_ref().map(|l| l.len()),
            shape,
            varlen.map(|v| (v.cu_q, v.cu_k)),
        )?;
        let stages = match (schedule.stages, shape.head_dim) {
            (0 | 1, 256) => 1,
            (0, _) => DEFAULT_STAGES,
            (2, 64 | 128) | (4, 64) => schedule.stages,
            (n, d) => {
                return Err(Error::Argument {
                    kernel: name.to_string(),
                    argument: "schedule.stages".to_string(),
                    message: format!(
                        "{n} K/V stages for head_dim {d}: 2, or 4 with head_dim 64, 1 with \
                         head_dim 256 (shared memory)"
                    ),
                });
            }
        };
        if schedule.tma_store && (shape.head_dim == 256 || varlen.is_some()) {
            return Err(Error::Argument {
                kernel: name.to_string(),
                argument: "schedule.tma_store".to_string(),
                message: format!(
                    "O stored by TMA: head_dim 64 or 128 with fixed lengths only (head_dim {}{}: \
                     {})",
                    shape.head_dim,
                    if varlen.is_some() {
                        ", variable lengths"
                    } else {
                        ""
                    },
                    if varlen.is_some() {
                        "a 64-row box would write past a sequence's end into the next"
                    } else {
                        "no shared memory left for the staging tile"
                    }
                ),
            });
        }
        if !(consumers == 2 || (consumers == 3 && shape.head_dim == 64)) {
            return Err(Error::Argument {
                kernel: name.to_string(),
                argument: "schedule.consumers".to_string(),
                message: format!(
                    "{consumers} consumer warpgroups for head_dim {}: 2, or 3 with head_dim 64 \
                     (registers)",
                    shape.head_dim
                ),
            });
        }
        let bm = kernel::block_rows(consumers);
        let Some(module) = self.hopper.as_ref() else {
            return Err(Error::LaunchConfig {
                kernel: name.to_string(),
                message: "needs a compute capability 9.0 GPU (H100/H200: wgmma and TMA exist on \
                          sm_90a only); Dense::attention runs the mma.sync kernel elsewhere"
                    .to_string(),
            });
        };
        if stream.is_simulator() {
            return Err(Error::LaunchConfig {
                kernel: name.to_string(),
                message: "wgmma, TMA and mbarrier transaction counts are not simulated; this \
                          kernel runs on a compute capability 9.0 GPU only"
                    .to_string(),
            });
        }
        if !work {
            return Ok(());
        }
        let totals = varlen.map(|v| v.totals());
        let (total_q, total_k) = totals.map_or((u64::MAX, u64::MAX), |(a, b)| (a as u64, b as u64));
        let key = [
            q.device_ptr(),
            k.device_ptr(),
            v.device_ptr(),
            o.device_ptr(),
            shape.batch as u64,
            shape.heads as u64,
            shape.kv_heads as u64,
            shape.seq_q as u64,
            shape.seq_k as u64,
            shape.head_dim as u64,
            bm as u64,
            T::TMA_TYPE as u64,
            total_q,
            total_k,
        ];
        let cache = self.wgmma_attention_maps.lookup(stream, key, || {
            let d = shape.head_dim;
            // Fixed lengths: a matrix per (batch, head); variable lengths: per head, the rows
            // of all sequences.
            let (q_dims, kv_dims) = match totals {
                None => (
                    (shape.batch * shape.heads, shape.seq_q, d),
                    (shape.batch * shape.kv_heads, shape.seq_k, d),
                ),
                Some((tq, tk)) => ((shape.heads, tq, d), (shape.kv_heads, tk, d)),
            };
            let packed = totals.is_some();
            Ok(vec![
                encode_map::<T>(key[0], q_dims, packed, bm, name)?,
                encode_map::<T>(key[1], kv_dims, packed, kernel::BN, name)?,
                encode_map::<T>(key[2], kv_dims, packed, kernel::BN, name)?,
                // O, stored by each consumer warpgroup in 64-row boxes (fixed lengths only).
                encode_map::<T>(key[3], q_dims, packed, 64, name)?,
            ])
        })?;
        let maps = &cache[&key];
        let bh = (shape.batch * shape.heads) as u32;
        let blocks_m = shape.seq_q.div_ceil(bm as usize) as u32;
        // The blocks of a persistent launch (the items' count is the same for fixed lengths).
        let blocks = match schedule.max_blocks {
            0 => self.wgmma.sm_count,
            n => n.min(self.wgmma.sm_count),
        };
        let persistent_grid = kernel::work_items(shape.seq_q as u32, bh, consumers)
            .min(blocks)
            .max(1);
        let balanced = balanced_head_group(persistent_grid, blocks_m, bh);
        let head_group = match schedule.head_group {
            0 if shape.seq_q <= HEAD_GROUP_MAX_SEQ => balanced,
            0 => bh,
            u32::MAX => balanced,
            n => n.clamp(1, bh),
        };
        // Variable lengths: the work items listed by the host (see `Varlen::work_items`).
        let order = varlen.map(|v| v.work_items(shape.heads, bm as usize, causal));
        let items = match &order {
            Some(list) => (list.len() / 2) as u32,
            None => kernel::work_items(shape.seq_q as u32, bh, consumers),
        };
        let params = FlashParams {
            seq_q: shape.seq_q as u32,
            seq_k: shape.seq_k as u32,
            // softmax(x·scale) = 2^(x·scale·log2 e − max) / Σ: prescaling lets ex2.approx do it.
            scale_log2: (1.0 / (shape.head_dim as f64).sqrt() * std::f64::consts::LOG2_E) as f32,
            causal: causal as u32,
            heads: shape.heads as u32,
            batch_heads: bh,
            group: (shape.heads / shape.kv_heads) as u32,
            ping_pong: schedule.ping_pong as u32,
            stages,
            head_group,
            tma_store: schedule.tma_store as u32,
            total_q: totals.map_or(0, |(tq, _)| tq as u32),
            items,
            // Causal, or the host's list sorted by cost.
            snake: (causal || order.is_some()) as u32,
        };
        let grid = if schedule.persistent {
            items.min(blocks)
        } else {
            items
        };
        let cfg = LaunchConfig::new(grid, (kernel::threads(consumers), 1, 1)).with_shared_mem(
            kernel::shared_bytes(shape.head_dim as u32, stages, consumers, schedule.tma_store),
        );
        // No logsumexp wanted: an empty buffer (nothing allocated), which the kernel skips.
        let mut none = stream.alloc_zeroed::<f32>(0)?;
        let lse = lse.unwrap_or(&mut none);
        // Variable lengths: the sequence starts and work items on the device, for the
        // `_varlen` kernels; fixed lengths launch the kernels without them.
        let lists = match (varlen, order) {
            (Some(v), Some(order)) => Some((
                stream.to_device(v.cu_q)?,
                stream.to_device(v.cu_k)?,
                stream.to_device(&order)?,
            )),
            _ => None,
        };
        T::launch_wgmma(
            module,
            stream,
            cfg,
            (shape.head_dim, consumers),
            (q, k, v, maps),
            o,
            lse,
            lists
                .as_ref()
                .map(|(cu_q, cu_k, order)| (cu_q, cu_k, order)),
            params,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{balanced_head_group, kernel};

    /// Each persistent block's key tiles when the kernel deals `seq`-row causal items of
    /// `batch_heads` heads in groups of `group` heads (its own `work_item` and `item_of`).
    fn block_work(seq: u32, batch_heads: u32, group: u32, grid: u32) -> Vec<u32> {
        let bm = kernel::BM;
        let blocks_m = seq.div_ceil(bm);
        let items = blocks_m * batch_heads;
        let mut work = vec![0; grid as usize];
        for round in 0..items.div_ceil(grid) {
            for block in 0..grid {
                let t = kernel::item_of(round, block, grid, true);
                if t < items {
                    let (mb, _) = kernel::work_item(t, blocks_m, batch_heads, group, true);
                    work[block as usize] += mb + 1;
                }
            }
        }
        work
    }

    fn imbalance(work: &[u32]) -> f64 {
        let mean = work.iter().sum::<u32>() as f64 / work.len() as f64;
        *work.iter().max().unwrap() as f64 / mean
    }

    #[test]
    fn balanced_head_groups_even_out_the_causal_blocks() {
        let grid = 132;
        // (rows, batch·heads) of the 16k-token sweep's short rows: d128 and d64.
        for (seq, bh) in [
            (1024, 256),
            (2048, 128),
            (1024, 512),
            (2048, 256),
            (4096, 64),
        ] {
            let blocks_m = seq / kernel::BM;
            let group = balanced_head_group(grid, blocks_m, bh);
            let even = imbalance(&block_work(seq, bh, group, grid));
            assert!(
                even < 1.025,
                "seq {seq}, {bh} heads, group {group}: {even:.3}"
            );
        }
        // The rule before (one SM's worth of heads per group) left the busiest block with
        // 1.4x the average work at 1024 rows.
        let before = imbalance(&block_work(1024, 256, 132u32.div_ceil(8), grid));
        assert!(before > 1.3, "{before:.3}");
        assert_eq!(balanced_head_group(132, 8, 256), 33);
        assert_eq!(
            balanced_head_group(132, 8, 20),
            20,
            "at most the heads there are"
        );
    }
}
