//! Compiles the Rust twins (kernels/twins) to PTX + SASS with typed launchers, and their CUDA C++
//! twins (kernels/twins/cuda/twins.cu) to PTX with nvcc when there is one.
fn main() {
    gpu_builder::KernelBuild::new("../../kernels/twins").build_script();
    gpu_builder::nvcc::embed_ptx(
        "../../kernels/twins/cuda/twins.cu",
        gpu_builder::Arch::new(80).expect("sm_80 is an architecture"),
    );
}
