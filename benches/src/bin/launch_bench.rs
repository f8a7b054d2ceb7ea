//! `launch-bench [--probe LAUNCH_PROBE SAXPY_PTX]`: host time per launch of a tiny kernel through
//! a generated launcher (`ExampleKernels::saxpy`: 256 floats, one block), against the CUDA driver's
//! own `cuLaunchKernel` called from C++ (`benches/peers/launch_probe.cpp`, compiled with nvcc on
//! the GPU machine and run here as a subprocess, so both figures come from the same machine and
//! session).
//!
//! Procedure (the same on both sides): 2000 warm-up launches, then the best of 20 trials of 1000
//! back-to-back launches, timing the submit loop only (each trial ends with a synchronize
//! outside the timed part, so the launch queue never fills); every case, the C++ probe
//! included, runs in 5 interleaved rounds and keeps its best. Our launcher's time includes everything it
//! does per launch: the configuration check against device and kernel limits, the argument
//! checks, the in-flight record for naming a faulting kernel, and the `cuLaunchKernel` call.

use std::process::{Command, ExitCode};
use std::time::Instant;

use gpu_examples::ExampleKernels;
use gpu_host::{Gpu, LaunchConfig, Stream};

const WARMUP: usize = 2000;
const TRIALS: usize = 20;
const LAUNCHES: usize = 1000;
const ROUNDS: usize = 5;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("launch-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Best of [`TRIALS`] of the mean host time per launch over [`LAUNCHES`] back-to-back calls of
/// `launch` on `stream` (after [`WARMUP`] calls), each trial synchronized outside the timing.
fn time_loop(
    stream: &Stream,
    mut launch: impl FnMut(&Stream) -> gpu_host::Result<()>,
) -> gpu_host::Result<f64> {
    for _ in 0..WARMUP {
        launch(stream)?;
    }
    stream.synchronize()?;
    let mut best = f64::INFINITY;
    for _ in 0..TRIALS {
        let t0 = Instant::now();
        for _ in 0..LAUNCHES {
            launch(stream)?;
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / LAUNCHES as f64;
        stream.synchronize()?;
        best = best.min(us);
    }
    Ok(best)
}

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut probe = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--probe" => {
                let exe = args
                    .next()
                    .ok_or("--probe needs the probe and a PTX file")?;
                let ptx = args
                    .next()
                    .ok_or("--probe needs the probe and a PTX file")?;
                probe = Some((exe, ptx));
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let gpu = Gpu::first()?;
    println!("GPU: {}", gpu.properties().name);
    let seed = ExampleKernels::load(&gpu)?;
    seed.raw().load_all()?;
    let n = 256;
    let x = gpu.to_device(&vec![1.0f32; n])?;
    let y = gpu.to_device(&vec![2.0f32; n])?;
    let mut out = gpu.alloc_zeroed::<f32>(n)?;
    let cfg = LaunchConfig::new(1, 256);
    let default = gpu.default_stream().clone();
    let stream = gpu.new_stream()?;
    // Host timings drift by tens of percent over seconds on a shared machine, so the whole
    // set (the C++ probe included) runs ROUNDS times, interleaved, and each figure is its
    // best round.
    let mut best_of = [f64::INFINITY; 8];
    for _ in 0..ROUNDS {
        // The same loop in three settings, to break the launcher's cost down:
        // 1. on the device's default stream;
        // 2. with an empty grid: every check and the argument pushes, but no driver call;
        // 3. on a second stream, with the buffers made on the default stream: the first launch
        //    orders them after their uploads (an event per buffer), the others find every use on
        //    one stream (one atomic load per buffer), as in the C++ probe.
        let single = time_loop(&default, |s| seed.saxpy(s, cfg, 2.0, &x, &y, &mut out))?;
        let empty = LaunchConfig::new(0, 256);
        let checks = time_loop(&default, |s| seed.saxpy(s, empty, 2.0, &x, &y, &mut out))?;
        let best = time_loop(&stream, |s| seed.saxpy(s, cfg, 2.0, &x, &y, &mut out))?;
        // 4. alternating between the two streams every launch: each launch waits for the other
        //    stream's last use of the buffers (an event recorded and waited on per buffer).
        let mut flip = false;
        let alternating = time_loop(&stream, |s| {
            flip = !flip;
            seed.saxpy(if flip { &default } else { s }, cfg, 2.0, &x, &y, &mut out)
        })?;
        // 5. the same kernel through cudarc's raw `cuLaunchKernel` wrapper, nothing of ours around
        //    it: what is left between this and the C++ loop is not in the launcher.
        let raw = match (
            seed.raw().kernel("saxpy")?.cuda_function(),
            stream.cuda_stream(),
        ) {
            (Some(func), Some(cu_stream)) => {
                let (mut alpha, mut n64) = (2.0f32, n as u64);
                let (mut px, mut py, mut po) = (x.device_ptr(), y.device_ptr(), out.device_ptr());
                let mut params: [*mut std::ffi::c_void; 7] = [
                    (&mut alpha as *mut f32).cast(),
                    (&mut px as *mut u64).cast(),
                    (&mut n64 as *mut u64).cast(),
                    (&mut py as *mut u64).cast(),
                    (&mut n64 as *mut u64).cast(),
                    (&mut po as *mut u64).cast(),
                    (&mut n64 as *mut u64).cast(),
                ];
                let f = func.cu_function();
                let ctx = cu_stream.context().clone();
                // 6. the same with the context binding every launch of ours does first
                //    (`cuCtxGetCurrent`, and `cuCtxSetCurrent` when another context is current).
                let mut time_raw = |on: &Stream, bind: bool| {
                    let s = on
                        .cuda_stream()
                        .map_or(std::ptr::null_mut(), |s| s.cu_stream());
                    time_loop(on, |_| {
                        if bind {
                            ctx.bind_to_thread()
                                .unwrap_or_else(|e| panic!("binding the context failed: {e:?}"));
                        }
                        // SAFETY: saxpy's parameters in its order (alpha, x ptr/len, y ptr/len, out
                        // ptr/len), buffers alive and used on this stream only, one block of 256
                        // threads.
                        unsafe {
                            cudarc::driver::result::launch_kernel(
                                f,
                                (1, 1, 1),
                                (256, 1, 1),
                                0,
                                s,
                                &mut params,
                            )
                        }
                        .unwrap_or_else(|e| panic!("raw cuLaunchKernel of saxpy failed: {e:?}"));
                        Ok(())
                    })
                };
                // 7. raw on the default stream (CUDA's legacy stream), to tell what that stream
                //    costs in the driver apart from what the launcher costs.
                Some((
                    time_raw(&stream, false)?,
                    time_raw(&stream, true)?,
                    time_raw(&default, false)?,
                ))
            }
            _ => None,
        };
        let cpp = match &probe {
            Some((exe, ptx)) => Some(run_probe(exe, ptx)?),
            None => None,
        };
        let (raw, bound, raw_default) = match raw {
            Some((r, b, d)) => (Some(r), Some(b), Some(d)),
            None => (None, None, None),
        };
        let round = [
            Some(single),
            Some(checks),
            Some(best),
            Some(alternating),
            raw,
            bound,
            raw_default,
            cpp,
        ];
        for (b, r) in best_of.iter_mut().zip(round) {
            *b = b.min(r.unwrap_or(f64::INFINITY));
        }
    }
    let [
        single,
        checks,
        best,
        alternating,
        raw,
        bound,
        raw_default,
        cpp,
    ] = best_of;
    let check = out.to_vec()?;
    if check.iter().any(|&v| v != 4.0) {
        return Err(format!("saxpy computed {}, expected 4", check[0]).into());
    }
    println!("best of {ROUNDS} rounds, each the best of {TRIALS} x {LAUNCHES} launches:");
    println!("generated launcher, default stream: {single:.3} us per launch");
    println!("  of which checks and argument pushes (empty grid, no driver call): {checks:.3} us");
    println!("generated launcher, second stream: {best:.3} us per launch");
    println!(
        "generated launcher, alternating streams (3 buffers change stream every launch): \
         {alternating:.3} us per launch"
    );
    if raw.is_finite() {
        println!("cudarc's raw cuLaunchKernel, same kernel and stream: {raw:.3} us per launch");
        println!("  the same after binding the context each time: {bound:.3} us per launch");
        println!("  the same on the default stream: {raw_default:.3} us per launch");
    }
    if cpp.is_finite() {
        println!("C++ cuLaunchKernel:  {cpp:.3} us per launch");
        println!(
            "ratio (ours / cuLaunchKernel): {:.3} on the default stream, {:.3} on a second stream",
            single / cpp,
            best / cpp
        );
    }
    Ok(())
}

/// Runs the C++ probe once; its time per launch in microseconds.
fn run_probe(exe: &str, ptx: &str) -> std::result::Result<f64, Box<dyn std::error::Error>> {
    let output = Command::new(exe).arg(ptx).output()?;
    if !output.status.success() {
        return Err(format!("{exe} failed: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let cpp = text
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("unexpected probe output: {text}"))?;
    Ok(cpp)
}
