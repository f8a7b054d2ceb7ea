//! Distributed sort of `u32` keys spread over the ranks (sort locally, split by global
//! splitters, exchange the sorted runs, merge them):
//!
//! 1. **Local sort.** Each rank sorts its own keys with our onesweep radix sort, alone on the
//!    GPU (a histogram of the keys for the splitters, run beside it, cost the sort about as
//!    much time as it took: the sort is bound by the same memory system).
//! 2. **Splitters**, counted in the sorted keys: for [`SPLITTER_BINS`] even bins over all of
//!    `u32`, a binary search of every bin edge ([`Algorithms::lower_bound`]) gives how many of
//!    a rank's keys lie below it; one all_gather gives every rank everyone's counts. Every rank
//!    sums the same counts, so all pick the same splitters: the edges nearest the quantiles of
//!    the key count. Where a bin holds too many keys (skewed keys), its own range
//!    is counted again in [`SPLITTER_BINS`] bins, down to single values if need be. No key is
//!    read twice: a level costs a few thousand binary searches and an all_gather of 32 KiB a
//!    rank.
//!    There are `P·C − 1` splitters: rank `r` gets the keys between splitters `r·C` and
//!    `(r + 1)·C`, in `C` chunks.
//! 3. **Boundaries.** Where the splitters fall in every rank's sorted keys is known from the
//!    gathered counts (each splitter is a bin edge that was searched): those positions cut each
//!    rank's keys into `P·C` contiguous runs, one per (rank, chunk), so every rank knows what it
//!    will receive and where it goes without a further collective.
//! 4. **Exchange and merge.** Every rank sends each other rank its run (NCCL's grouped
//!    send/recv, the all-to-all of uneven parts); its own run stays where it is. A sorted run
//!    whose keys are dense in their range travels packed ([`Algorithms::pack`]: each group of
//!    128 keys as its first key and the others' distances from it in as many bits as the
//!    widest group of the run needs): every rank measures the runs it sends, one all_gather of
//!    the widths tells both ends of each run, and a run goes packed when that takes under 3/4
//!    of its bytes (what random keys reach: README, "Distributed programs"). The receiver
//!    unpacks it where the run belongs. Once the runs have arrived they are merged
//!    ([`Algorithms::merge`], a tree of two-way merges for more than two ranks) into the
//!    output, on a second stream. The exchange can also be cut into `C` chunks
//!    ([`DistributedSort::with_chunks`]), each chunk's runs merged while the next is in
//!    flight; on two H200s that made the sort slower, not faster (the merges slowed the
//!    transfers more than they hid; README, "Distributed programs"), so one chunk is the
//!    default.
//!
//! Rank `r`'s output holds the keys between splitters `r·C` and `(r + 1)·C`, sorted; the outputs
//! in rank order are the whole input, sorted. On top of a sort of `N / P` keys per GPU there is
//! one transfer of the keys that change rank (packed, where they pack) and a merge: that is
//! what makes `P` GPUs faster than one. Balance: the parts are within 0.4% of `N / P`
//! unless many keys share one value (equal keys always go to one rank). [`DistributedSort`]
//! keeps the device memory between sorts.

use std::ops::Range;
use std::time::Instant;

use gpu_algorithms::gpu::device::{pack_width, packed_words};
use gpu_algorithms::{Algorithms, SortTemp};
use gpu_distributed::{Communicator, Group, ReduceOp, Result};
use gpu_host::{DeviceBuffer, DeviceCopy, Stream};

/// Bins per level of the splitter search: each level counts the keys below `SPLITTER_BINS + 1`
/// bin edges.
pub const SPLITTER_BINS: usize = 4096;

/// Where a distributed sort spent its time on this rank (host clock).
#[derive(Clone, Copy, Debug, Default)]
pub struct SortPhases {
    /// The splitter search after the local sort: binary searches of the bin edges and the
    /// all_gathers of their counts, one per level.
    pub splitters_ms: f64,
    /// Levels of the splitter search (1 unless the keys are skewed).
    pub splitter_levels: usize,
    /// From the start until the local sort, the splitters and the boundaries are done.
    pub local_sort_ms: f64,
    /// The exchange of the runs and their merge, from the boundaries to the sorted output.
    pub exchange_merge_ms: f64,
    /// Of which the transfers took this long on the device (from the first chunk's group to
    /// the last one's end, on the communicator's stream).
    pub transfer_ms: f64,
    /// The local radix sort on the device (events around it on its stream).
    pub sort_ms: f64,
    /// The merges on the device (from the first merge's start to the last one's end).
    pub merge_ms: f64,
    /// Chunks of the exchange.
    pub chunks: usize,
    /// Packing the runs this rank sends, on the device (after their spreads were measured and
    /// every rank's widths gathered).
    pub pack_ms: f64,
    /// Unpacking the runs this rank received, on the device.
    pub unpack_ms: f64,
    /// Bytes this rank sent, and what they would have been unpacked.
    pub sent_bytes: u64,
    pub raw_bytes: u64,
}

/// A distributed sort's device memory, kept between calls (like CUB's temporary storage), so
/// repeated sorts of similar sizes allocate nothing.
#[derive(Default)]
pub struct DistributedSort {
    /// Chunks of the exchange per rank (0 or 1: one exchange, then one merge).
    chunks: usize,
    /// Whether runs that pack small travel packed.
    packing: bool,
    /// Every run's largest group spread: this rank's runs, then all ranks'.
    spreads: Option<DeviceBuffer<u32>>,
    spreads_all: Option<DeviceBuffer<u32>>,
    /// The packed runs this rank sends, and those it receives (all chunks).
    packed_send: Option<DeviceBuffer<u32>>,
    packed_recv: Option<DeviceBuffer<u32>>,
    /// The bin edges searched at one level of the splitter search, and the keys below each:
    /// this rank's, then all ranks'.
    edges: Option<DeviceBuffer<u32>>,
    below: Option<DeviceBuffer<u64>>,
    below_all: Option<DeviceBuffer<u64>>,
    /// This rank's keys, sorted.
    local: Option<DeviceBuffer<u32>>,
    /// Per chunk: the runs received from the other ranks, in rank order.
    received: Vec<DeviceBuffer<u32>>,
    /// Two buffers for the intermediate levels of a merge of more than two runs.
    scratch: [Option<DeviceBuffer<u32>>; 2],
    sorted: Option<DeviceBuffer<u32>>,
    temp: SortTemp<u32>,
    /// The stream of the local sort and the merges (the communicator's stream carries the
    /// histograms and the exchange).
    work: Option<Stream>,
}

/// `slot`, reallocated unless it holds at least `len` elements (exactly `len` if `exact`).
fn reuse<'s, T: DeviceCopy>(
    slot: &'s mut Option<DeviceBuffer<T>>,
    comm: &Communicator,
    len: usize,
    exact: bool,
) -> Result<&'s mut DeviceBuffer<T>> {
    let fits = |b: &DeviceBuffer<T>| {
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
    /// Empty storage; the first sort allocates it. The exchange is one chunk.
    pub fn new() -> Self {
        Self {
            chunks: 1,
            packing: true,
            ..Self::default()
        }
    }

    /// Sends every run as it is, never packed; for measuring what packing gains. Collective:
    /// every rank must use the same.
    pub fn without_packing(mut self) -> Self {
        self.packing = false;
        self
    }

    /// Cuts the exchange into `chunks` chunks per rank (at least 1), each chunk's runs merged
    /// while the next is in flight; for measuring that pipeline. Collective: every rank must
    /// use the same.
    pub fn with_chunks(mut self, chunks: usize) -> Self {
        self.chunks = chunks.max(1);
        self
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
        let clock = Instant::now();
        if self.work.is_none() {
            self.work = Some(gpu.new_stream()?);
        }
        let work = self.work.clone().expect("just made");

        // 1. Local sort, on the work stream (alone on the GPU).
        let n = keys.len();
        let local = reuse(&mut self.local, comm, n, true)?;
        let sort_start = work.record_event()?;
        algos.sort_keys_with_temp(&work, keys, local, 0..32, &mut self.temp)?;
        let sort_end = work.record_event()?;
        let counts = key_counts(comm, n)?;
        let total: u64 = counts.iter().sum();
        let chunks = self.chunks.max(1);
        phases.chunks = chunks;
        let parts = size * chunks;

        // 2. Splitters, counted in the sorted keys; 3. where they fall in every rank's keys.
        work.synchronize()?;
        let splitters_clock = Instant::now();
        let (levels, positions) = self.splitters(comm, algos, &work, total, parts)?;
        phases.splitters_ms = lap(splitters_clock);
        phases.splitter_levels = levels;
        // all[src]: rank src's run boundaries, 0, its splitter positions, its key count.
        let all: Vec<Vec<u64>> = (0..size)
            .map(|src| {
                let mut b = vec![0u64];
                b.extend(&positions[src]);
                b.push(counts[src]);
                b
            })
            .collect();
        // run(src, j) = src's keys of fine part j (part j = rank j / C, chunk j % C).
        let run = |src: usize, j: usize| {
            let b = &all[src];
            b[j] as usize..b[j + 1] as usize
        };
        phases.local_sort_ms = lap(clock);

        // 4. Exchange and merge, chunk by chunk; runs that pack small travel packed.
        let clock = Instant::now();
        let widths = if self.packing && size > 1 {
            self.pack_widths(comm, algos, &work, &run, parts)?
        } else {
            vec![vec![None; parts]; size]
        };
        let local = self.local.as_ref().expect("filled above");
        // Where each packed run sits: this rank's sent runs in `packed_send` (by part), the
        // runs it receives in `packed_recv` (by chunk, then sender).
        let mut send_at = vec![0..0; parts];
        let mut at = 0;
        for (j, slot) in send_at.iter_mut().enumerate() {
            if let Some(w) = widths[me][j] {
                *slot = at..at + packed_words(run(me, j).len(), w);
                at = slot.end;
            }
        }
        let packed_send = reuse(&mut self.packed_send, comm, at.max(1), false)?;
        let pack_start = work.record_event()?;
        for (j, words) in send_at.iter().enumerate() {
            if let Some(w) = widths[me][j] {
                algos.pack(&work, local, run(me, j), w, packed_send, words.start)?;
            }
        }
        let pack_end = work.record_event()?;
        stream.wait_event(&pack_end)?;
        let mut recv_at = vec![vec![0..0; size]; chunks];
        let mut at = 0;
        for (k, row) in recv_at.iter_mut().enumerate() {
            for (src, slot) in row.iter_mut().enumerate() {
                if let Some(w) = widths[src][me * chunks + k] {
                    *slot = at..at + packed_words(run(src, me * chunks + k).len(), w);
                    at = slot.end;
                }
            }
        }
        reuse(&mut self.packed_recv, comm, at.max(1), false)?;
        for j in 0..parts {
            if j / chunks != me {
                let bytes = (run(me, j).len() * size_of::<u32>()) as u64;
                phases.raw_bytes += bytes;
                phases.sent_bytes += if widths[me][j].is_some() {
                    (send_at[j].len() * size_of::<u32>()) as u64
                } else {
                    bytes
                };
            }
        }

        let out_len: usize = (0..size)
            .map(|src| run(src, me * chunks).start..run(src, (me + 1) * chunks - 1).end)
            .map(|r| r.len())
            .sum();
        let sorted = reuse(&mut self.sorted, comm, out_len, true)?;
        let packed_send = self.packed_send.as_ref().expect("filled above");
        let packed_recv = self.packed_recv.as_mut().expect("filled above");
        let mut out_at = 0;
        let transfers_start = stream.record_event()?;
        let mut merges_start = None;
        let mut unpacks = Vec::with_capacity(chunks);
        for (k, recv_at) in recv_at.iter().enumerate() {
            let mine_j = me * chunks + k;
            // Received runs of chunk k: from every other rank, in rank order; those that come
            // packed land in `packed_recv` and are unpacked into their place.
            let mut ranges = Vec::with_capacity(size);
            let (mut raw, mut packed) = (Vec::new(), Vec::new());
            let mut at = 0;
            for src in (0..size).filter(|&s| s != me) {
                let len = run(src, mine_j).len();
                ranges.push((at..at + len, src));
                if widths[src][mine_j].is_some() {
                    packed.push((recv_at[src].clone(), src));
                } else {
                    raw.push((at..at + len, src));
                }
                at += len;
            }
            reuse_at(&mut self.received, k, comm, at.max(1), false)?;
            let mut group = Group::new();
            for dst in (0..size).filter(|&d| d != me) {
                let j = dst * chunks + k;
                if widths[me][j].is_some() {
                    group.send(comm, packed_send, send_at[j].clone(), dst)?;
                } else {
                    group.send(comm, local, run(me, j), dst)?;
                }
            }
            group.recv_parts(comm, &mut self.received[k], &raw)?;
            group.recv_parts(comm, packed_recv, &packed)?;
            group.run()?;
            let transferred = stream.record_event()?;
            for (range, src) in &ranges {
                if let Some(w) = widths[*src][mine_j] {
                    let from = recv_at[*src].start;
                    let len = range.len();
                    algos.unpack(
                        stream,
                        packed_recv,
                        from,
                        len,
                        w,
                        &mut self.received[k],
                        range.start,
                    )?;
                }
            }
            let arrived = stream.record_event()?;
            work.wait_event(&arrived)?;
            unpacks.push((transferred, arrived));
            // The chunk's runs: this rank's own, then the received ones.
            let mut runs = vec![(local, run(me, mine_j))];
            runs.extend(ranges.iter().map(|(r, _)| (&self.received[k], r.clone())));
            let len: usize = runs.iter().map(|r| r.1.len()).sum();
            if merges_start.is_none() {
                merges_start = Some(work.record_event()?);
            }
            merge_runs(comm, algos, &work, &runs, &mut self.scratch, sorted, out_at)?;
            out_at += len;
        }
        let merges_end = work.record_event()?;
        work.synchronize()?;
        comm.synchronize()?;
        phases.exchange_merge_ms = lap(clock);
        if let Some((end, _)) = unpacks.last() {
            phases.transfer_ms = transfers_start.elapsed_ms(end)? as f64;
        }
        if let Some(start) = merges_start {
            phases.merge_ms = start.elapsed_ms(&merges_end)? as f64;
        }
        phases.sort_ms = sort_start.elapsed_ms(&sort_end)? as f64;
        phases.pack_ms = pack_start.elapsed_ms(&pack_end)? as f64;
        for (start, end) in &unpacks {
            phases.unpack_ms += start.elapsed_ms(end)? as f64;
        }
        Ok((self.sorted.as_ref().expect("filled above"), phases))
    }

    /// Per rank and part, the width that rank's run of that part travels packed at, or `None`
    /// when it travels as it is (a rank's run of its own part never travels): every rank
    /// measures the largest group spread of each run it sends (on `work`, where `self.local` is
    /// sorted) and one all_gather gives every rank everyone's, so both ends of a run agree. A
    /// run is packed when that takes under 3/4 of its bytes.
    fn pack_widths(
        &mut self,
        comm: &Communicator,
        algos: &Algorithms,
        work: &Stream,
        run: &impl Fn(usize, usize) -> Range<usize>,
        parts: usize,
    ) -> Result<Vec<Vec<Option<u32>>>> {
        let (size, me) = (comm.size(), comm.rank());
        let chunks = parts / size;
        let spreads = reuse(&mut self.spreads, comm, parts, true)?;
        spreads.copy_from_host(&vec![0; parts])?;
        let local = self.local.as_ref().expect("sorted before the exchange");
        for j in (0..parts).filter(|j| j / chunks != me) {
            algos.pack_spread(work, local, run(me, j), spreads, j)?;
        }
        comm.stream().wait_event(&work.record_event()?)?;
        let spreads_all = reuse(&mut self.spreads_all, comm, parts * size, true)?;
        comm.all_gather(spreads, spreads_all)?;
        comm.synchronize()?;
        let all = spreads_all.to_vec()?;
        Ok((0..size)
            .map(|src| {
                (0..parts)
                    .map(|j| {
                        let len = run(src, j).len();
                        let width = pack_width(all[src * parts + j]);
                        let worth = 4 * packed_words(len, width) < 3 * len;
                        (j / chunks != src && len > 0 && worth).then_some(width)
                    })
                    .collect()
            })
            .collect())
    }

    /// The `parts − 1` splitters, the same on every rank, searched in the sorted keys
    /// (`self.local`, sorted on `work`): per level, every rank counts its keys below the edges of
    /// [`SPLITTER_BINS`] even bins of each range still searched (binary searches), and an
    /// all_gather gives every rank everyone's counts (their sums place the quantiles; each
    /// rank's own tell where a splitter falls in its keys). The first level's range is all of
    /// `u32`; a splitter whose quantile falls in a bin holding more than `1/REFINE_SHARE` of a
    /// part searches that bin alone at the next level (at most 3 levels: 4096³ ≥ 2³²).
    /// Splitters searching the same range share its edges; uniform keys need one level. Returns
    /// the number of levels and, per rank, how many of its keys lie below each splitter.
    fn splitters(
        &mut self,
        comm: &Communicator,
        algos: &Algorithms,
        work: &Stream,
        total: u64,
        parts: usize,
    ) -> Result<(usize, Vec<Vec<u64>>)> {
        let size = comm.size();
        // Per splitter: the bin range [lo, hi) searched, the keys (all ranks) below lo, and once
        // found, every rank's keys below it.
        struct Search {
            lo: u32,
            hi: u32,
            below: u64,
            found: Option<Vec<u64>>,
        }
        let mut searches: Vec<Search> = (1..parts)
            .map(|_| Search {
                lo: 0,
                hi: u32::MAX,
                below: 0,
                found: None,
            })
            .collect();
        let slack = total / (parts as u64 * REFINE_SHARE);
        let edges_per_range = SPLITTER_BINS + 1;
        let mut levels = 0;
        // Every rank's keys below each of `values` (one search and one all_gather): `[rank]
        // [value]`.
        let mut count_below = |values: &[u32]| -> Result<Vec<Vec<u64>>> {
            let queries = reuse(&mut self.edges, comm, values.len(), true)?;
            queries.copy_from_host(values)?;
            let below = reuse(&mut self.below, comm, values.len(), true)?;
            let local = self.local.as_ref().expect("sorted before the search");
            algos.lower_bound(work, local, 0..local.len(), queries, below)?;
            comm.stream().wait_event(&work.record_event()?)?;
            let below_all = reuse(&mut self.below_all, comm, values.len() * size, true)?;
            comm.all_gather(below, below_all)?;
            comm.synchronize()?;
            Ok(below_all
                .to_vec()?
                .chunks(values.len())
                .map(<[u64]>::to_vec)
                .collect())
        };
        for _level in 0..3 {
            // The distinct ranges still searched (the same on every rank: they come from the
            // global counts).
            let mut ranges: Vec<(u32, u32)> = searches
                .iter()
                .filter(|s| s.found.is_none())
                .map(|s| (s.lo, s.hi))
                .collect();
            ranges.sort_unstable();
            ranges.dedup();
            if ranges.is_empty() {
                break;
            }
            levels += 1;
            let edges: Vec<u32> = ranges
                .iter()
                .flat_map(|&(lo, hi)| {
                    (0..edges_per_range as u64)
                        .map(move |b| bin_edge(lo, hi, SPLITTER_BINS as u64, b))
                })
                .collect();
            let by_rank = count_below(&edges)?;
            let everyone: Vec<u64> = (0..edges.len())
                .map(|e| by_rank.iter().map(|r| r[e]).sum())
                .collect();
            for (q, s) in searches.iter_mut().enumerate() {
                if s.found.is_some() {
                    continue;
                }
                let i = ranges.binary_search(&(s.lo, s.hi)).expect("listed above");
                let at = i * edges_per_range..(i + 1) * edges_per_range;
                // Keys (all ranks) from lo up to each edge.
                let cumulative: Vec<u64> = everyone[at.clone()]
                    .iter()
                    .map(|&c| c - everyone[at.start])
                    .collect();
                let target = (total * (q as u64 + 1) / parts as u64).saturating_sub(s.below);
                let pick = pick_edge_cumulative(&cumulative, target);
                let width = (s.hi as u64 - s.lo as u64).div_ceil(SPLITTER_BINS as u64);
                if pick.distance <= slack || width <= 1 || s.lo >= s.hi {
                    let e = at.start + pick.edge as usize;
                    s.found = Some(by_rank.iter().map(|r| r[e]).collect());
                } else {
                    // The target lies inside bin `crossing`: search it alone.
                    let b = pick.crossing;
                    s.below += pick.cumulative_below_crossing;
                    (s.lo, s.hi) = (
                        bin_edge(s.lo, s.hi, SPLITTER_BINS as u64, b),
                        bin_edge(s.lo, s.hi, SPLITTER_BINS as u64, b + 1),
                    );
                }
            }
        }
        // A search still open after three levels has narrowed to one value: its range start.
        let open: Vec<u32> = searches
            .iter()
            .filter(|s| s.found.is_none())
            .map(|s| s.lo)
            .collect();
        if !open.is_empty() {
            let by_rank = count_below(&open)?;
            for (k, s) in searches
                .iter_mut()
                .filter(|s| s.found.is_none())
                .enumerate()
            {
                s.found = Some(by_rank.iter().map(|r| r[k]).collect());
            }
        }
        // out[rank][q]; non-decreasing in q (refinements of neighbouring quantiles are
        // independent; a position is monotone in the splitter, so this equals taking the
        // larger splitter, the same on every rank).
        let mut out: Vec<Vec<u64>> = (0..size)
            .map(|r| {
                searches
                    .iter()
                    .map(|s| s.found.as_ref().expect("every search found")[r])
                    .collect()
            })
            .collect();
        for row in &mut out {
            for q in 1..row.len() {
                row[q] = row[q].max(row[q - 1]);
            }
        }
        Ok((levels, out))
    }
}

/// Every rank's number of keys (one all_gather).
fn key_counts(comm: &Communicator, n: usize) -> Result<Vec<u64>> {
    let mine = comm.gpu().to_device(&[n as u64])?;
    let mut all = comm.gpu().alloc_zeroed::<u64>(comm.size())?;
    comm.all_gather(&mine, &mut all)?;
    comm.synchronize()?;
    Ok(all.to_vec()?)
}

/// Merges the ascending `runs` into `out[at ..]` on `stream`: one merge for two runs, a tree of
/// two-way merges through the two `scratch` buffers for more.
fn merge_runs(
    comm: &Communicator,
    algos: &Algorithms,
    stream: &Stream,
    runs: &[(&DeviceBuffer<u32>, Range<usize>)],
    scratch: &mut [Option<DeviceBuffer<u32>>; 2],
    out: &mut DeviceBuffer<u32>,
    at: usize,
) -> Result<()> {
    let total: usize = runs.iter().map(|r| r.1.len()).sum();
    // A merge with an empty second run is a copy on `stream`.
    let pair = |out: &mut DeviceBuffer<u32>,
                x: &(&DeviceBuffer<u32>, Range<usize>),
                y: Option<&(&DeviceBuffer<u32>, Range<usize>)>,
                to: usize| {
        let (yb, yr) = y.map_or((x.0, 0..0), |y| (y.0, y.1.clone()));
        algos.merge(stream, x.0, x.1.clone(), yb, yr, out, to)
    };
    match runs {
        [] => return Ok(()),
        [x] => return Ok(pair(out, x, None, at)?),
        [x, y] => return Ok(pair(out, x, Some(y), at)?),
        _ => {}
    }
    for slot in scratch.iter_mut() {
        reuse(slot, comm, total, false)?;
    }
    let [first, second] = scratch;
    let (mut from, mut to) = (
        first.as_mut().expect("filled above"),
        second.as_mut().expect("filled above"),
    );
    // Level 1: pairs of the inputs into `from`.
    let mut level = Vec::new();
    let mut put = 0;
    for two in runs.chunks(2) {
        pair(from, &two[0], two.get(1), put)?;
        let len = two.iter().map(|r| r.1.len()).sum::<usize>();
        level.push(put..put + len);
        put += len;
    }
    // Then pairs of the previous level, ping-ponging, until two runs are left for `out`.
    while level.len() > 2 {
        let mut next = Vec::new();
        let mut put = 0;
        for two in level.chunks(2) {
            let x = (&*from, two[0].clone());
            let y = two.get(1).map(|r| (&*from, r.clone()));
            pair(to, &x, y.as_ref(), put)?;
            let len = two.iter().map(|r| r.len()).sum::<usize>();
            next.push(put..put + len);
            put += len;
        }
        level = next;
        std::mem::swap(&mut from, &mut to);
    }
    let x = (&*from, level[0].clone());
    let y = level.get(1).map(|r| (&*from, r.clone()));
    Ok(pair(out, &x, y.as_ref(), at)?)
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
    pick_edge_cumulative(&cumulative, target)
}

/// [`pick_edge`] given the cumulative counts at the bin edges (`cumulative[0] = 0`, one more
/// entry than bins).
fn pick_edge_cumulative(cumulative: &[u64], target: u64) -> Pick {
    let bins = cumulative.len() - 1;
    // The first edge at or past the target; the one before may be nearer.
    let b = cumulative.partition_point(|&c| c < target).min(bins);
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
/// `q` is then `splitter[q-1] <= key < splitter[q]`. Non-decreasing. This is the rule the sort
/// applies at each level of its search, to the keys counted below each bin edge (and it
/// searches a bin again, in finer bins, where the bin is too coarse).
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
