//! Thread/block/grid indices, unique 1-D and 2-D indices, grid-stride loops, lane masks.

use gpu::prelude::*;

/// What one thread saw of its indices.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, DeviceCopy)]
pub struct IndexRecord {
    pub thread_idx: [u32; 3],
    pub block_idx: [u32; 3],
    pub block_dim: [u32; 3],
    pub grid_dim: [u32; 3],
    pub local_index: u32,
    pub block_index: u32,
    pub block_size: u32,
    pub num_blocks: u32,
    pub grid_size: u32,
    pub global_index: u32,
    pub global_id: [u32; 3],
    pub global_size: [u32; 3],
    pub index_2d: [u32; 2],
    pub lane_id: u32,
    pub warp_id: u32,
    pub warps_per_block: u32,
    pub lane_mask_lt: u32,
    pub lane_mask_le: u32,
    pub lane_mask_eq: u32,
    pub lane_mask_ge: u32,
    pub lane_mask_gt: u32,
}

/// Launch: grid (2, 3, 2) × block (4, 2, 2): 12 blocks of 16 threads, 192 threads.
/// `records.len() == 192`, `grid2d.len() == 192`.
///
/// Expected, for the thread with `threadIdx = (tx, ty, tz)`, `blockIdx = (bx, by, bz)`:
/// - `local = (tz * 2 + ty) * 4 + tx`, `block = (bz * 3 + by) * 2 + bx`, `g = block * 16 + local`;
///   its record is `records[g]`, with `thread_idx = [tx, ty, tz]`, `block_idx = [bx, by, bz]`,
///   `block_dim = [4, 2, 2]`, `grid_dim = [2, 3, 2]`, `local_index = local`,
///   `block_index = block`, `block_size = 16`, `num_blocks = 12`, `grid_size = 192`,
///   `global_index = g`,
/// - `global_id = [bx*4 + tx, by*2 + ty, bz*2 + tz]`, `global_size = [8, 6, 4]`,
///   `index_2d = [gx, gz * 6 + gy]` (with `[gx, gy, gz] = global_id`),
/// - `lane_id = local % 32 = local` (16-thread blocks: one partial warp), `warp_id = 0`,
///   `warps_per_block = 1`, `lane_mask_lt = (1 << lane) - 1`, `lane_mask_le = (2 << lane) - 1`,
///   `lane_mask_eq = 1 << lane`, `lane_mask_ge = !lane_mask_lt`, `lane_mask_gt = !lane_mask_le`
///   (all as u32, wrapping).
/// - `grid2d[index_2d[1] * 8 + index_2d[0]] = g` for every thread: a permutation of 0..192.
#[kernel]
pub fn selftest_indices(mut records: DisjointSlice<IndexRecord>, mut grid2d: DisjointSlice<u32>) {
    let g = thread::global_index();
    let t = thread::thread_idx();
    let b = thread::block_idx();
    let bd = thread::block_dim();
    let gd = thread::grid_dim();
    let i2 = thread::global_index_2d();
    let (gx, gy, gz) = thread::global_id();
    let record = IndexRecord {
        thread_idx: [t.x, t.y, t.z],
        block_idx: [b.x, b.y, b.z],
        block_dim: [bd.x, bd.y, bd.z],
        grid_dim: [gd.x, gd.y, gd.z],
        local_index: thread::local_index(),
        block_index: thread::block_index() as u32,
        block_size: thread::block_size(),
        num_blocks: thread::num_blocks() as u32,
        grid_size: thread::grid_size() as u32,
        global_index: g.get() as u32,
        global_id: [gx as u32, gy as u32, gz as u32],
        global_size: [
            thread::global_size_x() as u32,
            thread::global_size_y() as u32,
            thread::global_size_z() as u32,
        ],
        index_2d: [i2.x() as u32, i2.y() as u32],
        lane_id: thread::lane_id(),
        warp_id: thread::warp_id(),
        warps_per_block: thread::warps_per_block(),
        lane_mask_lt: warp::lane_mask_lt(),
        lane_mask_le: warp::lane_mask_le(),
        lane_mask_eq: warp::lane_mask_eq(),
        lane_mask_ge: warp::lane_mask_ge(),
        lane_mask_gt: warp::lane_mask_gt(),
    };
    // Cross-check the component accessors against the Dim3 ones.
    let consistent = thread::thread_idx_x() == t.x
        && thread::thread_idx_y() == t.y
        && thread::thread_idx_z() == t.z
        && thread::block_idx_x() == b.x
        && thread::block_idx_y() == b.y
        && thread::block_idx_z() == b.z
        && thread::block_dim_x() == bd.x
        && thread::block_dim_y() == bd.y
        && thread::block_dim_z() == bd.z
        && thread::grid_dim_x() == gd.x
        && thread::grid_dim_y() == gd.y
        && thread::grid_dim_z() == gd.z
        && thread::global_id_x() == gx
        && thread::global_id_y() == gy
        && thread::global_id_z() == gz;
    records.set(
        g,
        if consistent {
            record
        } else {
            IndexRecord::default()
        },
    );
    let row_stride = thread::global_size_x();
    // SAFETY: every thread passes the same row stride (the grid's x extent).
    unsafe { grid2d.set_2d(i2, row_stride, g.get() as u32) };
}

/// Launch: any shape, e.g. 2 blocks × 64 threads with `out.len() == 1000`.
/// Expected: `out[i] == 3 * i + 1` for every `i`.
#[kernel]
pub fn selftest_grid_stride(mut out: DisjointSlice<u32>) {
    for i in thread::grid_stride(out.len()) {
        out.set(i, 3 * i.get() as u32 + 1);
    }
}

/// Launch: any shape, e.g. 2 blocks × 64 threads with `idx.len() == out.len() == 1000`.
/// Expected: `out[i] == src[idx[i]]` for every `i`.
///
/// An `unsafe fn` kernel (its launcher is `unsafe` too): it reads `src` without bounds checks.
///
/// # Safety
/// Every `idx[i]` must be less than `src.len()`.
#[kernel]
pub unsafe fn selftest_gather_unchecked(src: &[u32], idx: &[u32], mut out: DisjointSlice<u32>) {
    for i in thread::grid_stride(out.len().min(idx.len())) {
        // SAFETY: the caller promised `idx[i] < src.len()`.
        let v = unsafe { *src.get_unchecked(idx[i.get()] as usize) };
        out.set(i, v);
    }
}
