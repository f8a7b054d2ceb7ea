//! Every example, checked against its CPU reference: on the GPU, or on the CPU simulator
//! where there is none (`GPU_BACKEND=sim|cuda` chooses; see `gpu_tests::gpu_or_skip`).

use example_kernels::matmul::MatDims;
use gpu_examples::check::compare;
use gpu_examples::matmul::{self, Variant};
use gpu_examples::{ExampleKernels, image, reduce, vector};
use gpu_tests::{gpu_or_skip, sizes_for};

/// Sizes that catch edge cases: empty, one element, odd, around a block (256) and a tile, large.
const SIZES: &[usize] = &[
    0,
    1,
    7,
    255,
    256,
    257,
    1023,
    1025,
    65_537,
    1 << 20,
    (1 << 22) + 3,
];

#[test]
fn vector_add_matches_cpu() {
    let Some(gpu) = gpu_or_skip("vector_add_matches_cpu") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    for n in sizes_for(&gpu, SIZES) {
        let (a, b) = (
            gpu_examples::random_f32(n, 10),
            gpu_examples::random_f32(n, 11),
        );
        let (got, _) = vector::vector_add(&gpu, &kernels, &a, &b).unwrap();
        let cmp = compare(&got, &vector::vector_add_cpu(&a, &b), 0.0, 0.0);
        assert!(cmp.passed(), "n = {n}: {cmp}");
    }
}

#[test]
fn saxpy_matches_cpu() {
    let Some(gpu) = gpu_or_skip("saxpy_matches_cpu") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    for n in sizes_for(&gpu, SIZES) {
        let (x, y) = (
            gpu_examples::random_f32(n, 12),
            gpu_examples::random_f32(n, 13),
        );
        let (got, _) = vector::saxpy(&gpu, &kernels, -1.5, &x, &y).unwrap();
        let cmp = compare(&got, &vector::saxpy_cpu(-1.5, &x, &y), 1e-6, 1e-6);
        assert!(cmp.passed(), "n = {n}: {cmp}");
    }
}

#[test]
fn rgb_to_gray_matches_cpu_exactly() {
    let Some(gpu) = gpu_or_skip("rgb_to_gray_matches_cpu_exactly") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    let sim = gpu.is_simulator();
    for (w, h) in [(1, 1), (3, 5), (64, 64), (641, 479), (1920, 1080)] {
        if sim && w * h > 70_000 {
            continue;
        }
        let img = image::test_image(w, h);
        let (got, _) = image::rgb_to_gray(&gpu, &kernels, &img).unwrap();
        assert_eq!(got, image::rgb_to_gray_cpu(&img.pixels), "{w}x{h}");
    }
    let dir = std::env::temp_dir().join(format!("gpu-tests-png-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cmp, _, img) = image::run(&gpu, &kernels, None, &dir.join("gray.png")).unwrap();
    assert!(cmp.passed(), "{cmp}");
    let written = image::read_png(&dir.join("rgb_input.png")).unwrap();
    assert_eq!(written, img, "the PNG round trip keeps the pixels");
}

#[test]
fn matmul_naive_and_tiled_match_cpu() {
    let Some(gpu) = gpu_or_skip("matmul_naive_and_tiled_match_cpu") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    for (m, n, k) in [
        (1, 1, 1),
        (16, 16, 16),
        (17, 33, 15),
        (64, 48, 80),
        (255, 129, 300),
        (512, 512, 512),
    ] {
        if gpu.is_simulator() && m * n * k > 20_000_000 {
            continue;
        }
        for variant in [Variant::Naive, Variant::Tiled] {
            let (cmp, _) = matmul::run(&gpu, &kernels, variant, MatDims { m, n, k }).unwrap();
            assert!(cmp.passed(), "{variant:?} {m}x{n}x{k}: {cmp}");
        }
    }
}

#[test]
fn segmented_sum_matches_cpu() {
    let Some(gpu) = gpu_or_skip("segmented_sum_matches_cpu") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    for (segments, mean_len) in [
        (1, 1),
        (3, 0),
        (10, 31),
        (100, 1000),
        (1000, 5000),
        (20_000, 64),
    ] {
        if gpu.is_simulator() && segments * mean_len.max(1) > 200_000 {
            continue;
        }
        let (cmp, _, _) = reduce::run(&gpu, &kernels, segments, mean_len).unwrap();
        assert!(cmp.passed(), "{segments} segments of ~{mean_len}: {cmp}");
    }
    // Hand-made segments: empty ones, one huge one.
    let values: Vec<f32> = (0..100_000).map(|i| (i % 7) as f32).collect();
    let offsets = [0u32, 0, 1, 1, 50_000, 100_000];
    let (got, _) = reduce::segmented_sum(&gpu, &kernels, &values, &offsets).unwrap();
    assert_eq!(got, reduce::segmented_sum_cpu(&values, &offsets));
}

#[test]
fn bad_segment_offsets_are_rejected_before_launch() {
    let Some(gpu) = gpu_or_skip("bad_segment_offsets_are_rejected_before_launch") else {
        return;
    };
    let kernels = ExampleKernels::load(&gpu).unwrap();
    let err = reduce::segmented_sum(&gpu, &kernels, &[1.0; 10], &[0, 5, 3])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("offsets") && err.contains("must not decrease"),
        "{err}"
    );
    let err = reduce::segmented_sum(&gpu, &kernels, &[1.0; 10], &[0, 11])
        .unwrap_err()
        .to_string();
    assert!(err.contains("past the end"), "{err}");
}
