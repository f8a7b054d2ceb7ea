//! The contract of a kernel's **32-bit index variant**, shared by the builder that makes it and
//! the host that launches it.
//!
//! A Rust kernel indexes in `usize`: 64-bit arithmetic for every index and address, where CUDA
//! C++ computes in `int` and relies on overflow being undefined. Most launches are small enough
//! that every index fits in 32 bits, which the kernel cannot know. So `gpu-builder` appends to
//! the PTX, next to an entry `k`, a copy `k$idx32` whose integer arithmetic may assume the
//! limits below (compares of values below 2^32 in 32 bits, each global address computed from a
//! 32-bit offset from its slice's start), and `gpu-host` launches that copy exactly when the
//! launch keeps them. Launches that do not fall back to `k`, so nothing is refused.
//!
//! `$` cannot appear in a Rust identifier, so no `#[kernel]` entry can take the name.

/// What the variant's name adds to its kernel's.
pub const SUFFIX: &str = "$idx32";

/// The largest slice (input or output) a variant launch may pass, in bytes and in elements:
/// 2 GiB less 1 MiB, so that an address's 32-bit offset, sign-extended, stays exact with any
/// constant displacement up to [`MAX_DISPLACEMENT`] folded into the instruction.
pub const MAX_SLICE_BYTES: u64 = (1 << 31) - (1 << 20);

/// The largest constant displacement (`[%rd+imm]`, in bytes) of an access the variant computes
/// in 32 bits.
pub const MAX_DISPLACEMENT: i64 = 1 << 20;

/// The most threads a variant launch may have in all (so every thread coordinate, global
/// index and grid size is below 2^31).
pub const MAX_THREADS: u64 = (1 << 31) - 1;

/// The kernel an entry is the variant of: `k` for `k$idx32`, `None` for other names.
pub fn kernel_of_variant(entry: &str) -> Option<&str> {
    entry
        .strip_suffix(SUFFIX)
        .filter(|kernel| !kernel.is_empty())
}

/// Whether a launch of `threads` threads in all, whose largest slice holds `slice_bytes` bytes
/// in `slice_len` elements, may run the variant.
pub fn launch_fits(threads: u64, slice_bytes: u64, slice_len: u64) -> bool {
    threads <= MAX_THREADS && slice_bytes <= MAX_SLICE_BYTES && slice_len <= MAX_SLICE_BYTES
}
