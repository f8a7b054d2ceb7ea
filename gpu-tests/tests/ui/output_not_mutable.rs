// The output of a kernel must be passed as `&mut`: the kernel writes it.
use gpu_host::{Gpu, LaunchConfig};
use gpu_tests::TestKernels;

fn launch(gpu: &Gpu, kernels: &TestKernels) -> gpu_host::Result<()> {
    let a = gpu.to_device(&[1.0f32; 4])?;
    let b = gpu.to_device(&[2.0f32; 4])?;
    let out = gpu.alloc_zeroed::<f32>(4)?;
    kernels.vector_add(gpu.default_stream(), LaunchConfig::for_elements(4, 32), &a, &b, &out)
}

fn main() {}
