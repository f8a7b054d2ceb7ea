//! N-body across GPUs: the leapfrog step of `gpu_examples::nbody` with the bodies split over
//! the ranks. Rank `r` owns a contiguous range of the bodies (their velocities and
//! accelerations); every step it
//!
//! 1. drifts its own bodies (`nbody_drift`: half-kick, then positions),
//! 2. all-gathers the positions, so it holds every body's,
//! 3. computes the pull of all bodies on its own (`nbody_forces_range`) and half-kicks them.
//!
//! The force sum of a body runs over the bodies in the same order as on one device, so the
//! result is the single-device one exactly (the check in [`crate::nbody`]'s tests and the
//! example). NCCL's all_gather takes equal parts, so the body count is padded to a multiple
//! of the rank count with massless bodies at the origin, which pull with `m = 0` (exactly 0).

use example_kernels::nbody::{NBODY_BLOCK, NBODY_BODIES_PER_BLOCK};
use glam::Vec4;
use gpu_distributed::{Communicator, Error, Result};
use gpu_examples::ExampleKernels;
use gpu_examples::nbody::Bodies;
use gpu_host::{DeviceBuffer, LaunchConfig};

/// This rank's share of a simulation spread over the communicator's ranks.
pub struct DistributedSimulation<'a> {
    comm: &'a Communicator,
    kernels: &'a ExampleKernels,
    /// Every body's position (padded to `owned · ranks`), gathered each step.
    all_pos: DeviceBuffer<Vec4>,
    /// Own bodies: positions, velocities, accelerations at the current positions.
    pos: DeviceBuffer<Vec4>,
    vel: DeviceBuffer<Vec4>,
    acc: DeviceBuffer<Vec4>,
    /// Index of the first own body.
    first: usize,
    /// Real bodies (without padding).
    n: usize,
    eps2: f32,
}

fn bad(comm: &Communicator, message: String) -> Error {
    Error::Argument {
        rank: comm.rank(),
        operation: "DistributedSimulation".into(),
        message,
    }
}

impl<'a> DistributedSimulation<'a> {
    /// Takes this rank's share of `bodies` (the whole system, the same on every rank) and
    /// computes the initial accelerations. Collective. Errors as `Simulation::new` (no
    /// bodies, mismatched lengths, a softening that is not finite and > 0).
    pub fn new(
        comm: &'a Communicator,
        kernels: &'a ExampleKernels,
        bodies: &Bodies,
        eps: f32,
    ) -> Result<Self> {
        let n = bodies.pos.len();
        if bodies.vel.len() != n || n == 0 {
            return Err(bad(
                comm,
                format!("{n} positions and {} velocities", bodies.vel.len()),
            ));
        }
        if !(eps.is_finite() && eps > 0.0) {
            return Err(bad(
                comm,
                format!("softening {eps}; must be finite and > 0"),
            ));
        }
        let owned = n.div_ceil(comm.size());
        let padded = owned * comm.size();
        if padded > i32::MAX as usize {
            return Err(bad(comm, format!("{n} bodies; at most 2^31 - 1")));
        }
        let first = comm.rank() * owned;
        let mut pos = bodies.pos.clone();
        pos.resize(padded, Vec4::ZERO);
        let mut vel = bodies.vel.clone();
        vel.resize(padded, Vec4::ZERO);
        let gpu = comm.gpu();
        let mut sim = DistributedSimulation {
            comm,
            kernels,
            all_pos: gpu.to_device(&pos)?,
            pos: gpu.to_device(&pos[first..first + owned])?,
            vel: gpu.to_device(&vel[first..first + owned])?,
            acc: gpu.alloc_zeroed(owned)?,
            first,
            n,
            eps2: eps * eps,
        };
        sim.forces(0.0)?;
        Ok(sim)
    }

    /// Bodies in the whole system (without padding).
    pub fn len(&self) -> usize {
        self.n
    }

    /// Never true: a simulation has bodies.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The range of bodies this rank owns (may reach into the padding on the last rank).
    pub fn owned(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.pos.len()
    }

    fn forces(&mut self, kick: f32) -> Result<()> {
        let blocks = self.pos.len().div_ceil(NBODY_BODIES_PER_BLOCK as usize) as u32;
        let cfg = LaunchConfig::new(blocks, NBODY_BLOCK);
        let s = self.comm.stream();
        self.kernels.nbody_forces_range(
            s,
            cfg,
            &self.all_pos,
            self.first as u32,
            &mut self.vel,
            &mut self.acc,
            self.eps2,
            kick,
        )?;
        Ok(())
    }

    /// Every rank's positions into `all_pos` (as `f32`s: NCCL moves scalars).
    fn gather_positions(&mut self) -> Result<()> {
        let gpu = self.comm.gpu();
        let local = std::mem::replace(&mut self.pos, gpu.alloc_zeroed(0)?).cast::<f32>()?;
        let mut all = std::mem::replace(&mut self.all_pos, gpu.alloc_zeroed(0)?).cast::<f32>()?;
        let gathered = self.comm.all_gather(&local, &mut all);
        self.pos = local.cast()?;
        self.all_pos = all.cast()?;
        gathered
    }

    /// Advances `steps` steps of `dt` (asynchronous; collective: one all_gather per step).
    pub fn run(&mut self, steps: usize, dt: f32) -> Result<()> {
        if !(dt.is_finite() && dt > 0.0) {
            return Err(bad(
                self.comm,
                format!("time step {dt}; must be finite and > 0"),
            ));
        }
        let cfg = LaunchConfig::for_elements(self.pos.len(), 256);
        for _ in 0..steps {
            let s = self.comm.stream();
            self.kernels.nbody_drift(
                s,
                cfg,
                &self.acc,
                &mut self.vel,
                &mut self.pos,
                dt / 2.0,
                dt,
            )?;
            self.gather_positions()?;
            self.forces(dt / 2.0)?;
        }
        Ok(())
    }

    /// The whole system now, on every rank (collective: gathers the velocities).
    pub fn bodies(&mut self) -> Result<Bodies> {
        let gpu = self.comm.gpu();
        let local = std::mem::replace(&mut self.vel, gpu.alloc_zeroed(0)?).cast::<f32>()?;
        let mut all = gpu.alloc_zeroed::<f32>(local.len() * self.comm.size())?;
        let gathered = self.comm.all_gather(&local, &mut all);
        self.vel = local.cast()?;
        gathered?;
        self.comm.synchronize()?;
        let vel: Vec<Vec4> = all.cast::<Vec4>()?.to_vec()?;
        let pos = self.all_pos.to_vec()?;
        Ok(Bodies {
            pos: pos[..self.n].to_vec(),
            vel: vel[..self.n].to_vec(),
        })
    }

    /// Synchronizes with the other ranks' work (see [`Communicator::synchronize`]).
    pub fn synchronize(&self) -> Result<()> {
        self.comm.synchronize()
    }
}
