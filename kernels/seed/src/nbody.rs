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

/// Threads per block of [`nbody_forces`], and the bodies per shared-memory tile.
pub const NBODY_BLOCK: u32 = 256;
const TILE: usize = NBODY_BLOCK as usize;

/// Accelerations at the current positions (`acc[i]`, `w` = 0), then the half-kick
/// `vel[i] += acc[i] · kick` (`kick = dt/2`; 0 just computes the accelerations).
///
/// All-pairs, tiled: the block stages `NBODY_BLOCK` positions at a time in shared memory, and
/// each thread sums their pull on its body from there, so each position is read from global
/// memory once per block instead of once per thread. Launch `⌈n / NBODY_BLOCK⌉` blocks of
/// `NBODY_BLOCK` threads; `pos`, `vel`, `acc` hold `n` bodies.
#[kernel(launch_bounds(256, 4))]
pub fn nbody_forces(
    pos: &[Vec4],
    mut vel: DisjointSlice<Vec4>,
    mut acc: DisjointSlice<Vec4>,
    eps2: f32,
    kick: f32,
) {
    // The tile indexing below assumes the block shape; a wrong launch traps (a host error).
    assert!(thread::block_size() == NBODY_BLOCK);
    let tile = shared_array!(Vec4, TILE);
    let n = pos.len();
    let t = thread::local_index() as usize & (TILE - 1);
    let i = thread::global_index();
    let me = pos.get(i.get()).copied().unwrap_or(Vec4::ZERO);
    let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);
    for start in (0..n).step_by(TILE) {
        // Past the end: a massless body at the origin (pulls with m = 0).
        tile.write(t, pos.get(start + t).copied().unwrap_or(Vec4::ZERO));
        sync_threads();
        for j in 0..TILE {
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
    let a = Vec3::new(ax, ay, az);
    if let Some(v) = vel.get_mut(i) {
        *v += (a * kick).extend(0.0);
    }
    acc.set(i, a.extend(0.0));
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
