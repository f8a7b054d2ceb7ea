// selftest_axpy<f32> is a kernel of device-selftest, not of the test-kernels module.
use device_selftest::generic::selftest_axpy;
use gpu_host::{Gpu, LaunchConfig};
use gpu_tests::TestKernels;

fn launch(gpu: &Gpu, kernels: &TestKernels) -> gpu_host::Result<()> {
    let x = gpu.to_device(&[1.0f32, 2.0, 3.0])?;
    let mut out = gpu.alloc_zeroed::<f32>(3)?;
    kernels.launch::<selftest_axpy<f32>>(gpu.default_stream(), LaunchConfig::for_elements(3, 32), (2.0, &x, &x, &mut out))
}

fn main() {}
