//! Thread-block clusters (`LaunchConfig::with_cluster`): the launch configuration is validated
//! before anything runs (everywhere), and a cluster-wide histogram in distributed shared memory
//! (`hopper_kernels::cluster_histogram`) matches the CPU on a compute capability 9.0 GPU
//! (SKIPPED elsewhere: the simulator has no clusters).

use gpu_dense::hopper_kernels::Module as Hopper;
use gpu_examples::ExampleKernels;
use gpu_host::{Error, LaunchConfig};
use gpu_test_kit::{XorShift32, gpu_or_skip, hopper_gpu_or_skip, skipped};

#[test]
fn cluster_launch_configurations_are_validated() {
    let test = "cluster_launch_configurations_are_validated";
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    if gpu.properties().compute_capability < (9, 0) {
        skipped(test, "clusters need compute capability 9.0");
        return;
    }
    let k = ExampleKernels::load(&gpu).unwrap();
    let n = 64 * 256;
    let a = gpu.to_device(&vec![1.0f32; n]).unwrap();
    let b = gpu.to_device(&vec![2.0f32; n]).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let stream = gpu.default_stream();
    let refused = |cfg: LaunchConfig, want: &str| {
        let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
        let err = k.vector_add(stream, cfg, &a, &b, &mut out).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::LaunchConfig { .. }), "{cfg}: {msg}");
        assert!(
            msg.contains("vector_add") && msg.contains(want),
            "{cfg}: {msg}"
        );
    };
    let cfg = LaunchConfig::new(64, 256);
    refused(cfg.with_cluster(16), "portable limit of 8");
    refused(cfg.with_cluster((4, 4, 1)), "portable limit of 8");
    refused(LaunchConfig::new(60, 256).with_cluster(8), "not a multiple");
    refused(cfg.with_cluster((1, 0, 1)), "zero extent");
    refused(
        cfg.cooperative().with_cluster(2),
        "both cooperative and in clusters",
    );

    // A valid cluster launch runs on a GPU; the simulator has no clusters.
    let ok = k.vector_add(stream, cfg.with_cluster(4), &a, &b, &mut out);
    if gpu.is_simulator() {
        assert!(matches!(ok, Err(Error::Unsupported { .. })), "{ok:?}");
    } else {
        ok.unwrap();
        assert!(out.to_vec().unwrap().iter().all(|&v| v == 3.0));
    }
}

#[test]
fn a_cluster_histogram_in_distributed_shared_memory_matches_the_cpu() {
    let test = "a_cluster_histogram_in_distributed_shared_memory_matches_the_cpu";
    let Some(gpu) = hopper_gpu_or_skip(test) else {
        return;
    };
    let k = Hopper::load(&gpu).unwrap();
    let n = 1 << 22;
    let mut rng = XorShift32::new(0x9e37_79b9);
    let values: Vec<u32> = (0..n)
        .map(|_| {
            let s = rng.next_u32();
            // Skewed, so some bins are hot.
            if s.is_multiple_of(4) { 7 } else { s }
        })
        .collect();
    let mut want = vec![0u32; 256];
    for &v in &values {
        want[v as usize % 256] += 1;
    }
    let input = gpu.to_device(&values).unwrap();
    let sms = gpu.properties().multiprocessor_count;
    for cluster in [1u32, 2, 4, 8] {
        let mut hist = gpu.alloc_zeroed::<u32>(256).unwrap();
        let grid = (2 * sms).div_ceil(cluster) * cluster;
        let cfg = LaunchConfig::new(grid, 256).with_cluster(cluster);
        k.cluster_histogram(gpu.default_stream(), cfg, &input, &mut hist)
            .unwrap_or_else(|e| panic!("clusters of {cluster}: {e}"));
        assert_eq!(hist.to_vec().unwrap(), want, "clusters of {cluster}");
    }
}
