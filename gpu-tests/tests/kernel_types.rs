//! Kernels named by type: `module.launch::<K>(stream, config, args)` launches like the
//! generated per-kernel method (same results, same errors), for library code that picks a
//! kernel by type; generic kernels (`#[kernel(instances(...))]`) launch each instance through
//! one generic launcher. On the simulator without a GPU (small sizes).

use ::test_kernels::elementwise::{saxpy, vector_add};
use device_selftest::generic::{selftest_axpy, selftest_widen};
use device_selftest::indices::selftest_gather_unchecked;
use gpu_host::{Error, Holds, KernelType, LaunchConfig};
use gpu_tests::selftest::device_selftest::Module as Selftest;
use gpu_tests::{TestKernels, gpu_or_skip, test_kernels};

#[test]
fn launch_by_kernel_type_matches_the_generated_launcher() {
    let Some(gpu) = gpu_or_skip("launch_by_kernel_type_matches_the_generated_launcher") else {
        return;
    };
    let kernels = TestKernels::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| 0.5 * (n - i) as f32).collect();
    let (dx, dy) = (gpu.to_device(&x).unwrap(), gpu.to_device(&y).unwrap());
    let mut by_type = gpu.alloc_zeroed::<f32>(n).unwrap();
    let mut by_method = gpu.alloc_zeroed::<f32>(n).unwrap();
    let cfg = LaunchConfig::for_elements(n, 128);

    kernels
        .launch::<saxpy>(stream, cfg, (3.0, &dx, &dy, &mut by_type))
        .unwrap();
    kernels
        .saxpy(stream, cfg, 3.0, &dx, &dy, &mut by_method)
        .unwrap();
    let expected: Vec<f32> = x.iter().zip(&y).map(|(a, b)| 3.0 * a + b).collect();
    assert_eq!(by_type.to_vec().unwrap(), expected);
    assert_eq!(by_method.to_vec().unwrap(), expected);

    let mut sum = gpu.alloc_zeroed::<f32>(n).unwrap();
    kernels
        .launch::<vector_add>(stream, cfg, (&dx, &dy, &mut sum))
        .unwrap();
    let expected: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    assert_eq!(sum.to_vec().unwrap(), expected);
}

#[test]
fn a_kernel_type_carries_its_name_parameters_and_position() {
    assert_eq!(saxpy::NAME, "saxpy");
    assert_eq!(saxpy::PARAM_NAMES, ["alpha", "x", "y", "out"]);
    assert_eq!(
        <TestKernels as Holds<saxpy>>::INDEX,
        test_kernels::index::saxpy
    );
    assert_eq!(
        <TestKernels as Holds<vector_add>>::INDEX,
        test_kernels::index::vector_add
    );
    let Some(gpu) = gpu_or_skip("a_kernel_type_carries_its_name_parameters_and_position") else {
        return;
    };
    let kernels = TestKernels::load(&gpu).unwrap();
    let at = |i| kernels.raw().kernel_at(i).unwrap().name().to_string();
    assert_eq!(at(<TestKernels as Holds<saxpy>>::INDEX), "saxpy");
    assert_eq!(at(<TestKernels as Holds<vector_add>>::INDEX), "vector_add");
}

#[test]
fn launch_by_kernel_type_reports_the_generated_launchers_errors() {
    let Some(gpu) = gpu_or_skip("launch_by_kernel_type_reports_the_generated_launchers_errors")
    else {
        return;
    };
    let kernels = TestKernels::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let a = gpu.to_device(&[1.0f32; 64]).unwrap();
    let b = gpu.to_device(&[2.0f32; 64]).unwrap();
    let mut out = gpu.to_device(&[-1.0f32; 64]).unwrap();
    let limit = gpu.properties().max_shared_memory_per_block_optin;
    for cfg in [
        LaunchConfig::new(1, 2048),
        LaunchConfig::for_elements(64, 64).with_shared_mem(limit + 1),
        LaunchConfig::new(1, (0, 1, 1)),
    ] {
        let by_type = kernels
            .launch::<vector_add>(stream, cfg, (&a, &b, &mut out))
            .unwrap_err();
        let by_method = kernels
            .vector_add(stream, cfg, &a, &b, &mut out)
            .unwrap_err();
        assert!(matches!(by_type, Error::LaunchConfig { .. }), "{by_type:?}");
        assert_eq!(by_type.to_string(), by_method.to_string());
        assert!(by_type.to_string().contains("vector_add"), "{by_type}");
    }
    // Nothing ran: the output still holds its initial values.
    assert_eq!(out.to_vec().unwrap(), vec![-1.0f32; 64]);
}

#[test]
fn an_unsafe_kernel_launches_by_type_through_launch_unsafe() {
    let Some(gpu) = gpu_or_skip("an_unsafe_kernel_launches_by_type_through_launch_unsafe") else {
        return;
    };
    let module = Selftest::load(&gpu).unwrap();
    let src = gpu.to_device(&[10u32, 20, 30, 40]).unwrap();
    let idx = gpu.to_device(&[3u32, 0, 2, 1, 3]).unwrap();
    let mut out = gpu.alloc_zeroed::<u32>(5).unwrap();
    // SAFETY: every index is below src.len() (4).
    unsafe {
        module.launch_unsafe::<selftest_gather_unchecked>(
            gpu.default_stream(),
            LaunchConfig::for_elements(5, 32),
            (&src, &idx, &mut out),
        )
    }
    .unwrap();
    assert_eq!(out.to_vec().unwrap(), [40, 10, 30, 20, 40]);
}

#[test]
fn a_generic_kernel_launches_each_instance_through_one_generic_launcher() {
    let Some(gpu) =
        gpu_or_skip("a_generic_kernel_launches_each_instance_through_one_generic_launcher")
    else {
        return;
    };
    let module = Selftest::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let n = 300;
    let cfg = LaunchConfig::for_elements(n, 64);

    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n).map(|i| 100.0 - i as f32).collect();
    let (dx, dy) = (gpu.to_device(&x).unwrap(), gpu.to_device(&y).unwrap());
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    module
        .selftest_axpy::<f32>(stream, cfg, 2.0, &dx, &dy, &mut out)
        .unwrap();
    let expected: Vec<f32> = x.iter().zip(&y).map(|(a, b)| 2.0 * a + b).collect();
    assert_eq!(out.to_vec().unwrap(), expected);

    // The type argument is inferred from the arguments; each instance is its own entry.
    let xu: Vec<u32> = (0..n as u32).collect();
    let (dx, dy) = (gpu.to_device(&xu).unwrap(), gpu.to_device(&xu).unwrap());
    let mut out = gpu.alloc_zeroed::<u32>(n).unwrap();
    module
        .selftest_axpy(stream, cfg, 3, &dx, &dy, &mut out)
        .unwrap();
    let expected: Vec<u32> = xu.iter().map(|v| 4 * v).collect();
    assert_eq!(out.to_vec().unwrap(), expected);

    // The same through the kernel type, and the instance's own launcher.
    // Quarters: `-1.5 · x + x` is exact, so a fused multiply-add (the GPU) and separate
    // roundings (the simulator) agree.
    let xd: Vec<f64> = (0..n).map(|i| i as f64 / 4.0).collect();
    let dx = gpu.to_device(&xd).unwrap();
    let mut by_type = gpu.alloc_zeroed::<f64>(n).unwrap();
    let mut by_instance = gpu.alloc_zeroed::<f64>(n).unwrap();
    module
        .launch::<selftest_axpy<f64>>(stream, cfg, (-1.5, &dx, &dx, &mut by_type))
        .unwrap();
    module
        .selftest_axpy_f64(stream, cfg, -1.5, &dx, &dx, &mut by_instance)
        .unwrap();
    let expected: Vec<f64> = xd.iter().map(|v| -1.5 * v + v).collect();
    assert_eq!(by_type.to_vec().unwrap(), expected);
    assert_eq!(by_instance.to_vec().unwrap(), expected);

    assert_eq!(selftest_axpy::<f32>::NAME, "selftest_axpy_f32");
    assert_eq!(selftest_axpy::<u32>::NAME, "selftest_axpy_u32");
    assert_eq!(
        <Selftest as Holds<selftest_axpy<f64>>>::INDEX,
        gpu_tests::selftest::device_selftest::index::selftest_axpy_f64
    );
}

#[test]
fn a_generic_kernel_with_two_type_parameters_and_an_array_parameter() {
    let Some(gpu) = gpu_or_skip("a_generic_kernel_with_two_type_parameters_and_an_array_parameter")
    else {
        return;
    };
    let module = Selftest::load(&gpu).unwrap();
    let stream = gpu.default_stream();
    let n = 200;
    let cfg = LaunchConfig::for_elements(n, 64);

    let input: Vec<u32> = (0..n as u32).map(|i| i * 7).collect();
    let dinput = gpu.to_device(&input).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    module
        .selftest_widen::<u32, f32>(stream, cfg, &dinput, [0.5, 1.0], &mut out)
        .unwrap();
    // size_of::<u32>() = 4 is added: a constant only an instance can compute.
    let expected: Vec<f32> = input.iter().map(|&v| v as f32 * 0.5 + 1.0 + 4.0).collect();
    assert_eq!(out.to_vec().unwrap(), expected);

    let input: Vec<u8> = (0..n).map(|i| (i % 256) as u8).collect();
    let dinput = gpu.to_device(&input).unwrap();
    let mut out = gpu.alloc_zeroed::<f64>(n).unwrap();
    module
        .selftest_widen(stream, cfg, &dinput, [2.0f64, -3.0], &mut out)
        .unwrap();
    let expected: Vec<f64> = input.iter().map(|&v| v as f64 * 2.0 - 3.0 + 1.0).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
    assert_eq!(selftest_widen::<u8, f64>::NAME, "selftest_widen_u8_f64");
}
