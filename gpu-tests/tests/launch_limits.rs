//! Launch configurations beyond the device's or the kernel's limits are errors that name the
//! kernel and the limit, and launch nothing.

use gpu_examples::ExampleKernels;
use gpu_host::{Error, LaunchConfig};
use gpu_tests::{cuda_gpu_or_skip, gpu_or_skip};

#[test]
fn over_limit_launches_are_rejected_and_nothing_runs() {
    let Some(gpu) = gpu_or_skip("over_limit_launches_are_rejected_and_nothing_runs") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let a = gpu.to_device(&[1.0f32; 64]).unwrap();
    let b = gpu.to_device(&[2.0f32; 64]).unwrap();
    let mut out = gpu.to_device(&[-1.0f32; 64]).unwrap();

    let too_many_threads = LaunchConfig::new(1, 2048);
    let err = kernels
        .vector_add(stream, too_many_threads, &a, &b, &mut out)
        .unwrap_err();
    assert!(matches!(err, Error::LaunchConfig { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("vector_add") && text.contains("2048"),
        "{text}"
    );

    let limit = gpu.properties().max_shared_memory_per_block_optin;
    let too_much_shared = LaunchConfig::for_elements(64, 64).with_shared_mem(limit + 1);
    let err = kernels
        .vector_add(stream, too_much_shared, &a, &b, &mut out)
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("vector_add") && text.contains("shared"),
        "{text}"
    );

    let zero_block = LaunchConfig::new(1, (0, 1, 1));
    assert!(
        kernels
            .vector_add(stream, zero_block, &a, &b, &mut out)
            .is_err()
    );

    // Nothing ran: the output still holds its initial values.
    assert_eq!(out.to_vec().unwrap(), vec![-1.0f32; 64]);

    // A valid launch still works afterwards.
    kernels
        .vector_add(stream, LaunchConfig::for_elements(64, 64), &a, &b, &mut out)
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![3.0f32; 64]);
}

#[test]
fn occupancy_and_attributes_are_reported() {
    let Some(gpu) = cuda_gpu_or_skip("occupancy_and_attributes_are_reported") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    let tiled = kernels.raw().kernel("matmul_tiled").unwrap();
    assert_eq!(tiled.attributes().static_shared_bytes, 2 * 16 * 16 * 4);
    let occupancy = tiled.occupancy(256, 0).unwrap();
    assert!(occupancy.active_blocks_per_sm >= 1, "{occupancy:?}");
    assert!(
        occupancy.fraction > 0.0 && occupancy.fraction <= 1.0,
        "{occupancy:?}"
    );
    println!("matmul_tiled: {:?}, {occupancy:?}", tiled.attributes());
}

#[test]
fn a_grid_with_more_dimensions_than_the_kernel_declares_is_refused() {
    let Some(gpu) = gpu_or_skip("a_grid_with_more_dimensions_than_the_kernel_declares_is_refused")
    else {
        return;
    };
    // The twin `vector_add` is `#[kernel(block(256), grid_dims(1))]`.
    let kernels = gpu_twins::TwinKernels::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let a = gpu.to_device(&[1.0f32; 512]).unwrap();
    let b = gpu.to_device(&[2.0f32; 512]).unwrap();
    let mut out = gpu.to_device(&[-1.0f32; 512]).unwrap();
    let err = kernels
        .vector_add(stream, LaunchConfig::new((1, 2), 256), &a, &b, &mut out)
        .unwrap_err();
    assert!(matches!(err, Error::LaunchConfig { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("vector_add") && text.contains("grid_dims(1)") && text.contains("(1, 2, 1)"),
        "{text}"
    );
    assert_eq!(out.to_vec().unwrap(), vec![-1.0f32; 512], "nothing ran");
    kernels
        .vector_add(stream, LaunchConfig::new(2, 256), &a, &b, &mut out)
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![3.0f32; 512]);
}
