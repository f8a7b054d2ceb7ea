//! The examples on the CPU simulator, through the generated typed launchers: the same
//! calls as on a GPU, checked against the CPU references. Runs everywhere (no GPU needed).

use example_kernels::matmul::MatDims;
use gpu_examples::matmul::{self, Variant};
use gpu_examples::{ExampleKernels, reduce, vector};
use gpu_host::{Error, Gpu, LaunchConfig};

fn simulator() -> (Gpu, ExampleKernels) {
    let gpu = Gpu::simulator().unwrap();
    let kernels = ExampleKernels::load(&gpu).unwrap_or_else(|e| panic!("{e}"));
    (gpu, kernels)
}

#[test]
fn saxpy_through_the_generated_launcher() {
    let (gpu, kernels) = simulator();
    let x = gpu_examples::random_f32(5_000, 1);
    let y = gpu_examples::random_f32(5_000, 2);
    let (dx, dy) = (gpu.to_device(&x).unwrap(), gpu.to_device(&y).unwrap());
    let mut out = gpu.alloc_zeroed::<f32>(x.len()).unwrap();
    kernels
        .saxpy(
            gpu.default_stream(),
            LaunchConfig::for_elements(x.len(), 256),
            2.5,
            &dx,
            &dy,
            &mut out,
        )
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), vector::saxpy_cpu(2.5, &x, &y));

    // A bad configuration is refused by the same validation as on a GPU; nothing runs.
    let mut untouched = gpu.alloc_zeroed::<f32>(x.len()).unwrap();
    let err = kernels
        .saxpy(
            gpu.default_stream(),
            LaunchConfig::new(1, 4096),
            2.5,
            &dx,
            &dy,
            &mut untouched,
        )
        .unwrap_err();
    assert!(matches!(err, Error::LaunchConfig { .. }), "{err}");
    assert!(err.to_string().contains("saxpy"), "{err}");
    assert!(untouched.to_vec().unwrap().iter().all(|&v| v == 0.0));
}

#[test]
fn every_seed_example_passes_on_the_simulator() {
    let (gpu, kernels) = simulator();
    for run in vector::run(&gpu, &kernels, 20_000).unwrap() {
        assert!(run.comparison.passed(), "{}: {}", run.name, run.comparison);
    }
    let dims = MatDims {
        m: 48,
        n: 40,
        k: 56,
    };
    for variant in [Variant::Naive, Variant::Tiled] {
        let (cmp, _) = matmul::run(&gpu, &kernels, variant, dims).unwrap();
        assert!(cmp.passed(), "{}: {cmp}", variant.name());
    }
    let (cmp, _, _) = reduce::run(&gpu, &kernels, 50, 300).unwrap();
    assert!(cmp.passed(), "segmented_sum: {cmp}");
}
