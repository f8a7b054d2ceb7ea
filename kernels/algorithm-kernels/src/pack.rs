//! `pack_spread_u32`, `pack_u32`, `unpack_u32`: frame-of-reference packing of ascending `u32`
//! runs (see [`gpu::device::pack`]), so sorted keys move between GPUs in fewer bytes.
//!
//! Every run is given as a buffer and a range in it, as the merge kernels take theirs.

use gpu::{DisjointSlice, kernel};

/// `spread[slot] = max(spread[slot], largest group spread of keys[begin..end])`; see
/// [`gpu::device::pack_spread`]. One thread per group
/// ([`pack_groups`](gpu::device::pack_groups) of them) in blocks of
/// [`PACK_BLOCK`](gpu::device::PACK_BLOCK).
#[kernel]
pub fn pack_spread_u32(keys: &[u32], begin: u64, end: u64, spread: DisjointSlice<u32>, slot: u64) {
    let keys = &keys[begin as usize..end as usize];
    gpu::device::pack_spread(keys, &spread, slot as usize)
}

/// `packed[packed_begin..]` receives `keys[begin..end]` packed at `width` bits a key; see
/// [`gpu::device::pack`]. [`pack_threads`](gpu::device::pack_threads) threads in blocks of
/// [`PACK_BLOCK`](gpu::device::PACK_BLOCK).
#[kernel]
pub fn pack_u32(
    keys: &[u32],
    begin: u64,
    end: u64,
    width: u32,
    packed: DisjointSlice<u32>,
    packed_begin: u64,
) {
    let keys = &keys[begin as usize..end as usize];
    let len = packed.len();
    let packed = packed.into_range(packed_begin as usize..len);
    gpu::device::pack(keys, width, &packed)
}

/// `out[out_begin..out_begin + len]` receives the `len` keys packed at `width` bits in
/// `packed[packed_begin..]`; see [`gpu::device::unpack`]. Launched as `pack_u32`.
#[kernel]
pub fn unpack_u32(
    packed: &[u32],
    packed_begin: u64,
    len: u64,
    width: u32,
    out: DisjointSlice<u32>,
    out_begin: u64,
) {
    let packed = &packed[packed_begin as usize..];
    let out_len = out.len();
    let out = out.into_range(out_begin as usize..out_len);
    gpu::device::unpack(packed, len as usize, width, &out)
}
