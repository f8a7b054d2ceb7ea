//! One line per example kernel: device time (CUDA events), achieved GB/s and FLOP/s from the
//! kernel's known cost, and occupancy at the launch's block size; each measurement inside an
//! NVTX range named after the kernel (visible in Nsight tools, e.g. `cargo xtask profile
//! --nvtx-include saxpy/ examples-profile`).
//!
//! `examples-profile [N_LOG2] [MATRIX]`: vectors of 2^N_LOG2 f32 (default 26), MATRIX^2 matrices
//! (default 2048). Without a GPU it prints SKIPPED and exits 0.

use example_kernels::matmul::{MatDims, TILE};
use gpu_examples::ExampleKernels;
use gpu_host::profile::nvtx;
use gpu_host::{Cost, Gpu, LaunchConfig, Profile};

fn main() -> gpu_host::Result<()> {
    let mut args = std::env::args().skip(1);
    let log2: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(26);
    let size: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2048);
    let gpu = match Gpu::first() {
        Ok(gpu) => gpu,
        Err(err) => {
            println!("SKIPPED examples-profile: needs a GPU ({err})");
            return Ok(());
        }
    };
    println!(
        "examples-profile on {} (NVTX {})",
        gpu.properties().name,
        if nvtx::enabled() {
            "ranges sent to the attached tool"
        } else {
            "off: no tool attached"
        }
    );
    let kernels = ExampleKernels::load(&gpu)?;
    let stream = gpu.default_stream();
    let mut profile = Profile::new(stream).launches(20);

    let n = 1usize << log2;
    let a = gpu.to_device(&gpu_examples::random_f32(n, 1))?;
    let b = gpu.to_device(&gpu_examples::random_f32(n, 2))?;
    let mut out = gpu.alloc_zeroed::<f32>(n)?;
    let block = 256;
    let config = LaunchConfig::for_elements(n, block);
    let bytes = 3 * 4 * n as u64;

    let occupancy = kernels.raw().kernel("vector_add")?.occupancy(block, 0)?;
    profile.measure(
        "vector_add",
        Cost::bytes(bytes).flops(n as u64),
        Some(occupancy),
        |s| kernels.vector_add(s, config, &a, &b, &mut out),
    )?;
    let occupancy = kernels.raw().kernel("saxpy")?.occupancy(block, 0)?;
    profile.measure(
        "saxpy",
        Cost::bytes(bytes).flops(2 * n as u64),
        Some(occupancy),
        |s| kernels.saxpy(s, config, 2.0, &a, &b, &mut out),
    )?;

    let dims = MatDims {
        m: size,
        n: size,
        k: size,
    };
    let elems = size as usize * size as usize;
    let ma = gpu.to_device(&gpu_examples::random_f32(elems, 3))?;
    let mb = gpu.to_device(&gpu_examples::random_f32(elems, 4))?;
    let mut mc = gpu.alloc_zeroed::<f32>(elems)?;
    let config = LaunchConfig::tiles_2d(dims.n, dims.m, (TILE, TILE));
    // Compulsory traffic: read A and B once, write C once.
    let cost = Cost::bytes(3 * 4 * elems as u64).flops(2 * u64::from(size).pow(3));
    let mut matmul = Profile::new(stream).launches(5);
    for name in ["matmul_naive", "matmul_tiled"] {
        let occupancy = kernels.raw().kernel(name)?.occupancy(TILE * TILE, 0)?;
        matmul.measure(name, cost, Some(occupancy), |s| match name {
            "matmul_naive" => kernels.matmul_naive(s, config, &ma, &mb, &mut mc, dims),
            _ => kernels.matmul_tiled(s, config, &ma, &mb, &mut mc, dims),
        })?;
    }
    print!("{profile}{matmul}");
    Ok(())
}
