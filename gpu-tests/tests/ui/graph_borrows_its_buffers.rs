// A captured graph keeps the buffers its launches use borrowed: an output cannot be read (or
// dropped) while the graph that writes it can still be replayed.
use gpu_host::{Gpu, LaunchConfig};
use gpu_tests::TestKernels;

fn replay(gpu: &Gpu, kernels: &TestKernels) -> gpu_host::Result<()> {
    let a = gpu.to_device(&[1.0f32; 4])?;
    let b = gpu.to_device(&[2.0f32; 4])?;
    let mut out = gpu.alloc_zeroed::<f32>(4)?;
    let stream = gpu.new_stream()?;
    let cfg = LaunchConfig::for_elements(4, 32);
    let graph = stream.capture(|s| kernels.vector_add(s, cfg, &a, &b, &mut out))?;
    let early = out.to_vec()?;
    graph.launch()?;
    drop(early);
    Ok(())
}

fn main() {}
