// alpha is an f32 scalar; an f64 is not silently converted.
use gpu_host::{Gpu, LaunchConfig};
use gpu_tests::TestKernels;

fn launch(gpu: &Gpu, kernels: &TestKernels) -> gpu_host::Result<()> {
    let x = gpu.to_device(&[1.0f32, 2.0, 3.0])?;
    let y = gpu.to_device(&[1.0f32, 2.0, 3.0])?;
    let mut out = gpu.alloc_zeroed::<f32>(3)?;
    kernels.saxpy(gpu.default_stream(), LaunchConfig::for_elements(3, 32), 2.0f64, &x, &y, &mut out)
}

fn main() {}
