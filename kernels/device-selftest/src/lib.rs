//! Self-test kernels for the `gpu` device library.
//!
//! Every intrinsic of `gpu` is exercised by some kernel here, and every kernel writes what it
//! observed to its outputs, so a host-side GPU test can launch it and compare with the expected
//! values documented on each kernel (for the launch shape stated there). Record types are
//! `#[repr(C)]` structs shared with the host (this crate also compiles for the host).
//!
//! | kernel                    | covers                                                     |
//! |---------------------------|------------------------------------------------------------|
//! | `selftest_indices`        | `thread::*`, `global_index(_2d)`, `get_mut_2d`, lane masks  |
//! | `selftest_grid_stride`    | `thread::grid_stride`                                      |
//! | `selftest_gather_unchecked` | an `unsafe fn` kernel (its launcher is `unsafe`)         |
//! | `selftest_barriers`       | `sync::*` (incl. count/and/or, warp barrier, fences), static shared |
//! | `selftest_shared_static`  | `shared_array!` in both forms, all access widths, views    |
//! | `selftest_shared_dynamic` | `shared::dynamic*`, split views, aliasing, static + dynamic |
//! | `selftest_shuffles`       | `warp::shfl_*` for 8/16/32/64-bit types, widths, masks     |
//! | `selftest_votes`          | `warp::` votes, ballot, active mask, match, `reduce_*`, `all_reduce` |
//! | `selftest_atomics_init` + `selftest_atomics_global` | every atomic op × type × scope on global memory |
//! | `selftest_atomics_shared` | every atomic op × type × scope/path on shared memory       |
//! | `selftest_math`           | `math::*`                                                  |
//! | `selftest_time`           | `time::*`, `asm::sm_id`                                    |
//! | `selftest_printf`         | `printf!`                                                  |
//! | `selftest_axpy`, `selftest_widen` | generic kernels: `#[kernel(instances(...))]`, one entry per type |
//! | `grid_reduce_sum`         | `grid::sync` in a cooperative launch (a single-launch reduction) |
//! | `selftest_turns_fold`     | `grid::wait_turn_within` / `end_turn`: blocks in turn order, a turn that never comes |
//! | `selftest_warp_collectives`, `selftest_block_collectives`, `selftest_compose_scan`, `block_sums` | `warp::`/`block::` algorithms, a user-instantiated device scan |
#![no_std]

pub mod atomics;
pub mod barriers;
pub mod collectives;
pub mod cooperative;
pub mod generic;
pub mod indices;
pub mod math;
pub mod printf;
pub mod shared_dynamic;
pub mod shared_static;
pub mod time;
pub mod turns;
pub mod warp;
