//! Device-wide radix sort of keys and of key-value pairs (onesweep: one histogram kernel, then
//! one kernel per 8-bit digit; see [`gpu::device::radix_sort_pass`](gpu_host::gpu::device::radix_sort_pass)).
//! Inputs of at most one block's tile ([`sort_single_tile`]) are sorted in one launch by one
//! block instead ([`gpu::device::radix_sort_single`](gpu_host::gpu::device::radix_sort_single)).

use std::ops::Range;

use gpu_host::gpu::device::{
    SORT_BLOCK, SORT_COUNTS_LEN, histogram_items, sort_shared_bytes, sort_single_shared_bytes,
    sort_single_threads, sort_single_tile, sort_tile,
};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};

use crate::Algorithms;

/// Key types with built-in sort kernels: `u32 i32 f32 u64 i64 f64`.
///
/// Order: integers numerically; floats `-NaN < -inf < … < -0.0 = +0.0 < … < +inf < +NaN` (NaNs
/// by their sign bit; `-0.0` and `+0.0` compare equal, so they keep their input order), as in
/// CUB.
pub trait SortKey: DeviceCopy + Send {
    /// Bits of the key (a full sort covers `0..BITS`).
    const BITS: u32;
    /// The histogram kernel's name.
    const HISTOGRAM: &'static str;
    /// The keys-only pass kernel's name.
    const KEYS: &'static str;
    /// The single-block keys-only sort kernel's name (inputs of one tile).
    const SINGLE_KEYS: &'static str;
}

/// Value types `V` that can be sorted along with keys of type `Self`: `u32` and `u64`.
pub trait SortPairs<V: DeviceCopy>: SortKey {
    /// The pairs pass kernel's name.
    const PAIRS: &'static str;
    /// The single-block pairs sort kernel's name (inputs of one tile).
    const SINGLE_PAIRS: &'static str;
}

macro_rules! keys {
    ($($k:ident: $bits:literal $hist:literal $keys:literal, $p32:literal $p64:literal,
        $skeys:literal $sp32:literal $sp64:literal;)*) => { $(
        impl SortKey for $k {
            const BITS: u32 = $bits;
            const HISTOGRAM: &'static str = $hist;
            const KEYS: &'static str = $keys;
            const SINGLE_KEYS: &'static str = $skeys;
        }
        impl SortPairs<u32> for $k {
            const PAIRS: &'static str = $p32;
            const SINGLE_PAIRS: &'static str = $sp32;
        }
        impl SortPairs<u64> for $k {
            const PAIRS: &'static str = $p64;
            const SINGLE_PAIRS: &'static str = $sp64;
        }
    )* };
}

keys! {
    u32: 32 "radix_sort_histogram_u32" "radix_sort_keys_u32", "radix_sort_pairs_u32_u32" "radix_sort_pairs_u32_u64",
        "radix_sort_single_keys_u32" "radix_sort_single_pairs_u32_u32" "radix_sort_single_pairs_u32_u64";
    i32: 32 "radix_sort_histogram_i32" "radix_sort_keys_i32", "radix_sort_pairs_i32_u32" "radix_sort_pairs_i32_u64",
        "radix_sort_single_keys_i32" "radix_sort_single_pairs_i32_u32" "radix_sort_single_pairs_i32_u64";
    f32: 32 "radix_sort_histogram_f32" "radix_sort_keys_f32", "radix_sort_pairs_f32_u32" "radix_sort_pairs_f32_u64",
        "radix_sort_single_keys_f32" "radix_sort_single_pairs_f32_u32" "radix_sort_single_pairs_f32_u64";
    u64: 64 "radix_sort_histogram_u64" "radix_sort_keys_u64", "radix_sort_pairs_u64_u32" "radix_sort_pairs_u64_u64",
        "radix_sort_single_keys_u64" "radix_sort_single_pairs_u64_u32" "radix_sort_single_pairs_u64_u64";
    i64: 64 "radix_sort_histogram_i64" "radix_sort_keys_i64", "radix_sort_pairs_i64_u32" "radix_sort_pairs_i64_u64",
        "radix_sort_single_keys_i64" "radix_sort_single_pairs_i64_u32" "radix_sort_single_pairs_i64_u64";
    f64: 64 "radix_sort_histogram_f64" "radix_sort_keys_f64", "radix_sort_pairs_f64_u32" "radix_sort_pairs_f64_u64",
        "radix_sort_single_keys_f64" "radix_sort_single_pairs_f64_u32" "radix_sort_single_pairs_f64_u64";
}

/// Largest epoch the look-back words can hold (30 bits).
const MAX_EPOCH: u32 = (1 << 30) - 1;

/// Temporary storage of a sort of keys `K` (and values `V`): the alternate key/value buffers the
/// passes ping-pong through, the histogram and tile tickets (`counts`), the look-back words
/// (`status`, 256 per tile) and their epoch counter. Grows as needed, never shrinks.
///
/// `counts` and `status` are zeroed when allocated and stay valid between sorts (the kernels
/// clean up after themselves; see [`gpu::device::radix_sort_pass`](gpu_host::gpu::device::radix_sort_pass)).
/// After a failed launch they are dropped and re-zeroed on the next use.
pub struct SortTemp<K: DeviceCopy, V: DeviceCopy = u32> {
    counts: Option<DeviceBuffer<u32>>,
    status: Option<DeviceBuffer<u64>>,
    epoch: u32,
    keys_alt: Option<DeviceBuffer<K>>,
    values_alt: Option<DeviceBuffer<V>>,
}

impl<K: DeviceCopy, V: DeviceCopy> Default for SortTemp<K, V> {
    fn default() -> Self {
        SortTemp {
            counts: None,
            status: None,
            epoch: 0,
            keys_alt: None,
            values_alt: None,
        }
    }
}

impl<K: DeviceCopy, V: DeviceCopy> SortTemp<K, V> {
    /// Empty storage; the first sort allocates it.
    pub fn new() -> Self {
        Self::default()
    }

    /// Readies storage for `n` keys in `passes` passes (and values if `pairs`); returns the
    /// first epoch of the sort (its passes use `epoch .. epoch + passes`).
    fn prepare(&mut self, stream: &Stream, n: usize, passes: u32, pairs: bool) -> Result<u32> {
        if self.counts.is_none() {
            self.counts = Some(stream.alloc_zeroed(SORT_COUNTS_LEN)?);
        }
        let words = n.div_ceil(sort_tile::<K>()) * 256;
        let small = self.status.as_ref().is_none_or(|s| s.len() < words);
        if small || self.epoch + passes > MAX_EPOCH {
            self.status = None; // free before allocating the larger one
            self.status = Some(stream.alloc_zeroed(words)?);
            self.epoch = 0;
        }
        if self.keys_alt.as_ref().is_none_or(|b| b.len() < n) {
            self.keys_alt = None;
            self.keys_alt = Some(stream.alloc_zeroed(n)?);
        }
        if pairs && self.values_alt.as_ref().is_none_or(|b| b.len() < n) {
            self.values_alt = None;
            self.values_alt = Some(stream.alloc_zeroed(n)?);
        }
        let first = self.epoch + 1;
        self.epoch += passes;
        Ok(first)
    }
}

/// Where a pass reads or writes: the caller's buffer or the temporary one.
#[derive(Clone, Copy, PartialEq)]
enum Slot {
    Input,
    Output,
    Alternate,
}

impl Algorithms {
    /// Sorts `keys_in` into `keys_out[..keys_in.len()]` (ascending, stable; asynchronous on
    /// `stream`). `keys_in` is not modified; `keys_out` may be longer (its tail is untouched).
    /// See [`SortKey`] for the order of floats.
    pub fn sort_keys<K: SortKey>(
        &self,
        stream: &Stream,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
    ) -> Result<()> {
        self.temps.with(
            stream,
            || Ok(SortTemp::<K>::new()),
            |temp| self.sort_keys_with_temp(stream, keys_in, keys_out, 0..K::BITS, temp),
        )
    }

    /// Sorts the pairs `(keys_in[i], values_in[i])` by key into `keys_out`, `values_out`
    /// (stable: equal keys keep their input order; asynchronous). Errors if the value count
    /// differs from the key count or an output is too short.
    pub fn sort_pairs<K: SortPairs<V>, V: DeviceCopy + Send>(
        &self,
        stream: &Stream,
        keys_in: &DeviceBuffer<K>,
        values_in: &DeviceBuffer<V>,
        keys_out: &mut DeviceBuffer<K>,
        values_out: &mut DeviceBuffer<V>,
    ) -> Result<()> {
        self.temps.with(
            stream,
            || Ok(SortTemp::<K, V>::new()),
            |temp| {
                self.sort_pairs_with_temp(
                    stream,
                    keys_in,
                    values_in,
                    keys_out,
                    values_out,
                    0..K::BITS,
                    temp,
                )
            },
        )
    }

    /// [`Algorithms::sort_keys`] with caller-owned temporary storage, by bits `bits` of the
    /// keys' order-preserving image only (`0..K::BITS` sorts fully; fewer bits are faster when
    /// the keys are known to differ only there, e.g. `0..20` for values below 2²⁰).
    pub fn sort_keys_with_temp<K: SortKey, V: DeviceCopy>(
        &self,
        stream: &Stream,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        bits: Range<u32>,
        temp: &mut SortTemp<K, V>,
    ) -> Result<()> {
        let kernels = (K::KEYS, K::SINGLE_KEYS);
        self.sort(stream, kernels, keys_in, keys_out, None, bits, temp)
    }

    /// [`Algorithms::sort_pairs`] with caller-owned temporary storage and a bit range (see
    /// [`Algorithms::sort_keys_with_temp`]).
    #[allow(clippy::too_many_arguments)]
    pub fn sort_pairs_with_temp<K: SortPairs<V>, V: DeviceCopy>(
        &self,
        stream: &Stream,
        keys_in: &DeviceBuffer<K>,
        values_in: &DeviceBuffer<V>,
        keys_out: &mut DeviceBuffer<K>,
        values_out: &mut DeviceBuffer<V>,
        bits: Range<u32>,
        temp: &mut SortTemp<K, V>,
    ) -> Result<()> {
        if values_in.len() != keys_in.len() {
            return Err(Error::SizeMismatch {
                operation: format!("{}: values_in (one value per key)", K::PAIRS),
                expected: keys_in.len(),
                actual: values_in.len(),
            });
        }
        if values_out.len() < keys_in.len() {
            return Err(Error::SizeMismatch {
                operation: format!("{}: values_out", K::PAIRS),
                expected: keys_in.len(),
                actual: values_out.len(),
            });
        }
        let values = Some((values_in, values_out));
        let kernels = (K::PAIRS, K::SINGLE_PAIRS);
        self.sort(stream, kernels, keys_in, keys_out, values, bits, temp)
    }

    #[allow(clippy::too_many_arguments)]
    fn sort<K: SortKey, V: DeviceCopy>(
        &self,
        stream: &Stream,
        (pass_kernel, single_kernel): (&'static str, &'static str),
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        mut values: Option<(&DeviceBuffer<V>, &mut DeviceBuffer<V>)>,
        bits: Range<u32>,
        temp: &mut SortTemp<K, V>,
    ) -> Result<()> {
        let n = keys_in.len();
        let argument = |argument: &str, message: String| Error::Argument {
            kernel: pass_kernel.to_string(),
            argument: argument.to_string(),
            message,
        };
        if keys_out.len() < n {
            return Err(Error::SizeMismatch {
                operation: format!("{pass_kernel}: keys_out"),
                expected: n,
                actual: keys_out.len(),
            });
        }
        if bits.start >= bits.end || bits.end > K::BITS {
            return Err(argument(
                "bits",
                format!(
                    "bit range {bits:?} is empty or beyond the key's {} bits",
                    K::BITS
                ),
            ));
        }
        if u32::try_from(n).is_err() {
            return Err(argument(
                "keys_in",
                format!("{n} keys; the sort handles fewer than 2^32"),
            ));
        }
        if n == 0 {
            return Ok(());
        }
        if n <= sort_single_tile::<K>() {
            return self.sort_single(stream, single_kernel, keys_in, keys_out, values, bits);
        }
        let histogram = self.kernel(K::HISTOGRAM)?;
        let pass = self.kernel(pass_kernel)?;
        let passes = (bits.end - bits.start).div_ceil(8);
        let first_epoch = temp.prepare(stream, n, passes, values.is_some())?;
        let result = (|| {
            let hist_tile = SORT_BLOCK as usize * histogram_items::<K>();
            let grid = (n.div_ceil(hist_tile) as u32)
                .min(self.resident_blocks(histogram, SORT_BLOCK)?)
                .max(1);
            let counts = temp.counts.as_mut().expect("prepared");
            let mut launch = histogram.prepare(stream, LaunchConfig::new(grid, SORT_BLOCK))?;
            launch
                .input("keys", keys_in)
                .output("counts", counts)
                .value("begin_bit", &bits.start)
                .value("end_bit", &bits.end);
            // SAFETY: `K::HISTOGRAM` is `gpu::radix_sort_histogram_kernel!(_, K)`: (keys: &[K],
            // counts: DisjointSlice<u32>, begin_bit: u32, end_bit: u32); `counts` has
            // SORT_COUNTS_LEN elements, zero outside this sort's histogram (module invariant).
            unsafe { launch.launch()? };

            let tiles = n.div_ceil(sort_tile::<K>()) as u32;
            let value_bytes = if values.is_some() { size_of::<V>() } else { 0 };
            let cfg = LaunchConfig::new(tiles, SORT_BLOCK)
                .with_shared_mem(sort_shared_bytes::<K>(value_bytes) as u32);
            let len = n as u32;
            // The last pass writes the caller's output; earlier ones alternate before it.
            let dst = |p: u32| {
                if (passes - 1 - p).is_multiple_of(2) {
                    Slot::Output
                } else {
                    Slot::Alternate
                }
            };
            for p in 0..passes {
                let src = if p == 0 { Slot::Input } else { dst(p - 1) };
                let shift = bits.start + 8 * p;
                let digit_bits = (bits.end - shift).min(8);
                let epoch = first_epoch + p;
                let SortTemp {
                    counts,
                    status,
                    keys_alt,
                    values_alt,
                    ..
                } = &mut *temp;
                let keys_alt = keys_alt.as_mut().expect("prepared");
                let mut launch = pass.prepare(stream, cfg)?;
                match (src, dst(p)) {
                    (Slot::Input, Slot::Output) => launch
                        .input("keys_in", keys_in)
                        .output("keys_out", keys_out),
                    (Slot::Input, _) => launch
                        .input("keys_in", keys_in)
                        .output("keys_out", keys_alt),
                    (Slot::Alternate, _) => launch
                        .input("keys_in", keys_alt)
                        .output("keys_out", keys_out),
                    (Slot::Output, _) => launch
                        .input("keys_in", keys_out)
                        .output("keys_out", keys_alt),
                };
                if let Some((values_in, values_out)) = values.as_mut() {
                    let values_alt = values_alt.as_mut().expect("prepared");
                    match (src, dst(p)) {
                        (Slot::Input, Slot::Output) => launch
                            .input("values_in", *values_in)
                            .output("values_out", &mut **values_out),
                        (Slot::Input, _) => launch
                            .input("values_in", *values_in)
                            .output("values_out", values_alt),
                        (Slot::Alternate, _) => launch
                            .input("values_in", values_alt)
                            .output("values_out", &mut **values_out),
                        (Slot::Output, _) => launch
                            .input("values_in", values_out)
                            .output("values_out", values_alt),
                    };
                }
                launch
                    .output("counts", counts.as_mut().expect("prepared"))
                    .output("status", status.as_mut().expect("prepared"))
                    .value("len", &len)
                    .value("shift", &shift)
                    .value("bits", &digit_bits)
                    .value("pass", &p)
                    .value("epoch", &epoch);
                // SAFETY: `pass_kernel` is `gpu::radix_sort_keys_kernel!(_, K)` (keys_in,
                // keys_out, counts, status, len, shift, bits, pass, epoch) or
                // `gpu::radix_sort_pairs_kernel!(_, K, V)` (the same with values_in, values_out
                // after keys_out); every buffer holds at least `len` elements, `status` 256 words
                // per tile, the grid is one block per tile with the dynamic shared memory
                // `sort_shared_bytes` asks for, and `epoch` is fresh for this storage.
                unsafe { launch.launch()? };
            }
            Ok(())
        })();
        if result.is_err() {
            // The kernels' clean-up may not have run: start from zeroed state next time.
            temp.counts = None;
            temp.status = None;
        }
        result
    }

    /// One launch, one block: inputs of at most [`sort_single_tile`] keys (arguments checked by
    /// [`Algorithms::sort`]). Needs no temporary storage.
    fn sort_single<K: SortKey, V: DeviceCopy>(
        &self,
        stream: &Stream,
        kernel: &'static str,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        values: Option<(&DeviceBuffer<V>, &mut DeviceBuffer<V>)>,
        bits: Range<u32>,
    ) -> Result<()> {
        let single = self.kernel(kernel)?;
        let value_bytes = if values.is_some() { size_of::<V>() } else { 0 };
        let n = keys_in.len();
        let threads = sort_single_threads::<K>(n);
        let cfg = LaunchConfig::new(1, threads)
            .with_shared_mem(sort_single_shared_bytes::<K>(threads, value_bytes) as u32);
        let len = n as u32;
        let mut launch = single.prepare(stream, cfg)?;
        launch
            .input("keys_in", keys_in)
            .output("keys_out", keys_out);
        if let Some((values_in, values_out)) = values {
            launch
                .input("values_in", values_in)
                .output("values_out", values_out);
        }
        launch
            .value("len", &len)
            .value("begin_bit", &bits.start)
            .value("end_bit", &bits.end);
        // SAFETY: `kernel` is `gpu::radix_sort_single_keys_kernel!(_, K)` (keys_in, keys_out,
        // len, begin_bit, end_bit) or `gpu::radix_sort_single_pairs_kernel!(_, K, V)` (the same
        // with values_in, values_out after keys_out); every buffer holds at least `len ≤
        // sort_single_tile::<K>()` elements, and the launch is one block of
        // `sort_single_threads(n)` threads (covering `n` at 16 keys each) with the dynamic
        // shared memory `sort_single_shared_bytes` asks for.
        unsafe { launch.launch() }
    }
}
