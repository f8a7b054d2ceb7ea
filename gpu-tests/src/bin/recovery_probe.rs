//! Which ways out of a sticky CUDA error work on this driver? A diagnostic, not a test.
//!
//! `recovery_probe VARIANT [FAULT]` injects a fault (`illegal`: a store to address 0x10, the
//! default; `trap`: a `trap` instruction, what a kernel panic ends in), then tries one way back
//! to working device memory and kernels, printing every driver call's result. Run each variant
//! in its own process: a sticky error is per process.
//!
//! Variants (raw driver calls, so that no wrapper keeps a reference or an error of its own):
//! - `keep`: leave the primary context retained, reset it, retain again.
//! - `release`: release every retain first, then reset, retain.
//! - `release-only`: release every retain (no reset), retain again.
//! - `sync-pop`: `cuCtxSynchronize`, pop the current context, then as `release`.
//! - `fresh-ctx`: leave the primary context alone, create a new non-primary context.
//! - `reset-fresh-ctx`: release + reset the primary context, then create a non-primary context.
//! - `cudarc-drop`: cudarc's safe API (as `gpu-host` uses it): drop every cudarc object, reset,
//!   `CudaContext::new`.
//! - `cudarc-leak`: cudarc's safe API, leak the old objects (what `gpu-host` did), reset, new.
//!
//! It prints `PROBE <variant> <fault>: RECOVERED` when a kernel ran and its result was read back
//! correctly after the fault, `PROBE ...: STILL BROKEN at <step>` otherwise.

use std::ffi::{CString, c_void};
use std::ptr::null_mut;

use gpu_host::cudarc::driver::sys::{self, CUcontext, CUdevice, CUfunction, CUmodule, CUresult};

const PTX: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry poke(.param .u64 p)
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, 7;
    st.global.u32 [%rd1], %r1;
    ret;
}
.visible .entry die()
{
    trap;
    ret;
}
.visible .entry fill(.param .u64 p, .param .u32 v)
{
    .reg .b64 %rd<4>;
    .reg .b32 %r<4>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [v];
    mov.u32 %r2, %tid.x;
    add.u32 %r3, %r1, %r2;
    mul.wide.u32 %rd2, %r2, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"#;

fn show(step: &str, r: CUresult) -> bool {
    println!("  {step}: {r:?}");
    r == CUresult::CUDA_SUCCESS
}

fn state(dev: CUdevice) {
    let (mut flags, mut active) = (0u32, 0i32);
    // SAFETY: valid device and out-pointers.
    let r = unsafe { sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active) };
    println!("  primary context state: {r:?}, flags {flags:#x}, active {active}");
}

fn load(step: &str) -> Option<CUmodule> {
    let src = CString::new(PTX).unwrap();
    let mut m: CUmodule = null_mut();
    // SAFETY: NUL-terminated PTX text; out-pointer valid.
    show(step, unsafe {
        sys::cuModuleLoadData(&mut m, src.as_ptr().cast())
    })
    .then_some(m)
}

fn func(m: CUmodule, name: &str) -> CUfunction {
    let n = CString::new(name).unwrap();
    let mut f: CUfunction = null_mut();
    // SAFETY: module loaded; out-pointer valid.
    let r = unsafe { sys::cuModuleGetFunction(&mut f, m, n.as_ptr()) };
    assert_eq!(r, CUresult::CUDA_SUCCESS, "cuModuleGetFunction({name})");
    f
}

fn launch(f: CUfunction, params: &mut [*mut c_void], threads: u32) -> CUresult {
    // SAFETY: `params` point at live locals matching the kernel's parameters.
    unsafe {
        sys::cuLaunchKernel(
            f,
            1,
            1,
            1,
            threads,
            1,
            1,
            0,
            null_mut(),
            params.as_mut_ptr(),
            null_mut(),
        )
    }
}

/// Allocates, runs `fill`, reads back; true when the values are right. The context to use must
/// be current.
fn works(tag: &str) -> Result<(), String> {
    let m = load(&format!("{tag} cuModuleLoadData")).ok_or("module load")?;
    let f = func(m, "fill");
    let mut d: sys::CUdeviceptr = 0;
    // SAFETY: out-pointer valid; 128 bytes.
    if !show(&format!("{tag} cuMemAlloc"), unsafe {
        sys::cuMemAlloc_v2(&mut d, 128)
    }) {
        return Err("cuMemAlloc".into());
    }
    let mut v = 500u32;
    let mut params = [
        (&mut d as *mut sys::CUdeviceptr).cast(),
        (&mut v as *mut u32).cast(),
    ];
    if !show(&format!("{tag} launch fill"), launch(f, &mut params, 32)) {
        return Err("launch".into());
    }
    // SAFETY: no arguments.
    if !show(&format!("{tag} cuCtxSynchronize"), unsafe {
        sys::cuCtxSynchronize()
    }) {
        return Err("synchronize".into());
    }
    let mut host = [0u32; 32];
    // SAFETY: 128 bytes each side.
    if !show(&format!("{tag} cuMemcpyDtoH"), unsafe {
        sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), d, 128)
    }) {
        return Err("copy back".into());
    }
    if host.iter().enumerate().all(|(i, &x)| x == 500 + i as u32) {
        println!("  {tag}: fill result correct");
        Ok(())
    } else {
        Err(format!("wrong values {:?}", &host[..4]))
    }
}

/// Launches the faulting kernel in the current context and waits for the error.
fn inject(m: CUmodule, fault: &str) {
    let r = if fault == "trap" {
        launch(func(m, "die"), &mut [], 1)
    } else {
        let mut p: u64 = 0x10;
        launch(func(m, "poke"), &mut [(&mut p as *mut u64).cast()], 1)
    };
    show("launch faulting kernel", r);
    // SAFETY: no arguments.
    show("cuCtxSynchronize after fault", unsafe {
        sys::cuCtxSynchronize()
    });
    let mut d: sys::CUdeviceptr = 0;
    // SAFETY: out-pointer valid.
    show("cuMemAlloc after fault (expect the sticky error)", unsafe {
        sys::cuMemAlloc_v2(&mut d, 128)
    });
}

fn retain(dev: CUdevice, step: &str) -> Option<CUcontext> {
    let mut ctx: CUcontext = null_mut();
    // SAFETY: valid device, out-pointer.
    if !show(step, unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
    }) {
        return None;
    }
    println!("  context handle {ctx:?}");
    // SAFETY: a context just retained.
    show("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) }).then_some(ctx)
}

fn raw(variant: &str, fault: &str) -> Result<(), String> {
    // SAFETY: plain driver calls with valid out-pointers throughout.
    unsafe {
        if !show("cuInit", sys::cuInit(0)) {
            return Err("cuInit".into());
        }
        let mut dev: CUdevice = 0;
        show("cuDeviceGet", sys::cuDeviceGet(&mut dev, 0));
        let ctx = retain(dev, "cuDevicePrimaryCtxRetain").ok_or("first retain")?;
        works("before")?;
        let m = load("cuModuleLoadData (fault module)").ok_or("load")?;
        inject(m, fault);
        state(dev);
        match variant {
            "keep" => {
                show(
                    "cuDevicePrimaryCtxReset",
                    sys::cuDevicePrimaryCtxReset_v2(dev),
                );
                state(dev);
                retain(dev, "cuDevicePrimaryCtxRetain after reset").ok_or("retain")?;
            }
            "release" | "release-only" | "sync-pop" => {
                if variant == "sync-pop" {
                    show("cuCtxSynchronize", sys::cuCtxSynchronize());
                    let mut popped: CUcontext = null_mut();
                    show("cuCtxPopCurrent", sys::cuCtxPopCurrent_v2(&mut popped));
                    println!("  popped {popped:?} (was {ctx:?})");
                    show("cuCtxSetCurrent(null)", sys::cuCtxSetCurrent(null_mut()));
                }
                show(
                    "cuDevicePrimaryCtxRelease",
                    sys::cuDevicePrimaryCtxRelease_v2(dev),
                );
                state(dev);
                if variant != "release-only" {
                    show(
                        "cuDevicePrimaryCtxReset",
                        sys::cuDevicePrimaryCtxReset_v2(dev),
                    );
                    state(dev);
                }
                retain(dev, "cuDevicePrimaryCtxRetain after release").ok_or("retain")?;
                state(dev);
            }
            "fresh-ctx" | "reset-fresh-ctx" => {
                if variant == "reset-fresh-ctx" {
                    show(
                        "cuDevicePrimaryCtxRelease",
                        sys::cuDevicePrimaryCtxRelease_v2(dev),
                    );
                    show(
                        "cuDevicePrimaryCtxReset",
                        sys::cuDevicePrimaryCtxReset_v2(dev),
                    );
                    state(dev);
                }
                let mut fresh: CUcontext = null_mut();
                if !show("cuCtxCreate", sys::cuCtxCreate_v2(&mut fresh, 0, dev)) {
                    return Err("cuCtxCreate".into());
                }
                println!("  new context {fresh:?}");
                show("cuCtxSetCurrent(new)", sys::cuCtxSetCurrent(fresh));
            }
            other => return Err(format!("unknown variant {other}")),
        }
        works("after")
    }
}

fn cudarc_variant(leak: bool, fault: &str) -> Result<(), String> {
    use gpu_host::cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
    use gpu_host::cudarc::nvrtc::Ptx;
    let e = |what: &'static str| {
        move |err: gpu_host::cudarc::driver::DriverError| {
            println!("  {what}: {err:?}");
            format!("{what}: {err:?}")
        }
    };
    let ctx = CudaContext::new(0).map_err(e("CudaContext::new"))?;
    let stream = ctx.default_stream();
    let module = ctx
        .load_module(Ptx::from_src(PTX))
        .map_err(e("load_module"))?;
    let poke = module.load_function("poke").map_err(e("load_function"))?;
    let die = module.load_function("die").map_err(e("load_function"))?;
    let buf = stream.alloc_zeros::<u32>(32).map_err(e("alloc"))?;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    let addr: u64 = 0x10;
    // SAFETY: `poke` takes one u64 (an address it stores to: the planted fault); `die` nothing.
    let r = unsafe {
        if fault == "trap" {
            stream.launch_builder(&die).launch(cfg)
        } else {
            stream.launch_builder(&poke).arg(&addr).launch(cfg)
        }
    };
    println!("  launch faulting kernel: {r:?}");
    println!("  synchronize after fault: {:?}", stream.synchronize());
    println!(
        "  alloc after fault: {:?}",
        stream.alloc_zeros::<u32>(8).map(|_| ())
    );
    let dev = ctx.cu_device();
    if leak {
        std::mem::forget((buf, poke, die, module, stream));
        // The Gpu's own context handle is replaced, not dropped, by gpu-host's recover.
        std::mem::forget(ctx);
    } else {
        drop((buf, poke, die, module, stream));
        println!(
            "  Arc<CudaContext> strong count before drop: {}",
            std::sync::Arc::strong_count(&ctx)
        );
        println!("  ctx.check_err before drop: {:?}", ctx.check_err());
        drop(ctx);
    }
    state(dev);
    // SAFETY: valid device.
    show("cuDevicePrimaryCtxReset", unsafe {
        sys::cuDevicePrimaryCtxReset_v2(dev)
    });
    state(dev);
    let ctx = CudaContext::new(0).map_err(e("CudaContext::new after reset"))?;
    let stream = ctx.default_stream();
    let module = ctx
        .load_module(Ptx::from_src(PTX))
        .map_err(e("load_module after reset"))?;
    let fill = module
        .load_function("fill")
        .map_err(e("load_function after"))?;
    let mut buf = stream
        .alloc_zeros::<u32>(32)
        .map_err(e("alloc after reset"))?;
    let v = 500u32;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `fill` takes a u32 pointer to 32 elements and a u32.
    unsafe {
        stream
            .launch_builder(&fill)
            .arg(&mut buf)
            .arg(&v)
            .launch(cfg)
    }
    .map_err(e("launch after reset"))?;
    let host = stream
        .clone_dtoh(&buf)
        .map_err(e("copy back after reset"))?;
    if host.iter().enumerate().all(|(i, &x)| x == 500 + i as u32) {
        println!("  after: fill result correct");
        Ok(())
    } else {
        Err(format!("wrong values {:?}", &host[..4]))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let variant = args.first().map_or("keep", String::as_str);
    let fault = args.get(1).map_or("illegal", String::as_str);
    println!("PROBE {variant} {fault}");
    let result = match variant {
        "cudarc-drop" => cudarc_variant(false, fault),
        "cudarc-leak" => cudarc_variant(true, fault),
        v => raw(v, fault),
    };
    match result {
        Ok(()) => println!("PROBE {variant} {fault}: RECOVERED"),
        Err(step) => println!("PROBE {variant} {fault}: STILL BROKEN at {step}"),
    }
}
