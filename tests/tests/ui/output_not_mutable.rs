// The output of a kernel must be passed as `&mut`: the kernel writes it.
use gpu_host::{Gpu, LaunchConfig};
use seed_examples::SeedKernels;

fn launch(gpu: &Gpu, kernels: &SeedKernels) -> gpu_host::Result<()> {
    let rgb = gpu.to_device(&[0u8; 12])?;
    let gray = gpu.alloc_zeroed::<u8>(4)?;
    kernels.rgb_to_gray(gpu.default_stream(), LaunchConfig::for_elements(4, 32), &rgb, &gray)
}

fn main() {}
