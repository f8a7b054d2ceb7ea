//! Thread, block and grid indices.

use crate::slice::ThreadIndex;

/// The calling thread's linear index over the whole grid, unique in the launch.
///
/// For a 1-D launch this is `block_idx.x * block_dim.x + thread_idx.x`. Multi-dimensional
/// launches are linearized (x fastest), so it stays unique for any launch shape.
#[inline(always)]
pub fn global_index() -> ThreadIndex {
    #[cfg(target_arch = "nvptx64")]
    {
        use core::arch::nvptx::*;
        // SAFETY: reading special registers has no preconditions.
        unsafe {
            let block = (_block_idx_z() as usize * _grid_dim_y() as usize + _block_idx_y() as usize)
                * _grid_dim_x() as usize
                + _block_idx_x() as usize;
            let threads_per_block = _block_dim_x() as usize * _block_dim_y() as usize * _block_dim_z() as usize;
            let local = (_thread_idx_z() as usize * _block_dim_y() as usize + _thread_idx_y() as usize)
                * _block_dim_x() as usize
                + _thread_idx_x() as usize;
            ThreadIndex::new_unchecked(block * threads_per_block + local)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::host::unsupported("thread::global_index")
}
