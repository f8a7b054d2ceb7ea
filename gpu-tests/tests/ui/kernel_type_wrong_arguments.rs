// launch::<saxpy> takes the tuple (alpha, x, y, out); alpha is missing.
use gpu_host::{Gpu, LaunchConfig};
use gpu_tests::TestKernels;
use test_kernels::elementwise::saxpy;

fn launch(gpu: &Gpu, kernels: &TestKernels) -> gpu_host::Result<()> {
    let x = gpu.to_device(&[1.0f32, 2.0, 3.0])?;
    let y = gpu.to_device(&[1.0f32, 2.0, 3.0])?;
    let mut out = gpu.alloc_zeroed::<f32>(3)?;
    kernels.launch::<saxpy>(gpu.default_stream(), LaunchConfig::for_elements(3, 32), (&x, &y, &mut out))
}

fn main() {}
