//! `gpu_kernels`: the toolkit's kernels, and your own, called from Python on torch, CuPy, JAX
//! and NumPy arrays without copies.
//!
//! ```python
//! import torch, gpu_kernels as gk
//! x = torch.rand(1 << 20, device="cuda")
//! total = gk.reduce(x, op="sum")                 # a 0-d torch tensor, on torch's stream
//! k = gk.load_kernels("example_kernels")             # or "target/ptx/sm_80" after build-kernels
//! out = torch.empty_like(x)
//! k.saxpy(*gk.launch_1d(x.numel()), 2.0, x, x, out)
//! ```
//!
//! Where work runs follows the arrays: CUDA arrays on their GPU, on the producer's current
//! stream (so it orders with torch's own work without a sync); host arrays (NumPy) on the CPU
//! simulator. Layers: `array` and `protocols` read arrays and pick the stream, `runtime` holds
//! the devices and maps errors, `builtins` and `kernels` are the Python API.

mod args;
mod array;
mod builtins;
mod dense;
mod dtype;
mod exchange;
mod kernels;
mod protocols;
mod runtime;

use pyo3::prelude::*;

use crate::array::Place;
use crate::runtime::{device, py_err};

/// `synchronize(device=None)`: waits for all work on a CUDA device (`device` an index, default
/// 0) and raises the error of work that failed: `KernelFault` for a kernel that trapped (a panic
/// in a crate built with `checks = "trap"`), `KernelPanic` with `checks = "report"`.
/// A no-op for the CPU simulator (`device="cpu"`), whose work is done when the call returns.
#[pyfunction]
#[pyo3(signature = (device=None))]
fn synchronize(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let place = match device {
        None => Place::Cuda(0),
        Some(d) if d.extract::<String>().is_ok_and(|s| s == "cpu") => Place::Cpu,
        Some(d) => Place::Cuda(d.extract()?),
    };
    let dev = self::device(place)?;
    dev.gpu.synchronize().map_err(py_err)
}

/// `cuda_available()`: whether a CUDA driver and device are present (CUDA arrays can run).
#[pyfunction]
fn cuda_available() -> bool {
    gpu_host::Gpu::count().is_ok_and(|n| n > 0)
}

/// `_set_fast_torch(on)`: turns the torch attribute path off (torch tensors then come in
/// through DLPack) or back on; for measuring the protocols' overhead.
#[pyfunction]
fn _set_fast_torch(on: bool) {
    array::set_fast_torch(on);
}

/// `_set_torch_exchange(on)`: turns the use of torch's DLPack exchange table off (tensors are
/// then read through their attributes, outputs made with `new_empty`) or back on; for measuring.
#[pyfunction]
fn _set_torch_exchange(on: bool) {
    protocols::set_torch_exchange(on);
}

/// `_torch_exchange()`: whether torch's DLPack exchange table is found and used.
#[pyfunction]
fn _torch_exchange(py: Python<'_>) -> bool {
    protocols::torch(py).is_some_and(|t| t.exchange().is_some())
}

/// Rust GPU kernels on torch, CuPy, JAX and NumPy arrays, zero-copy: the built-in algorithms
/// (`reduce`, `inclusive_scan`, `exclusive_scan`, `sort`, `sort_pairs`, `histogram_even`,
/// `select_if`), the dense kernels (`softmax`, `layernorm`, `gemm`, `attention`,
/// `attention_backward`) and your own kernel crates (`load_kernels`). CUDA arrays run on their
/// GPU, on their library's current stream; host arrays on the CPU simulator. The native part
/// of the `gpu_kernels` package (`python/gpu_kernels/__init__.py` re-exports it;
/// `gpu_kernels.torch` registers the kernels as torch operators).
#[pymodule]
#[pyo3(name = "_gpu_kernels")]
fn gpu_kernels(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(builtins::reduce, m)?)?;
    m.add_function(wrap_pyfunction!(builtins::inclusive_scan, m)?)?;
    m.add_function(wrap_pyfunction!(builtins::exclusive_scan, m)?)?;
    m.add_function(wrap_pyfunction!(builtins::sort, m)?)?;
    m.add_function(wrap_pyfunction!(builtins::sort_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(builtins::histogram_even, m)?)?;
    m.add_function(wrap_pyfunction!(builtins::select_if, m)?)?;
    m.add_function(wrap_pyfunction!(dense::softmax, m)?)?;
    m.add_function(wrap_pyfunction!(dense::layernorm, m)?)?;
    m.add_function(wrap_pyfunction!(dense::gemm, m)?)?;
    m.add_function(wrap_pyfunction!(dense::attention, m)?)?;
    m.add_function(wrap_pyfunction!(dense::attention_backward, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::load_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::launch_1d, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::launch_2d, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::builtin_kernel_crates, m)?)?;
    m.add_function(wrap_pyfunction!(synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_available, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fast_torch, m)?)?;
    m.add_function(wrap_pyfunction!(_set_torch_exchange, m)?)?;
    m.add_function(wrap_pyfunction!(_torch_exchange, m)?)?;
    m.add_class::<kernels::Kernels>()?;
    m.add_class::<kernels::Kernel>()?;
    m.add("KernelPanic", py.get_type::<runtime::KernelPanic>())?;
    m.add("KernelFault", py.get_type::<runtime::KernelFault>())?;
    m.add("GpuError", py.get_type::<runtime::GpuError>())?;
    Ok(())
}
