//! Classic kernels written the way a newcomer writes them after reading the README: safe
//! indexing (`a[i]`, shared arrays' `read`/`write`), `usize` index arithmetic, no hand tuning.
//!
//! Each kernel has a twin in CUDA C++ (`cuda/twins.cu`), written the way CUDA's samples and
//! textbooks write it: same algorithm, same launch shape, same inputs. `gpu-twins`
//! (host/gpu-twins) checks both against a CPU reference and its bench times them side by side, so
//! a gap between the two is a gap in the compiler route (the `gpu` crate, the `#[kernel]`
//! macro, the builder), to be fixed there rather than in these kernels.
//!
//! Launch shapes are constants here and in the C++ file (`BLOCK`, `TILE`, ...); the host
//! harness reads them from this crate. Each kernel also declares its block shape with
//! `#[kernel(block(...))]` (the README's advice for fast kernels): the launch is refused with
//! any other shape, and the optimizer knows the thread indices' bounds. Those indexed through
//! `thread::global_index()`/`global_index_2d()` or a grid-stride loop also declare the grid's
//! dimensions they use (`grid_dims(1)`/`grid_dims(2)`), as CUDA C++ assumes them, except N-body
//! (see its doc).
#![no_std]

pub mod dense;
pub mod elementwise;
pub mod image;
pub mod physics;
pub mod reduce;
pub mod sort;
pub mod sparse;
pub mod stencil;
pub mod transpose;
