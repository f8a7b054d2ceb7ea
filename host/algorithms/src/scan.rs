//! Device-wide inclusive and exclusive scans.

use gpu_host::gpu::device::{SCAN_BLOCK, STATUS_WORDS_PER_TILE, scan_items};
use gpu_host::gpu::ops::{Max, Min, Sum};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};

use crate::Algorithms;

/// Element types with built-in scan kernels for operator `O`.
pub trait ScanBuiltin<O>: DeviceCopy + Send {
    /// The inclusive scan kernel's name.
    const INCLUSIVE: &'static str;
    /// The exclusive scan kernel's name.
    const EXCLUSIVE: &'static str;
}

macro_rules! builtins {
    ($($t:ident, $op:ident: $inc:literal $exc:literal;)*) => { $(
        impl ScanBuiltin<$op> for $t {
            const INCLUSIVE: &'static str = $inc;
            const EXCLUSIVE: &'static str = $exc;
        }
    )* };
}

builtins! {
    f32, Sum: "inclusive_scan_sum_f32" "exclusive_scan_sum_f32";
    f64, Sum: "inclusive_scan_sum_f64" "exclusive_scan_sum_f64";
    i32, Sum: "inclusive_scan_sum_i32" "exclusive_scan_sum_i32";
    u32, Sum: "inclusive_scan_sum_u32" "exclusive_scan_sum_u32";
    i64, Sum: "inclusive_scan_sum_i64" "exclusive_scan_sum_i64";
    u64, Sum: "inclusive_scan_sum_u64" "exclusive_scan_sum_u64";
    f32, Max: "inclusive_scan_max_f32" "exclusive_scan_max_f32";
    f32, Min: "inclusive_scan_min_f32" "exclusive_scan_min_f32";
    i32, Max: "inclusive_scan_max_i32" "exclusive_scan_max_i32";
    i32, Min: "inclusive_scan_min_i32" "exclusive_scan_min_i32";
}

/// Temporary storage of single-pass scans: four status words per tile, zeroed once, and the
/// call counter (*epoch*) that makes words of earlier calls read as unpublished.
///
/// For a kernel of your own made with `gpu::inclusive_scan_kernel!`:
/// ```ignore
/// let mut temp = ScanTemp::new();
/// let (cfg, status, epoch) = temp.prepare::<f32>(&stream, input.len())?;
/// my_kernels.running_max(&stream, cfg, &input, &mut output, status, epoch)?;
/// ```
#[derive(Default)]
pub struct ScanTemp {
    status: Option<DeviceBuffer<u64>>,
    epoch: u32,
}

/// Largest epoch the status words can hold (30 bits).
const MAX_EPOCH: u32 = (1 << 30) - 1;

impl ScanTemp {
    /// Empty storage; [`ScanTemp::prepare`] allocates it on first use.
    pub fn new() -> ScanTemp {
        ScanTemp::default()
    }

    /// Readies the storage for a scan of `n` values of `T` on `stream`: grows (re-zeroes) it if
    /// needed and advances the epoch. Returns the launch configuration (one block per tile),
    /// the `status` argument and the `epoch` argument.
    pub fn prepare<T: DeviceCopy>(
        &mut self,
        stream: &Stream,
        n: usize,
    ) -> Result<(LaunchConfig, &mut DeviceBuffer<u64>, u32)> {
        let tile = SCAN_BLOCK as usize * scan_items::<T>();
        let tiles = n.div_ceil(tile).max(1);
        let grid = u32::try_from(tiles).map_err(|_| Error::Argument {
            kernel: "scan".to_string(),
            argument: "input".to_string(),
            message: format!("{n} elements need {tiles} tiles, more than a grid can hold"),
        })?;
        let too_small = self
            .status
            .as_ref()
            .is_none_or(|s| s.len() < STATUS_WORDS_PER_TILE * tiles);
        if too_small || self.epoch >= MAX_EPOCH {
            self.status = Some(stream.alloc_zeroed(STATUS_WORDS_PER_TILE * tiles)?);
            self.epoch = 0;
        }
        self.epoch += 1;
        let status = self.status.as_mut().expect("allocated above");
        Ok((LaunchConfig::new(grid, SCAN_BLOCK), status, self.epoch))
    }
}

impl Algorithms {
    /// `output[i] = input[0] ⊕ … ⊕ input[i]` for `i < input.len()`, in one pass over the data
    /// (asynchronous on `stream`). `output` may be longer than `input`; its tail is untouched.
    ///
    /// Values are combined in index order, so the operator need only be associative. See
    /// [`gpu::device::scan`](gpu_host::gpu::device::scan) for the algorithm and float error.
    pub fn inclusive_scan<T: ScanBuiltin<O>, O>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        _op: O,
    ) -> Result<()> {
        self.temps.with(
            stream,
            || Ok(ScanTemp::new()),
            |temp| self.scan(stream, T::INCLUSIVE, input, output, None, temp),
        )
    }

    /// `output[0] = init`, `output[i] = init ⊕ input[0] ⊕ … ⊕ input[i-1]` (asynchronous).
    pub fn exclusive_scan<T: ScanBuiltin<O>, O>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        _op: O,
        init: T,
    ) -> Result<()> {
        self.temps.with(
            stream,
            || Ok(ScanTemp::new()),
            |temp| self.scan(stream, T::EXCLUSIVE, input, output, Some(init), temp),
        )
    }

    /// [`Algorithms::inclusive_scan`] with caller-owned temporary storage.
    pub fn inclusive_scan_with_temp<T: ScanBuiltin<O>, O>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        _op: O,
        temp: &mut ScanTemp,
    ) -> Result<()> {
        self.scan(stream, T::INCLUSIVE, input, output, None, temp)
    }

    /// [`Algorithms::exclusive_scan`] with caller-owned temporary storage.
    pub fn exclusive_scan_with_temp<T: ScanBuiltin<O>, O>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        _op: O,
        init: T,
        temp: &mut ScanTemp,
    ) -> Result<()> {
        self.scan(stream, T::EXCLUSIVE, input, output, Some(init), temp)
    }

    fn scan<T: DeviceCopy>(
        &self,
        stream: &Stream,
        name: &'static str,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        init: Option<T>,
        temp: &mut ScanTemp,
    ) -> Result<()> {
        let kernel = self.kernel(name)?;
        if output.len() < input.len() {
            return Err(Error::SizeMismatch {
                operation: format!("{name}: output"),
                expected: input.len(),
                actual: output.len(),
            });
        }
        if input.is_empty() {
            return Ok(());
        }
        let (cfg, status, epoch) = temp.prepare::<T>(stream, input.len())?;
        let mut launch = kernel.prepare(stream, cfg)?;
        launch.input("input", input);
        if let Some(init) = &init {
            launch.value("init", init);
        }
        launch
            .output("output", output)
            .output("status", status)
            .value("epoch", &epoch);
        // SAFETY: `name` is a kernel made by `gpu::{inclusive,exclusive}_scan_kernel!` for `T`:
        // (input: &[T], [init: T,] output: DisjointSlice<T>, status: DisjointSlice<u64>,
        // epoch: u32); `prepare` sized `status` for the grid and gave a fresh epoch.
        unsafe { launch.launch() }
    }
}
