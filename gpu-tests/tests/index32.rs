//! 32-bit index variants (`gpu_builder::index32`, the contract in `gpu_host::index32`): how a
//! module links them, and results at the edge of their limits, on both sides of it. GPU only:
//! the simulator runs the kernels' Rust code, which has no variants.

use gpu_host::{LaunchConfig, index32};
use gpu_tests::{cuda_gpu_or_skip, skipped};
use gpu_twins::TwinKernels;

#[test]
fn variants_are_linked_to_their_kernels_and_answer_to_their_names() {
    let test = "variants_are_linked_to_their_kernels_and_answer_to_their_names";
    let Some(gpu) = cuda_gpu_or_skip(test) else {
        return;
    };
    let twins = TwinKernels::load(&gpu).unwrap();
    let module = twins.raw();
    assert!(
        module
            .kernel_names()
            .all(|n| index32::kernel_of_variant(n).is_none()),
        "variants are not listed"
    );
    let names: Vec<String> = module.kernel_names().map(str::to_string).collect();
    let mut linked = 0;
    for name in &names {
        let index = module.kernel_index(name).unwrap();
        if let Some(variant) = module.index32_variant(index) {
            let kernel = module.kernel_at(variant).unwrap();
            assert_eq!(
                kernel.name(),
                name,
                "a variant answers to its kernel's name"
            );
            linked += 1;
        }
    }
    if linked == 0 {
        skipped(
            test,
            "the twins were built without SASS, so without variants",
        );
        return;
    }
    println!(
        "{linked} of {} twin kernels have a 32-bit index variant",
        names.len()
    );
    assert!(module.kernels().unwrap().len() == names.len());
}

/// `vector_add` over `n` elements, every result compared (the last elements have the largest
/// offsets, where a 32-bit offset would first go wrong).
fn vector_add(gpu: &gpu_host::Gpu, twins: &TwinKernels, n: usize) {
    let a: Vec<f32> = (0..n).map(|i| (i % 1021) as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (i / 1021 % 1019) as f32).collect();
    let (a_dev, b_dev) = (gpu.to_device(&a).unwrap(), gpu.to_device(&b).unwrap());
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    // `vector_add` declares `block(256)`.
    let config = LaunchConfig::for_elements(n, 256);
    twins
        .vector_add(gpu.default_stream(), config, &a_dev, &b_dev, &mut out)
        .unwrap();
    let got = out.to_vec().unwrap();
    let wrong = (0..n).find(|&i| got[i] != a[i] + b[i]);
    assert_eq!(wrong, None, "n = {n}: first wrong element");
}

#[test]
fn results_at_the_edge_of_the_variant_limits() {
    let test = "results_at_the_edge_of_the_variant_limits";
    let Some(gpu) = cuda_gpu_or_skip(test) else {
        return;
    };
    // Three buffers of 2 GiB each and their host copies, twice.
    let largest = (index32::MAX_SLICE_BYTES / 4) as usize;
    if (gpu.properties().total_memory as u64) < 8 * index32::MAX_SLICE_BYTES {
        skipped(test, "needs 16 GiB of device memory");
        return;
    }
    let twins = TwinKernels::load(&gpu).unwrap();
    // The largest launch the variant takes (if the build kept one), and one element more,
    // which runs the kernel as built.
    vector_add(&gpu, &twins, largest);
    vector_add(&gpu, &twins, largest + 1);
}
