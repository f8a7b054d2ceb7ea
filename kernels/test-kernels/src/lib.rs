//! Kernels for the tooling tests: the builder's manifests, annotated PTX and SASS, ptxas
//! resource reports, PTX diffs, and the compile errors of typed launchers.
//!
//! Those tests name kernels, parameters and source lines, so they read them from this crate,
//! which changes only with them, instead of from the example crates, which grow. Keep it
//! small: every kernel here is compiled by `cargo xtask build-kernels` and by the tests.
#![no_std]

pub mod elementwise;
pub mod tiled;
