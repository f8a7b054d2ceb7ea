//! Compiles the example kernels to PTX and generates their typed launchers, so `cargo run` of an
//! example needs no separate kernel build step.
fn main() {
    gpu_builder::KernelBuild::new("../../kernels/example-kernels").build_script();
}
