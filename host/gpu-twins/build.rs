//! Compiles the Rust twins (kernels/twin-kernels) to PTX + SASS with typed launchers, and their CUDA C++
//! twins (kernels/twin-kernels/cuda/twins.cu) to PTX with nvcc when there is one.
fn main() {
    gpu_builder::KernelBuild::new("../../kernels/twin-kernels").build_script();
    gpu_builder::nvcc::embed_ptx(
        "../../kernels/twin-kernels/cuda/twins.cu",
        gpu_builder::Arch::new(80).expect("sm_80 is an architecture"),
    );
}
