//! The N-body example (`gpu_examples::nbody`): the all-pairs forces and one kick-drift-kick
//! step against f64 CPU references, the total-energy drift over 100 steps of a Plummer sphere,
//! and bad arguments. Small N on the CPU simulator, larger on a GPU.

use glam::Vec4;
use gpu_examples::ExampleKernels;
use gpu_examples::nbody::{Bodies, Simulation, accelerations_cpu, energy, plummer, step_cpu};
use gpu_host::Error;
use gpu_test_kit::RelNormError;
use gpu_tests::gpu_or_skip;

fn rel_norm(got: impl Iterator<Item = [f64; 3]>, want: impl Iterator<Item = [f64; 3]>) -> f64 {
    let mut rel = RelNormError::new();
    for (g, w) in got.zip(want) {
        for k in 0..3 {
            assert!(g[k].is_finite(), "non-finite result {g:?}");
            rel.add(g[k], w[k]);
        }
    }
    rel.value()
}

fn xyz(v: &Vec4) -> [f64; 3] {
    [v.x as f64, v.y as f64, v.z as f64]
}

#[test]
fn forces_and_one_step_match_cpu() {
    let Some(gpu) = gpu_or_skip("forces_and_one_step_match_cpu") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    // Not a multiple of the 256-body tile: the last tile is partial.
    let n = if gpu.is_simulator() { 300 } else { 5000 };
    let (eps, dt) = (0.05f32, 1e-3f32);
    let eps2 = (eps * eps) as f64;
    let b = plummer(n, 7);
    let mut sim = Simulation::new(&gpu, &kernels, &b, eps).unwrap();
    let acc0 = accelerations_cpu(&b.pos, eps2);
    let got = sim.accelerations().unwrap();
    let err = rel_norm(got.iter().map(xyz), acc0.iter().copied());
    assert!(err < 1e-5, "accelerations: relative error {err:.3e}");
    assert!(got.iter().all(|a| a.w == 0.0));

    sim.run(1, dt).unwrap();
    let after = sim.bodies().unwrap();
    let (want, _) = step_cpu(&b, &acc0, dt as f64, eps2);
    // Velocity changes (what the step computed), and positions.
    let dv_got = after.vel.iter().zip(&b.vel).map(|(a, b)| xyz(&(*a - *b)));
    let dv_want = want.vel.iter().zip(&b.vel).map(|(a, b)| xyz(&(*a - *b)));
    let err_v = rel_norm(dv_got, dv_want);
    assert!(err_v < 1e-3, "velocity change: relative error {err_v:.3e}");
    let err_x = rel_norm(after.pos.iter().map(xyz), want.pos.iter().map(xyz));
    assert!(err_x < 1e-6, "positions: relative error {err_x:.3e}");
    assert!(
        after.pos.iter().zip(&b.pos).all(|(a, b)| a.w == b.w),
        "masses kept"
    );
}

#[test]
fn energy_drift_is_small() {
    let Some(gpu) = gpu_or_skip("energy_drift_is_small") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    let n = if gpu.is_simulator() { 256 } else { 4096 };
    let (eps, dt, steps) = (0.05f32, 1e-3f32, 100);
    let eps2 = (eps * eps) as f64;
    let b = plummer(n, 11);
    let (ke0, pe0) = energy(&b, eps2);
    let e0 = ke0 + pe0;
    // A Plummer sphere near virial equilibrium: 2 KE ≈ −PE, E ≈ −1/4 (less with softening
    // and the 99% mass cut-off).
    assert!(
        e0 < 0.0 && (2.0 * ke0 / -pe0 - 1.0).abs() < 0.3,
        "ke {ke0} pe {pe0}"
    );
    let mut sim = Simulation::new(&gpu, &kernels, &b, eps).unwrap();
    sim.run(steps, dt).unwrap();
    let after = sim.bodies().unwrap();
    let (ke1, pe1) = energy(&after, eps2);
    let drift = ((ke1 + pe1) - e0).abs() / e0.abs();
    assert!(
        drift < 1e-3,
        "energy drift {drift:.3e} over {steps} steps (E0 {e0}, E1 {})",
        ke1 + pe1
    );
    // The bodies moved.
    assert!(after.pos != b.pos);
}

#[test]
fn bad_arguments_are_reported() {
    let Some(gpu) = gpu_or_skip("nbody bad_arguments_are_reported") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    let b = plummer(10, 1);
    let arg = |r: Result<(), Error>, name: &str| match r {
        Err(Error::Argument { argument, .. }) => assert_eq!(argument, name),
        other => panic!("expected a bad `{name}`, got {other:?}"),
    };
    let short = Bodies {
        pos: b.pos.clone(),
        vel: b.vel[..9].to_vec(),
    };
    arg(
        Simulation::new(&gpu, &kernels, &short, 0.1).map(drop),
        "vel",
    );
    let empty = Bodies {
        pos: vec![],
        vel: vec![],
    };
    arg(
        Simulation::new(&gpu, &kernels, &empty, 0.1).map(drop),
        "pos",
    );
    arg(Simulation::new(&gpu, &kernels, &b, 0.0).map(drop), "eps2");
    let mut sim = Simulation::new(&gpu, &kernels, &b, 0.1).unwrap();
    arg(sim.run(1, -1.0), "dt");
    arg(sim.run(1, f32::NAN), "dt");
}
