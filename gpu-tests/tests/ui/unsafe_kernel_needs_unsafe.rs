// selftest_gather_unchecked is an `unsafe fn` kernel: its launcher is `unsafe` too.
use gpu_host::{Gpu, LaunchConfig};
use gpu_tests::selftest::device_selftest::Module;

fn launch(gpu: &Gpu, module: &Module) -> gpu_host::Result<()> {
    let src = gpu.to_device(&[1u32, 2, 3])?;
    let idx = gpu.to_device(&[2u32, 1, 0])?;
    let mut out = gpu.alloc_zeroed::<u32>(3)?;
    module.selftest_gather_unchecked(gpu.default_stream(), LaunchConfig::for_elements(3, 32), &src, &idx, &mut out)
}

fn main() {}
