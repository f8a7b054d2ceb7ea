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
use crate::algorithm_kernels::{Module, index};

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
    /// The histogram kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH_HISTOGRAM: HistogramLaunch<Self>;
    /// The keys-only pass kernel's typed launcher.
    #[doc(hidden)]
    const LAUNCH_KEYS: KeysPassLaunch<Self>;
    /// The single-block keys-only sort kernel's typed launcher.
    #[doc(hidden)]
    const LAUNCH_SINGLE_KEYS: SingleKeysLaunch<Self>;
    /// The histogram kernel's position in the module (for its occupancy).
    #[doc(hidden)]
    const INDEX_HISTOGRAM: usize;
}

/// Value types `V` that can be sorted along with keys of type `Self`: `u32` and `u64`.
pub trait SortPairs<V: DeviceCopy>: SortKey {
    /// The pairs pass kernel's name.
    const PAIRS: &'static str;
    /// The single-block pairs sort kernel's name (inputs of one tile).
    const SINGLE_PAIRS: &'static str;
    /// The pairs pass kernel's typed launcher.
    #[doc(hidden)]
    const LAUNCH_PAIRS: PairsPassLaunch<Self, V>;
    /// The single-block pairs sort kernel's typed launcher.
    #[doc(hidden)]
    const LAUNCH_SINGLE_PAIRS: SinglePairsLaunch<Self, V>;
}

/// `gpu::radix_sort_histogram_kernel!`: `(keys, counts, begin_bit, end_bit)`.
#[doc(hidden)]
pub type HistogramLaunch<K> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<K>,
    &mut DeviceBuffer<u32>,
    u32,
    u32,
) -> Result<()>;

/// `gpu::radix_sort_keys_kernel!`: `(keys_in, keys_out, counts, status, len, shift, bits, pass,
/// epoch)`.
#[doc(hidden)]
pub type KeysPassLaunch<K> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<K>,
    &mut DeviceBuffer<K>,
    &mut DeviceBuffer<u32>,
    &mut DeviceBuffer<u64>,
    u32,
    u32,
    u32,
    u32,
    u32,
) -> Result<()>;

/// `gpu::radix_sort_pairs_kernel!`: the keys pass with `values_in, values_out` after `keys_out`.
#[doc(hidden)]
pub type PairsPassLaunch<K, V> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<K>,
    &mut DeviceBuffer<K>,
    &DeviceBuffer<V>,
    &mut DeviceBuffer<V>,
    &mut DeviceBuffer<u32>,
    &mut DeviceBuffer<u64>,
    u32,
    u32,
    u32,
    u32,
    u32,
) -> Result<()>;

/// `gpu::radix_sort_single_keys_kernel!`: `(keys_in, keys_out, len, begin_bit, end_bit)`.
#[doc(hidden)]
pub type SingleKeysLaunch<K> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<K>,
    &mut DeviceBuffer<K>,
    u32,
    u32,
    u32,
) -> Result<()>;

/// `gpu::radix_sort_single_pairs_kernel!`: the single sort with `values_in, values_out` after
/// `keys_out`.
#[doc(hidden)]
pub type SinglePairsLaunch<K, V> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<K>,
    &mut DeviceBuffer<K>,
    &DeviceBuffer<V>,
    &mut DeviceBuffer<V>,
    u32,
    u32,
    u32,
) -> Result<()>;

// One identifier per kernel names it and picks its launcher (a missing kernel does not compile).
macro_rules! keys {
    ($($k:ident: $bits:literal $hist:ident $keys:ident, $p32:ident $p64:ident,
        $skeys:ident $sp32:ident $sp64:ident;)*) => { $(
        impl SortKey for $k {
            const BITS: u32 = $bits;
            const HISTOGRAM: &'static str = stringify!($hist);
            const KEYS: &'static str = stringify!($keys);
            const SINGLE_KEYS: &'static str = stringify!($skeys);
            const LAUNCH_HISTOGRAM: HistogramLaunch<$k> = Module::$hist;
            const LAUNCH_KEYS: KeysPassLaunch<$k> = Module::$keys;
            const LAUNCH_SINGLE_KEYS: SingleKeysLaunch<$k> = Module::$skeys;
            const INDEX_HISTOGRAM: usize = index::$hist;
        }
        impl SortPairs<u32> for $k {
            const PAIRS: &'static str = stringify!($p32);
            const SINGLE_PAIRS: &'static str = stringify!($sp32);
            const LAUNCH_PAIRS: PairsPassLaunch<$k, u32> = Module::$p32;
            const LAUNCH_SINGLE_PAIRS: SinglePairsLaunch<$k, u32> = Module::$sp32;
        }
        impl SortPairs<u64> for $k {
            const PAIRS: &'static str = stringify!($p64);
            const SINGLE_PAIRS: &'static str = stringify!($sp64);
            const LAUNCH_PAIRS: PairsPassLaunch<$k, u64> = Module::$p64;
            const LAUNCH_SINGLE_PAIRS: SinglePairsLaunch<$k, u64> = Module::$sp64;
        }
    )* };
}

keys! {
    u32: 32 radix_sort_histogram_u32 radix_sort_keys_u32, radix_sort_pairs_u32_u32 radix_sort_pairs_u32_u64,
        radix_sort_single_keys_u32 radix_sort_single_pairs_u32_u32 radix_sort_single_pairs_u32_u64;
    i32: 32 radix_sort_histogram_i32 radix_sort_keys_i32, radix_sort_pairs_i32_u32 radix_sort_pairs_i32_u64,
        radix_sort_single_keys_i32 radix_sort_single_pairs_i32_u32 radix_sort_single_pairs_i32_u64;
    f32: 32 radix_sort_histogram_f32 radix_sort_keys_f32, radix_sort_pairs_f32_u32 radix_sort_pairs_f32_u64,
        radix_sort_single_keys_f32 radix_sort_single_pairs_f32_u32 radix_sort_single_pairs_f32_u64;
    u64: 64 radix_sort_histogram_u64 radix_sort_keys_u64, radix_sort_pairs_u64_u32 radix_sort_pairs_u64_u64,
        radix_sort_single_keys_u64 radix_sort_single_pairs_u64_u32 radix_sort_single_pairs_u64_u64;
    i64: 64 radix_sort_histogram_i64 radix_sort_keys_i64, radix_sort_pairs_i64_u32 radix_sort_pairs_i64_u64,
        radix_sort_single_keys_i64 radix_sort_single_pairs_i64_u32 radix_sort_single_pairs_i64_u64;
    f64: 64 radix_sort_histogram_f64 radix_sort_keys_f64, radix_sort_pairs_f64_u32 radix_sort_pairs_f64_u64,
        radix_sort_single_keys_f64 radix_sort_single_pairs_f64_u32 radix_sort_single_pairs_f64_u64;
}

/// The values of a pairs sort and the launchers that move them with the keys.
struct Values<'a, K: DeviceCopy, V: DeviceCopy> {
    input: &'a DeviceBuffer<V>,
    output: &'a mut DeviceBuffer<V>,
    pass: PairsPassLaunch<K, V>,
    single: SinglePairsLaunch<K, V>,
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
        let value_bytes = if pairs { size_of::<V>() } else { 0 };
        let words = n.div_ceil(sort_tile::<K>(value_bytes)) * 256;
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
        self.sort(stream, K::KEYS, keys_in, keys_out, None, bits, temp)
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
        let values = Some(Values {
            input: values_in,
            output: values_out,
            pass: K::LAUNCH_PAIRS,
            single: K::LAUNCH_SINGLE_PAIRS,
        });
        self.sort(stream, K::PAIRS, keys_in, keys_out, values, bits, temp)
    }

    #[allow(clippy::too_many_arguments)]
    fn sort<K: SortKey, V: DeviceCopy>(
        &self,
        stream: &Stream,
        pass_kernel: &'static str,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        mut values: Option<Values<'_, K, V>>,
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
            return self.sort_single(stream, keys_in, keys_out, values, bits);
        }
        let histogram = self.kernel_at(K::INDEX_HISTOGRAM)?;
        let passes = (bits.end - bits.start).div_ceil(8);
        let first_epoch = temp.prepare(stream, n, passes, values.is_some())?;
        let result = (|| {
            let hist_tile = SORT_BLOCK as usize * histogram_items::<K>();
            let grid = (n.div_ceil(hist_tile) as u32)
                .min(self.resident_blocks(histogram, SORT_BLOCK)?)
                .max(1);
            let counts = temp.counts.as_mut().expect("prepared");
            // `counts` has SORT_COUNTS_LEN elements, zero outside this sort's histogram (module
            // invariant).
            (K::LAUNCH_HISTOGRAM)(
                &self.module,
                stream,
                LaunchConfig::new(grid, SORT_BLOCK),
                keys_in,
                counts,
                bits.start,
                bits.end,
            )?;

            let value_bytes = if values.is_some() { size_of::<V>() } else { 0 };
            let tiles = n.div_ceil(sort_tile::<K>(value_bytes)) as u32;
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
                let (keys_src, keys_dst): (&DeviceBuffer<K>, &mut DeviceBuffer<K>) =
                    match (src, dst(p)) {
                        (Slot::Input, Slot::Output) => (keys_in, &mut *keys_out),
                        (Slot::Input, _) => (keys_in, keys_alt),
                        (Slot::Alternate, _) => (keys_alt, &mut *keys_out),
                        (Slot::Output, _) => (&*keys_out, keys_alt),
                    };
                let counts = counts.as_mut().expect("prepared");
                let status = status.as_mut().expect("prepared");
                // Every buffer holds at least `len` elements, `status` 256 words per tile, the
                // grid is one block per tile with the dynamic shared memory `sort_shared_bytes`
                // asks for, and `epoch` is fresh for this storage.
                match values.as_mut() {
                    None => (K::LAUNCH_KEYS)(
                        &self.module,
                        stream,
                        cfg,
                        keys_src,
                        keys_dst,
                        counts,
                        status,
                        len,
                        shift,
                        digit_bits,
                        p,
                        epoch,
                    )?,
                    Some(v) => {
                        let values_alt = values_alt.as_mut().expect("prepared");
                        let (values_src, values_dst): (&DeviceBuffer<V>, &mut DeviceBuffer<V>) =
                            match (src, dst(p)) {
                                (Slot::Input, Slot::Output) => (v.input, &mut *v.output),
                                (Slot::Input, _) => (v.input, values_alt),
                                (Slot::Alternate, _) => (values_alt, &mut *v.output),
                                (Slot::Output, _) => (&*v.output, values_alt),
                            };
                        (v.pass)(
                            &self.module,
                            stream,
                            cfg,
                            keys_src,
                            keys_dst,
                            values_src,
                            values_dst,
                            counts,
                            status,
                            len,
                            shift,
                            digit_bits,
                            p,
                            epoch,
                        )?
                    }
                }
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
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        values: Option<Values<'_, K, V>>,
        bits: Range<u32>,
    ) -> Result<()> {
        let value_bytes = if values.is_some() { size_of::<V>() } else { 0 };
        let n = keys_in.len();
        let threads = sort_single_threads::<K>(n);
        let cfg = LaunchConfig::new(1, threads)
            .with_shared_mem(sort_single_shared_bytes::<K>(threads, value_bytes) as u32);
        let len = n as u32;
        // Every buffer holds at least `len ≤ sort_single_tile::<K>()` elements, and the launch
        // is one block of `sort_single_threads(n)` threads (covering `n` at 16 keys each) with
        // the dynamic shared memory `sort_single_shared_bytes` asks for.
        match values {
            None => (K::LAUNCH_SINGLE_KEYS)(
                &self.module,
                stream,
                cfg,
                keys_in,
                keys_out,
                len,
                bits.start,
                bits.end,
            ),
            Some(v) => (v.single)(
                &self.module,
                stream,
                cfg,
                keys_in,
                keys_out,
                v.input,
                v.output,
                len,
                bits.start,
                bits.end,
            ),
        }
    }
}
