//! All-pairs N-body accelerations with shared-memory tiles (GPU Gems 3, chapter 31).

use gpu::prelude::*;

/// Bodies per tile = threads per block.
pub const BLOCK: u32 = 256;
const B: usize = BLOCK as usize;
/// Softening², keeps the force finite for close pairs.
pub const SOFTENING2: f32 = 0.01;

/// A body: position and mass, laid out like CUDA's `float4`.
#[derive(Debug, Clone, Copy, PartialEq, Default, DeviceCopy)]
#[repr(C, align(16))]
pub struct Body {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub mass: f32,
}

/// The acceleration of body `i` caused by every body; `accel[i].mass` is unused (0).
///
/// No `grid_dims(1)`, unlike the other 1-D twins: with it the inner loop's PTX is the same, but
/// ptxas scheduled the two unrolled bodies one after the other instead of interleaved, and with
/// one block per SM (32768 bodies) nothing hides that (README, "Writing fast kernels").
#[kernel(block(256))]
pub fn nbody_accel(bodies: &[Body], mut accel: DisjointSlice<Body>) {
    let tile = shared_array!(Body, B);
    let n = bodies.len();
    let i = thread::global_index();
    let me = if i.get() < n {
        bodies[i.get()]
    } else {
        Body::default()
    };
    let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);
    let tid = thread::thread_idx_x() as usize;
    for start in (0..n).step_by(B) {
        let j = start + tid;
        tile.write(tid, if j < n { bodies[j] } else { Body::default() });
        sync_threads();
        for k in 0..B {
            let other = tile.read(k);
            let (dx, dy, dz) = (other.x - me.x, other.y - me.y, other.z - me.z);
            let dist2 = dx * dx + dy * dy + dz * dz + SOFTENING2;
            let inv = gpu::math::rsqrt(dist2);
            let s = other.mass * inv * inv * inv;
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        sync_threads();
    }
    accel.set(
        i,
        Body {
            x: ax,
            y: ay,
            z: az,
            mass: 0.0,
        },
    );
}
