//! The host/device ABI of Rust GPU kernels, written once.
//!
//! Everything here is read by both sides of a launch: the device library (`gpu`), the
//! `#[kernel]` macro (`gpu-macros`), the kernel builder (`gpu-builder`) and the host runtime
//! (`gpu-host`). Before this crate each kept its own copy (the panic record's layout and
//! constants, the scalar type list, `Dim3`), and a change to one copy broke the protocol
//! silently. The crate is `#![no_std]` and has no dependencies, so it compiles for the nvptx
//! target, inside a proc macro and on the host alike.
#![no_std]

mod dim;
pub mod index32;
pub mod kernel_type;
pub mod panic;
mod param;

pub use dim::Dim3;
pub use param::{ParamKind, SCALARS, is_scalar};

/// How the comment starts that records `#[kernel(grid_dims(N))]` in a PTX entry's header,
/// between its parameter list and its body: `gpu-builder` writes it, `gpu-host` reads it (PTX
/// has no directive for a grid shape, and the kernel does not check it).
pub const GRID_DIMS_MARKER: &str = "// #[kernel(grid_dims(";

/// Whether a grid of `grid` blocks has at most the `dims` dimensions a
/// `#[kernel(grid_dims(dims))]` kernel allows (1: `y == z == 1`; 2: `z == 1`; `None`: any).
pub fn grid_dims_allow(dims: Option<u32>, grid: Dim3) -> bool {
    match dims {
        None => true,
        Some(1) => grid.y == 1 && grid.z == 1,
        Some(_) => grid.z == 1,
    }
}
