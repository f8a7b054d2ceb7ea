//! Tests of the logic that needs no GPU: launch arithmetic, validation, error messages, and the
//! no-driver path.

use crate::*;

/// Limits of an H100 SXM (sm_90), as the driver reports them.
fn h100() -> DeviceProperties {
    DeviceProperties {
        ordinal: 0,
        name: "fake H100".to_string(),
        compute_capability: (9, 0),
        multiprocessor_count: 132,
        total_memory: 80 << 30,
        max_threads_per_block: 1024,
        max_block_dims: (1024, 1024, 64),
        max_grid_dims: (2_147_483_647, 65_535, 65_535),
        max_shared_memory_per_block: 48 * 1024,
        max_shared_memory_per_block_optin: 227 * 1024,
        shared_memory_per_multiprocessor: 228 * 1024,
        registers_per_block: 65_536,
        registers_per_multiprocessor: 65_536,
        warp_size: 32,
        max_threads_per_multiprocessor: 2048,
        max_blocks_per_multiprocessor: 32,
        l2_cache_bytes: 50 << 20,
        clock_rate_khz: 1_980_000,
        memory_clock_rate_khz: 2_619_000,
        memory_bus_width_bits: 5120,
    }
}

fn kernel_attrs() -> KernelAttributes {
    KernelAttributes {
        max_threads_per_block: 1024,
        static_shared_bytes: 0,
        const_bytes: 0,
        local_bytes_per_thread: 0,
        registers_per_thread: 16,
        ptx_version: 80,
        binary_version: 90,
        max_dynamic_shared_bytes: 48 * 1024,
        required_block: None,
        required_grid_dims: None,
    }
}

fn config_error(cfg: LaunchConfig, attrs: &KernelAttributes) -> String {
    match validate_launch("saxpy", &cfg, &h100(), attrs) {
        Err(e @ Error::LaunchConfig { .. }) => e.to_string(),
        other => panic!("expected a launch configuration error, got {other:?}"),
    }
}

#[test]
fn dim3_conversions() {
    assert_eq!(Dim3::from(7), Dim3::new(7, 1, 1));
    assert_eq!(Dim3::from((7, 3)), Dim3::new(7, 3, 1));
    assert_eq!(Dim3::from((7, 3, 2)), Dim3::new(7, 3, 2));
    assert_eq!(Dim3::new(65_535, 65_535, 65_535).volume(), 65_535u64.pow(3));
    assert!(Dim3::new(4, 0, 1).is_empty());
}

#[test]
fn for_elements_rounds_up() {
    let c = LaunchConfig::for_elements(1000, 256);
    assert_eq!(c.grid, Dim3::new(4, 1, 1));
    assert_eq!(c.block, Dim3::new(256, 1, 1));
    assert_eq!(c.shared_mem_bytes, 0);
    assert_eq!(LaunchConfig::for_elements(1024, 256).grid.x, 4);
    assert_eq!(LaunchConfig::for_elements(1025, 256).grid.x, 5);
    assert_eq!(LaunchConfig::for_elements(1, 256).grid.x, 1);
    assert!(LaunchConfig::for_elements(1, 256).total_threads() >= 1);
}

#[test]
fn for_elements_zero_is_an_empty_valid_launch() {
    let c = LaunchConfig::for_elements(0, 256);
    assert!(c.is_empty());
    assert_eq!(c.grid.x, 0);
    validate_launch("k", &c, &h100(), &kernel_attrs()).unwrap();
}

#[test]
fn for_elements_huge_saturates_and_is_rejected() {
    let c = LaunchConfig::for_elements(usize::MAX, 1);
    assert_eq!(c.grid.x, u32::MAX);
    let msg = config_error(c, &kernel_attrs());
    assert!(msg.contains("grid dimension x"), "{msg}");
    assert!(msg.contains("4294967295"), "{msg}");
    assert!(msg.contains("2147483647"), "{msg}");
}

#[test]
fn for_elements_zero_block_is_rejected() {
    let c = LaunchConfig::for_elements(100, 0);
    let msg = config_error(c, &kernel_attrs());
    assert!(msg.contains("block dimension x is 0"), "{msg}");
}

#[test]
fn tiles_2d_covers_the_image() {
    let c = LaunchConfig::tiles_2d(1920, 1080, (16, 16));
    assert_eq!(c.grid, Dim3::new(120, 68, 1));
    assert_eq!(c.block, Dim3::new(16, 16, 1));
    let c = LaunchConfig::tiles_2d(17, 1, (16, 8));
    assert_eq!(c.grid, Dim3::new(2, 1, 1));
    assert!(LaunchConfig::tiles_2d(0, 100, (16, 16)).is_empty());
    assert_eq!(LaunchConfig::tiles_2d(10, 10, (0, 16)).block.x, 0);
}

#[test]
fn with_shared_mem_keeps_the_shape() {
    let c = LaunchConfig::for_elements(1000, 128).with_shared_mem(4096);
    assert_eq!(c.shared_mem_bytes, 4096);
    assert_eq!(c.block.x, 128);
    assert_eq!(c.grid.x, 8);
}

#[test]
fn valid_configs_pass() {
    let attrs = kernel_attrs();
    for cfg in [
        LaunchConfig::for_elements(1 << 20, 256),
        LaunchConfig::new((1, 1, 1), (1024, 1, 1)),
        LaunchConfig::new((65_535, 65_535, 1), (32, 32, 1)),
        LaunchConfig::new(1, (8, 8, 16)),
        LaunchConfig::new(1, 256).with_shared_mem(227 * 1024),
    ] {
        validate_launch("k", &cfg, &h100(), &attrs).unwrap_or_else(|e| panic!("{cfg}: {e}"));
    }
}

#[test]
fn block_dimension_over_limit() {
    let msg = config_error(LaunchConfig::new(1, (1, 1, 128)), &kernel_attrs());
    assert!(msg.contains("`saxpy`"), "{msg}");
    assert!(msg.contains("block dimension z is 128"), "{msg}");
    assert!(msg.contains("limit of 64"), "{msg}");
    let msg = config_error(LaunchConfig::new(1, 2048), &kernel_attrs());
    assert!(msg.contains("block dimension x is 2048"), "{msg}");
}

#[test]
fn threads_per_block_over_device_limit() {
    let msg = config_error(LaunchConfig::new(1, (64, 32, 1)), &kernel_attrs());
    assert!(msg.contains("2048 threads"), "{msg}");
    assert!(
        msg.contains("device's limit of 1024 threads per block"),
        "{msg}"
    );
}

#[test]
fn a_declared_grid_dimension_count_is_enforced() {
    let flat = KernelAttributes {
        required_grid_dims: Some(1),
        ..kernel_attrs()
    };
    validate_launch("saxpy", &LaunchConfig::new(4096, 256), &h100(), &flat).unwrap();
    let msg = config_error(LaunchConfig::new((64, 2), 256), &flat);
    assert!(
        msg.contains("`saxpy`") && msg.contains("grid_dims(1)") && msg.contains("gridDim.y"),
        "{msg}"
    );
    let planar = KernelAttributes {
        required_grid_dims: Some(2),
        ..kernel_attrs()
    };
    validate_launch("saxpy", &LaunchConfig::new((64, 2), 256), &h100(), &planar).unwrap();
    let msg = config_error(LaunchConfig::new((64, 2, 2), 256), &planar);
    assert!(msg.contains("grid_dims(2)"), "{msg}");
}

#[test]
fn a_required_block_shape_is_enforced() {
    let attrs = KernelAttributes {
        required_block: Some([32, 8, 1]),
        ..kernel_attrs()
    };
    let msg = config_error(LaunchConfig::new(4, (32, 4)), &attrs);
    assert!(
        msg.contains("`saxpy`") && msg.contains("(32, 8, 1)"),
        "{msg}"
    );
    validate_launch("saxpy", &LaunchConfig::new(4, (32, 8)), &h100(), &attrs).unwrap();
}

#[test]
fn threads_per_block_over_kernel_limit() {
    let attrs = KernelAttributes {
        max_threads_per_block: 384,
        registers_per_thread: 168,
        ..kernel_attrs()
    };
    let msg = config_error(LaunchConfig::new(1, 512), &attrs);
    assert!(msg.contains("`saxpy`"), "{msg}");
    assert!(msg.contains("512 threads"), "{msg}");
    assert!(msg.contains("kernel's limit of 384"), "{msg}");
    assert!(msg.contains("168 registers"), "{msg}");
    validate_launch("saxpy", &LaunchConfig::new(1, 384), &h100(), &attrs).unwrap();
}

#[test]
fn zero_block_dimensions_are_rejected() {
    for block in [(0, 1, 1), (32, 0, 1), (32, 1, 0)] {
        let msg = config_error(LaunchConfig::new(1, block), &kernel_attrs());
        assert!(msg.contains("is 0"), "{msg}");
    }
}

#[test]
fn grid_too_large() {
    let msg = config_error(LaunchConfig::new((1, 65_536, 1), 32), &kernel_attrs());
    assert!(msg.contains("grid dimension y is 65536 blocks"), "{msg}");
    assert!(msg.contains("limit of 65535"), "{msg}");
}

#[test]
fn zero_grid_is_an_empty_launch_but_block_is_still_checked() {
    validate_launch(
        "k",
        &LaunchConfig::new((0, 1, 1), 32),
        &h100(),
        &kernel_attrs(),
    )
    .unwrap();
    validate_launch(
        "k",
        &LaunchConfig::new((4, 0, 1), 32),
        &h100(),
        &kernel_attrs(),
    )
    .unwrap();
    let msg = config_error(LaunchConfig::new(0, 4096), &kernel_attrs());
    assert!(msg.contains("block dimension x is 4096"), "{msg}");
}

#[test]
fn too_much_shared_memory() {
    let attrs = KernelAttributes {
        static_shared_bytes: 8 * 1024,
        ..kernel_attrs()
    };
    let cfg = LaunchConfig::new(1, 256).with_shared_mem(224 * 1024);
    let msg = config_error(cfg, &attrs);
    assert!(msg.contains("`saxpy`"), "{msg}");
    assert!(msg.contains("237568 bytes"), "{msg}");
    assert!(msg.contains("8192 static + 229376 dynamic"), "{msg}");
    assert!(msg.contains("limit of 232448 bytes"), "{msg}");
    // Just within the opt-in limit is fine.
    let cfg = LaunchConfig::new(1, 256).with_shared_mem(219 * 1024);
    validate_launch("saxpy", &cfg, &h100(), &attrs).unwrap();
}

#[test]
fn devices_without_opt_in_use_the_default_limit() {
    let dev = DeviceProperties {
        max_shared_memory_per_block_optin: 0,
        ..h100()
    };
    let cfg = LaunchConfig::new(1, 32).with_shared_mem(48 * 1024 + 1);
    assert!(validate_launch("k", &cfg, &dev, &kernel_attrs()).is_err());
    let cfg = LaunchConfig::new(1, 32).with_shared_mem(48 * 1024);
    validate_launch("k", &cfg, &dev, &kernel_attrs()).unwrap();
}

#[test]
fn unknown_kernel_thread_limit_is_skipped() {
    let attrs = KernelAttributes::default();
    validate_launch("k", &LaunchConfig::new(1, 1024), &h100(), &attrs).unwrap();
}

#[test]
fn occupancy_fraction() {
    let o = Occupancy::from_active_blocks(8, 256, 0, &h100());
    assert_eq!(o.active_warps_per_sm, 64);
    assert_eq!(o.max_warps_per_sm, 64);
    assert_eq!(o.fraction, 1.0);
    let o = Occupancy::from_active_blocks(3, 100, 0, &h100());
    // 100 threads are 4 warps (the last one partial).
    assert_eq!(o.active_warps_per_sm, 12);
    assert!((o.fraction - 12.0 / 64.0).abs() < 1e-6);
    let o = Occupancy::from_active_blocks(0, 1024, 0, &h100());
    assert_eq!(o.fraction, 0.0);
}

#[test]
fn error_messages_carry_context() {
    let e = Error::Argument {
        kernel: "vector_add".into(),
        argument: "out".into(),
        message: "the buffer lives on device 1, the launch on device 0".into(),
    };
    let s = e.to_string();
    assert!(
        s.contains("`out`") && s.contains("`vector_add`") && s.contains("device 1"),
        "{s}"
    );

    let e = Error::KernelNotFound {
        module: "example_kernels".into(),
        kernel: "vectr_add".into(),
        available: vec!["vector_add".into(), "saxpy".into()],
    };
    let s = e.to_string();
    assert!(
        s.contains("`vectr_add`") && s.contains("`example_kernels`") && s.contains("`vector_add`"),
        "{s}"
    );

    let e = Error::SizeMismatch {
        operation: "DeviceBuffer::copy_from_host".into(),
        expected: 10,
        actual: 9,
    };
    let s = e.to_string();
    assert!(
        s.contains("copy_from_host") && s.contains("10") && s.contains("9"),
        "{s}"
    );

    let e = Error::InvalidOrdinal {
        ordinal: 3,
        count: 1,
    };
    assert!(e.to_string().contains("device 3"), "{e}");
}

#[test]
fn errors_are_std_errors_and_send_sync() {
    fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}
    assert_error::<Error>();
}

#[test]
fn public_types_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Gpu>();
    assert_send_sync::<Stream>();
    assert_send_sync::<Event>();
    assert_send_sync::<Module>();
    assert_send_sync::<Kernel>();
    assert_send_sync::<DeviceBuffer<f32>>();
    assert_send_sync::<DeviceBuffer<[u16; 4]>>();
}

/// Without libcuda, opening a device must fail with `NoDriver`, not panic inside cudarc.
#[test]
fn no_driver_is_an_error_not_a_panic() {
    // SAFETY: only tries to dlopen the driver library.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        let _ = {
            use std::io::Write as _;
            writeln!(std::io::stderr(), "SKIPPED: a CUDA driver is present")
        };
        return;
    }
    match Gpu::new(0) {
        Err(e @ Error::NoDriver { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("no CUDA driver was found"), "{msg}");
        }
        Err(other) => panic!("expected NoDriver, got {other}"),
        Ok(_) => panic!("expected NoDriver, got a device"),
    }
    assert!(matches!(Gpu::first(), Err(Error::NoDriver { .. })));
    assert!(matches!(Gpu::count(), Err(Error::NoDriver { .. })));
}

/// Kernels for the simulator tests, compiled for the host by `#[kernel]` like any kernel crate.
mod sim_kernels {
    use gpu::prelude::*;

    #[kernel]
    pub fn saxpy(alpha: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
        for i in thread::grid_stride(out.len()) {
            out.set(i, alpha * x[i.get()] + y[i.get()]);
        }
    }

    /// The thread with global index `trigger` panics; every other writes 1.
    #[kernel]
    pub fn panic_at(trigger: u32, mut out: DisjointSlice<u32>) {
        let i = thread::global_index();
        if i.get() == trigger as usize {
            panic!("planted panic at {}", i.get());
        }
        out.set(i, 1);
    }

    /// Only even threads reach the barrier: a deadlock on a GPU, a report on the simulator.
    #[kernel]
    pub fn diverge(mut out: DisjointSlice<u32>) {
        let i = thread::global_index();
        if thread::local_index().is_multiple_of(2) {
            sync::sync_threads();
        }
        out.set(i, 1);
    }
}

/// PTX headers of the test kernels, so launches are checked against them as on a GPU.
const SIM_PTX: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry saxpy(.param .f32 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3,
    .param .u64 p4, .param .u64 p5, .param .u64 p6)
{
}
.visible .entry panic_at(.param .u32 p0, .param .u64 p1, .param .u64 p2)
{
}
.visible .entry diverge(.param .u64 p0, .param .u64 p1)
{
}
";

const SIM_KERNELS: &[&str] = &["saxpy", "panic_at", "diverge"];

const SIM_ENTRIES: &[(&str, SimEntry)] = &[
    ("saxpy", sim_kernels::__gpu_sim_entry_saxpy as SimEntry),
    (
        "panic_at",
        sim_kernels::__gpu_sim_entry_panic_at as SimEntry,
    ),
    ("diverge", sim_kernels::__gpu_sim_entry_diverge as SimEntry),
];

fn sim_module(gpu: &Gpu) -> Module {
    gpu.load_module("sim_test", SIM_PTX, SIM_KERNELS, SIM_ENTRIES)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn saxpy_on(
    gpu: &Gpu,
    module: &Module,
    cfg: LaunchConfig,
    x: &DeviceBuffer<f32>,
    y: &DeviceBuffer<f32>,
    out: &mut DeviceBuffer<f32>,
) -> Result<()> {
    let kernel = module.kernel("saxpy")?;
    let mut launch = kernel.prepare(gpu.default_stream(), cfg)?;
    launch
        .value("alpha", &2.0f32)
        .input("x", x)
        .input("y", y)
        .output("out", out);
    // SAFETY: saxpy(alpha: f32, x: &[f32], y: &[f32], out: DisjointSlice<f32>).
    unsafe { launch.launch() }
}

#[test]
fn simulator_runs_saxpy_with_typed_buffers() {
    let gpu = Gpu::simulator().unwrap();
    assert!(gpu.is_simulator());
    assert!(gpu.cuda_context().is_none());
    assert!(gpu.default_stream().cuda_stream().is_none());
    let module = sim_module(&gpu);
    assert!(module.kernel("saxpy").unwrap().cuda_function().is_none());
    let n = 10_000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (n - i) as f32 * 0.5).collect();
    let (dx, dy) = (gpu.to_device(&x).unwrap(), gpu.to_device(&y).unwrap());
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    assert_eq!(out.device_ptr() % SIM_ALIGN as u64, 0);
    assert!(out.as_cuda_slice().is_none());
    // A grid smaller than the data: the kernel's grid-stride loop covers the rest.
    let cfg = LaunchConfig::new(7, 128);
    let ((), ms) = gpu
        .default_stream()
        .time(|_| saxpy_on(&gpu, &module, cfg, &dx, &dy, &mut out))
        .unwrap();
    assert!(ms >= 0.0);
    let expected: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.0 * x + y).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
    // Copies between buffers and back.
    let mut copy = gpu.alloc_zeroed::<f32>(n).unwrap();
    copy.copy_from_device(&out).unwrap();
    copy.copy_from_host(&y).unwrap();
    assert_eq!(copy.to_vec().unwrap(), y);
    gpu.synchronize().unwrap();
    let stream = gpu.new_stream().unwrap();
    assert!(!stream.same_as(gpu.default_stream()));
    assert_ne!(stream.id(), gpu.default_stream().id());
    let empty = stream.alloc_zeroed::<f32>(0).unwrap();
    assert_eq!(empty.device_ptr(), 0);
    // An empty launch does nothing.
    let mut none = gpu.alloc_zeroed::<f32>(0).unwrap();
    saxpy_on(
        &gpu,
        &module,
        LaunchConfig::for_elements(0, 256),
        &empty,
        &empty,
        &mut none,
    )
    .unwrap();
}

#[test]
fn simulator_validates_launches_like_a_gpu() {
    let gpu = Gpu::simulator().unwrap();
    let p = gpu.properties();
    assert_eq!(p.name, "CPU simulator");
    assert_eq!((p.max_threads_per_block, p.warp_size), (1024, 32));
    assert_eq!(p.shared_memory_limit_per_block(), 227 * 1024);
    assert!(p.multiprocessor_count >= 1);
    let module = sim_module(&gpu);
    let x = gpu.to_device(&[1.0f32; 64]).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(64).unwrap();
    let bad = [
        (
            LaunchConfig::new(1, (64, 32)),
            "above the device's limit of 1024 threads per block",
        ),
        (LaunchConfig::new(1, (1, 1, 65)), "block dimension z is 65"),
        (LaunchConfig::new(1, 0), "block dimension x is 0"),
        (
            LaunchConfig::new((1, 70_000), 32),
            "grid dimension y is 70000 blocks",
        ),
        (
            LaunchConfig::new(1, 32).with_shared_mem(228 * 1024),
            "above the device's limit of 232448 bytes per block",
        ),
    ];
    for (cfg, want) in bad {
        let err = saxpy_on(&gpu, &module, cfg, &x, &x, &mut out).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::LaunchConfig { .. }), "{text}");
        assert!(text.contains("saxpy") && text.contains(want), "{text}");
    }
    // Wrong arguments are caught by the PTX signature, before anything runs.
    let kernel = module.kernel("saxpy").unwrap();
    let mut launch = kernel
        .prepare(gpu.default_stream(), LaunchConfig::new(1, 32))
        .unwrap();
    launch.input("x", &x).output("out", &mut out);
    // SAFETY: refused before launching (too few parameters).
    let err = unsafe { launch.launch() }.unwrap_err();
    assert!(matches!(err, Error::Argument { .. }), "{err}");
    assert!(
        out.to_vec().unwrap().iter().all(|&v| v == 0.0),
        "nothing ran"
    );
}

#[test]
fn simulated_kernel_panic_is_a_kernel_panic_error() {
    let gpu = Gpu::simulator().unwrap();
    let module = sim_module(&gpu);
    let mut out = gpu.alloc_zeroed::<u32>(256).unwrap();
    let launch = |out: &mut DeviceBuffer<u32>, trigger: u32| -> Result<()> {
        let kernel = module.kernel("panic_at")?;
        let mut l = kernel.prepare(gpu.default_stream(), LaunchConfig::new((2, 1, 1), 128))?;
        l.value("trigger", &trigger).output("out", out);
        // SAFETY: panic_at(trigger: u32, out: DisjointSlice<u32>).
        unsafe { l.launch() }
    };
    let err = launch(&mut out, 130).unwrap_err();
    let text = err.to_string();
    let panic = err.kernel_panic().unwrap_or_else(|| panic!("{text}"));
    assert_eq!(panic.kernel, "`panic_at`");
    assert_eq!(panic.block, (1, 0, 0), "{text}");
    assert_eq!(panic.thread, (2, 0, 0), "{text}");
    assert_eq!((panic.grid_dim, panic.block_dim), ((2, 1, 1), (128, 1, 1)));
    assert!(
        panic.file.as_deref().unwrap_or("").ends_with("tests.rs"),
        "{text}"
    );
    assert!(panic.line > 0 && panic.column > 0, "{text}");
    assert_eq!(panic.message.as_deref(), Some("planted panic at 130"));
    assert!(text.contains("kernel `panic_at` panicked at"), "{text}");
    assert!(text.contains("CPU simulator"), "{text}");
    assert!(!err.needs_recovery());
    // The simulator stays usable: no recovery needed, the next launch runs.
    launch(&mut out, u32::MAX).unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 1));
    let mut gpu2 = gpu.clone();
    assert!(gpu2.recover().unwrap().is_none());
}

#[test]
fn simulated_deadlock_is_a_divergence_error() {
    let gpu = Gpu::simulator().unwrap();
    let module = sim_module(&gpu);
    let mut out = gpu.alloc_zeroed::<u32>(64).unwrap();
    let kernel = module.kernel("diverge").unwrap();
    let mut l = kernel
        .prepare(gpu.default_stream(), LaunchConfig::new(1, 64))
        .unwrap();
    l.output("out", &mut out);
    // SAFETY: diverge(out: DisjointSlice<u32>).
    let err = unsafe { l.launch() }.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, Error::KernelDivergence { ref kernel, .. } if kernel == "diverge"),
        "{text}"
    );
    assert!(text.contains("`diverge`"), "{text}");
}

#[test]
fn raw_ptx_modules_have_no_simulator_entry() {
    let gpu = Gpu::simulator().unwrap();
    let module = gpu.load_ptx("raw", SIM_PTX, &["saxpy"]).unwrap();
    let x = gpu.to_device(&[1.0f32; 4]).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(4).unwrap();
    let err = saxpy_on(&gpu, &module, LaunchConfig::new(1, 4), &x, &x, &mut out).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::NoSimulatorEntry { .. }), "{text}");
    assert!(
        text.contains("`saxpy`") && text.contains("load_module"),
        "{text}"
    );
    let err = gpu.load_ptx("raw", SIM_PTX, &["nope"]).unwrap_err();
    assert!(matches!(err, Error::KernelNotFound { .. }), "{err}");
}

#[test]
fn simulator_nominal_queries() {
    let gpu = Gpu::simulator().unwrap();
    let module = sim_module(&gpu);
    let kernel = module.kernel("saxpy").unwrap();
    assert!(kernel.is_simulator() && kernel.cuda_function().is_none());
    assert_eq!(kernel.attributes().registers_per_thread, 0);
    assert_eq!(kernel.attributes().ptx_version, 70);
    assert_eq!(kernel.param_sizes(), Some(&[4, 8, 8, 8, 8, 8, 8][..]));
    let occ = kernel.occupancy(256, 0).unwrap();
    assert_eq!(occ.active_blocks_per_sm, 1);
    assert!(kernel.suggested_block_size().unwrap().block_size > 0);
    kernel.validate(LaunchConfig::new(1, 256), &gpu).unwrap();
    match gpu.memory_info() {
        Ok((free, total)) => assert!(free <= total && total > 0),
        Err(e) => assert!(matches!(e, Error::Unsupported { .. }), "{e}"),
    }
    let event = gpu.default_stream().record_event().unwrap();
    assert!(event.is_complete().unwrap() && event.cuda_event().is_none());
    gpu.default_stream().wait_event(&event).unwrap();
}

#[test]
fn backend_names() {
    assert!(Gpu::from_backend_name("sim").unwrap().is_simulator());
    assert!(Gpu::from_backend_name(" SIM ").unwrap().is_simulator());
    let err = Gpu::from_backend_name("tpu").unwrap_err();
    assert!(matches!(err, Error::InvalidBackend { .. }), "{err}");
    assert!(err.to_string().contains("GPU_BACKEND"), "{err}");
    // `cuda` (and the default) open the first GPU, with its usual errors when there is none.
    match Gpu::from_backend_name("cuda") {
        Ok(gpu) => assert!(!gpu.is_simulator()),
        Err(e) => assert!(
            matches!(
                e,
                Error::NoDriver { .. } | Error::NoDevice | Error::Driver { .. }
            ),
            "{e}"
        ),
    }
}

#[test]
fn ranged_device_copies_on_the_simulator() {
    let gpu = Gpu::simulator().unwrap();
    let src = gpu.to_device(&[1u32, 2, 3, 4, 5, 6]).unwrap();
    let mut dst = gpu.to_device(&[0u32; 5]).unwrap();
    dst.copy_range_from_device(1, &src, 2..5).unwrap();
    assert_eq!(dst.to_vec().unwrap(), [0, 3, 4, 5, 0]);
    // An empty range copies nothing, even at the end.
    dst.copy_range_from_device(5, &src, 6..6).unwrap();
    // Out of range on either side: an error, nothing copied.
    let e = dst.copy_range_from_device(0, &src, 4..7).unwrap_err();
    assert!(e.to_string().contains("source range 4..7"), "{e}");
    let e = dst.copy_range_from_device(3, &src, 0..3).unwrap_err();
    assert!(e.to_string().contains("written at 3"), "{e}");
    assert_eq!(dst.to_vec().unwrap(), [0, 3, 4, 5, 0]);
    // Across simulated devices, as between GPUs.
    let other = Gpu::simulator_device(1).unwrap();
    let mut far = other.alloc_zeroed::<u32>(3).unwrap();
    far.copy_range_from_device(0, &src, 3..6).unwrap();
    assert_eq!(far.to_vec().unwrap(), [4, 5, 6]);
}

#[test]
fn buffers_cast_between_plain_types() {
    let gpu = Gpu::simulator().unwrap();
    let pairs = gpu.to_device(&[[1.0f32, 2.0], [3.0, 4.0]]).unwrap();
    let flat = pairs.cast::<f32>().unwrap();
    assert_eq!(flat.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0]);
    let back = flat.cast::<[f32; 2]>().unwrap();
    assert_eq!(back.len(), 2);
    let three = gpu.to_device(&[1u32, 2, 3]).unwrap();
    let e = three.cast::<u64>().unwrap_err();
    assert!(e.to_string().contains("12 bytes of u32 as u64"), "{e}");
}

#[test]
fn kernels_by_position_match_kernels_by_name() {
    let gpu = Gpu::simulator().unwrap();
    let module = sim_module(&gpu);
    for (i, name) in SIM_KERNELS.iter().enumerate() {
        assert_eq!(module.kernel_index(name).unwrap(), i);
        assert_eq!(module.kernel_at(i).unwrap().name(), *name);
        assert_eq!(module.kernel(name).unwrap().name(), *name);
    }
    let err = module.kernel_at(SIM_KERNELS.len()).unwrap_err();
    assert!(matches!(err, Error::KernelNotFound { .. }), "{err}");
    assert!(err.to_string().contains("#3"), "{err}");
    let err = module.kernel_index("nope").unwrap_err();
    assert!(matches!(err, Error::KernelNotFound { .. }), "{err}");
}
