//! The simulator's tensor-core building blocks (`gpu::mma`, `gpu::packed`) against scalar
//! references: every `ldmatrix` flavour, both `mma` types, `cp.async` with zero fill, and the
//! packed conversions and arithmetic.

use core::ffi::c_void;

use gpu::mma;
use gpu::packed::{self, Bf16x2, F16x2};
use gpu::prelude::*;
use gpu::sim::{self, Launch, SimOptions};
use half::{bf16, f16};

#[derive(Default)]
struct Params {
    storage: Vec<[u64; 2]>,
}

impl Params {
    fn slice<T>(mut self, data: &[T]) -> Self {
        self.storage.push([data.as_ptr() as u64, 0]);
        self.storage.push([data.len() as u64, 0]);
        self
    }
    fn out<T>(mut self, data: &mut [T]) -> Self {
        self.storage.push([data.as_mut_ptr() as u64, 0]);
        self.storage.push([data.len() as u64, 0]);
        self
    }
    fn value<T: Copy>(mut self, v: T) -> Self {
        let mut b = [0u64; 2];
        // SAFETY: `b` has 16 bytes; every `T` passed here is at most 8.
        unsafe { (b.as_mut_ptr() as *mut T).write_unaligned(v) };
        self.storage.push(b);
        self
    }
}

fn launch(kernel: &str, entry: sim::Entry, threads: u32, mut params: Params) {
    let p: Vec<*mut c_void> = params
        .storage
        .iter_mut()
        .map(|b| b.as_mut_ptr().cast())
        .collect();
    let l = Launch {
        kernel,
        entry,
        grid: Dim3::new(1, 1, 1),
        block: Dim3::new(threads, 1, 1),
        dynamic_shared_bytes: 0,
        params: &p,
    };
    // SAFETY: every test passes the parameters its kernel declares, over live buffers.
    unsafe { sim::launch_with(&l, &SimOptions::from_env()) }.unwrap();
}

/// A small deterministic generator (no dependency): values in [-1, 1).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// Loads 4 8×8 matrices of u16 (matrix i, row r, column c holds `i*64 + r*8 + c`, stored with a
/// padded row pitch of 24 elements) with every ldmatrix flavour; `mode` picks it.
#[kernel]
pub fn ldmatrix_all(src: &[u16], mode: u32, out: DisjointSlice<u32>) {
    let tile = shared_array!(u16, 4 * 8 * 24);
    let lane = thread::lane_id();
    let mut i = lane as usize;
    while i < src.len() {
        tile.write(i, src[i]);
        i += 32;
    }
    sync_threads();
    // Lane l addresses row l % 8 of matrix l / 8.
    let addr = tile.addr_of(((lane / 8) * 8 * 24 + (lane % 8) * 24) as usize);
    let mut r = [0u32; 4];
    // SAFETY: every lane passes a 16-byte aligned row (pitch 48 bytes) inside `tile`.
    unsafe {
        match mode {
            0 => r[..1].copy_from_slice(&mma::ldmatrix_x1(addr)),
            1 => r[..2].copy_from_slice(&mma::ldmatrix_x2(addr)),
            2 => r = mma::ldmatrix_x4(addr),
            3 => r[..1].copy_from_slice(&mma::ldmatrix_x1_trans(addr)),
            4 => r[..2].copy_from_slice(&mma::ldmatrix_x2_trans(addr)),
            _ => r = mma::ldmatrix_x4_trans(addr),
        }
    }
    for (k, v) in r.iter().enumerate() {
        // SAFETY: index lane * 4 + k is unique to this lane.
        unsafe { out.write_unchecked_race(lane as usize * 4 + k, *v) };
    }
}

#[test]
fn ldmatrix_matches_the_documented_fragment_layout() {
    let mut src = vec![0u16; 4 * 8 * 24];
    for i in 0..4 {
        for r in 0..8 {
            for c in 0..8 {
                src[i * 8 * 24 + r * 24 + c] = (i * 64 + r * 8 + c) as u16;
            }
        }
    }
    for mode in 0..6u32 {
        let n = [1, 2, 4][mode as usize % 3];
        let trans = mode >= 3;
        let mut out = vec![0xdead_beefu32; 32 * 4];
        launch(
            "ldmatrix_all",
            __gpu_sim_entry_ldmatrix_all,
            32,
            Params::default().slice(&src).value(mode).out(&mut out),
        );
        for lane in 0..32usize {
            let (g, t) = (lane / 4, lane % 4);
            for i in 0..n {
                let at = |r: usize, c: usize| (i * 64 + r * 8 + c) as u32;
                let want = if trans {
                    at(2 * t, g) | at(2 * t + 1, g) << 16
                } else {
                    at(g, 2 * t) | at(g, 2 * t + 1) << 16
                };
                assert_eq!(
                    out[lane * 4 + i],
                    want,
                    "mode {mode} lane {lane} matrix {i}"
                );
            }
        }
    }
}

/// One m16n8k16 product: A 16×16 and B given as 8×16 (n-major, i.e. Bᵀ row-major), both as
/// 16-bit bits; `f16` picks the type. Fragments are gathered by the documented layout.
#[kernel]
pub fn mma_one(a: &[u16], bt: &[u16], c: &[f32], f16: u32, d: DisjointSlice<f32>) {
    let lane = thread::lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let pair = |m: &[u16], row: usize, col: usize, pitch: usize| {
        m[row * pitch + col] as u32 | (m[row * pitch + col + 1] as u32) << 16
    };
    let fa = [
        pair(a, g, 2 * t, 16),
        pair(a, g + 8, 2 * t, 16),
        pair(a, g, 2 * t + 8, 16),
        pair(a, g + 8, 2 * t + 8, 16),
    ];
    let fb = [pair(bt, g, 2 * t, 16), pair(bt, g, 2 * t + 8, 16)];
    let fc = [
        c[g * 8 + 2 * t],
        c[g * 8 + 2 * t + 1],
        c[(g + 8) * 8 + 2 * t],
        c[(g + 8) * 8 + 2 * t + 1],
    ];
    let r = if f16 != 0 {
        mma::mma_f16_m16n8k16(fa, fb, fc)
    } else {
        mma::mma_bf16_m16n8k16(fa, fb, fc)
    };
    let idx = [
        g * 8 + 2 * t,
        g * 8 + 2 * t + 1,
        (g + 8) * 8 + 2 * t,
        (g + 8) * 8 + 2 * t + 1,
    ];
    for k in 0..4 {
        // SAFETY: the four C positions of a lane are its own (documented layout).
        unsafe { d.write_unchecked_race(idx[k], r[k]) };
    }
}

#[test]
fn mma_bf16_and_f16_match_a_scalar_reference() {
    let mut rng = Lcg(7);
    for f16_mode in [0u32, 1] {
        let to_bits = |x: f32| {
            if f16_mode == 1 {
                f16::from_f32(x).to_bits()
            } else {
                bf16::from_f32(x).to_bits()
            }
        };
        let to_f64 = |h: u16| {
            if f16_mode == 1 {
                f16::from_bits(h).to_f64()
            } else {
                bf16::from_bits(h).to_f64()
            }
        };
        let a: Vec<u16> = (0..256).map(|_| to_bits(rng.next())).collect();
        let bt: Vec<u16> = (0..128).map(|_| to_bits(rng.next())).collect();
        let c: Vec<f32> = (0..128).map(|_| rng.next()).collect();
        let mut d = vec![f32::NAN; 128];
        launch(
            "mma_one",
            __gpu_sim_entry_mma_one,
            32,
            Params::default()
                .slice(&a)
                .slice(&bt)
                .slice(&c)
                .value(f16_mode)
                .out(&mut d),
        );
        for m in 0..16 {
            for n in 0..8 {
                let want: f64 = c[m * 8 + n] as f64
                    + (0..16)
                        .map(|k| to_f64(a[m * 16 + k]) * to_f64(bt[n * 16 + k]))
                        .sum::<f64>();
                let got = d[m * 8 + n] as f64;
                assert!(
                    (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                    "f16={f16_mode} D[{m}][{n}] = {got}, want {want}"
                );
            }
        }
    }
}

/// A full ldmatrix → mma path: A (16×16) and Bᵀ (8×16) staged in shared memory by cp.async
/// (16-byte chunks; the last `ragged` bytes of each Bᵀ row zero-filled), fragments by
/// ldmatrix_x4 / x2, product written row-major.
#[kernel]
pub fn cp_async_ldmatrix_mma(a: &[u16], bt: &[u16], ragged: u32, d: DisjointSlice<f32>) {
    let sa = shared_array!(u16, 16 * 16);
    let sb = shared_array!(u16, 8 * 16);
    let lane = thread::lane_id() as usize;
    // 32 chunks of 16 bytes for A (16 rows × 2), 16 for Bᵀ (8 rows × 2).
    // SAFETY: chunk addresses are 16-byte aligned and inside the arrays / slices.
    unsafe {
        mma::cp_async_cg16(sa.addr_of(lane * 8), a.as_ptr().add(lane * 8).cast());
        if lane < 16 {
            let keep = if lane % 2 == 1 { 16 - ragged } else { 16 };
            mma::cp_async_cg16_zfill(sb.addr_of(lane * 8), bt.as_ptr().add(lane * 8).cast(), keep);
        }
    }
    mma::commit_group();
    mma::wait_group::<0>();
    sync_threads();
    // A: row lane % 16, column (lane / 16) * 8. Bᵀ: row lane % 8, column ((lane / 8) % 2) * 8.
    // SAFETY: 16-byte aligned rows inside the arrays.
    let (fa, fb) = unsafe {
        (
            mma::ldmatrix_x4(sa.addr_of((lane % 16) * 16 + (lane / 16) * 8)),
            mma::ldmatrix_x2(sb.addr_of((lane % 8) * 16 + ((lane / 8) % 2) * 8)),
        )
    };
    let r = mma::mma_bf16_m16n8k16(fa, fb, [0.0; 4]);
    let (g, t) = (lane / 4, lane % 4);
    let idx = [
        g * 8 + 2 * t,
        g * 8 + 2 * t + 1,
        (g + 8) * 8 + 2 * t,
        (g + 8) * 8 + 2 * t + 1,
    ];
    for k in 0..4 {
        // SAFETY: the four C positions of a lane are its own.
        unsafe { d.write_unchecked_race(idx[k], r[k]) };
    }
}

#[test]
fn cp_async_zero_fill_then_ldmatrix_then_mma() {
    let mut rng = Lcg(11);
    let a: Vec<bf16> = (0..256).map(|_| bf16::from_f32(rng.next())).collect();
    let bt: Vec<bf16> = (0..128).map(|_| bf16::from_f32(rng.next())).collect();
    for ragged in [0u32, 6, 16] {
        let mut d = vec![f32::NAN; 128];
        let a_bits: Vec<u16> = a.iter().map(|x| x.to_bits()).collect();
        let b_bits: Vec<u16> = bt.iter().map(|x| x.to_bits()).collect();
        launch(
            "cp_async_ldmatrix_mma",
            __gpu_sim_entry_cp_async_ldmatrix_mma,
            32,
            Params::default()
                .slice(&a_bits)
                .slice(&b_bits)
                .value(ragged)
                .out(&mut d),
        );
        // k in 16 - ragged/2 .. 16 of each Bᵀ row were zero-filled.
        let kept = 16 - ragged as usize / 2;
        for m in 0..16 {
            for n in 0..8 {
                let want: f64 = (0..kept)
                    .map(|k| a[m * 16 + k].to_f64() * bt[n * 16 + k].to_f64())
                    .sum();
                let got = d[m * 8 + n] as f64;
                assert!(
                    (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                    "ragged {ragged}: D[{m}][{n}] = {got}, want {want}"
                );
            }
        }
    }
}

/// Packed ops inside a kernel (one thread per pair).
#[kernel]
pub fn packed_ops(x: &[f32], out: DisjointSlice<u32>) {
    let i = thread::global_index();
    let j = i.get();
    if j * 2 + 1 < x.len() {
        let (lo, hi) = (x[2 * j], x[2 * j + 1]);
        let b = Bf16x2::from_f32(lo, hi);
        let h = F16x2::from_f32(lo, hi);
        let v = [
            b.0,
            b.fma(b, b).0,
            (b + b).0,
            (b * b).0,
            b.max(Bf16x2::from_f32(hi, lo)).0,
            h.0,
            h.fma(h, h).0,
            (h + h).0,
            (h * h).0,
            h.max(F16x2::from_f32(hi, lo)).0,
            packed::f32_to_bf16(lo).to_bits() as u32,
            packed::f32_to_f16(hi).to_bits() as u32,
        ];
        for (k, v) in v.iter().enumerate() {
            // SAFETY: indices j * 12 + k are unique to this thread.
            unsafe { out.write_unchecked_race(j * 12 + k, *v) };
        }
    }
}

#[test]
fn packed_conversions_and_arithmetic() {
    let mut rng = Lcg(3);
    let mut x: Vec<f32> = (0..64).map(|_| rng.next() * 100.0).collect();
    x[0] = 1.0 + 1.0 / 256.0; // a tie in bf16: rounds to even (1.0)
    x[1] = -0.0;
    let mut out = vec![0u32; 32 * 12];
    launch(
        "packed_ops",
        __gpu_sim_entry_packed_ops,
        32,
        Params::default().slice(&x).out(&mut out),
    );
    let bb = |lo: f64, hi: f64| {
        bf16::from_f64(lo).to_bits() as u32 | (bf16::from_f64(hi).to_bits() as u32) << 16
    };
    let hh = |lo: f64, hi: f64| {
        f16::from_f64(lo).to_bits() as u32 | (f16::from_f64(hi).to_bits() as u32) << 16
    };
    for j in 0..32 {
        let (lo, hi) = (x[2 * j], x[2 * j + 1]);
        let (bl, bh) = (bf16::from_f32(lo).to_f64(), bf16::from_f32(hi).to_f64());
        let (hl, hh_) = (f16::from_f32(lo).to_f64(), f16::from_f32(hi).to_f64());
        let o = &out[j * 12..j * 12 + 12];
        assert_eq!(o[0], bb(bl, bh), "bf16x2 cvt {j}");
        assert_eq!(o[1], bb(bl * bl + bl, bh * bh + bh), "bf16x2 fma {j}");
        assert_eq!(o[2], bb(bl + bl, bh + bh), "bf16x2 add {j}");
        assert_eq!(o[3], bb(bl * bl, bh * bh), "bf16x2 mul {j}");
        assert_eq!(o[4], bb(bl.max(bh), bh.max(bl)), "bf16x2 max {j}");
        assert_eq!(o[5], hh(hl, hh_), "f16x2 cvt {j}");
        assert_eq!(o[6], hh(hl * hl + hl, hh_ * hh_ + hh_), "f16x2 fma {j}");
        assert_eq!(o[7], hh(hl + hl, hh_ + hh_), "f16x2 add {j}");
        assert_eq!(o[8], hh(hl * hl, hh_ * hh_), "f16x2 mul {j}");
        assert_eq!(o[9], hh(hl.max(hh_), hh_.max(hl)), "f16x2 max {j}");
        assert_eq!(
            o[10],
            bf16::from_f32(lo).to_bits() as u32,
            "f32_to_bf16 {j}"
        );
        assert_eq!(o[11], f16::from_f32(hi).to_bits() as u32, "f32_to_f16 {j}");
    }
    assert_eq!(out[0] & 0xffff, 0x3f80, "1 + 2^-8 ties to even in bf16");
    let b = Bf16x2::from_f32(1.5, -2.25);
    assert_eq!(b.to_f32(), (1.5, -2.25));
    assert_eq!(F16x2::from_f32(1.5, -2.25).to_f32(), (1.5, -2.25));
    assert_eq!(packed::bf16_to_f32(bf16::from_f32(3.0)), 3.0);
    assert_eq!(packed::f16_to_f32(f16::from_f32(-0.5)), -0.5);
}
