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
pub mod kernel_type;
pub mod panic;
mod param;

pub use dim::Dim3;
pub use param::{ParamKind, SCALARS, is_scalar};
