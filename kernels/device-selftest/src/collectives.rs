//! The warp and block layers of the algorithms, and a user-instantiated device scan, with a
//! non-commutative operator so any combination out of index order shows.

use gpu::ops::ReduceOp;
use gpu::prelude::*;

/// `x ↦ a·x + b` over wrapping `u32`; composing maps is associative but not commutative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, DeviceCopy)]
#[repr(C)]
pub struct Affine {
    pub a: u32,
    pub b: u32,
}

/// Apply `f`, then `g`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Compose;

impl ReduceOp<Affine> for Compose {
    #[inline(always)]
    fn combine(&self, f: Affine, g: Affine) -> Affine {
        Affine {
            a: f.a.wrapping_mul(g.a),
            b: f.b.wrapping_mul(g.a).wrapping_add(g.b),
        }
    }
}

/// Items per thread in [`selftest_block_collectives`].
pub const BLOCK_ITEMS: usize = 3;

/// Per thread `i` (grid covering `input` exactly, full warps): `warp_reduce[i]` = the warp's
/// composition, `warp_inclusive[i]` / `warp_exclusive[i]` (seeded with the identity map) its
/// scans.
#[kernel]
pub fn selftest_warp_collectives(
    input: &[Affine],
    mut warp_reduce: DisjointSlice<Affine>,
    mut warp_inclusive: DisjointSlice<Affine>,
    mut warp_exclusive: DisjointSlice<Affine>,
) {
    let i = thread::global_index();
    let v = input[i.get()];
    let identity = Affine { a: 1, b: 0 };
    warp_reduce.set(i, warp::reduce(v, Compose));
    warp_inclusive.set(i, warp::inclusive_scan(v, Compose));
    warp_exclusive.set(i, warp::exclusive_scan(v, Compose, identity).0);
}

/// Block `k` takes tile `k` of `BLOCK_ITEMS · block_size` maps (the last one partial, padded
/// with the identity): `block_reduce[k]` = the composition of its first thread-items' … (every
/// thread's own composition reduced over the block); `inclusive` / `exclusive` / `prefixed` =
/// block scans of the tile, the last seeded by the block prefix `{a: 3, b: k}`; `striped` =
/// the tile rearranged blocked → striped, stored blocked (so `striped[t·N + i] = tile[t + i·B]`).
#[kernel]
pub fn selftest_block_collectives(
    input: &[Affine],
    mut block_reduce: DisjointSlice<Affine>,
    inclusive: DisjointSlice<Affine>,
    exclusive: DisjointSlice<Affine>,
    prefixed: DisjointSlice<Affine>,
    striped: DisjointSlice<Affine>,
) {
    let identity = Affine { a: 1, b: 0 };
    let k = thread::block_index();
    let tile = k * thread::block_size() as usize * BLOCK_ITEMS;
    let items: [Affine; BLOCK_ITEMS] = block::load_blocked_partial(input, tile, identity);
    let own = items[1..]
        .iter()
        .fold(items[0], |acc, &x| Compose.combine(acc, x));
    let total = block::reduce(own, Compose);
    if let Some(leader) = thread::block_leader_index() {
        block_reduce.set(leader, total);
    }
    let (inc, aggregate) = block::inclusive_scan_items(items, Compose);
    let (exc, _) = block::exclusive_scan_items(items, Compose, identity);
    let seed = Affine { a: 3, b: k as u32 };
    let pre = block::exclusive_scan_with_prefix(items, Compose, |agg| {
        // Every lane of warp 0 sees the block aggregate.
        assert!(agg == aggregate);
        seed
    });
    let scratch = shared_array!(Affine, 1024 * BLOCK_ITEMS + 1024 * BLOCK_ITEMS / 32);
    let rearranged = block::blocked_to_striped(items, scratch.as_slice());
    // SAFETY: block `k` alone stores tile `k` of each output.
    unsafe {
        block::store_blocked_partial(&inclusive, tile, inc);
        block::store_blocked_partial(&exclusive, tile, exc);
        block::store_blocked_partial(&prefixed, tile, pre);
        block::store_blocked_partial(&striped, tile, rearranged);
    }
}

gpu::inclusive_scan_kernel!(selftest_compose_scan, Affine, Compose);

/// The README's block example, verbatim.
#[kernel]
pub fn block_sums(x: &[u32], mut sums: DisjointSlice<u32>, offsets: DisjointSlice<u32>) {
    let tile = thread::block_index() * thread::block_size() as usize * 4;
    let items: [u32; 4] = block::load_blocked_partial(x, tile, 0);
    let total = block::reduce(items.iter().sum::<u32>(), Sum); // in every thread
    let (prefix, _aggregate) = block::exclusive_scan_items(items, Sum, 0);
    // SAFETY: each block stores its own tile.
    unsafe { block::store_blocked_partial(&offsets, tile, prefix) };
    if let Some(leader) = thread::block_leader_index() {
        sums.set(leader, total);
    }
}
