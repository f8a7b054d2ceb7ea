//! Programs across several GPUs, each checked against one device. Each runs launched (one
//! process per GPU: `cargo xtask launch -n 2 distributed-sort`) or alone (this process drives
//! every GPU it has, or simulated devices without one): see [`world`].
//!
//! - [`sort`]: a distributed radix sort (histogram splitters, one all-to-all exchange, a local
//!   sort), checked globally sorted and a permutation of the input, timed against one GPU.
//! - [`nbody`]: N-body with the bodies split over the ranks and positions all-gathered each
//!   step, checked equal to the single-device simulation, timed against one GPU.
//! - [`data_parallel`]: gradient descent of a linear model with the batch split over the ranks
//!   and the gradient all-reduced, checked against training on one device.

pub mod args;
pub mod data_parallel;
pub mod nbody;
pub mod sort;
pub mod world;
