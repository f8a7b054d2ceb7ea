//! `gpu::math` on the device computes bit-identically to the host build of the same code (the
//! ulp of the host build are measured by `kernels/gpu/tests/math_ulp*.rs`): every unary
//! function of `gpu_algorithms::math_maps`, f32 and f64, and `pow`. On the simulator
//! this runs the host code twice (a small sample); on a GPU, millions of inputs per function.

use gpu_algorithms::algorithm_kernels::Module;
use gpu_algorithms::math_maps;
use gpu_host::LaunchConfig;
use gpu_tests::gpu_or_skip;

/// Deterministic inputs: every fourth one random bits (all binades, ±0, subnormals, inf, NaN,
/// huge arguments), the rest uniform over [lo, hi).
fn inputs(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            if i % 4 == 0 {
                f32::from_bits((s >> 32) as u32)
            } else {
                lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
            }
        })
        .collect()
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn math_matches_the_host_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("math_matches_the_host_bit_for_bit") else {
        return;
    };
    let n: usize = if gpu.is_simulator() { 4096 } else { 1 << 22 };
    let module = Module::load(&gpu).unwrap_or_else(|e| panic!("{e}"));
    let stream = gpu.default_stream();
    // One tile of 256 threads × 4 items per block (`algorithm_kernels::math`).
    let config = LaunchConfig::new(n.div_ceil(1024) as u32, 256);
    let mut failures = Vec::new();
    for (k, map) in math_maps::F32.iter().enumerate() {
        let (name, launch, host, (lo, hi)) = (map.kernel, map.launch, map.host, map.test);
        let x = inputs(n, 0x9e37_79b9 + k as u64, lo, hi);
        let dx = gpu.to_device(&x).unwrap();
        let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
        launch(&module, stream, config, &dx, &mut out).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = out.to_vec().unwrap();
        let bad: Vec<_> = (0..n).filter(|&i| !same(got[i], host(x[i]))).collect();
        if let Some(&i) = bad.first() {
            failures.push(format!(
                "{name}: {} of {n} differ, first x = {:e} ({:#010x}): device {:e}, host {:e}",
                bad.len(),
                x[i],
                x[i].to_bits(),
                got[i],
                host(x[i])
            ));
        }
    }
    let x: Vec<f32> = inputs(n, 1, 0.0, 10.0);
    let y: Vec<f32> = inputs(n, 2, -20.0, 20.0);
    let (dx, dy) = (gpu.to_device(&x).unwrap(), gpu.to_device(&y).unwrap());
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    module
        .math_pow_f32(stream, config, &dx, &dy, &mut out)
        .unwrap();
    let got = out.to_vec().unwrap();
    let bad = (0..n)
        .filter(|&i| !same(got[i], gpu_host::gpu::math::pow(x[i], y[i])))
        .count();
    if bad > 0 {
        failures.push(format!("pow: {bad} of {n} differ"));
    }
    for (k, map) in math_maps::F64.iter().enumerate() {
        let (name, launch, host, (lo, hi)) = (map.kernel, map.launch, map.host, map.test);
        // f32 inputs widened (random bits cover f32's binades) plus f64 bit patterns.
        let x: Vec<f64> = inputs(n, 77 + k as u64, lo, hi)
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                if i % 8 == 1 {
                    f64::from_bits((v.to_bits() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                } else {
                    v as f64
                }
            })
            .collect();
        let dx = gpu.to_device(&x).unwrap();
        let mut out = gpu.alloc_zeroed::<f64>(n).unwrap();
        launch(&module, stream, config, &dx, &mut out).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = out.to_vec().unwrap();
        let bad: Vec<_> = (0..n)
            .filter(|&i| {
                got[i].to_bits() != host(x[i]).to_bits()
                    && !(got[i].is_nan() && host(x[i]).is_nan())
            })
            .collect();
        if let Some(&i) = bad.first() {
            failures.push(format!(
                "{name}: {} of {n} differ, first x = {:e}: device {:e}, host {:e}",
                bad.len(),
                x[i],
                got[i],
                host(x[i])
            ));
        }
    }
    // pow_f64 over f32-range pairs widened to f64, plus f64 bit patterns for x.
    let x: Vec<f64> = inputs(n, 3, 0.0, 10.0)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            if i % 8 == 1 {
                f64::from_bits((v.to_bits() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            } else {
                v as f64
            }
        })
        .collect();
    let y: Vec<f64> = inputs(n, 4, -200.0, 200.0)
        .into_iter()
        .map(f64::from)
        .collect();
    let (dx, dy) = (gpu.to_device(&x).unwrap(), gpu.to_device(&y).unwrap());
    let mut out = gpu.alloc_zeroed::<f64>(n).unwrap();
    module
        .math_pow_f64(stream, config, &dx, &dy, &mut out)
        .unwrap();
    let got = out.to_vec().unwrap();
    let bad = (0..n)
        .filter(|&i| {
            let h = gpu_host::gpu::math::pow_f64(x[i], y[i]);
            got[i].to_bits() != h.to_bits() && !(got[i].is_nan() && h.is_nan())
        })
        .count();
    if bad > 0 {
        failures.push(format!("pow_f64: {bad} of {n} differ"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
