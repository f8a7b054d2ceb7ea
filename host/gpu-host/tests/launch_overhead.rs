//! Host cost of one launch, without a GPU. `launch_checks_cost`: the typed launcher path that
//! `launch-bench` times on a device as `OursChecks` (configuration validation, the argument
//! pushes and the signature check, then an empty grid returns before the backend), run on the
//! CPU simulator, plus the pieces of it that the public API isolates.
//! `launch_cost_around_the_driver`: the whole launch on a do-nothing `libcuda`
//! (`stub_libcuda.c`), against cudarc's raw `cuLaunchKernel`.
//!
//! Ignored by default (they are measurements, not checks); run them optimized:
//!
//! ```text
//! cargo test --release -p gpu-host --test launch_overhead -- --ignored --nocapture
//! ```
//!
//! The simulator path differs from a GPU's in two details: simulated objects never pass the
//! cheap same-device test (`Epoch::surely_same_device`), so the stream and each buffer fall
//! back to comparing device keys, and a buffer is pushed as a plain address instead of its
//! memory record.

use std::hint::black_box;
use std::time::Instant;

use gpu_host::{
    DeviceBuffer, Gpu, Holds, KernelLaunch, LaunchConfig, Module, SimEntry, Stream, validate_launch,
};

mod kernels {
    use gpu::prelude::*;

    /// `launch-bench`'s kernel (`example-kernels`' `saxpy`).
    #[kernel]
    pub fn saxpy(alpha: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
        for i in thread::grid_stride(out.len()) {
            out.set(i, alpha * x[i.get()] + y[i.get()]);
        }
    }
}

/// saxpy's PTX entry (read for its parameter sizes, which launches are checked against).
const PTX: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry saxpy(.param .f32 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3,
    .param .u64 p4, .param .u64 p5, .param .u64 p6)
{
}
";

/// What `gpu_builder` generates for a kernel crate, reduced to the one kernel.
struct Generated {
    inner: Module,
}

// SAFETY: kernel 0 of `inner` is `saxpy`'s entry, loaded from `kernels::saxpy`'s signature.
unsafe impl Holds<kernels::saxpy> for Generated {
    const INDEX: usize = 0;
    fn module(&self) -> &Module {
        &self.inner
    }
}

impl Generated {
    /// The generated per-kernel launcher.
    fn saxpy(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        alpha: f32,
        x: &DeviceBuffer<f32>,
        y: &DeviceBuffer<f32>,
        out: &mut DeviceBuffer<f32>,
    ) -> gpu_host::Result<()> {
        gpu_host::typed::launch::<kernels::saxpy, Self>(self, stream, config, (alpha, x, y, out))
    }
}

/// Best and median nanoseconds per call of `f` over `trials` trials of `n` calls.
fn time(trials: usize, n: usize, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..n / 10 {
        f();
    }
    let mut t: Vec<f64> = (0..trials)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..n {
                f();
            }
            t0.elapsed().as_secs_f64() * 1e9 / n as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[0], t[trials / 2])
}

/// Trials and calls per trial: 15 of `calls`, or `LAUNCH_OVERHEAD_CALLS=trials,calls` (e.g.
/// `1,100000` under valgrind, whose instruction counts are steadier than times on a shared
/// machine: run two lengths and divide the difference).
fn counts(calls: usize) -> (usize, usize) {
    std::env::var("LAUNCH_OVERHEAD_CALLS")
        .ok()
        .and_then(|v| {
            let (t, c) = v.split_once(',')?;
            Some((t.parse().ok()?, c.parse().ok()?))
        })
        .unwrap_or((15, calls))
}

/// Times `f` and prints a row, unless `LAUNCH_OVERHEAD_PIECE` is set and not part of `label`
/// (to profile one piece alone, e.g. under `perf stat`).
/// saxpy's arguments, pushed by hand as its generated launcher pushes them.
fn push_saxpy<'a>(
    l: &mut KernelLaunch<'a>,
    x: &'a DeviceBuffer<f32>,
    y: &'a DeviceBuffer<f32>,
    out: &'a mut DeviceBuffer<f32>,
) {
    l.value("alpha", &2.0f32)
        .input("x", black_box(x))
        .input("y", black_box(y))
        .output("out", black_box(out));
}

fn report(label: &str, trials: usize, n: usize, f: impl FnMut()) {
    if let Ok(only) = std::env::var("LAUNCH_OVERHEAD_PIECE")
        && !label.contains(&only)
    {
        return;
    }
    let (best, median) = time(trials, n, f);
    println!("| {label} | {best:.1} | {median:.1} |");
}

#[test]
#[ignore = "a measurement; run with --release -- --ignored --nocapture"]
fn launch_checks_cost() {
    let gpu = Gpu::simulator().unwrap();
    let entries: &[(&str, SimEntry)] = &[("saxpy", kernels::__gpu_sim_entry_saxpy as SimEntry)];
    let module = Generated {
        inner: gpu.load_module("m", PTX, &["saxpy"], entries).unwrap(),
    };
    let n = 256;
    let x = gpu.to_device(&vec![1.0f32; n]).unwrap();
    let y = gpu.to_device(&vec![2.0f32; n]).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let stream = gpu.default_stream();
    let empty = LaunchConfig::new(0, 256);
    let kernel = module.inner.kernel_at(0).unwrap();
    // The launcher works (and runs the kernel) with a real grid.
    module
        .saxpy(stream, LaunchConfig::new(1, 256), 2.0, &x, &y, &mut out)
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![4.0; n]);

    let (trials, calls) = counts(2_000_000);
    println!("ns per call, best and median of {trials} trials of {calls} calls:");
    println!("| piece | best | median |");
    println!("| --- | --- | --- |");
    report(
        "typed launcher, empty grid (launch-bench's OursChecks)",
        trials,
        calls,
        || {
            module
                .saxpy(
                    black_box(stream),
                    black_box(empty),
                    2.0,
                    black_box(&x),
                    black_box(&y),
                    black_box(&mut out),
                )
                .unwrap()
        },
    );
    report("  Module::kernel_at", trials, calls, || {
        black_box(black_box(&module.inner).kernel_at(black_box(0)).unwrap());
    });
    report("  validate_launch", trials, calls, || {
        validate_launch(
            "saxpy",
            black_box(&empty),
            black_box(gpu.properties()),
            black_box(kernel.attributes()),
        )
        .unwrap()
    });
    report("  Kernel::prepare + drop", trials, calls, || {
        drop(black_box(
            kernel.prepare(black_box(stream), black_box(empty)).unwrap(),
        ));
    });
    report("  prepare + 4 pushes + drop", trials, calls, || {
        let mut l = kernel.prepare(black_box(stream), black_box(empty)).unwrap();
        push_saxpy(&mut l, &x, &y, &mut out);
        drop(black_box(l));
    });
    report("  prepare + 4 pushes + launch", trials, calls, || {
        let mut l = kernel.prepare(black_box(stream), black_box(empty)).unwrap();
        push_saxpy(&mut l, &x, &y, &mut out);
        // SAFETY: saxpy(alpha: f32, x: &[f32], y: &[f32], out: DisjointSlice<f32>); the
        // grid is empty.
        unsafe { l.launch() }.unwrap();
    });
}

/// The whole launch around the driver call, on a do-nothing driver (`stub_libcuda.c` next to
/// this file, built and put on `LD_LIBRARY_PATH` as its header says: every call succeeds,
/// kernels never run): our typed launcher (a one-block grid on a created stream, the buffers
/// uploaded on the default stream) against cudarc's raw `cuLaunchKernel` with the same
/// arguments, as `launch-bench` times them, and the raw call after binding the context as our
/// launcher does. The differences are our host cost alone, with no driver time around it.
/// Skipped without the stub; on a GPU, `launch-bench` is the measurement (launches there queue
/// up behind running kernels).
#[test]
#[ignore = "a measurement; run with --release -- --ignored --nocapture, on stub_libcuda.c"]
fn launch_cost_around_the_driver() {
    let gpu = match Gpu::first() {
        Ok(g) if g.properties().name.starts_with("stub libcuda") => g,
        Ok(g) => {
            println!(
                "SKIPPED: {} is not the stub driver (launch-bench measures GPUs)",
                g.properties().name
            );
            return;
        }
        Err(e) => {
            println!("SKIPPED: {e}");
            return;
        }
    };
    let module = Generated {
        inner: gpu.load_module("m", PTX, &["saxpy"], &[]).unwrap(),
    };
    let n = 256;
    let x = gpu.to_device(&vec![1.0f32; n]).unwrap();
    let y = gpu.to_device(&vec![2.0f32; n]).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let stream = gpu.new_stream().unwrap();
    let cfg = LaunchConfig::new(1, 256);
    let func = module
        .inner
        .kernel_at(0)
        .unwrap()
        .cuda_function()
        .unwrap()
        .cu_function();
    let cuda_stream = stream.cuda_stream().unwrap();
    let (cu_stream, ctx) = (cuda_stream.cu_stream(), cuda_stream.context().clone());
    let (mut alpha, mut n64) = (2.0f32, n as u64);
    let (mut px, mut py, mut po) = (x.device_ptr(), y.device_ptr(), out.device_ptr());
    let mut params: [*mut std::ffi::c_void; 7] = [
        (&raw mut alpha).cast(),
        (&raw mut px).cast(),
        (&raw mut n64).cast(),
        (&raw mut py).cast(),
        (&raw mut n64).cast(),
        (&raw mut po).cast(),
        (&raw mut n64).cast(),
    ];
    let (trials, calls) = counts(1_000_000);
    println!(
        "ns per launch on {}, best and median of {trials} trials of {calls}:",
        gpu.properties().name
    );
    println!("| case | best | median |");
    println!("| --- | --- | --- |");
    report("our typed launcher, created stream", trials, calls, || {
        module
            .saxpy(&stream, black_box(cfg), 2.0, &x, &y, &mut out)
            .unwrap();
    });
    let empty = LaunchConfig::new(0, 256);
    report(
        "  of which checks and pushes (empty grid: OursChecks)",
        trials,
        calls,
        || {
            module
                .saxpy(&stream, black_box(empty), 2.0, &x, &y, &mut out)
                .unwrap();
        },
    );
    let mut raw_launch = || {
        // SAFETY: saxpy's parameters in its order, the buffers alive; one block.
        unsafe {
            gpu_host::cudarc::driver::result::launch_kernel(
                func,
                (1, 1, 1),
                (256, 1, 1),
                0,
                cu_stream,
                &mut params,
            )
        }
        .unwrap();
    };
    report("raw cuLaunchKernel", trials, calls, &mut raw_launch);
    report(
        "raw cuLaunchKernel after bind_to_thread",
        trials,
        calls,
        || {
            ctx.bind_to_thread().unwrap();
            raw_launch();
        },
    );
    stream.synchronize().unwrap();
}
