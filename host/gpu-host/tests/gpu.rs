//! Tests that need a CUDA device. Without a driver or device each prints "SKIPPED: ..." and
//! passes, so they are safe to run anywhere; on the GPU machine they exercise the real driver.
//!
//! The kernels are hand-written PTX (no kernel build needed), with the parameter layout that
//! `#[kernel]` gives Rust kernels: a slice is a pointer and a `u64` length.

use gpu_host::{DeviceBuffer, DeviceCopy, Error, Gpu, LaunchConfig, Stream};

const PTX: &str = r#"
.version 7.8
.target sm_80
.address_size 64

.extern .shared .align 16 .b8 dyn_smem[];

// out[i] = a[i] + b[i] for i < out.len()
.visible .entry vector_add(
	.param .u64 .ptr .align 1 vector_add_param_0,
	.param .u64 vector_add_param_1,
	.param .u64 .ptr .align 1 vector_add_param_2,
	.param .u64 vector_add_param_3,
	.param .u64 .ptr .align 1 vector_add_param_4,
	.param .u64 vector_add_param_5
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<14>;

	ld.param.u64 %rd1, [vector_add_param_0];
	ld.param.u64 %rd2, [vector_add_param_2];
	ld.param.u64 %rd3, [vector_add_param_4];
	ld.param.u64 %rd4, [vector_add_param_5];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	cvt.u64.u32 %rd5, %r3;
	mad.wide.u32 %rd6, %r1, %r2, %rd5;
	setp.ge.u64 %p1, %rd6, %rd4;
	@%p1 bra $L_done;
	shl.b64 %rd7, %rd6, 2;
	cvta.to.global.u64 %rd8, %rd1;
	cvta.to.global.u64 %rd9, %rd2;
	cvta.to.global.u64 %rd10, %rd3;
	add.s64 %rd11, %rd8, %rd7;
	add.s64 %rd12, %rd9, %rd7;
	add.s64 %rd13, %rd10, %rd7;
	ld.global.f32 %f1, [%rd11];
	ld.global.f32 %f2, [%rd12];
	add.f32 %f3, %f1, %f2;
	st.global.f32 [%rd13], %f3;
$L_done:
	ret;
}

// out[i] = x[i] * p.scale + p.offset, with p a by-value struct { scale: f32, offset: f32 }
.visible .entry affine(
	.param .u64 affine_param_0,
	.param .u64 affine_param_1,
	.param .align 4 .b8 affine_param_2[8],
	.param .u64 affine_param_3,
	.param .u64 affine_param_4
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .f32 %f<5>;
	.reg .b64 %rd<12>;

	ld.param.u64 %rd1, [affine_param_0];
	ld.param.f32 %f1, [affine_param_2];
	ld.param.f32 %f2, [affine_param_2+4];
	ld.param.u64 %rd3, [affine_param_3];
	ld.param.u64 %rd4, [affine_param_4];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	cvt.u64.u32 %rd5, %r3;
	mad.wide.u32 %rd6, %r1, %r2, %rd5;
	setp.ge.u64 %p1, %rd6, %rd4;
	@%p1 bra $L_affine_done;
	shl.b64 %rd7, %rd6, 2;
	cvta.to.global.u64 %rd8, %rd1;
	cvta.to.global.u64 %rd9, %rd3;
	add.s64 %rd10, %rd8, %rd7;
	add.s64 %rd11, %rd9, %rd7;
	ld.global.f32 %f3, [%rd10];
	fma.rn.f32 %f4, %f3, %f1, %f2;
	st.global.f32 [%rd11], %f4;
$L_affine_done:
	ret;
}

// Round-trips each element through the *end* of `words` 32-bit words of dynamic shared memory,
// so a launch with more than 48 KiB fails unless the function was opted in.
.visible .entry shared_tail(
	.param .u64 shared_tail_param_0,
	.param .u64 shared_tail_param_1,
	.param .u64 shared_tail_param_2,
	.param .u64 shared_tail_param_3,
	.param .u32 shared_tail_param_4
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<10>;
	.reg .f32 %f<3>;
	.reg .b64 %rd<12>;

	ld.param.u64 %rd1, [shared_tail_param_0];
	ld.param.u64 %rd3, [shared_tail_param_2];
	ld.param.u64 %rd4, [shared_tail_param_3];
	ld.param.u32 %r4, [shared_tail_param_4];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	cvt.u64.u32 %rd5, %r3;
	mad.wide.u32 %rd6, %r1, %r2, %rd5;
	setp.lt.u64 %p1, %rd6, %rd4;
	shl.b64 %rd7, %rd6, 2;
	cvta.to.global.u64 %rd8, %rd1;
	cvta.to.global.u64 %rd9, %rd3;
	add.s64 %rd10, %rd8, %rd7;
	add.s64 %rd11, %rd9, %rd7;
	mov.f32 %f1, 0f00000000;
	@%p1 ld.global.f32 %f1, [%rd10];
	sub.u32 %r5, %r4, 1;
	sub.u32 %r6, %r5, %r3;
	shl.b32 %r7, %r6, 2;
	mov.u32 %r8, dyn_smem;
	add.u32 %r9, %r8, %r7;
	st.shared.f32 [%r9], %f1;
	bar.sync 0;
	ld.shared.f32 %f2, [%r9];
	@%p1 st.global.f32 [%rd11], %f2;
	ret;
}
"#;

#[repr(C)]
#[derive(Clone, Copy, Debug, DeviceCopy)]
struct Affine {
    scale: f32,
    offset: f32,
}

/// The device, or `None` (after printing why) on a machine without one.
fn gpu() -> Option<Gpu> {
    match Gpu::first() {
        Ok(g) => Some(g),
        Err(e @ (Error::NoDriver { .. } | Error::NoDevice)) => {
            let _ = {
                use std::io::Write as _;
                writeln!(std::io::stderr(), "SKIPPED: {e}")
            };
            None
        }
        Err(e) => panic!("opening the GPU failed: {e}"),
    }
}

fn load(gpu: &Gpu) -> gpu_host::Module {
    gpu.load_ptx(
        "test_kernels",
        PTX,
        &["vector_add", "affine", "shared_tail"],
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn properties_are_sensible() {
    let Some(gpu) = gpu() else { return };
    let p = gpu.properties();
    println!("{p:#?}");
    assert!(!p.name.is_empty());
    assert!(p.compute_capability.0 >= 5);
    assert!(p.multiprocessor_count > 0);
    assert_eq!(p.warp_size, 32);
    assert!(p.max_threads_per_block >= 1024);
    assert!(p.max_grid_dims.0 >= 65_535);
    assert!(p.max_shared_memory_per_block >= 48 * 1024);
    assert!(p.total_memory > 1 << 30);
    assert!(Gpu::count().unwrap() >= 1);
    assert!(matches!(
        Gpu::new(1000),
        Err(Error::InvalidOrdinal { ordinal: 1000, .. })
    ));
}

#[test]
fn upload_download_and_copies() {
    let Some(gpu) = gpu() else { return };
    let data: Vec<u32> = (0..100_003).collect();
    let mut buf = gpu.to_device(&data).unwrap();
    assert_eq!(buf.len(), data.len());
    assert_eq!(buf.size_bytes(), data.len() * 4);
    assert_eq!(buf.to_vec().unwrap(), data);

    let zeros = gpu.alloc_zeroed::<[f32; 3]>(1000).unwrap();
    assert!(zeros.to_vec().unwrap().iter().all(|v| *v == [0.0; 3]));

    let rev: Vec<u32> = data.iter().rev().copied().collect();
    buf.copy_from_host(&rev).unwrap();
    let mut host = vec![0u32; data.len()];
    buf.copy_to_host(&mut host).unwrap();
    assert_eq!(host, rev);

    let mut other = gpu.alloc_zeroed::<u32>(data.len()).unwrap();
    other.copy_from_device(&buf).unwrap();
    assert_eq!(other.to_vec().unwrap(), rev);

    let err = buf.copy_from_host(&data[1..]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::SizeMismatch {
                expected: 100_003,
                actual: 100_002,
                ..
            }
        ),
        "{err}"
    );
    let err = buf.copy_to_host(&mut host[..5]).unwrap_err();
    assert!(matches!(err, Error::SizeMismatch { .. }), "{err}");
    assert_ne!(buf.device_ptr(), 0);
}

#[test]
fn zero_length_buffers_work() {
    let Some(gpu) = gpu() else { return };
    let empty: DeviceBuffer<f32> = gpu.to_device(&[]).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.device_ptr(), 0);
    assert_eq!(empty.to_vec().unwrap(), Vec::<f32>::new());
    let mut z = gpu.alloc_zeroed::<f32>(0).unwrap();
    z.copy_from_host(&[]).unwrap();
    z.copy_from_device(&empty).unwrap();

    // An empty launch with empty buffers is a no-op.
    let module = load(&gpu);
    let k = module.kernel("vector_add").unwrap();
    let cfg = LaunchConfig::for_elements(0, 256);
    let mut l = k.prepare(gpu.default_stream(), cfg).unwrap();
    l.input("a", &empty)
        .input("b", &empty)
        .output("out", &mut z);
    // SAFETY: vector_add takes (ptr, len) x 3.
    unsafe { l.launch() }.unwrap();

    // A real launch over empty buffers passes null pointers and length 0.
    let mut l = k
        .prepare(gpu.default_stream(), LaunchConfig::new(1, 32))
        .unwrap();
    l.input("a", &empty)
        .input("b", &empty)
        .output("out", &mut z);
    // SAFETY: as above; with length 0 the kernel touches no memory.
    unsafe { l.launch() }.unwrap();
    gpu.synchronize().unwrap();
}

#[test]
fn vector_add_launch() {
    let Some(gpu) = gpu() else { return };
    let module = load(&gpu);
    let k = module.kernel("vector_add").unwrap();
    println!("{:?} param sizes {:?}", k.attributes(), k.param_sizes());
    assert_eq!(k.param_sizes(), Some(&[8usize; 6][..]));
    assert!(k.attributes().max_threads_per_block > 0);
    assert!(k.attributes().binary_version >= 50);

    let n = 1_000_003;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let da = gpu.to_device(&a).unwrap();
    let db = gpu.to_device(&b).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let cfg = LaunchConfig::for_elements(n, 256);
    k.validate(cfg, &gpu).unwrap();
    let mut l = k.prepare(gpu.default_stream(), cfg).unwrap();
    l.input("a", &da).input("b", &db).output("out", &mut out);
    assert_eq!(l.param_count(), 6);
    // SAFETY: vector_add(a: &[f32], b: &[f32], out: DisjointSlice<f32>).
    unsafe { l.launch() }.unwrap();
    let got = out.to_vec().unwrap();
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, 3.0 * i as f32, "element {i}");
    }
}

#[test]
fn by_value_struct_parameter() {
    let Some(gpu) = gpu() else { return };
    let module = load(&gpu);
    let k = module.kernel("affine").unwrap();
    assert_eq!(k.param_sizes(), Some(&[8usize, 8, 8, 8, 8][..]));
    let x: Vec<f32> = (0..5000).map(|i| i as f32).collect();
    let dx = gpu.to_device(&x).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(x.len()).unwrap();
    let p = Affine {
        scale: 0.5,
        offset: -3.0,
    };
    let mut l = k
        .prepare(
            gpu.default_stream(),
            LaunchConfig::for_elements(x.len(), 128),
        )
        .unwrap();
    l.input("x", &dx).value("p", &p).output("out", &mut out);
    // SAFETY: affine(x: &[f32], p: Affine, out: DisjointSlice<f32>).
    unsafe { l.launch() }.unwrap();
    let got = out.to_vec().unwrap();
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, i as f32 * 0.5 - 3.0);
    }
}

/// `out = x * scale + offset` on `s`.
fn affine(
    k: &gpu_host::Kernel,
    s: &Stream,
    x: &DeviceBuffer<f32>,
    out: &mut DeviceBuffer<f32>,
    (scale, offset): (f32, f32),
) {
    let mut l = k
        .prepare(s, LaunchConfig::for_elements(x.len(), 256))
        .unwrap();
    l.input("x", x)
        .value("p", &Affine { scale, offset })
        .output("out", out);
    // SAFETY: affine(x: &[f32], p: Affine, out: DisjointSlice<f32>), same lengths.
    unsafe { l.launch() }.unwrap();
}

#[test]
fn buffers_are_ordered_across_streams() {
    let Some(gpu) = gpu() else { return };
    let module = load(&gpu);
    let k = module.kernel("affine").unwrap();
    let (s1, s2) = (gpu.new_stream().unwrap(), gpu.new_stream().unwrap());
    // Large enough that each kernel runs tens of microseconds, so an unordered pair overlaps.
    let n = 1 << 24;
    for round in 0..3 {
        // Read after write: `t` is written by a chain of kernels on s1 and read at once on s2.
        let mut t = s1.alloc_zeroed::<f32>(n).unwrap();
        let mut u = s1.alloc_zeroed::<f32>(n).unwrap();
        for _ in 0..8 {
            affine(k, &s1, &t, &mut u, (1.0, 1.0));
            std::mem::swap(&mut t, &mut u);
        }
        let mut r = s2.alloc_zeroed::<f32>(n).unwrap();
        affine(k, &s2, &t, &mut r, (2.0, 0.0));
        // Write after read: s1 overwrites `t` while s2's read may still be queued.
        affine(k, &s1, &u, &mut t, (0.0, -5.0));
        // Free while another stream reads: `big` (s1's) is read by s2, dropped at once, and
        // its memory handed to a new buffer that s1 fills.
        let big = s1.to_device(&vec![7.0f32; n]).unwrap();
        let mut r2 = s2.alloc_zeroed::<f32>(n).unwrap();
        for _ in 0..4 {
            affine(k, &s2, &big, &mut r2, (1.0, 0.0));
        }
        drop(big);
        let reuse = s1.to_device(&vec![0.0f32; n]).unwrap();
        assert!(
            r.to_vec().unwrap().iter().all(|&v| v == 16.0),
            "round {round}: s2 must read s1's writes, before s1 overwrites them"
        );
        assert!(
            t.to_vec().unwrap().iter().all(|&v| v == -5.0),
            "round {round}: the overwrite"
        );
        assert!(
            r2.to_vec().unwrap().iter().all(|&v| v == 7.0),
            "round {round}: memory freed while s2 read it"
        );
        drop(reuse);
    }
}

#[test]
fn large_dynamic_shared_memory_opts_in() {
    let Some(gpu) = gpu() else { return };
    let module = load(&gpu);
    let k = module.kernel("shared_tail").unwrap();
    let n = 10_000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 1.5).collect();
    let dx = gpu.to_device(&x).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let limit = gpu.properties().shared_memory_limit_per_block();
    // Well above the 48 KiB default, within the opt-in limit.
    let bytes = (100 * 1024).min(limit - k.attributes().static_shared_bytes);
    assert!(
        bytes > 48 * 1024,
        "device opt-in limit {limit} too small for this test"
    );
    let words = bytes / 4;
    let cfg = LaunchConfig::for_elements(n, 256).with_shared_mem(bytes);
    let mut l = k.prepare(gpu.default_stream(), cfg).unwrap();
    l.input("x", &dx)
        .output("out", &mut out)
        .value("words", &words);
    // SAFETY: shared_tail(x: &[f32], out: DisjointSlice<f32>, words: u32), with `words` words of
    // dynamic shared memory.
    unsafe { l.launch() }.unwrap();
    assert_eq!(out.to_vec().unwrap(), x);

    // Beyond the device's limit: rejected before launching, naming the limit.
    let cfg = LaunchConfig::for_elements(n, 256).with_shared_mem(limit + 1);
    let err = k.prepare(gpu.default_stream(), cfg).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("shared_tail") && msg.contains(&limit.to_string()),
        "{msg}"
    );
}

#[test]
fn invalid_configs_and_arguments_are_rejected_before_launch() {
    let Some(gpu) = gpu() else { return };
    let module = load(&gpu);
    let k = module.kernel("vector_add").unwrap();
    let a = gpu.to_device(&[1.0f32; 64]).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(64).unwrap();

    let err = k
        .prepare(gpu.default_stream(), LaunchConfig::new(1, 2048))
        .unwrap_err();
    assert!(matches!(err, Error::LaunchConfig { .. }), "{err}");
    println!("{err}");

    // Too few arguments: the PTX declares six parameters.
    let mut l = k
        .prepare(gpu.default_stream(), LaunchConfig::new(1, 64))
        .unwrap();
    l.input("a", &a).output("out", &mut out);
    // SAFETY: rejected by the signature check before reaching the driver.
    let err = unsafe { l.launch() }.unwrap_err();
    assert!(matches!(err, Error::Argument { .. }), "{err}");
    println!("{err}");

    // Right count, wrong size: a u32 where the kernel takes a u64 length.
    let mut l = k
        .prepare(gpu.default_stream(), LaunchConfig::new(1, 64))
        .unwrap();
    l.input("a", &a)
        .value("b_ptr", &a.device_ptr())
        .value("b_len", &64u32)
        .output("out", &mut out);
    // SAFETY: rejected by the signature check before reaching the driver.
    let err = unsafe { l.launch() }.unwrap_err();
    assert!(
        matches!(&err, Error::Argument { argument, .. } if argument == "b_len"),
        "{err}"
    );
    println!("{err}");

    assert!(matches!(
        module.kernel("nope"),
        Err(Error::KernelNotFound { .. })
    ));
    let err = gpu
        .load_ptx("m", PTX, &["vector_add", "missing"])
        .unwrap_err();
    assert!(
        matches!(&err, Error::KernelNotFound { kernel, .. } if kernel == "missing"),
        "{err}"
    );

    let bad = ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry bad()\n{\n\tfrobnicate.u32 %r1;\n\tret;\n}\n";
    let err = gpu.load_ptx("bad", bad, &["bad"]).unwrap_err();
    assert!(matches!(err, Error::InvalidPtx { .. }), "{err}");
    println!("{err}");
    // The context is still usable afterwards.
    assert_eq!(a.to_vec().unwrap(), vec![1.0; 64]);
}

#[test]
fn streams_events_timing_and_occupancy() {
    let Some(gpu) = gpu() else { return };
    let module = load(&gpu);
    let k = module.kernel("vector_add").unwrap();
    let s = gpu.new_stream().unwrap();
    let n = 1 << 22;
    let a = s.to_device(&vec![1.0f32; n]).unwrap();
    let b = s.to_device(&vec![2.0f32; n]).unwrap();
    // Allocated on the default stream, written on `s`, read back on the default stream: the
    // buffer's ordering across streams must put the read after the kernel.
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let ((), ms) = s
        .time(|s| {
            let mut l = k.prepare(s, LaunchConfig::for_elements(n, 256))?;
            l.input("a", &a).input("b", &b).output("out", &mut out);
            // SAFETY: vector_add(a: &[f32], b: &[f32], out: DisjointSlice<f32>).
            unsafe { l.launch() }
        })
        .unwrap();
    println!("vector_add of {n} f32 took {ms:.3} ms");
    assert!(ms > 0.0);
    assert!(out.to_vec().unwrap().iter().all(|v| *v == 3.0));

    let e1 = s.record_event().unwrap();
    let e2 = s.record_event().unwrap();
    e2.synchronize().unwrap();
    assert!(e1.elapsed_ms(&e2).unwrap() >= 0.0);
    assert!(e2.is_complete().unwrap());
    s.synchronize().unwrap();

    let occ = k.occupancy(256, 0).unwrap();
    println!("{occ:?}");
    assert!(occ.active_blocks_per_sm > 0);
    assert!(occ.fraction > 0.0 && occ.fraction <= 1.0);
    let best = k.suggested_block_size().unwrap();
    println!("{best:?}");
    assert!(best.block_size > 0 && best.block_size <= 1024);
    assert!(best.min_grid_size > 0);
}

#[test]
fn load_ptx_file_finds_the_kernels() {
    let Some(gpu) = gpu() else { return };
    let path = std::env::temp_dir().join(format!("gpu_host_test_{}.ptx", std::process::id()));
    std::fs::write(&path, PTX).unwrap();
    let module = gpu.load_ptx_file(&path).unwrap();
    let names: Vec<&str> = module.kernel_names().collect();
    assert_eq!(names, ["vector_add", "affine", "shared_tail"]);
    let _ = std::fs::remove_file(&path);
    let err = gpu.load_ptx_file("/nonexistent/x.ptx").unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
}

/// Launches `vector_add` from the PTX that rustc builds from `kernels/example-kernels` when
/// `GPU_HOST_SEED_PTX` names that file (the kernel build is not part of this test).
#[test]
fn rust_compiled_seed_vector_add() {
    let Ok(path) = std::env::var("GPU_HOST_SEED_PTX") else {
        let _ = {
            use std::io::Write as _;
            writeln!(std::io::stderr(), "SKIPPED: GPU_HOST_SEED_PTX is not set")
        };
        return;
    };
    let Some(gpu) = gpu() else { return };
    let module = gpu.load_ptx_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let k = module.kernel("vector_add").unwrap();
    assert_eq!(k.param_sizes(), Some(&[8usize; 6][..]));
    let n = 4097;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let da = gpu.to_device(&a).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let mut l = k
        .prepare(gpu.default_stream(), LaunchConfig::for_elements(n, 128))
        .unwrap();
    l.input("a", &da).input("b", &da).output("out", &mut out);
    // SAFETY: vector_add(a: &[f32], b: &[f32], out: DisjointSlice<f32>).
    unsafe { l.launch() }.unwrap();
    let got = out.to_vec().unwrap();
    assert!(got.iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32));
}
