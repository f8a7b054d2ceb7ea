//! CUDA graphs (`Stream::capture`, `Graph::launch`, `Graph::update`): launches made through the
//! generated launchers are recorded and replayed, parameter updates take effect, and every
//! misuse is a clear `Error` (on a GPU, or on the CPU simulator without one).

use std::sync::Mutex;

use gpu_examples::ExampleKernels;
use gpu_host::{Error, Gpu, LaunchConfig};
use gpu_tests::gpu_or_skip;
use gpu_twins::TwinKernels;

/// While a stream captures, the driver refuses to synchronize its context from any thread, and
/// a first `Gpu::new_stream` does (cudarc): the tests of this file, which the harness runs on
/// parallel threads sharing the primary context, take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Small on the simulator (CI), larger on a GPU.
fn size(gpu: &Gpu, sim: usize, cuda: usize) -> usize {
    if gpu.is_simulator() { sim } else { cuda }
}

fn capture_error(e: Error) -> String {
    match e {
        Error::Capture { .. } => e.to_string(),
        other => panic!("expected Error::Capture, got {other:?}: {other}"),
    }
}

#[test]
fn a_graph_replays_its_launches_and_takes_new_arguments() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpu) = gpu_or_skip("a_graph_replays_its_launches_and_takes_new_arguments") else {
        return;
    };
    let k = ExampleKernels::load(&gpu).unwrap();
    k.raw().load_all().unwrap();
    let n = size(&gpu, 1000, 1 << 20);
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.0 - i as f32 * 0.5).collect();
    let x = gpu.to_device(&xs).unwrap();
    let y = gpu.to_device(&ys).unwrap();
    let mut out_a = gpu.alloc_zeroed::<f32>(n).unwrap();
    let mut out_b = gpu.alloc_zeroed::<f32>(n).unwrap();
    let mut sum = gpu.alloc_zeroed::<f32>(n).unwrap();
    let stream = gpu.new_stream().unwrap();
    let cfg = LaunchConfig::for_elements(n, 256);

    // Captured but never launched: nothing runs.
    let graph = stream
        .capture(|s| k.saxpy(s, cfg, 2.0, &x, &y, &mut out_a))
        .unwrap();
    assert_eq!(graph.kernel_count(), 1);
    drop(graph);
    assert!(out_a.to_vec().unwrap().iter().all(|&v| v == 0.0));

    {
        let mut graph = stream
            .capture(|s| k.saxpy(s, cfg, 2.0, &x, &y, &mut out_a))
            .unwrap();
        graph.launch().unwrap();
        graph.launch().unwrap();
        // Same kernel, new scalar and output buffer: replays write out_b.
        graph
            .update(|s| k.saxpy(s, cfg, 3.0, &x, &y, &mut out_b))
            .unwrap();
        graph.launch().unwrap();
        assert_eq!(graph.kernels().collect::<Vec<_>>(), ["saxpy"]);
    }
    let a = out_a.to_vec().unwrap();
    let b = out_b.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(a[i], 2.0 * xs[i] + ys[i], "out_a[{i}]");
        assert_eq!(b[i], 3.0 * xs[i] + ys[i], "out_b[{i}]");
    }

    // Two kernels in order: the second reads what the first wrote.
    {
        let graph = stream
            .capture(|s| {
                k.saxpy(s, cfg, 2.0, &x, &y, &mut out_a)?;
                k.vector_add(s, cfg, &out_a, &y, &mut sum)
            })
            .unwrap();
        assert_eq!(graph.kernels().collect::<Vec<_>>(), ["saxpy", "vector_add"]);
        graph.launch().unwrap();
    }
    let s = sum.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(s[i], (2.0 * xs[i] + ys[i]) + ys[i], "sum[{i}]");
    }
}

/// The heat-equation loop: a graph of `steps` ping-pong steps replayed `replays` times gives
/// exactly what the same number of plain launches gives, and matches the CPU.
#[test]
fn heat_steps_in_a_graph_match_plain_launches() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpu) = gpu_or_skip("heat_steps_in_a_graph_match_plain_launches") else {
        return;
    };
    let k = TwinKernels::load(&gpu).unwrap();
    k.raw().load_all().unwrap();
    let n = size(&gpu, 700, 1 << 16);
    let (steps, replays) = (8, 3);
    let alpha = 0.25f32;
    let init: Vec<f32> = (0..n)
        .map(|i| if i % 97 < 10 { 1.0 } else { 0.0 })
        .collect();
    let cfg = LaunchConfig::for_elements(n, 256);
    let stream = gpu.new_stream().unwrap();

    let mut u = gpu.to_device(&init).unwrap();
    let mut v = gpu.alloc_zeroed::<f32>(n).unwrap();
    {
        let graph = stream
            .capture(|s| {
                for _ in 0..steps / 2 {
                    k.heat_step_1d(s, cfg, &u, alpha, &mut v)?;
                    k.heat_step_1d(s, cfg, &v, alpha, &mut u)?;
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(graph.kernel_count(), steps);
        for _ in 0..replays {
            graph.launch().unwrap();
        }
    }
    let graphed = u.to_vec().unwrap();

    let mut p = gpu.to_device(&init).unwrap();
    let mut q = gpu.alloc_zeroed::<f32>(n).unwrap();
    for _ in 0..steps * replays / 2 {
        k.heat_step_1d(&stream, cfg, &p, alpha, &mut q).unwrap();
        k.heat_step_1d(&stream, cfg, &q, alpha, &mut p).unwrap();
    }
    let plain = p.to_vec().unwrap();
    assert_eq!(graphed, plain);

    let mut cpu = init.clone();
    for _ in 0..steps * replays {
        let prev = cpu.clone();
        for i in 1..n - 1 {
            cpu[i] = prev[i] + alpha * (prev[i - 1] - 2.0 * prev[i] + prev[i + 1]);
        }
    }
    for i in 0..n {
        assert!(
            (graphed[i] - cpu[i]).abs() <= 1e-5,
            "u[{i}]: {} vs CPU {}",
            graphed[i],
            cpu[i]
        );
    }
}

#[test]
fn misuse_of_captures_and_graphs_is_a_clear_error() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpu) = gpu_or_skip("misuse_of_captures_and_graphs_is_a_clear_error") else {
        return;
    };
    let n = 256;
    let cfg = LaunchConfig::for_elements(n, 128);
    let x = gpu.to_device(&vec![1.0f32; n]).unwrap();
    let y = gpu.to_device(&vec![2.0f32; n]).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let stream = gpu.new_stream().unwrap();

    // A kernel's first load is refused during a capture, with the fix in the message.
    let fresh = ExampleKernels::load(&gpu).unwrap();
    let e = stream
        .capture(|s| fresh.saxpy(s, cfg, 2.0, &x, &y, &mut out))
        .unwrap_err();
    let msg = capture_error(e);
    assert!(msg.contains("load_all"), "{msg}");
    let k = ExampleKernels::load(&gpu).unwrap();
    k.raw().load_all().unwrap();

    // The default stream cannot be captured.
    let e = gpu
        .default_stream()
        .capture(|s| k.saxpy(s, cfg, 2.0, &x, &y, &mut out))
        .unwrap_err();
    assert!(capture_error(e).contains("default stream"));

    // Synchronizing the captured stream fails the capture even when the error is ignored.
    let e = stream
        .capture(|s| {
            let _ = s.synchronize();
            k.saxpy(s, cfg, 2.0, &x, &y, &mut out)
        })
        .unwrap_err();
    assert!(capture_error(e).contains("synchronizing"));
    let e = stream.capture(|s| s.record_event().map(drop)).unwrap_err();
    assert!(capture_error(e).contains("event"));

    // Captures do not nest.
    let other = gpu.new_stream().unwrap();
    let e = stream
        .capture(|_| other.capture(|_| Ok(())).map(drop))
        .unwrap_err();
    assert!(capture_error(e).contains("nest"));

    // The closure's own error comes back as is, and the stream is usable afterwards.
    let e = stream
        .capture(|s| {
            k.saxpy(s, cfg, 2.0, &x, &y, &mut out)?;
            Err(Error::Unsupported {
                what: "the closure's own error".into(),
            })
        })
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");

    // A launch on a stream of another device inside the capture: the kernel's device check.
    let elsewhere = Gpu::simulator_device(7).unwrap();
    let far = elsewhere.new_stream().unwrap();
    let e = far
        .capture(|s| k.saxpy(s, cfg, 2.0, &x, &y, &mut out))
        .unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");

    let mut sum = gpu.alloc_zeroed::<f32>(n).unwrap();
    {
        let mut graph = stream
            .capture(|s| k.saxpy(s, cfg, 2.0, &x, &y, &mut out))
            .unwrap();
        // A graph launched on a stream of another device.
        let e = graph.launch_on(&far).unwrap_err();
        assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");
        // An update launching another kernel, or another number of kernels.
        let e = graph
            .update(|s| k.vector_add(s, cfg, &x, &y, &mut sum))
            .unwrap_err();
        let msg = capture_error(e);
        assert!(
            msg.contains("`saxpy`") && msg.contains("`vector_add`"),
            "{msg}"
        );
        let e = graph.update(|_| Ok(())).unwrap_err();
        assert!(capture_error(e).contains("1 kernel launches"));
        // The graph is unchanged and still replays.
        graph.launch().unwrap();
        // Another stream of the same device may replay it too.
        graph.launch_on(&other).unwrap();
    }
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 4.0));
    assert!(sum.to_vec().unwrap().iter().all(|&v| v == 0.0));
}
