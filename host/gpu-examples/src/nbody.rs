//! Gravitational N-body simulation on the GPU: a Plummer sphere advanced by velocity-Verlet
//! (kick-drift-kick leapfrog) steps with all-pairs softened gravity (kernels in
//! `kernels/example-kernels/src/nbody.rs`), checked against a CPU step and by the drift of the total
//! energy, which a symplectic integrator keeps bounded.
//!
//! Units: G = 1, total mass 1, Hénon units for the Plummer model (virial radius 1, total
//! energy −1/4, crossing time 2√2).

use example_kernels::nbody::{NBODY_BLOCK, NBODY_BODIES_PER_BLOCK};
use glam::Vec4;
use gpu_host::{DeviceBuffer, Error, Gpu, LaunchConfig, Result};
use gpu_test_kit::XorShift64Star;

use crate::ExampleKernels;

/// Bodies: position `xyz` with mass in `w`; velocity `xyz` (`w` = 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Bodies {
    pub pos: Vec<Vec4>,
    pub vel: Vec<Vec4>,
}

/// The Plummer sampler's draws, on the test kit's xorshift64*.
trait Draws {
    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64;
    /// A random direction times `r`.
    fn on_sphere(&mut self, r: f64) -> [f64; 3];
}

impl Draws for XorShift64Star {
    fn uniform(&mut self) -> f64 {
        let bits = self.next_u64() >> 11;
        (bits as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn on_sphere(&mut self, r: f64) -> [f64; 3] {
        let z = 2.0 * self.uniform() - 1.0;
        let phi = 2.0 * std::f64::consts::PI * self.uniform();
        let s = (1.0 - z * z).sqrt();
        [r * s * phi.cos(), r * s * phi.sin(), r * z]
    }
}

/// `n` equal-mass bodies sampled from a Plummer sphere in equilibrium (Aarseth, Hénon & Wielen
/// 1974), in Hénon units, with the centre of mass and its velocity moved to the origin.
pub fn plummer(n: usize, seed: u64) -> Bodies {
    let mut rng = XorShift64Star::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let scale = 3.0 * std::f64::consts::PI / 16.0; // Plummer radius in Hénon units
    let m = 1.0 / n as f64;
    let mut pos = Vec::with_capacity(n);
    let mut vel = Vec::with_capacity(n);
    for _ in 0..n {
        // Radius from the cumulative mass (cut off at 99% of the mass to avoid far outliers).
        let r = loop {
            let x = rng.uniform() * 0.99;
            let r = 1.0 / (x.powf(-2.0 / 3.0) - 1.0).sqrt();
            if r.is_finite() {
                break r;
            }
        };
        // Speed as a fraction q of the escape speed, by von Neumann rejection on
        // g(q) = q² (1 − q²)^(7/2).
        let q = loop {
            let (q, y) = (rng.uniform(), rng.uniform() * 0.1);
            if y < q * q * (1.0 - q * q).powf(3.5) {
                break q;
            }
        };
        let v = q * std::f64::consts::SQRT_2 * (1.0 + r * r).powf(-0.25);
        pos.push((rng.on_sphere(r * scale), m));
        vel.push(rng.on_sphere(v / scale.sqrt()));
    }
    let mut cp = [0.0f64; 3];
    let mut cv = [0.0f64; 3];
    for ((p, _), v) in pos.iter().zip(&vel) {
        for k in 0..3 {
            cp[k] += p[k] / n as f64;
            cv[k] += v[k] / n as f64;
        }
    }
    Bodies {
        pos: pos
            .iter()
            .map(|(p, m)| {
                Vec4::new(
                    (p[0] - cp[0]) as f32,
                    (p[1] - cp[1]) as f32,
                    (p[2] - cp[2]) as f32,
                    *m as f32,
                )
            })
            .collect(),
        vel: vel
            .iter()
            .map(|v| {
                Vec4::new(
                    (v[0] - cv[0]) as f32,
                    (v[1] - cv[1]) as f32,
                    (v[2] - cv[2]) as f32,
                    0.0,
                )
            })
            .collect(),
    }
}

/// Kinetic and potential energy in f64: `½ Σ m v²` and `−Σ_{i<j} m_i m_j / sqrt(r² + ε²)`
/// (the potential whose gradient the kernel's softened force is). O(n²) on the CPU.
pub fn energy(b: &Bodies, eps2: f64) -> (f64, f64) {
    let ke: f64 = b
        .pos
        .iter()
        .zip(&b.vel)
        .map(|(p, v)| 0.5 * p.w as f64 * v.truncate().as_dvec3().length_squared())
        .sum();
    let mut pe = 0.0f64;
    for (i, pi) in b.pos.iter().enumerate() {
        let xi = pi.truncate().as_dvec3();
        let mut row = 0.0f64;
        for pj in &b.pos[i + 1..] {
            let r2 = (pj.truncate().as_dvec3() - xi).length_squared();
            row += pj.w as f64 / (r2 + eps2).sqrt();
        }
        pe -= pi.w as f64 * row;
    }
    (ke, pe)
}

/// Accelerations at the given positions, f64 accumulation (the reference for the kernel).
pub fn accelerations_cpu(pos: &[Vec4], eps2: f64) -> Vec<[f64; 3]> {
    pos.iter()
        .map(|pi| {
            let xi = pi.truncate().as_dvec3();
            let mut a = glam::DVec3::ZERO;
            for pj in pos {
                let d = pj.truncate().as_dvec3() - xi;
                let r2 = d.length_squared() + eps2;
                a += d * (pj.w as f64 / (r2 * r2.sqrt()));
            }
            [a.x, a.y, a.z]
        })
        .collect()
}

/// One kick-drift-kick step on the CPU in f64 from the bodies and their current accelerations;
/// returns the new bodies (rounded to f32) and accelerations.
pub fn step_cpu(b: &Bodies, acc: &[[f64; 3]], dt: f64, eps2: f64) -> (Bodies, Vec<[f64; 3]>) {
    let mut vel: Vec<[f64; 3]> = b
        .vel
        .iter()
        .zip(acc)
        .map(|(v, a)| {
            [
                v.x as f64 + a[0] * dt / 2.0,
                v.y as f64 + a[1] * dt / 2.0,
                v.z as f64 + a[2] * dt / 2.0,
            ]
        })
        .collect();
    let pos: Vec<Vec4> = b
        .pos
        .iter()
        .zip(&vel)
        .map(|(p, v)| {
            Vec4::new(
                (p.x as f64 + v[0] * dt) as f32,
                (p.y as f64 + v[1] * dt) as f32,
                (p.z as f64 + v[2] * dt) as f32,
                p.w,
            )
        })
        .collect();
    let acc = accelerations_cpu(&pos, eps2);
    for (v, a) in vel.iter_mut().zip(&acc) {
        for k in 0..3 {
            v[k] += a[k] * dt / 2.0;
        }
    }
    let vel = vel
        .iter()
        .map(|v| Vec4::new(v[0] as f32, v[1] as f32, v[2] as f32, 0.0))
        .collect();
    (Bodies { pos, vel }, acc)
}

/// A simulation resident on the GPU: positions, velocities and the accelerations at the
/// current positions (kept between steps, so each step computes the forces once).
pub struct Simulation<'k> {
    kernels: &'k ExampleKernels,
    pos: DeviceBuffer<Vec4>,
    vel: DeviceBuffer<Vec4>,
    acc: DeviceBuffer<Vec4>,
    eps2: f32,
}

fn bad(argument: &str, message: String) -> Error {
    Error::Argument {
        kernel: "nbody_forces".into(),
        argument: argument.into(),
        message,
    }
}

impl<'k> Simulation<'k> {
    /// Uploads `bodies` and computes their initial accelerations. Errors (before any launch)
    /// on mismatched lengths, no bodies, more than 2^31 − 1 bodies, or a softening `eps` that
    /// is not finite and > 0 (ε = 0 would make the self term 0/0).
    pub fn new(gpu: &Gpu, kernels: &'k ExampleKernels, bodies: &Bodies, eps: f32) -> Result<Self> {
        let n = bodies.pos.len();
        if bodies.vel.len() != n {
            return Err(bad(
                "vel",
                format!("{} velocities for {n} bodies", bodies.vel.len()),
            ));
        }
        if n == 0 || n > i32::MAX as usize {
            return Err(bad("pos", format!("{n} bodies; 1 to 2^31 - 1")));
        }
        if !(eps.is_finite() && eps > 0.0) {
            return Err(bad(
                "eps2",
                format!("softening {eps}; must be finite and > 0"),
            ));
        }
        let mut sim = Simulation {
            kernels,
            pos: gpu.to_device(&bodies.pos)?,
            vel: gpu.to_device(&bodies.vel)?,
            acc: gpu.alloc_zeroed(n)?,
            eps2: eps * eps,
        };
        sim.forces(0.0)?;
        Ok(sim)
    }

    pub fn len(&self) -> usize {
        self.pos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    fn forces(&mut self, kick: f32) -> Result<()> {
        let n = self.pos.len();
        let blocks = n.div_ceil(NBODY_BODIES_PER_BLOCK as usize) as u32;
        let cfg = LaunchConfig::new(blocks, NBODY_BLOCK);
        let s = self.pos.stream().clone();
        self.kernels.nbody_forces(
            &s,
            cfg,
            &self.pos,
            &mut self.vel,
            &mut self.acc,
            self.eps2,
            kick,
        )
    }

    /// Advances `steps` steps of `dt` (asynchronous; two launches per step). Errors on a `dt`
    /// that is not finite and > 0.
    pub fn run(&mut self, steps: usize, dt: f32) -> Result<()> {
        if !(dt.is_finite() && dt > 0.0) {
            return Err(bad("dt", format!("time step {dt}; must be finite and > 0")));
        }
        let n = self.pos.len();
        let cfg = LaunchConfig::for_elements(n, 256);
        let s = self.pos.stream().clone();
        for _ in 0..steps {
            self.kernels.nbody_drift(
                &s,
                cfg,
                &self.acc,
                &mut self.vel,
                &mut self.pos,
                dt / 2.0,
                dt,
            )?;
            self.forces(dt / 2.0)?;
        }
        Ok(())
    }

    /// The bodies now (synchronizes).
    pub fn bodies(&self) -> Result<Bodies> {
        Ok(Bodies {
            pos: self.pos.to_vec()?,
            vel: self.vel.to_vec()?,
        })
    }

    /// The accelerations at the current positions (synchronizes).
    pub fn accelerations(&self) -> Result<Vec<Vec4>> {
        self.acc.to_vec()
    }
}
