//! Distributed sort of `u32` keys spread over the ranks (histogram splitters, one exchange, one
//! local radix sort):
//!
//! 1. **Splitters.** A histogram of every rank's keys in [`HISTOGRAM_BINS`] even bins over all
//!    of `u32`, summed over the ranks (one all_reduce). Every rank reads the same global
//!    histogram, so all pick the same `P − 1` splitters: the bin edges nearest the
//!    `1/P, 2/P, …` quantiles of the key count. Where such a bin holds too many keys (skewed
//!    keys), it is histogrammed again on its own range, down to single values if need be.
//! 2. **Partition.** Each rank splits its keys by the splitters with the stable
//!    [`Algorithms::partition`] (`key < splitter`), one pass per splitter: part `q` is what
//!    rank `q` sorts.
//! 3. **Exchange.** The part sizes are all-gathered, so every rank knows what it will receive,
//!    then every part goes to its rank in one group of sends and receives (NCCL's grouped
//!    send/recv, the all-to-all of uneven parts), each rank's own part included.
//! 4. **Local sort.** Each rank sorts what it received with our onesweep radix sort.
//!
//! Rank `r`'s output holds the keys between splitters `r` and `r + 1`, sorted; the outputs in
//! rank order are the whole input, sorted. Only the partition passes and one transfer of the
//! keys that change rank come on top of a sort of `N / P` keys per GPU, which is what makes
//! `P` GPUs faster than one. Balance: the parts are within 0.4% of `N / P` unless many keys
//! share one value (equal keys always go to one rank). [`DistributedSort`] keeps the device
//! memory between sorts.

use std::time::Instant;

use gpu_algorithms::{Algorithms, SortTemp};
use gpu_distributed::{Communicator, Group, ReduceOp, Result};
use gpu_host::DeviceBuffer;
use gpu_host::gpu::ops::CompareOp;

/// Bins of the splitter histogram (16 KiB of counts: they fit in shared memory).
pub const HISTOGRAM_BINS: usize = 4096;

/// Where a distributed sort spent its time on this rank (host clock, each phase ended by a
/// synchronization).
#[derive(Clone, Copy, Debug, Default)]
pub struct SortPhases {
    /// Histograms and their all_reduces.
    pub splitters_ms: f64,
    /// The partition passes.
    pub partition_ms: f64,
    /// Part sizes (all_gather) and the exchange of the keys.
    pub exchange_ms: f64,
    /// The local radix sort.
    pub local_sort_ms: f64,
}

/// A distributed sort's device memory, kept between calls (like CUB's temporary storage), so
/// repeated sorts of similar sizes allocate nothing.
#[derive(Default)]
pub struct DistributedSort {
    /// Per splitter: histogram counts.
    histograms: Vec<DeviceBuffer<u32>>,
    /// Per partition pass: the keys below and above the splitter.
    below: Vec<DeviceBuffer<u32>>,
    above: Vec<DeviceBuffer<u32>>,
    /// Keys left after a pass, for the next one (more than 2 ranks).
    rest: Vec<DeviceBuffer<u32>>,
    count: Option<DeviceBuffer<u32>>,
    received: Option<DeviceBuffer<u32>>,
    sorted: Option<DeviceBuffer<u32>>,
    temp: SortTemp<u32>,
}

/// `slot`, reallocated unless it holds at least `len` elements (exactly `len` if `exact`).
fn reuse<'s>(
    slot: &'s mut Option<DeviceBuffer<u32>>,
    comm: &Communicator,
    len: usize,
    exact: bool,
) -> Result<&'s mut DeviceBuffer<u32>> {
    let fits = |b: &DeviceBuffer<u32>| {
        if exact {
            b.len() == len
        } else {
            b.len() >= len
        }
    };
    if !slot.as_ref().is_some_and(fits) {
        *slot = None; // free first
        *slot = Some(comm.gpu().alloc_zeroed(len)?);
    }
    Ok(slot.as_mut().expect("just filled"))
}

/// `slots[i]` as in [`reuse`]; `i` is at most `slots.len()` (then a slot is added).
fn reuse_at(
    slots: &mut Vec<DeviceBuffer<u32>>,
    i: usize,
    comm: &Communicator,
    len: usize,
    exact: bool,
) -> Result<()> {
    let gpu = comm.gpu();
    if i == slots.len() {
        slots.push(gpu.alloc_zeroed(len)?);
    } else if (exact && slots[i].len() != len) || slots[i].len() < len {
        slots[i] = gpu.alloc_zeroed(0)?; // free first
        slots[i] = gpu.alloc_zeroed(len)?;
    }
    Ok(())
}

/// Splitter refinement: a bin holding more than this share of a part's keys is histogrammed
/// again on its own range (1/256: parts within 0.4% of even).
const REFINE_SHARE: u64 = 256;

impl DistributedSort {
    /// Empty storage; the first sort allocates it.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last sort's result (this rank's part), if there was one.
    pub fn output(&self) -> Option<&DeviceBuffer<u32>> {
        self.sorted.as_ref()
    }

    /// This rank's part of the sorted whole: the keys from splitter `rank` (inclusive) to
    /// splitter `rank + 1` (exclusive), sorted, on the communicator's device. Collective:
    /// every rank calls it with its own keys (any lengths, empty included). The result lives
    /// in this storage until the next call.
    pub fn sort(
        &mut self,
        comm: &Communicator,
        algos: &Algorithms,
        keys: &DeviceBuffer<u32>,
    ) -> Result<(&DeviceBuffer<u32>, SortPhases)> {
        let (size, me) = (comm.size(), comm.rank());
        let stream = comm.stream();
        let gpu = comm.gpu();
        let mut phases = SortPhases::default();

        // 1. Splitters.
        let clock = Instant::now();
        let splitters = self.splitters(comm, algos, keys)?;
        phases.splitters_ms = lap(clock);

        // 2. Partition: part q = below[q][..counts[q]] (the last part: above[last]).
        let clock = Instant::now();
        let mut counts = Vec::with_capacity(size);
        let mut n = keys.len();
        for (k, &s) in splitters.iter().enumerate() {
            reuse_at(&mut self.below, k, comm, n, false)?;
            reuse_at(&mut self.above, k, comm, n, false)?;
            let count = reuse(&mut self.count, comm, 1, false)?;
            let input = if k == 0 { keys } else { &self.rest[k - 1] };
            algos.partition(
                stream,
                input,
                CompareOp::Less,
                s,
                &mut self.below[k],
                &mut self.above[k],
                count,
            )?;
            let c = count.to_vec()?[0] as usize;
            counts.push(c);
            if k + 1 < splitters.len() {
                // The next pass partitions exactly the keys above (an exact-length buffer).
                reuse_at(&mut self.rest, k, comm, n - c, true)?;
                self.rest[k].copy_range_from_device(0, &self.above[k], 0..n - c)?;
            }
            n -= c;
        }
        counts.push(n);
        phases.partition_ms = lap(clock);

        // 3. Exchange: part sizes first, then the keys.
        let clock = Instant::now();
        let mine: Vec<u64> = counts.iter().map(|&c| c as u64).collect();
        let mine = gpu.to_device(&mine)?;
        let mut all = gpu.alloc_zeroed::<u64>(size * size)?;
        comm.all_gather(&mine, &mut all)?;
        comm.synchronize()?;
        let matrix = all.to_vec()?; // matrix[src * size + dst]
        let incoming: Vec<usize> = (0..size)
            .map(|src| matrix[src * size + me] as usize)
            .collect();
        let total: usize = incoming.iter().sum();
        let received = reuse(&mut self.received, comm, total, true)?;
        let mut at = 0;
        let ranges: Vec<_> = incoming
            .iter()
            .enumerate()
            .map(|(src, &n)| {
                at += n;
                (at - n..at, src)
            })
            .collect();
        let mut group = Group::new();
        for (dst, &c) in counts.iter().enumerate() {
            let part = match dst {
                _ if size == 1 => keys,
                d if d + 1 < size => &self.below[d],
                _ => &self.above[size - 2],
            };
            group.send(comm, part, 0..c, dst)?;
        }
        group.recv_parts(comm, received, &ranges)?;
        group.run()?;
        comm.synchronize()?;
        phases.exchange_ms = lap(clock);

        // 4. Local sort.
        let clock = Instant::now();
        let sorted = reuse(&mut self.sorted, comm, total, true)?;
        let received = self.received.as_ref().expect("filled above");
        algos.sort_keys_with_temp(stream, received, sorted, 0..32, &mut self.temp)?;
        stream.synchronize()?;
        phases.local_sort_ms = lap(clock);
        Ok((self.sorted.as_ref().expect("filled above"), phases))
    }

    /// The `P − 1` splitters, the same on every rank: histograms of all ranks' keys (summed by
    /// all_reduce) in [`HISTOGRAM_BINS`] even bins, first over all of `u32`, then, for a
    /// splitter whose quantile falls in a bin holding more than `1/REFINE_SHARE` of a part,
    /// over that bin alone (at most 3 levels: 4096³ ≥ 2³²). Uniform keys need one pass.
    fn splitters(
        &mut self,
        comm: &Communicator,
        algos: &Algorithms,
        keys: &DeviceBuffer<u32>,
    ) -> Result<Vec<u32>> {
        let size = comm.size();
        let stream = comm.stream();
        let mut total = comm.gpu().to_device(&[keys.len() as u64])?;
        comm.all_reduce_in_place(&mut total, ReduceOp::Sum)?;
        comm.synchronize()?;
        let total = total.to_vec()?[0];
        // Per splitter: the bin range [lo, hi) searched, the keys known below lo, the answer.
        struct Search {
            lo: u32,
            hi: u32,
            below: u64,
            found: Option<u32>,
        }
        let mut searches: Vec<Search> = (1..size)
            .map(|_| Search {
                lo: 0,
                hi: u32::MAX,
                below: 0,
                found: None,
            })
            .collect();
        let slack = total / (size as u64 * REFINE_SHARE);
        for _level in 0..3 {
            let open: Vec<usize> = (0..searches.len())
                .filter(|&q| searches[q].found.is_none())
                .collect();
            if open.is_empty() {
                break;
            }
            for (i, &q) in open.iter().enumerate() {
                reuse_at(&mut self.histograms, i, comm, HISTOGRAM_BINS, true)?;
                let s = &searches[q];
                if keys.is_empty() || s.lo >= s.hi {
                    self.histograms[i].copy_from_host(&[0u32; HISTOGRAM_BINS])?;
                } else {
                    algos.histogram_even(stream, keys, s.lo, s.hi, &mut self.histograms[i])?;
                }
            }
            let mut group = Group::new();
            for counts in self.histograms.iter_mut().take(open.len()) {
                group.all_reduce_in_place(comm, counts, ReduceOp::Sum)?;
            }
            group.run()?;
            comm.synchronize()?;
            for (i, &q) in open.iter().enumerate() {
                let counts = self.histograms[i].to_vec()?;
                let s = &mut searches[q];
                let target = (total * (q as u64 + 1) / size as u64).saturating_sub(s.below);
                let pick = pick_edge(&counts, target);
                let width = (s.hi as u64 - s.lo as u64).div_ceil(HISTOGRAM_BINS as u64);
                let edge = |b: u64| bin_edge(s.lo, s.hi, HISTOGRAM_BINS as u64, b);
                if pick.distance <= slack || width <= 1 || s.lo >= s.hi {
                    s.found = Some(edge(pick.edge));
                } else {
                    // The target lies inside bin `crossing`: search it alone.
                    let b = pick.crossing;
                    s.below += pick.cumulative_below_crossing;
                    (s.lo, s.hi) = (edge(b), edge(b + 1));
                }
            }
        }
        let mut out: Vec<u32> = searches.iter().map(|s| s.found.unwrap_or(s.lo)).collect();
        // Non-decreasing (refinements of neighbouring quantiles are independent).
        for i in 1..out.len() {
            out[i] = out[i].max(out[i - 1]);
        }
        Ok(out)
    }
}

/// Sorts with fresh storage: see [`DistributedSort::sort`] (which reuses it between calls).
pub fn sort(
    comm: &Communicator,
    algos: &Algorithms,
    keys: &DeviceBuffer<u32>,
) -> Result<(DeviceBuffer<u32>, SortPhases)> {
    let mut work = DistributedSort::new();
    let phases = work.sort(comm, algos, keys)?.1;
    Ok((work.sorted.take().expect("a sort fills it"), phases))
}

fn lap(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Edge `b` of `bins` even bins over `[lo, hi)`: a key is in bin `>= b` exactly when
/// `key - lo >= ceil(b·(hi - lo)/bins)` (the histogram's integer bin rule).
fn bin_edge(lo: u32, hi: u32, bins: u64, b: u64) -> u32 {
    (lo as u64 + (b * (hi as u64 - lo as u64)).div_ceil(bins)).min(u32::MAX as u64) as u32
}

/// Where a quantile falls in a histogram.
struct Pick {
    /// The bin edge whose cumulative count is nearest the target.
    edge: u64,
    /// How far that edge's count is from the target.
    distance: u64,
    /// The bin in which the cumulative count reaches the target (the last one if never).
    crossing: u64,
    /// Keys in the bins below `crossing`.
    cumulative_below_crossing: u64,
}

fn pick_edge(counts: &[u32], target: u64) -> Pick {
    let mut cumulative = Vec::with_capacity(counts.len() + 1);
    let mut sum = 0u64;
    cumulative.push(0);
    for &c in counts {
        sum += c as u64;
        cumulative.push(sum);
    }
    // The first edge at or past the target; the one before may be nearer.
    let b = cumulative
        .partition_point(|&c| c < target)
        .min(counts.len());
    let below = b.saturating_sub(1);
    let (edge, distance) = if b > 0 && target - cumulative[below] < cumulative[b].abs_diff(target) {
        (below, target - cumulative[below])
    } else {
        (b, cumulative[b].abs_diff(target))
    };
    Pick {
        edge: edge as u64,
        distance,
        crossing: below as u64,
        cumulative_below_crossing: cumulative[below],
    }
}

/// The `parts − 1` splitters from one histogram (even bins over `[lo, hi)`): for each quantile
/// `q/parts` of the counted keys, the bin edge whose cumulative count is nearest to it. Part
/// `q` is then `splitter[q-1] <= key < splitter[q]`. Non-decreasing. (The sort refines these
/// with finer histograms where a bin is too coarse.)
pub fn splitters_from_histogram(counts: &[u32], lo: u32, hi: u32, parts: usize) -> Vec<u32> {
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    (1..parts as u64)
        .map(|q| {
            let pick = pick_edge(counts, total * q / parts as u64);
            bin_edge(lo, hi, counts.len() as u64, pick.edge)
        })
        .collect()
}

/// The order-independent fingerprint of a multiset of keys: (count, wrapping sum, wrapping sum
/// of a mixing hash). Equal multisets give equal fingerprints; a changed, lost or duplicated
/// key changes them (the hash makes compensating changes of the plain sum unlikely to cancel).
pub fn fingerprint(keys: &[u32]) -> [u64; 3] {
    keys.iter().fold([0u64; 3], |[n, s, h], &k| {
        [
            n + 1,
            s.wrapping_add(k as u64),
            h.wrapping_add(mix(k as u64)),
        ]
    })
}

/// SplitMix64's finalizer.
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key `i` of the global input of the examples and benchmarks: uniform pseudo-random `u32`s
/// (a hash of the index), so every rank makes its own share and one device can make them all.
pub fn key(i: u64, seed: u64) -> u32 {
    (mix(i ^ seed.rotate_left(32)) >> 32) as u32
}

/// Keys `range` of the global input, made on several threads.
pub fn keys(range: std::ops::Range<u64>, seed: u64) -> Vec<u32> {
    let n = (range.end - range.start) as usize;
    let mut out = vec![0u32; n];
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(16);
    let chunk = n.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let first = range.start + (c * chunk) as u64;
            s.spawn(move || {
                for (j, k) in part.iter_mut().enumerate() {
                    *k = key(first + j as u64, seed);
                }
            });
        }
    });
    out
}

/// What [`check`] found, the same on every rank.
#[derive(Clone, Debug)]
pub struct SortCheck {
    /// Keys in (all ranks).
    pub keys: u64,
    /// Every rank's part is sorted.
    pub parts_sorted: bool,
    /// Each rank's last key is at most the next non-empty rank's first key.
    pub boundaries_ordered: bool,
    /// The output is a permutation of the input (count, sum and hash sum agree).
    pub permutation: bool,
    /// Keys per rank after the sort.
    pub part_sizes: Vec<u64>,
}

impl SortCheck {
    /// Whether the whole is sorted and a permutation of the input.
    pub fn passed(&self) -> bool {
        self.parts_sorted && self.boundaries_ordered && self.permutation
    }
}

/// Checks the distributed result against the input, globally (collective): `input` is this
/// rank's input keys, `output` its sorted part (read back to the host).
pub fn check(comm: &Communicator, input: &[u32], output: &[u32]) -> Result<SortCheck> {
    let size = comm.size();
    let gpu = comm.gpu();
    let sorted_here = output.windows(2).all(|w| w[0] <= w[1]);
    // Per rank: [sorted, has keys, first, last, len] gathered to all.
    let mine = [
        sorted_here as u64,
        !output.is_empty() as u64,
        output.first().copied().unwrap_or(0) as u64,
        output.last().copied().unwrap_or(0) as u64,
        output.len() as u64,
    ];
    let mine = gpu.to_device(&mine)?;
    let mut all = gpu.alloc_zeroed::<u64>(5 * size)?;
    comm.all_gather(&mine, &mut all)?;
    // Fingerprints of input and output, summed over the ranks (wrapping, as NCCL's integers).
    let mut prints = gpu.to_device(&[fingerprint(input), fingerprint(output)].concat())?;
    comm.all_reduce_in_place(&mut prints, ReduceOp::Sum)?;
    comm.synchronize()?;
    let all = all.to_vec()?;
    let prints = prints.to_vec()?;
    let rows: Vec<&[u64]> = all.chunks(5).collect();
    let nonempty: Vec<&&[u64]> = rows.iter().filter(|r| r[1] == 1).collect();
    Ok(SortCheck {
        keys: prints[0],
        parts_sorted: rows.iter().all(|r| r[0] == 1),
        boundaries_ordered: nonempty.windows(2).all(|w| w[0][3] <= w[1][2]),
        permutation: prints[..3] == prints[3..],
        part_sizes: rows.iter().map(|r| r[4]).collect(),
    })
}
