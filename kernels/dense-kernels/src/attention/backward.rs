//! Flash-attention backward (FlashAttention-2's algorithm), bf16 in and out, on tensor cores
//! with `mma.sync` (sm_80+).
//!
//! Given Q, K, V, the forward's output O and logsumexp L, and the output gradient dO, per
//! (batch, head):
//!
//! - [`attention_bwd_delta_bf16`]: `Δ_i = Σ_d dO_id · O_id` per query row (f32);
//! - the main kernel: a block owns [`BLOCK_N`] = 64 keys and keeps their `dK` and `dV` in
//!   registers while it walks the query tiles of 64 rows. Per tile it recomputes
//!   `Sᵀ = K·Qᵀ` (a warp owns 16 keys), `Pᵀ = exp(Sᵀ·scale − L)` (no softmax to redo: L is the
//!   normalizer), then `dV += Pᵀ·dO`, `dPᵀ = V·dOᵀ`, `dSᵀ = Pᵀ ∘ (dPᵀ − Δ)`, `dK += dSᵀ·Q`, and
//!   `dQ += dS·K` for the tile's queries, added to an f32 accumulator in global memory with
//!   atomics (blocks of different keys add to the same rows). `Pᵀ` and `dSᵀ` are A operands
//!   straight from the accumulator registers (the m16n8 → m16k16 layout identity the forward
//!   uses for P); only `dS` goes through shared memory, where `ldmatrix.trans` turns it around
//!   for the `dQ` product;
//! - [`attention_bwd_dq_bf16`]: `dQ = scale · accumulator`, rounded to bf16.
//!
//! `dK = scale · Σ dSᵀ·Q` is scaled once at the end. With `causal`, query tiles entirely before
//! the block's first key are skipped. Grouped-query attention: a block owns keys of one K/V
//! head and walks the query tiles of every query head of its group, so dK and dV sum over the
//! group in registers.

use gpu::atomic::Scope;
use gpu::mma;
use gpu::packed::Bf16x2;
use gpu::prelude::*;
use half::bf16;

use super::{AttentionParams, BLOCK_N, a_fragment, load_tile, swizzle};

/// Threads per block of the backward kernel (4 warps of 16 keys).
pub const BWD_THREADS: u32 = 128;
/// Query rows per tile of the backward kernel.
pub const BWD_BLOCK_M: usize = 64;
/// Threads per block of the Δ and dQ kernels.
pub const BWD_ROW_THREADS: u32 = 256;

/// Dynamic shared memory of the backward kernel for head dimension `head_dim`: the K, V, Q and
/// dO tiles, the 64 × 64 dS tile, and the tile's L and Δ.
pub const fn bwd_shared_bytes(head_dim: usize) -> usize {
    (2 * BLOCK_N + 2 * BWD_BLOCK_M) * head_dim * 2 + BLOCK_N * BWD_BLOCK_M * 2 + 2 * BWD_BLOCK_M * 4
}

/// `delta[r] = Σ_d o[r][d] · d_o[r][d]` for `rows` rows of `dim` bf16 values: a warp per row.
#[kernel]
pub fn attention_bwd_delta_bf16(
    o: &[bf16],
    d_o: &[bf16],
    delta: DisjointSlice<f32>,
    rows: u32,
    dim: u32,
) {
    let lane = thread::lane_id() as usize;
    let row = (thread::block_idx_x() * (thread::block_dim_x() / 32) + thread::warp_id()) as usize;
    let dim = dim as usize;
    let mut sum = 0f32;
    if row < rows as usize {
        let mut c = lane;
        while c < dim {
            sum += o[row * dim + c].to_f32() * d_o[row * dim + c].to_f32();
            c += 32;
        }
    }
    sum = warp::reduce(sum, gpu::ops::Sum);
    if lane == 0 && row < rows as usize {
        // SAFETY: one lane per row; `row < rows <= delta.len()` (checked by the write).
        unsafe { delta.write_unchecked_race(row, sum) };
    }
}

/// `dq[i] = bf16(scale · acc[i])`: the dQ accumulator of the backward kernel, scaled and
/// rounded.
#[kernel]
pub fn attention_bwd_dq_bf16(acc: &[f32], mut dq: DisjointSlice<bf16>, scale: f32) {
    let i = thread::global_index();
    if let Some(x) = acc.get(i.get()) {
        dq.set(i, gpu::packed::f32_to_bf16(x * scale));
    }
}

/// The backward kernel body for head dimension `D` (`KD = D / 16`, `ND = D / 8`: array lengths
/// stable Rust cannot derive). Grid: `(ceil(seq_k / 64), batch · kv_heads)` blocks of
/// [`BWD_THREADS`], [`bwd_shared_bytes`] of dynamic shared memory; `dq` zeroed before.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attention_bwd<const D: usize, const KD: usize, const ND: usize>(
    q: &[bf16],
    k: &[bf16],
    v: &[bf16],
    d_o: &[bf16],
    lse: &[f32],
    delta: &[f32],
    dq: DisjointSlice<f32>,
    dk: DisjointSlice<bf16>,
    dv: DisjointSlice<bf16>,
    p: AttentionParams,
) {
    const T: usize = BWD_THREADS as usize;
    const BM: usize = BWD_BLOCK_M;
    const { assert!(KD * 16 == D && ND * 8 == D && (D == 64 || D == 128)) };
    assert!(thread::block_dim_x() as usize == T && p.group >= 1);
    let tid = thread::thread_idx_x() as usize;
    let (lane, warp) = (tid % 32, tid / 32);
    let (g, t4) = (lane / 4, lane % 4);
    let (seq_q, seq_k) = (p.seq_q as usize, p.seq_k as usize);
    let causal = p.causal != 0;
    // The block's K/V head; its `group` query heads all add to its dK and dV (grouped-query
    // attention: summed here, in registers, instead of by atomics).
    let kv_bh = thread::block_idx_y() as usize;
    let (heads, group) = (p.heads as usize, p.group as usize);
    let kv_heads = heads / group;
    let first_q_bh = (kv_bh / kv_heads) * heads + (kv_bh % kv_heads) * group;
    let k0 = thread::block_idx_x() as usize * BLOCK_N;
    let k_ptr = k[kv_bh * seq_k * D..].as_ptr();
    let v_ptr = v[kv_bh * seq_k * D..].as_ptr();

    let tile = |rows: usize| (rows * D * 2) as u32;
    let base = shared::dynamic::<u8>().addr();
    let sk = base;
    let sv = sk + tile(BLOCK_N);
    let sq = sv + tile(BLOCK_N);
    let sdo = sq + tile(BM);
    let sds = sdo + tile(BM);
    let srow = sds + (BLOCK_N * BM * 2) as u32; // L·log2 e, then Δ, per query of the tile
    let words = shared::dynamic::<u32>();
    let floats = shared::dynamic::<f32>();
    let row_at = |i: usize| ((srow - base) / 4) as usize + i;

    // SAFETY (all tile loads): the pointers address this head's `seq · D` elements
    // (host-checked lengths, seq >= 1); the tiles are read only after wait + barrier.
    unsafe { load_tile::<D, BLOCK_N, T>(sk, k_ptr, D, k0, seq_k) };
    // SAFETY: as for K.
    unsafe { load_tile::<D, BLOCK_N, T>(sv, v_ptr, D, k0, seq_k) };
    mma::commit_group();

    // Fragment addressing (see the forward): A from row-major rows, B non-transposed from
    // n-major rows, B transposed from k-major rows.
    let a_row = (lane % 8) + 8 * ((lane / 8) % 2);
    let a_chunk = lane / 16;
    let b_row = (lane % 8) + 8 * (lane / 16);
    let b_chunk = (lane / 8) % 2;
    let t_row = (lane % 8) + 8 * ((lane / 8) % 2);
    let t_chunk = lane / 16;
    let key_row0 = k0 + warp * 16;
    let scale_log2 = p.scale_log2;

    let mut dk_acc = [[0f32; 4]; ND];
    let mut dv_acc = [[0f32; 4]; ND];
    let first = if causal { k0 / BM } else { 0 };
    // Query tiles per query head that can see this block's keys.
    let span = seq_q.div_ceil(BM).saturating_sub(first);
    for step in 0..group * span {
        let bh = first_q_bh + step / span;
        let q0 = (first + step % span) * BM;
        let q_ptr = q[bh * seq_q * D..].as_ptr();
        let do_ptr = d_o[bh * seq_q * D..].as_ptr();
        let (lse, delta) = (&lse[bh * seq_q..], &delta[bh * seq_q..]);
        // Every thread is done with the previous tile's Q, dO, dS, L and Δ.
        sync::sync_threads();
        // SAFETY: as for K and V above; the barrier ended every read of these tiles.
        unsafe { load_tile::<D, BM, T>(sq, q_ptr, D, q0, seq_q) };
        // SAFETY: as for Q.
        unsafe { load_tile::<D, BM, T>(sdo, do_ptr, D, q0, seq_q) };
        mma::commit_group();
        if tid < BM {
            let r = q0 + tid;
            let (l, d) = if r < seq_q {
                (lse[r] * core::f32::consts::LOG2_E, delta[r])
            } else {
                (0.0, 0.0)
            };
            // SAFETY: slots `row_at(0 .. 2·BM)` lie in the dynamic shared memory.
            unsafe {
                floats.write_unchecked(row_at(tid), l);
                floats.write_unchecked(row_at(BM + tid), d);
            }
        }
        mma::wait_group::<0>();
        sync::sync_threads();

        // Sᵀ = K_w · Qᵀ: this warp's 16 keys × 64 queries (8 n-tiles).
        let mut s = [[0f32; 4]; BM / 8];
        unroll8!(KD, |kk| {
            // SAFETY (ldmatrix here and below): in-tile, 16-byte aligned rows; all lanes call.
            let a =
                unsafe { mma::ldmatrix_x4(sk + swizzle::<D>(warp * 16 + a_row, 2 * kk + a_chunk)) };
            unroll4!(BM / 16, |np| {
                // SAFETY: an in-tile, 16-byte aligned row; all lanes call together.
                let b = unsafe {
                    mma::ldmatrix_x4(sq + swizzle::<D>(np * 16 + b_row, 2 * kk + b_chunk))
                };
                s[2 * np] = mma::mma_bf16_m16n8k16(a, [b[0], b[1]], s[2 * np]);
                s[2 * np + 1] = mma::mma_bf16_m16n8k16(a, [b[2], b[3]], s[2 * np + 1]);
            });
        });
        // Pᵀ = 2^(Sᵀ·scale·log2 e − L·log2 e), 0 where masked (keys past seq_k, queries past
        // seq_q, keys after the query when causal).
        unroll8!(BM / 8, |nt| {
            unroll4!(4, |e| {
                let key = key_row0 + g + 8 * (e >> 1);
                let col = nt * 8 + 2 * t4 + (e & 1);
                let query = q0 + col;
                let valid = key < seq_k && query < seq_q && !(causal && key > query);
                // SAFETY: `col < BM`: a slot written before the barrier.
                let l = unsafe { floats.read_unchecked(row_at(col)) };
                s[nt][e] = if valid {
                    math::exp2_approx(math::fma(s[nt][e], scale_log2, -l))
                } else {
                    0.0
                };
            });
        });
        // dV += Pᵀ · dO (Pᵀ as A fragments from the registers; dO transposed as B).
        let mut pf = [[0u32; 4]; BM / 16];
        unroll4!(BM / 16, |kk| {
            pf[kk] = a_fragment(s[2 * kk], s[2 * kk + 1]);
        });
        unroll4!(BM / 16, |kk| {
            unroll8!(ND / 2, |dp| {
                // SAFETY: an in-tile, 16-byte aligned row; all lanes call together.
                let b = unsafe {
                    mma::ldmatrix_x4_trans(sdo + swizzle::<D>(kk * 16 + t_row, 2 * dp + t_chunk))
                };
                dv_acc[2 * dp] = mma::mma_bf16_m16n8k16(pf[kk], [b[0], b[1]], dv_acc[2 * dp]);
                dv_acc[2 * dp + 1] =
                    mma::mma_bf16_m16n8k16(pf[kk], [b[2], b[3]], dv_acc[2 * dp + 1]);
            });
        });
        // dPᵀ = V_w · dOᵀ, then dSᵀ = Pᵀ ∘ (dPᵀ − Δ) in place of Pᵀ.
        let mut dpt = [[0f32; 4]; BM / 8];
        unroll8!(KD, |kk| {
            // SAFETY: an in-tile, 16-byte aligned row; all lanes call together.
            let a =
                unsafe { mma::ldmatrix_x4(sv + swizzle::<D>(warp * 16 + a_row, 2 * kk + a_chunk)) };
            unroll4!(BM / 16, |np| {
                let b =
                    // SAFETY: an in-tile, 16-byte aligned row; all lanes call together.
                    unsafe { mma::ldmatrix_x4(sdo + swizzle::<D>(np * 16 + b_row, 2 * kk + b_chunk)) };
                dpt[2 * np] = mma::mma_bf16_m16n8k16(a, [b[0], b[1]], dpt[2 * np]);
                dpt[2 * np + 1] = mma::mma_bf16_m16n8k16(a, [b[2], b[3]], dpt[2 * np + 1]);
            });
        });
        unroll8!(BM / 8, |nt| {
            unroll4!(4, |e| {
                let col = nt * 8 + 2 * t4 + (e & 1);
                // SAFETY: `BM + col < 2·BM`: a slot written before the barrier.
                let d = unsafe { floats.read_unchecked(row_at(BM + col)) };
                s[nt][e] *= dpt[nt][e] - d;
            });
        });
        // dK += dSᵀ · Q (dSᵀ as A fragments; Q transposed as B), and dSᵀ into shared memory
        // for dQ.
        unroll4!(BM / 16, |kk| {
            pf[kk] = a_fragment(s[2 * kk], s[2 * kk + 1]);
        });
        unroll4!(BM / 16, |kk| {
            unroll8!(ND / 2, |dp| {
                // SAFETY: an in-tile, 16-byte aligned row; all lanes call together.
                let b = unsafe {
                    mma::ldmatrix_x4_trans(sq + swizzle::<D>(kk * 16 + t_row, 2 * dp + t_chunk))
                };
                dk_acc[2 * dp] = mma::mma_bf16_m16n8k16(pf[kk], [b[0], b[1]], dk_acc[2 * dp]);
                dk_acc[2 * dp + 1] =
                    mma::mma_bf16_m16n8k16(pf[kk], [b[2], b[3]], dk_acc[2 * dp + 1]);
            });
        });
        // dQ here (atomics into the f32 accumulator), unless the deterministic dQ kernel does
        // it (an empty `dq`: the same for the whole launch).
        if !dq.is_empty() {
            unroll4!(BM / 16, |kk| {
                unroll2!(2, |h| {
                    unroll2!(2, |half| {
                        // n-tile 2kk + half holds queries (2kk + half)·8 .. +8: chunk 2kk + half.
                        let row = warp * 16 + g + 8 * h;
                        let addr = sds + swizzle::<BM>(row, 2 * kk + half) + 4 * t4 as u32;
                        // SAFETY: a 4-byte aligned slot of the dS tile; one lane per slot.
                        unsafe {
                            words
                                .write_unchecked(((addr - base) / 4) as usize, pf[kk][2 * half + h])
                        };
                    });
                });
            });
            sync::sync_threads();

            // dQ for this warp's 16 queries: dS (16 × 64 keys, from the transposed dSᵀ tile) · K.
            let mut dq_acc = [[0f32; 4]; ND];
            let (q_off, k_off) = (8 * ((lane / 8) % 2), 8 * (lane / 16));
            unroll4!(BLOCK_N / 16, |kk| {
                // SAFETY: an in-tile, 16-byte aligned row; all lanes call together.
                let a = unsafe {
                    mma::ldmatrix_x4_trans(
                        sds + swizzle::<BM>(kk * 16 + k_off + lane % 8, (warp * 16 + q_off) / 8),
                    )
                };
                unroll8!(ND / 2, |dp| {
                    // SAFETY: an in-tile, 16-byte aligned row; all lanes call together.
                    let b = unsafe {
                        mma::ldmatrix_x4_trans(sk + swizzle::<D>(kk * 16 + t_row, 2 * dp + t_chunk))
                    };
                    dq_acc[2 * dp] = mma::mma_bf16_m16n8k16(a, [b[0], b[1]], dq_acc[2 * dp]);
                    dq_acc[2 * dp + 1] =
                        mma::mma_bf16_m16n8k16(a, [b[2], b[3]], dq_acc[2 * dp + 1]);
                });
            });
            unroll2!(2, |h| {
                let query = q0 + warp * 16 + g + 8 * h;
                if query < seq_q {
                    let row = (bh * seq_q + query) * D;
                    unroll!(ND, |dt| {
                        let col = dt * 8 + 2 * t4;
                        // SAFETY: inside this head's dQ rows (host-checked length); other blocks add
                        // to the same elements only atomically.
                        unsafe {
                            let at = dq.as_mut_ptr().add(row + col);
                            gpu::atomic::global::add(at, dq_acc[dt][2 * h], Scope::Device);
                            gpu::atomic::global::add(
                                at.add(1),
                                dq_acc[dt][2 * h + 1],
                                Scope::Device,
                            );
                        }
                    });
                }
            });
        }
    }
    mma::wait_all();

    // dK (scaled once here) and dV, rounded to bf16, for this warp's keys.
    let scale = scale_log2 / core::f32::consts::LOG2_E;
    let (dk_out, dv_out) = (dk.as_mut_ptr().cast::<u32>(), dv.as_mut_ptr().cast::<u32>());
    unroll2!(2, |h| {
        let key = key_row0 + g + 8 * h;
        if key < seq_k {
            let row = (kv_bh * seq_k + key) * D;
            unroll!(ND, |dt| {
                let col = dt * 8 + 2 * t4;
                let kp = Bf16x2::from_f32(dk_acc[dt][2 * h] * scale, dk_acc[dt][2 * h + 1] * scale);
                let vp = Bf16x2::from_f32(dv_acc[dt][2 * h], dv_acc[dt][2 * h + 1]);
                // SAFETY: (key, col) inside this head's dK/dV (host-checked lengths); even offset,
                // so the u32 stores are aligned; one thread per (key, column pair) in the grid.
                unsafe {
                    dk_out.add((row + col) / 2).write(kp.0);
                    dv_out.add((row + col) / 2).write(vp.0);
                }
            });
        }
    });
}

/// The deterministic dQ kernel body: a block owns 64 query rows (a warp 16) and walks the key
/// tiles, recomputing `S = Q·Kᵀ`, `P = exp(S·scale − L)`, `dP = dO·Vᵀ` and `dS = P ∘ (dP − Δ)`
/// to add `dS·K` to its rows in registers: every dQ element is one thread's sum in a fixed order,
/// so repeated runs give the same bits (the main kernel then skips dQ). The forward's structure
/// with dO in the place of Q's second use: Q and dO fragments stay in registers, P and dS become
/// A operands straight from the accumulators, K is read transposed for `dS·K`. Grid:
/// `(ceil(seq_q / 64), batch · heads)` of [`BWD_THREADS`], [`bwd_dq_shared_bytes`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attention_bwd_dq<const D: usize, const KD: usize, const ND: usize>(
    q: &[bf16],
    k: &[bf16],
    v: &[bf16],
    d_o: &[bf16],
    lse: &[f32],
    delta: &[f32],
    dq: DisjointSlice<bf16>,
    p: AttentionParams,
) {
    const T: usize = BWD_THREADS as usize;
    const BM: usize = BWD_BLOCK_M;
    const { assert!(KD * 16 == D && ND * 8 == D && (D == 64 || D == 128)) };
    assert!(thread::block_dim_x() as usize == T && p.group >= 1);
    let tid = thread::thread_idx_x() as usize;
    let (lane, warp) = (tid % 32, tid / 32);
    let (g, t4) = (lane / 4, lane % 4);
    let (seq_q, seq_k) = (p.seq_q as usize, p.seq_k as usize);
    let causal = p.causal != 0;
    let bh = thread::block_idx_y() as usize;
    let (heads, group) = (p.heads as usize, p.group as usize);
    let kv_bh = (bh / heads) * (heads / group) + (bh % heads) / group;
    let q0 = thread::block_idx_x() as usize * BM;
    let q_ptr = q[bh * seq_q * D..].as_ptr();
    let do_ptr = d_o[bh * seq_q * D..].as_ptr();
    let k_ptr = k[kv_bh * seq_k * D..].as_ptr();
    let v_ptr = v[kv_bh * seq_k * D..].as_ptr();

    let tile = |rows: usize| (rows * D * 2) as u32;
    let sq = shared::dynamic::<u8>().addr();
    let sdo = sq + tile(BM);
    let sk = sdo + tile(BM);
    let sv = sk + tile(BLOCK_N);
    // SAFETY (all tile loads): the pointers address this head's `seq · D` elements
    // (host-checked lengths, seq >= 1); the tiles are read only after wait + barrier.
    unsafe { load_tile::<D, BM, T>(sq, q_ptr, D, q0, seq_q) };
    // SAFETY: as for Q.
    unsafe { load_tile::<D, BM, T>(sdo, do_ptr, D, q0, seq_q) };
    mma::commit_group();
    mma::wait_group::<0>();
    sync::sync_threads();

    // This warp's rows: Q and dO as A fragments for the whole kernel, and their L (log2 units)
    // and Δ.
    let a_row = warp * 16 + (lane % 8) + 8 * ((lane / 8) % 2);
    let mut qf = [[0u32; 4]; KD];
    let mut df = [[0u32; 4]; KD];
    unroll8!(KD, |kk| {
        // SAFETY: in-tile, 16-byte aligned rows; all lanes call together.
        unsafe {
            qf[kk] = mma::ldmatrix_x4(sq + swizzle::<D>(a_row, 2 * kk + lane / 16));
            df[kk] = mma::ldmatrix_x4(sdo + swizzle::<D>(a_row, 2 * kk + lane / 16));
        }
    });
    let row_of = |h: usize| q0 + warp * 16 + g + 8 * h;
    let mut l2 = [0f32; 2];
    let mut dl = [0f32; 2];
    unroll2!(2, |h| {
        let r = row_of(h);
        if r < seq_q {
            l2[h] = lse[bh * seq_q + r] * core::f32::consts::LOG2_E;
            dl[h] = delta[bh * seq_q + r];
        }
    });

    let b_row = (lane % 8) + 8 * (lane / 16);
    let b_chunk = (lane / 8) % 2;
    let t_row = (lane % 8) + 8 * ((lane / 8) % 2);
    let t_chunk = lane / 16;
    let scale_log2 = p.scale_log2;
    let q_last = seq_q.min(q0 + BM) - 1;
    let tiles = if causal {
        seq_k.div_ceil(BLOCK_N).min(q_last / BLOCK_N + 1)
    } else {
        seq_k.div_ceil(BLOCK_N)
    };
    let mut acc = [[0f32; 4]; ND];
    for j in 0..tiles {
        let k0 = j * BLOCK_N;
        // Every thread is done with the previous K and V tiles.
        sync::sync_threads();
        // SAFETY: as above.
        unsafe { load_tile::<D, BLOCK_N, T>(sk, k_ptr, D, k0, seq_k) };
        // SAFETY: as above.
        unsafe { load_tile::<D, BLOCK_N, T>(sv, v_ptr, D, k0, seq_k) };
        mma::commit_group();
        mma::wait_group::<0>();
        sync::sync_threads();
        // S = Q·K_jᵀ and dP = dO·V_jᵀ: 16 rows × 64 keys each.
        let mut s = [[0f32; 4]; BLOCK_N / 8];
        let mut dp = [[0f32; 4]; BLOCK_N / 8];
        unroll8!(KD, |kk| {
            unroll4!(BLOCK_N / 16, |np| {
                // SAFETY: in-tile, 16-byte aligned rows; all lanes call together.
                let (bk, bv) = unsafe {
                    (
                        mma::ldmatrix_x4(sk + swizzle::<D>(np * 16 + b_row, 2 * kk + b_chunk)),
                        mma::ldmatrix_x4(sv + swizzle::<D>(np * 16 + b_row, 2 * kk + b_chunk)),
                    )
                };
                s[2 * np] = mma::mma_bf16_m16n8k16(qf[kk], [bk[0], bk[1]], s[2 * np]);
                s[2 * np + 1] = mma::mma_bf16_m16n8k16(qf[kk], [bk[2], bk[3]], s[2 * np + 1]);
                dp[2 * np] = mma::mma_bf16_m16n8k16(df[kk], [bv[0], bv[1]], dp[2 * np]);
                dp[2 * np + 1] = mma::mma_bf16_m16n8k16(df[kk], [bv[2], bv[3]], dp[2 * np + 1]);
            });
        });
        // dS = P ∘ (dP − Δ), 0 where masked.
        unroll8!(BLOCK_N / 8, |nt| {
            unroll4!(4, |e| {
                let h = e >> 1;
                let key = k0 + nt * 8 + 2 * t4 + (e & 1);
                let row = row_of(h);
                let valid = key < seq_k && row < seq_q && !(causal && key > row);
                s[nt][e] = if valid {
                    math::exp2_approx(math::fma(s[nt][e], scale_log2, -l2[h])) * (dp[nt][e] - dl[h])
                } else {
                    0.0
                };
            });
        });
        // dQ += dS · K_j (dS as A fragments; K transposed as B).
        unroll4!(BLOCK_N / 16, |kk| {
            let a = a_fragment(s[2 * kk], s[2 * kk + 1]);
            unroll8!(ND / 2, |dt| {
                // SAFETY: an in-tile, 16-byte aligned row; all lanes call together.
                let b = unsafe {
                    mma::ldmatrix_x4_trans(sk + swizzle::<D>(kk * 16 + t_row, 2 * dt + t_chunk))
                };
                acc[2 * dt] = mma::mma_bf16_m16n8k16(a, [b[0], b[1]], acc[2 * dt]);
                acc[2 * dt + 1] = mma::mma_bf16_m16n8k16(a, [b[2], b[3]], acc[2 * dt + 1]);
            });
        });
    }
    mma::wait_all();
    let scale = scale_log2 / core::f32::consts::LOG2_E;
    let out = dq.as_mut_ptr().cast::<u32>();
    unroll2!(2, |h| {
        let row = row_of(h);
        if row < seq_q {
            let base = (bh * seq_q + row) * D;
            unroll!(ND, |dt| {
                let col = dt * 8 + 2 * t4;
                let pair = Bf16x2::from_f32(acc[dt][2 * h] * scale, acc[dt][2 * h + 1] * scale);
                // SAFETY: (row, col) inside this head's dQ (host-checked length), even offset so
                // the u32 store is aligned; one thread per (row, column pair) in the grid.
                unsafe { out.add((base + col) / 2).write(pair.0) };
            });
        }
    });
}

/// Dynamic shared memory of the deterministic dQ kernel: the Q, dO, K and V tiles.
pub const fn bwd_dq_shared_bytes(head_dim: usize) -> usize {
    (2 * BWD_BLOCK_M + 2 * BLOCK_N) * head_dim * 2
}

/// Deterministic dQ, head dimension 64 (see `attention_bwd_dq`).
#[allow(clippy::too_many_arguments)]
#[kernel(launch_bounds(128, 1))]
pub fn attention_bwd_dq_bf16_d64(
    q: &[bf16],
    k: &[bf16],
    v: &[bf16],
    d_o: &[bf16],
    lse: &[f32],
    delta: &[f32],
    dq: DisjointSlice<bf16>,
    p: AttentionParams,
) {
    attention_bwd_dq::<64, 4, 8>(q, k, v, d_o, lse, delta, dq, p);
}

/// Deterministic dQ, head dimension 128.
#[allow(clippy::too_many_arguments)]
#[kernel(launch_bounds(128, 1))]
pub fn attention_bwd_dq_bf16_d128(
    q: &[bf16],
    k: &[bf16],
    v: &[bf16],
    d_o: &[bf16],
    lse: &[f32],
    delta: &[f32],
    dq: DisjointSlice<bf16>,
    p: AttentionParams,
) {
    attention_bwd_dq::<128, 8, 16>(q, k, v, d_o, lse, delta, dq, p);
}

/// Flash-attention backward, head dimension 64: grid `(ceil(seq_k / 64), batch · kv_heads)` of
/// [`BWD_THREADS`], `bwd_shared_bytes(64)` of dynamic shared memory, `dq` zeroed.
#[allow(clippy::too_many_arguments)]
#[kernel(launch_bounds(128, 1))]
pub fn attention_bwd_bf16_d64(
    q: &[bf16],
    k: &[bf16],
    v: &[bf16],
    d_o: &[bf16],
    lse: &[f32],
    delta: &[f32],
    dq: DisjointSlice<f32>,
    dk: DisjointSlice<bf16>,
    dv: DisjointSlice<bf16>,
    p: AttentionParams,
) {
    attention_bwd::<64, 4, 8>(q, k, v, d_o, lse, delta, dq, dk, dv, p);
}

/// Flash-attention backward, head dimension 128: as [`attention_bwd_bf16_d64`] with
/// `bwd_shared_bytes(128)`.
#[allow(clippy::too_many_arguments)]
#[kernel(launch_bounds(128, 1))]
pub fn attention_bwd_bf16_d128(
    q: &[bf16],
    k: &[bf16],
    v: &[bf16],
    d_o: &[bf16],
    lse: &[f32],
    delta: &[f32],
    dq: DisjointSlice<f32>,
    dk: DisjointSlice<bf16>,
    dv: DisjointSlice<bf16>,
    p: AttentionParams,
) {
    attention_bwd::<128, 8, 16>(q, k, v, d_o, lse, delta, dq, dk, dv, p);
}
