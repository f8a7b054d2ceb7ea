fn main() {
    gpu_builder::KernelBuild::new("../kernels/device-selftest").build_script();
    gpu_builder::KernelBuild::new("../kernels/fault-kernels").build_script();
    gpu_builder::KernelBuild::new("../kernels/test-kernels").build_script();
}
