//! Gravitational N-body: one velocity-Verlet (kick-drift-kick leapfrog) step of `n` bodies with
//! Plummer-softened gravity (G = 1):
//!
//! ```text
//! a_i = Σ_j m_j (x_j − x_i) / (|x_j − x_i|² + ε²)^(3/2)
//! v ← v + a·dt/2;  x ← x + v·dt;  a ← a(x);  v ← v + a·dt/2
//! ```
//!
//! Bodies are `Vec4`s: position in `xyz`, mass in `w`; velocities and accelerations `Vec4`s
//! with `w` unused (16-byte aligned, one vector load each). A step is two launches:
//! [`nbody_drift`] (first half-kick + drift), then [`nbody_forces`] (all-pairs accelerations at
//! the new positions + second half-kick). The self term needs no test: with ε > 0 it is
//! `m_i · 0 / ε³ = 0`.

use glam::{Vec3, Vec4};
use gpu::math::{fma, rsqrt};
use gpu::prelude::*;

/// Threads per block of [`nbody_forces`].
pub const NBODY_BLOCK: u32 = 256;
/// Bodies per block of [`nbody_forces`]: each of the block's 8 warps sums the pull of one
/// eighth of the other bodies on the same 32 bodies, so even 16384 bodies make 512 blocks
/// (about 4 per multiprocessor) instead of 64.
pub const NBODY_BODIES_PER_BLOCK: u32 = 32;
const WARPS: usize = (NBODY_BLOCK / 32) as usize;
/// Positions staged in shared memory per tile (16 KiB): 4 per thread, 128 per warp.
const TILE: usize = 1024;
const PER_WARP: usize = TILE / WARPS;

/// Accelerations at the current positions (`acc[i]`, `w` = 0), then the half-kick
/// `vel[i] += acc[i] · kick` (`kick = dt/2`; 0 just computes the accelerations).
///
/// All-pairs, tiled: the block stages `TILE` positions at a time in shared memory, and each
/// warp sums the pull of its eighth of them on the block's 32 bodies (lane `l` on body
/// `32·block + l`; all lanes read the same position, a broadcast), so each position is read
/// from global memory once per block. The 8 partial sums of a body then meet in shared memory.
/// Launch `⌈n / NBODY_BODIES_PER_BLOCK⌉` blocks of `NBODY_BLOCK` threads; `pos`, `vel`, `acc`
/// hold `n` bodies.
#[kernel(launch_bounds(256, 8))]
pub fn nbody_forces(
    pos: &[Vec4],
    vel: DisjointSlice<Vec4>,
    acc: DisjointSlice<Vec4>,
    eps2: f32,
    kick: f32,
) {
    forces_of_range(pos, 0, vel, acc, eps2, kick);
}

/// [`nbody_forces`] for the bodies `first .. first + vel.len()` of `pos` only: `vel` and `acc`
/// hold just those bodies (entry `i` is body `first + i`), while all of `pos` pulls on them.
/// This is a rank's share of a distributed step: every rank holds every position (gathered
/// each step) and owns a contiguous range of the bodies.
/// Launch `⌈vel.len() / NBODY_BODIES_PER_BLOCK⌉` blocks of `NBODY_BLOCK` threads; the host
/// checks `first + vel.len() <= pos.len()` and `acc.len() == vel.len()`.
#[kernel(launch_bounds(256, 8))]
pub fn nbody_forces_range(
    pos: &[Vec4],
    first: u32,
    vel: DisjointSlice<Vec4>,
    acc: DisjointSlice<Vec4>,
    eps2: f32,
    kick: f32,
) {
    forces_of_range(pos, first as usize, vel, acc, eps2, kick);
}

/// The body of both force kernels: bodies `first + i` for `i < vel.len()`.
#[inline(always)]
fn forces_of_range(
    pos: &[Vec4],
    first: usize,
    vel: DisjointSlice<Vec4>,
    acc: DisjointSlice<Vec4>,
    eps2: f32,
    kick: f32,
) {
    // The indexing below assumes the block shape; a wrong launch traps (a host error).
    assert!(thread::block_size() == NBODY_BLOCK);
    let tile = shared_array!(Vec4, TILE);
    let partial = shared_array!(f32, 3 * NBODY_BLOCK as usize);
    let n = pos.len();
    let t = thread::local_index() as usize & (NBODY_BLOCK as usize - 1);
    let (warp, lane) = (t / 32, t % 32);
    let i = thread::block_index() * NBODY_BODIES_PER_BLOCK as usize + lane;
    let owned = vel.len();
    let me = if i < owned {
        pos.get(first + i).copied().unwrap_or(Vec4::ZERO)
    } else {
        Vec4::ZERO
    };
    let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);
    for start in (0..n).step_by(TILE) {
        for q in 0..TILE / NBODY_BLOCK as usize {
            let k = q * NBODY_BLOCK as usize + t;
            // Past the end: a massless body at the origin (pulls with m = 0).
            tile.write(k, pos.get(start + k).copied().unwrap_or(Vec4::ZERO));
        }
        sync_threads();
        for j in warp * PER_WARP..(warp + 1) * PER_WARP {
            let p = tile.read(j);
            let (dx, dy, dz) = (p.x - me.x, p.y - me.y, p.z - me.z);
            let r2 = fma(dx, dx, fma(dy, dy, fma(dz, dz, eps2)));
            let inv = rsqrt(r2);
            let s = p.w * inv * inv * inv;
            ax = fma(dx, s, ax);
            ay = fma(dy, s, ay);
            az = fma(dz, s, az);
        }
        sync_threads();
    }
    partial.write(t, ax);
    partial.write(NBODY_BLOCK as usize + t, ay);
    partial.write(2 * NBODY_BLOCK as usize + t, az);
    sync_threads();
    if warp == 0 && i < owned {
        let mut a = Vec3::ZERO;
        for w in 0..WARPS {
            let k = w * 32 + lane;
            a += Vec3::new(
                partial.read(k),
                partial.read(NBODY_BLOCK as usize + k),
                partial.read(2 * NBODY_BLOCK as usize + k),
            );
        }
        // SAFETY: entry `i = 32·block + lane` is written by lane `lane` of warp 0 of this block
        // only (blocks cover disjoint runs of 32 bodies); `i < vel.len()` = `acc.len()`
        // (checked by the host) — `write_unchecked_race` checks the bound too.
        unsafe {
            let v = vel.as_mut_ptr().add(i).read();
            vel.write_unchecked_race(i, v + (a * kick).extend(0.0));
            acc.write_unchecked_race(i, a.extend(0.0));
        }
    }
}

/// First half of a step: `vel[i] += acc[i] · half_dt`, then `pos[i].xyz += vel[i] · dt` (the
/// mass in `pos[i].w` is kept). One thread per body (any grid; grid-stride).
#[kernel]
pub fn nbody_drift(
    acc: &[Vec4],
    mut vel: DisjointSlice<Vec4>,
    mut pos: DisjointSlice<Vec4>,
    half_dt: f32,
    dt: f32,
) {
    for i in thread::grid_stride(pos.len()) {
        let a = acc[i.get()];
        let Some(v) = vel.get_mut(i) else { continue };
        *v += a * half_dt;
        let v = *v;
        if let Some(p) = pos.get_mut(i) {
            *p += (v.truncate() * dt).extend(0.0);
        }
    }
}
