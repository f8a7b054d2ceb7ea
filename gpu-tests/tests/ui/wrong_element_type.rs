// A u32 buffer where the kernel takes `&[f32]`.
use gpu_host::{Gpu, LaunchConfig};
use gpu_tests::TestKernels;

fn launch(gpu: &Gpu, kernels: &TestKernels) -> gpu_host::Result<()> {
    let a = gpu.to_device(&[1u32, 2, 3])?;
    let b = gpu.to_device(&[1.0f32, 2.0, 3.0])?;
    let mut out = gpu.alloc_zeroed::<f32>(3)?;
    kernels.vector_add(gpu.default_stream(), LaunchConfig::for_elements(3, 32), &a, &b, &mut out)
}

fn main() {}
