//! Data-parallel training: a linear least-squares model `Y ≈ X·W` trained by full-batch
//! gradient descent, with the batch's rows split over the ranks. Every step each rank
//!
//! 1. computes its residual `R = X_r·W − Y_r` (one SGEMM with β = −1 over a copy of `Y_r`),
//! 2. its part of the gradient `G_r = (2/M)·X_rᵀ·R` (one SGEMM; `M` = rows of the whole batch),
//! 3. all-reduces `G = Σ_r G_r` (the `d_in × d_out` gradient buffer, NCCL's big message),
//! 4. updates `W ← W − lr·G` (`saxpy`), identically on every rank.
//!
//! With one rank this is plain gradient descent on one device, the reference the ranks'
//! result is compared with (equal up to the order of the gradient's float sums).

use gpu_dense::Dense;
use gpu_distributed::{Communicator, ReduceOp, Result};
use gpu_examples::ExampleKernels;
use gpu_host::{DeviceBuffer, Gpu, LaunchConfig};

use crate::sort::mix;

/// The problem's sizes.
#[derive(Clone, Copy, Debug)]
pub struct Problem {
    /// Rows of the whole batch (split over the ranks).
    pub rows: usize,
    /// Inputs per row (`X`'s columns).
    pub inputs: usize,
    /// Outputs per row (`Y`'s columns).
    pub outputs: usize,
    /// Seed of the data.
    pub seed: u64,
}

/// Uniform in [−1, 1) from a hash of (seed, stream, index).
fn uniform(seed: u64, stream: u64, i: u64) -> f32 {
    let h = mix(mix(seed ^ stream.rotate_left(40)) ^ i);
    (h >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

impl Problem {
    /// Rows `rows` of `X` (row-major, `inputs` wide).
    pub fn x(&self, rows: std::ops::Range<usize>) -> Vec<f32> {
        let d = self.inputs as u64;
        (rows.start as u64 * d..rows.end as u64 * d)
            .map(|i| uniform(self.seed, 1, i))
            .collect()
    }

    /// The weights the data was made with (`inputs × outputs`).
    pub fn true_weights(&self) -> Vec<f32> {
        (0..(self.inputs * self.outputs) as u64)
            .map(|i| uniform(self.seed, 2, i))
            .collect()
    }
}

/// One shard of the batch on one device: `X_r`, `X_rᵀ` and `Y_r = X_r·W_true`.
pub struct Shard {
    x: DeviceBuffer<f32>,
    xt: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    rows: usize,
}

impl Shard {
    /// Rows `rows` of the problem's batch on `gpu` (`Y` made there with one SGEMM).
    pub fn new(
        gpu: &Gpu,
        dense: &Dense,
        p: &Problem,
        rows: std::ops::Range<usize>,
    ) -> Result<Shard> {
        let m = rows.len();
        let x = p.x(rows);
        let mut xt = vec![0.0f32; x.len()];
        for (r, row) in x.chunks(p.inputs.max(1)).enumerate() {
            for (c, v) in row.iter().enumerate() {
                xt[c * m + r] = *v;
            }
        }
        let (x, xt) = (gpu.to_device(&x)?, gpu.to_device(&xt)?);
        let w_true = gpu.to_device(&p.true_weights())?;
        let mut y = gpu.alloc_zeroed::<f32>(m * p.outputs)?;
        dense.sgemm(
            gpu.default_stream(),
            1.0,
            &x,
            &w_true,
            0.0,
            &mut y,
            m,
            p.outputs,
            p.inputs,
        )?;
        Ok(Shard { x, xt, y, rows: m })
    }
}

/// The kernels a training step uses on one device.
pub struct Kernels<'a> {
    pub dense: &'a Dense,
    pub seed: &'a ExampleKernels,
}

/// `steps` steps of gradient descent from `W = 0` with learning rate `lr`, on `shard` (rows
/// of a batch of `p.rows`); `all_reduce` sums the gradient over the ranks (nothing for one
/// device). Returns `W` (`inputs × outputs`) on the host.
pub fn train(
    gpu: &Gpu,
    k: &Kernels,
    p: &Problem,
    shard: &Shard,
    steps: usize,
    lr: f32,
    mut all_reduce: impl FnMut(&mut DeviceBuffer<f32>) -> Result<()>,
) -> Result<Vec<f32>> {
    let (d, o, m) = (p.inputs, p.outputs, shard.rows);
    let stream = gpu.default_stream();
    let mut w = gpu.alloc_zeroed::<f32>(d * o)?;
    let mut w_next = gpu.alloc_zeroed::<f32>(d * o)?;
    let mut grad = gpu.alloc_zeroed::<f32>(d * o)?;
    let mut residual = gpu.alloc_zeroed::<f32>(m * o)?;
    let scale = 2.0 / p.rows as f32;
    for _ in 0..steps {
        residual.copy_from_device(&shard.y)?;
        // R = X_r·W − Y_r
        k.dense
            .sgemm(stream, 1.0, &shard.x, &w, -1.0, &mut residual, m, o, d)?;
        // G_r = (2/M)·X_rᵀ·R
        k.dense
            .sgemm(stream, scale, &shard.xt, &residual, 0.0, &mut grad, d, o, m)?;
        all_reduce(&mut grad)?;
        // W ← W − lr·G
        let cfg = LaunchConfig::for_elements(d * o, 256);
        k.seed.saxpy(stream, cfg, -lr, &grad, &w, &mut w_next)?;
        std::mem::swap(&mut w, &mut w_next);
    }
    Ok(w.to_vec()?)
}

/// [`train`] on this rank's share of the rows, the gradient summed over the ranks.
/// Collective. Returns `W` (the same on every rank).
pub fn train_distributed(
    comm: &Communicator,
    k: &Kernels,
    p: &Problem,
    steps: usize,
    lr: f32,
) -> Result<Vec<f32>> {
    let rows = crate::world::share(p.rows, comm.rank(), comm.size());
    let shard = Shard::new(comm.gpu(), k.dense, p, rows)?;
    let w = train(comm.gpu(), k, p, &shard, steps, lr, |g| {
        comm.all_reduce_in_place(g, ReduceOp::Sum)
    })?;
    comm.synchronize()?;
    Ok(w)
}

/// `‖a − b‖ / ‖b‖`.
pub fn relative_error(a: &[f32], b: &[f32]) -> f64 {
    let diff: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
        .sum();
    let norm: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
}
