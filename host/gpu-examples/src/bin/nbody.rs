//! `cargo run --release -p gpu-examples --bin nbody [N] [STEPS]`: a Plummer sphere of N bodies
//! (16384 on a GPU, 512 on the simulator) advanced STEPS (100) leapfrog steps of dt = 1e-3 with
//! softening 0.05; checks the accelerations against the CPU (f64) and the total-energy drift
//! (< 1e-3), and prints the step time and interactions per second.
use std::process::ExitCode;

use gpu_examples::nbody::{Simulation, accelerations_cpu, energy, plummer};
use gpu_examples::report::{exit, fail, line, open_gpu, size_for};
use gpu_examples::{ExampleKernels, check::compare};

fn main() -> ExitCode {
    let gpu = match open_gpu() {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().ok());
    let n = args
        .next()
        .flatten()
        .unwrap_or_else(|| size_for(&gpu, 16384, 512));
    let steps = args.next().flatten().unwrap_or(100);
    let (eps, dt) = (0.05f32, 1e-3f32);
    let eps2 = (eps * eps) as f64;
    let run = || -> gpu_host::Result<bool> {
        let kernels = ExampleKernels::load(&gpu)?;
        let bodies = plummer(n, 42);
        let (ke0, pe0) = energy(&bodies, eps2);
        let mut sim = Simulation::new(&gpu, &kernels, &bodies, eps)?;
        // Accelerations of the first 256 bodies against f64 sums over all n.
        let got = sim.accelerations()?;
        let want = accelerations_cpu(&bodies.pos, eps2);
        let check = 256.min(n);
        let got: Vec<f64> = got[..check]
            .iter()
            .flat_map(|a| [a.x as f64, a.y as f64, a.z as f64])
            .collect();
        let want: Vec<f64> = want[..check].iter().flat_map(|a| *a).collect();
        let cmp = compare(&got, &want, 1e-4, 1e-4);
        let mut all = line("nbody_forces", cmp.passed(), format!("n={n}: {cmp}"));
        let ((), ms) = gpu.default_stream().time(|_| sim.run(steps, dt))?;
        let after = sim.bodies()?;
        let (ke1, pe1) = energy(&after, eps2);
        let (e0, e1) = (ke0 + pe0, ke1 + pe1);
        let drift = ((e1 - e0) / e0).abs();
        let per_step = ms as f64 / steps as f64;
        let rate = (n * n) as f64 / (per_step * 1e-3) / 1e9;
        all &= line(
            "nbody_energy",
            drift < 1e-3,
            format!(
                "n={n}, {steps} steps of {dt}: E {e0:.6} -> {e1:.6}, relative drift {drift:.2e} | \
                 {per_step:.3} ms/step, {rate:.1} G interactions/s"
            ),
        );
        Ok(all)
    };
    match run() {
        Ok(all) => exit(all),
        Err(err) => fail(err),
    }
}
