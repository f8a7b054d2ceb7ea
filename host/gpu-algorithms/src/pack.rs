//! Frame-of-reference packing of ascending `u32` runs: a sorted run in fewer bytes, for moving
//! it (between GPUs, to the host) and unpacking it where it lands. The format and the kernels
//! are [`gpu::device::pack`](gpu_host::gpu::device::pack)'s; the host picks the width from the
//! run's largest group spread, measured on the device first.

use std::ops::Range;

use gpu_host::gpu::device::{PACK_BLOCK, pack_groups, pack_threads, packed_words};
use gpu_host::{DeviceBuffer, Error, LaunchConfig, Result, Stream};

use crate::Algorithms;
use crate::merge::check_range;

/// A launch of `threads` in blocks of `PACK_BLOCK` (an oversize grid is refused by the launch's
/// own validation, naming the kernel).
fn config(threads: usize) -> LaunchConfig {
    LaunchConfig::for_elements(threads, PACK_BLOCK)
}

/// Checks `width` and that `packed[packed_start..]` holds the `len` keys packed at it; returns
/// their words. Errors name `kernel` and the argument.
fn check_packed(
    kernel: &str,
    len: usize,
    width: u32,
    packed_start: usize,
    packed_len: usize,
) -> Result<usize> {
    if width > 32 {
        return Err(Error::Argument {
            kernel: kernel.to_string(),
            argument: "width".to_string(),
            message: format!("{width} bits; at most 32"),
        });
    }
    let words = packed_words(len, width);
    check_range(
        kernel,
        "packed",
        &(packed_start..packed_start + words),
        packed_len,
    )?;
    Ok(words)
}

impl Algorithms {
    /// Raises `spread[slot]` to the largest spread (last key minus first) of any
    /// [`PACK_GROUP`](gpu_host::gpu::device::PACK_GROUP)-key group of the ascending run
    /// `keys[range]` (asynchronous). Zero `spread[slot]` first to measure one run; its
    /// [`pack_width`](gpu_host::gpu::device::pack_width) is the width to pack at. Several runs
    /// measured into one buffer (one slot each) come back to the host in one copy.
    ///
    /// Errors (nothing launched): `range` past the end of `keys`, or `slot` past the end of
    /// `spread`.
    pub fn pack_spread(
        &self,
        stream: &Stream,
        keys: &DeviceBuffer<u32>,
        range: Range<usize>,
        spread: &mut DeviceBuffer<u32>,
        slot: usize,
    ) -> Result<()> {
        const KERNEL: &str = "pack_spread_u32";
        check_range(KERNEL, "keys", &range, keys.len())?;
        check_range(KERNEL, "slot", &(slot..slot + 1), spread.len())?;
        if range.is_empty() {
            return Ok(());
        }
        self.module.pack_spread_u32(
            stream,
            config(pack_groups(range.len())),
            keys,
            range.start as u64,
            range.end as u64,
            spread,
            slot as u64,
        )
    }

    /// Packs the ascending run `keys[range]` at `width` bits a key into
    /// `packed[packed_start .. packed_start + packed_words(range.len(), width)]`
    /// (asynchronous). `width` must hold the run's spread (see [`Algorithms::pack_spread`]):
    /// distances are cut to `width` bits, so a narrower width loses keys' low bits. Unpack
    /// with [`Algorithms::unpack`].
    ///
    /// Errors (nothing launched): `range` past the end of `keys`, `width` over 32, or the
    /// packed words past the end of `packed`.
    pub fn pack(
        &self,
        stream: &Stream,
        keys: &DeviceBuffer<u32>,
        range: Range<usize>,
        width: u32,
        packed: &mut DeviceBuffer<u32>,
        packed_start: usize,
    ) -> Result<()> {
        const KERNEL: &str = "pack_u32";
        check_range(KERNEL, "keys", &range, keys.len())?;
        let words = check_packed(KERNEL, range.len(), width, packed_start, packed.len())?;
        if words == 0 {
            return Ok(());
        }
        self.module.pack_u32(
            stream,
            config(pack_threads(range.len())),
            keys,
            range.start as u64,
            range.end as u64,
            width,
            packed,
            packed_start as u64,
        )
    }

    /// Unpacks `len` keys packed at `width` bits by [`Algorithms::pack`] from
    /// `packed[packed_start ..]` into `out[out_start .. out_start + len]` (asynchronous).
    ///
    /// Errors (nothing launched): `width` over 32, fewer than `packed_words(len, width)` words
    /// from `packed_start`, or the keys past the end of `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn unpack(
        &self,
        stream: &Stream,
        packed: &DeviceBuffer<u32>,
        packed_start: usize,
        len: usize,
        width: u32,
        out: &mut DeviceBuffer<u32>,
        out_start: usize,
    ) -> Result<()> {
        const KERNEL: &str = "unpack_u32";
        check_packed(KERNEL, len, width, packed_start, packed.len())?;
        check_range(KERNEL, "out", &(out_start..out_start + len), out.len())?;
        if len == 0 {
            return Ok(());
        }
        self.module.unpack_u32(
            stream,
            config(pack_threads(len)),
            packed,
            packed_start as u64,
            len as u64,
            width,
            out,
            out_start as u64,
        )
    }
}
