//! A histogram in distributed shared memory: the blocks of a thread-block cluster share one
//! set of bins, spread over their shared memories (`gpu::hopper::cluster`).

use gpu::atomic::{self, Scope};
use gpu::hopper::cluster;
use gpu::prelude::*;

/// Bins of [`cluster_histogram`].
pub const BINS: usize = 256;

/// `hist[b] += #{ i : values[i] % BINS == b }`, for `hist` of [`BINS`] zeroed counters.
///
/// Launch in clusters of 1, 2, 4 or 8 blocks (`LaunchConfig::with_cluster`). Block `r` of a
/// cluster of `c` owns bins `r * BINS / c ..` `(r + 1) * BINS / c` in its shared memory; every
/// thread adds each of its values into the owning block's bin with a remote shared-memory
/// atomic (`mapa` + `atom.shared::cluster`), so a cluster counts its share of the input with
/// one set of bins, and each block then adds only the bins it owns to `hist`.
#[kernel]
pub fn cluster_histogram(values: &[u32], hist: DisjointSlice<u32>) {
    assert!(
        hist.len() >= BINS,
        "cluster_histogram: hist needs 256 counters"
    );
    let bins = shared_array!(u32, BINS);
    let c = cluster::blocks() as usize;
    let rank = cluster::block_rank() as usize;
    let per = BINS / c;
    let tid = thread::thread_idx_x() as usize;
    let threads = thread::block_dim().x as usize;
    for i in (tid..per).step_by(threads) {
        bins.write(rank * per + i, 0);
    }
    // Every block's bins are zero before anyone adds to them.
    cluster::sync();
    for i in thread::grid_stride(values.len()) {
        let b = values[i.get()] as usize % BINS;
        let owner = (b / per) as u32;
        let remote = cluster::map_shared(bins.addr_of(b), owner);
        // SAFETY: `remote` is bin `b` of block `owner` of this cluster (owner < c), alive until
        // the cluster barrier below, which every block reaches; all accesses until then are
        // atomic.
        unsafe { cluster::atomic_add_u32(remote, 1) };
    }
    // Every add has landed, and no block touches another's shared memory after this.
    cluster::sync();
    for i in (tid..per).step_by(threads) {
        let b = rank * per + i;
        let v = bins.read(b);
        if v != 0 {
            // SAFETY: `b < BINS <= hist.len()` (asserted); the counters are only updated
            // atomically.
            unsafe { atomic::global::add(hist.as_mut_ptr().add(b), v, Scope::Device) };
        }
    }
}
