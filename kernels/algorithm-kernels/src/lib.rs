//! Instantiations of the device-wide algorithms of [`gpu::device`] for the element types and
//! operators the host crate `gpu-algorithms` offers out of the box.
//!
//! Kernel names follow `<algorithm>_<op>_<type>`, e.g. `reduce_sum_f32`,
//! `inclusive_scan_max_i32`; `gpu-algorithms` builds the name from the types it is called with.
//! For other types or operators, invoke the same macros in your own kernel crate.
#![no_std]

pub mod histogram;
pub mod math;
pub mod merge;
pub mod pack;
pub mod random;
pub mod reduce;
pub mod scan;
pub mod segmented;
pub mod select;
pub mod sort;
pub mod transform;
