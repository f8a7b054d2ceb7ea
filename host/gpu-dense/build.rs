//! Compiles the dense kernels (for `$GPU_ARCH`, default sm_80) and the Hopper kernels (always
//! sm_90a, from their crate's metadata) to PTX and embeds both.
fn main() {
    gpu_builder::KernelBuild::new("../../kernels/dense-kernels").build_script();
    gpu_builder::KernelBuild::new("../../kernels/hopper-kernels").build_script();
}
