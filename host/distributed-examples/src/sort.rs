//! Distributed sort of `u32` keys spread over the ranks (histogram splitters, one exchange, one
//! local radix sort):
//!
//! 1. **Splitters.** The global minimum and maximum (one all_reduce), then a histogram of every
//!    rank's keys over `[min, max)` in [`HISTOGRAM_BINS`] even bins, summed over the ranks (one
//!    all_reduce). Every rank reads the same global histogram, so all pick the same `P − 1`
//!    splitters: the bin edges nearest the `1/P, 2/P, …` quantiles of the key count.
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
//! `P` GPUs faster than one. Balance: the parts are within about `N / HISTOGRAM_BINS` keys
//! of `N / P` unless many keys share one value (equal keys always go to one rank).

use std::time::Instant;

use gpu_algorithms::Algorithms;
use gpu_distributed::{Communicator, Group, ReduceOp, Result};
use gpu_host::DeviceBuffer;
use gpu_host::gpu::ops::{CompareOp, Max, Min};

/// Bins of the splitter histogram (16 KiB of counts: they fit in shared memory).
pub const HISTOGRAM_BINS: usize = 4096;

/// Where a distributed sort spent its time on this rank (host clock, each phase ended by a
/// synchronization).
#[derive(Clone, Copy, Debug, Default)]
pub struct SortPhases {
    /// Minimum, maximum and histogram, and their all_reduces.
    pub splitters_ms: f64,
    /// The partition passes.
    pub partition_ms: f64,
    /// Part sizes (all_gather) and the exchange of the keys.
    pub exchange_ms: f64,
    /// The local radix sort.
    pub local_sort_ms: f64,
}

/// This rank's part of the sorted whole: the keys from splitter `rank` (inclusive) to
/// splitter `rank + 1` (exclusive), sorted, on the communicator's device. Collective: every
/// rank calls it with its own keys (any lengths, empty included).
pub fn sort(
    comm: &Communicator,
    algos: &Algorithms,
    keys: &DeviceBuffer<u32>,
) -> Result<(DeviceBuffer<u32>, SortPhases)> {
    let (size, me) = (comm.size(), comm.rank());
    let stream = comm.stream();
    let gpu = comm.gpu();
    let mut phases = SortPhases::default();
    let clock = Instant::now();

    // 1. Splitters from the global histogram.
    let (lo, hi) = if keys.is_empty() {
        (u32::MAX, 0)
    } else {
        (
            algos.reduce(stream, keys, Min, u32::MAX)?,
            algos.reduce(stream, keys, Max, 0)?,
        )
    };
    // One all_reduce(Min) of (min, !max) gives both.
    let mut bounds = gpu.to_device(&[lo, !hi])?;
    comm.all_reduce_in_place(&mut bounds, ReduceOp::Min)?;
    comm.synchronize()?;
    let b = bounds.to_vec()?;
    let (lo, hi) = (b[0], !b[1]);
    let splitters = if lo < hi {
        let mut counts = gpu.alloc_zeroed::<u32>(HISTOGRAM_BINS)?;
        if !keys.is_empty() {
            algos.histogram_even(stream, keys, lo, hi, &mut counts)?;
        }
        comm.all_reduce_in_place(&mut counts, ReduceOp::Sum)?;
        comm.synchronize()?;
        splitters_from_histogram(&counts.to_vec()?, lo, hi, size)
    } else {
        // Every key is equal (or there are none): they all go to the last rank.
        vec![hi; size - 1]
    };
    phases.splitters_ms = lap(clock);

    // 2. Partition into the parts for each rank: parts[q] = (buffer, count).
    let clock = Instant::now();
    let mut count = gpu.alloc_zeroed::<u32>(1)?;
    let mut parts: Vec<(DeviceBuffer<u32>, usize)> = Vec::with_capacity(size);
    let mut rest: Option<DeviceBuffer<u32>> = None;
    for (k, &s) in splitters.iter().enumerate() {
        let input = rest.as_ref().unwrap_or(keys);
        let n = input.len();
        let mut below = gpu.alloc_zeroed::<u32>(n)?;
        let mut above = gpu.alloc_zeroed::<u32>(n)?;
        algos.partition(
            stream,
            input,
            CompareOp::Less,
            s,
            &mut below,
            &mut above,
            &mut count,
        )?;
        let c = count.to_vec()?[0] as usize;
        parts.push((below, c));
        if k + 1 == splitters.len() {
            parts.push((above, n - c));
        } else {
            // The next pass partitions exactly the keys above (an exact-length buffer).
            let mut next = gpu.alloc_zeroed::<u32>(n - c)?;
            next.copy_range_from_device(0, &above, 0..n - c)?;
            rest = Some(next);
        }
    }
    if splitters.is_empty() {
        // One rank: its part is all of its keys.
        let mut all = gpu.alloc_zeroed::<u32>(keys.len())?;
        all.copy_from_device(keys)?;
        parts.push((all, keys.len()));
    }
    stream.synchronize()?;
    phases.partition_ms = lap(clock);

    // 3. Exchange: part sizes first, then the keys.
    let clock = Instant::now();
    let mine: Vec<u64> = parts.iter().map(|p| p.1 as u64).collect();
    let mine = gpu.to_device(&mine)?;
    let mut all = gpu.alloc_zeroed::<u64>(size * size)?;
    comm.all_gather(&mine, &mut all)?;
    comm.synchronize()?;
    let matrix = all.to_vec()?; // matrix[src * size + dst]
    let incoming: Vec<usize> = (0..size)
        .map(|src| matrix[src * size + me] as usize)
        .collect();
    let total: usize = incoming.iter().sum();
    let mut received = gpu.alloc_zeroed::<u32>(total)?;
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
    for (dst, (buf, n)) in parts.iter().enumerate() {
        group.send(comm, buf, 0..*n, dst)?;
    }
    group.recv_parts(comm, &mut received, &ranges)?;
    group.run()?;
    comm.synchronize()?;
    drop(parts);
    phases.exchange_ms = lap(clock);

    // 4. Local sort.
    let clock = Instant::now();
    let mut sorted = gpu.alloc_zeroed::<u32>(total)?;
    algos.sort_keys(stream, &received, &mut sorted)?;
    stream.synchronize()?;
    phases.local_sort_ms = lap(clock);
    Ok((sorted, phases))
}

fn lap(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The `parts − 1` splitters: for each quantile `q/parts` of the keys counted in `counts`
/// (even bins over `[lo, hi)`), the bin edge whose cumulative count is nearest to it. Part `q`
/// is then `splitter[q-1] <= key < splitter[q]`. Non-decreasing.
pub fn splitters_from_histogram(counts: &[u32], lo: u32, hi: u32, parts: usize) -> Vec<u32> {
    let bins = counts.len() as u64;
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    // cumulative[b] = keys in bins below b.
    let mut cumulative = Vec::with_capacity(counts.len() + 1);
    let mut sum = 0u64;
    cumulative.push(0);
    for &c in counts {
        sum += c as u64;
        cumulative.push(sum);
    }
    let range = (hi - lo) as u64;
    // A key is in bin >= b exactly when key - lo >= ceil(b·range/bins) (the histogram's
    // integer bin rule), so that is edge b.
    let edge = |b: u64| lo as u64 + (b * range).div_ceil(bins);
    (1..parts as u64)
        .map(|q| {
            let target = total * q / parts as u64;
            let b = cumulative.partition_point(|&c| c < target) as u64;
            // b is the first edge at or past the target; the one before may be nearer.
            let below = b.saturating_sub(1);
            let nearest =
                if b > 0 && target - cumulative[below as usize] < cumulative[b as usize] - target {
                    below
                } else {
                    b
                };
            edge(nearest).min(u32::MAX as u64) as u32
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
