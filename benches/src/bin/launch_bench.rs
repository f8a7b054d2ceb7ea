//! `launch-bench [--probe-lib LIBLAUNCH_PROBE]`: host time per launch of a tiny kernel through a
//! generated launcher (`ExampleKernels::saxpy`: 256 floats, one block), against the CUDA
//! driver's own `cuLaunchKernel` called from a C++ loop (`benches/peers/launch_probe.cpp`, built
//! with nvcc on the GPU machine as a shared library and loaded into this process, so both loops
//! use the same context, stream, kernel and buffers).
//!
//! Procedure: every case is warmed up with 2000 launches, then [`TRIALS`] trials of
//! [`LAUNCHES`] back-to-back launches run interleaved — one trial of each case in turn, the
//! starting case rotating — timing the submit loop only (each trial ends with a synchronize
//! outside the timed part, so the launch queue never fills). Host timings on a shared machine
//! drift by tens of percent within seconds; interleaving trial by trial exposes every case to
//! the same drift, and the bench prints each case's best and median trial. Our launcher's time
//! includes everything it does per launch: the configuration check against device and kernel
//! limits, the argument checks, ordering the buffers across streams, the in-flight record for
//! naming a faulting kernel, and the `cuLaunchKernel` call.

use std::ffi::c_void;
use std::process::ExitCode;
use std::time::Instant;

use cudarc::driver::sys;
use gpu_examples::ExampleKernels;
use gpu_host::{Gpu, LaunchConfig, Stream};

const WARMUP: usize = 2000;
const TRIALS: usize = 100;
const LAUNCHES: usize = 1000;

/// The C++ loop: `launches` launches of `f` on `stream`; microseconds per launch, or negative
/// after a failed launch.
type ProbeLoop =
    unsafe extern "C" fn(sys::CUfunction, sys::CUstream, *mut *mut c_void, std::ffi::c_int) -> f64;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("launch-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The cases, in the order printed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    /// Our launcher on the device's default stream.
    OursDefault,
    /// Our launcher on a created stream (the buffers were made on the default stream: the
    /// first launch orders them after their uploads, later ones find every use on one stream).
    OursStream,
    /// Our launcher with an empty grid: every check and the argument pushes, no driver call.
    OursChecks,
    /// Our launcher alternating between the two streams every launch: each launch waits for
    /// the other stream's last use of the three buffers (an event recorded and waited on each).
    OursAlternating,
    /// cudarc's raw `cuLaunchKernel` wrapper on the created stream, nothing of ours around it.
    Raw,
    /// The same after binding the context each time, as our launcher does.
    RawBound,
    /// cudarc's raw wrapper on the default stream.
    RawDefault,
    /// The C++ loop on the created stream.
    Cpp,
    /// The C++ loop on the default stream.
    CppDefault,
}

const CASES: [Case; 9] = [
    Case::OursDefault,
    Case::OursStream,
    Case::OursChecks,
    Case::OursAlternating,
    Case::Raw,
    Case::RawBound,
    Case::RawDefault,
    Case::Cpp,
    Case::CppDefault,
];

impl Case {
    fn label(self) -> &'static str {
        match self {
            Case::OursDefault => "our launcher, default stream",
            Case::OursStream => "our launcher, created stream",
            Case::OursChecks => {
                "  of which checks and argument pushes (empty grid, no driver call)"
            }
            Case::OursAlternating => "our launcher, 3 buffers switching streams every launch",
            Case::Raw => "cudarc's raw cuLaunchKernel, created stream",
            Case::RawBound => "  the same, binding the context each launch",
            Case::RawDefault => "cudarc's raw cuLaunchKernel, default stream",
            Case::Cpp => "C++ cuLaunchKernel loop, created stream",
            Case::CppDefault => "C++ cuLaunchKernel loop, default stream",
        }
    }
}

fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut probe_lib = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--probe-lib" => {
                probe_lib = Some(args.next().ok_or("--probe-lib needs the library's path")?);
            }
            "-h" | "--help" => {
                println!(
                    "usage: launch-bench [--probe-lib LIBLAUNCH_PROBE]\n\n\
                     LIBLAUNCH_PROBE: benches/peers/launch_probe.cpp built with\n  \
                     nvcc -O2 -shared -Xcompiler -fPIC -o liblaunch_probe.so launch_probe.cpp -lcuda"
                );
                return Ok(());
            }
            other => return Err(format!("unknown argument {other} (see --help)").into()),
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
    let empty = LaunchConfig::new(0, 256);
    let default = gpu.default_stream().clone();
    let stream = gpu.new_stream()?;

    let func = seed
        .raw()
        .kernel("saxpy")?
        .cuda_function()
        .ok_or("launch-bench needs a GPU (the simulator has no cuLaunchKernel)")?
        .cu_function();
    let handle = |s: &Stream| {
        s.cuda_stream()
            .map_or(std::ptr::null_mut(), |s| s.cu_stream())
    };
    let (cu_default, cu_stream) = (handle(&default), handle(&stream));
    let ctx = stream
        .cuda_stream()
        .ok_or("launch-bench needs a GPU")?
        .context()
        .clone();
    // The raw loops' parameters, in saxpy's order: alpha, x ptr/len, y ptr/len, out ptr/len.
    let (mut alpha, mut n64) = (2.0f32, n as u64);
    let (mut px, mut py, mut po) = (x.device_ptr(), y.device_ptr(), out.device_ptr());
    let mut params: [*mut c_void; 7] = [
        (&raw mut alpha).cast(),
        (&raw mut px).cast(),
        (&raw mut n64).cast(),
        (&raw mut py).cast(),
        (&raw mut n64).cast(),
        (&raw mut po).cast(),
        (&raw mut n64).cast(),
    ];
    let probe = match &probe_lib {
        // SAFETY: loading the probe runs no initializers beyond the C++ runtime's.
        Some(path) => Some(unsafe { libloading::Library::new(path) }?),
        None => None,
    };
    let probe_loop = match &probe {
        // SAFETY: `launch_probe_loop` has the signature `ProbeLoop` (launch_probe.cpp).
        Some(lib) => Some(*unsafe { lib.get::<ProbeLoop>(b"launch_probe_loop\0") }?),
        None => None,
    };

    let mut flip = false;
    // One trial of `launches` launches of `case`: microseconds per launch (None: not run).
    let mut trial = |case: Case, launches: usize| -> gpu_host::Result<Option<f64>> {
        let raw = |s: sys::CUstream, bind: bool, params: &mut [*mut c_void]| {
            if bind {
                ctx.bind_to_thread()
                    .unwrap_or_else(|e| panic!("binding the context failed: {e:?}"));
            }
            // SAFETY: saxpy's parameters in its order, buffers alive and used by these loops
            // only, one block of 256 threads; the function and streams belong to the context.
            unsafe {
                cudarc::driver::result::launch_kernel(func, (1, 1, 1), (256, 1, 1), 0, s, params)
            }
            .unwrap_or_else(|e| panic!("raw cuLaunchKernel of saxpy failed: {e:?}"));
        };
        let t0 = Instant::now();
        let on = match case {
            Case::OursDefault | Case::OursChecks => &default,
            _ => &stream,
        };
        match case {
            Case::OursDefault | Case::OursStream => {
                for _ in 0..launches {
                    seed.saxpy(on, cfg, 2.0, &x, &y, &mut out)?;
                }
            }
            Case::OursChecks => {
                for _ in 0..launches {
                    seed.saxpy(on, empty, 2.0, &x, &y, &mut out)?;
                }
            }
            Case::OursAlternating => {
                for _ in 0..launches {
                    flip = !flip;
                    seed.saxpy(
                        if flip { &default } else { &stream },
                        cfg,
                        2.0,
                        &x,
                        &y,
                        &mut out,
                    )?;
                }
            }
            Case::Raw | Case::RawBound | Case::RawDefault => {
                let s = if case == Case::RawDefault {
                    cu_default
                } else {
                    cu_stream
                };
                for _ in 0..launches {
                    raw(s, case == Case::RawBound, &mut params);
                }
            }
            Case::Cpp | Case::CppDefault => {
                let Some(f) = probe_loop else {
                    return Ok(None);
                };
                let s = if case == Case::CppDefault {
                    cu_default
                } else {
                    cu_stream
                };
                // SAFETY: as for the raw loops; the probe calls cuLaunchKernel with exactly these.
                let us = unsafe { f(func, s, params.as_mut_ptr(), launches as i32) };
                if us < 0.0 {
                    panic!("the C++ probe's cuLaunchKernel failed (see its message above)");
                }
                default.synchronize()?;
                stream.synchronize()?;
                return Ok(Some(us));
            }
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / launches as f64;
        default.synchronize()?;
        stream.synchronize()?;
        Ok(Some(us))
    };

    for case in CASES {
        trial(case, WARMUP)?;
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(TRIALS); CASES.len()];
    for t in 0..TRIALS {
        for k in 0..CASES.len() {
            let i = (t + k) % CASES.len();
            if let Some(us) = trial(CASES[i], LAUNCHES)? {
                times[i].push(us);
            }
        }
    }
    let check = out.to_vec()?;
    if check.iter().any(|&v| v != 4.0) {
        return Err(format!("saxpy computed {}, expected 4", check[0]).into());
    }

    // Each case's (best, median) trial.
    let stats: Vec<Option<(f64, f64)>> = times
        .iter_mut()
        .map(|t| {
            if t.is_empty() {
                return None;
            }
            t.sort_by(f64::total_cmp);
            Some((t[0], t[t.len() / 2]))
        })
        .collect();
    println!("{TRIALS} interleaved trials of {LAUNCHES} launches each; us per launch:");
    println!("| case | best | median |");
    println!("| --- | --- | --- |");
    for (case, s) in CASES.iter().zip(&stats) {
        if let Some((best, median)) = s {
            println!("| {} | {best:.3} | {median:.3} |", case.label());
        }
    }
    let stat = |c: Case| CASES.iter().position(|&k| k == c).and_then(|i| stats[i]);
    let ratio = |ours: Case, peer: Case, label: &str| {
        if let (Some(o), Some(p)) = (stat(ours), stat(peer)) {
            println!(
                "ratio ours / {label}: best {:.3}, median {:.3}",
                o.0 / p.0,
                o.1 / p.1
            );
        }
    };
    ratio(Case::OursStream, Case::Cpp, "C++, created stream");
    ratio(Case::OursDefault, Case::CppDefault, "C++, default stream");
    ratio(Case::OursStream, Case::Raw, "raw cudarc, created stream");
    if probe_loop.is_none() {
        println!("(no --probe-lib: the C++ rows were not run)");
    }
    Ok(())
}
