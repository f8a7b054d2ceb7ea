// selftest_axpy is instantiated for f32, f64 and u32 only: there is no i64 entry to launch.
use gpu_host::{Gpu, LaunchConfig};
use gpu_tests::selftest::device_selftest::Module;

fn launch(gpu: &Gpu, module: &Module) -> gpu_host::Result<()> {
    let x = gpu.to_device(&[1i64, 2, 3])?;
    let mut out = gpu.alloc_zeroed::<i64>(3)?;
    module.selftest_axpy::<i64>(gpu.default_stream(), LaunchConfig::for_elements(3, 32), 2, &x, &x, &mut out)
}

fn main() {}
