//! Compiles the algorithm kernels to PTX and embeds them, so the crate needs no separate kernel
//! build step.
fn main() {
    gpu_builder::KernelBuild::new("../../kernels/algorithm-kernels").build_script();
}
