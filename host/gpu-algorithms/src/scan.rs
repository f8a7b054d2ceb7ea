//! Device-wide inclusive and exclusive scans.

use gpu_host::gpu::device::{SCAN_BLOCK, STATUS_WORDS_PER_TILE, scan_items};
use gpu_host::gpu::ops::{Max, Min, Sum};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};

use crate::Algorithms;
use crate::algorithm_kernels::Module;

/// Element types with built-in scan kernels for operator `O`.
pub trait ScanBuiltin<O>: DeviceCopy + Send {
    /// The inclusive scan kernel's name.
    const INCLUSIVE: &'static str;
    /// The exclusive scan kernel's name.
    const EXCLUSIVE: &'static str;
    /// The inclusive scan's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH_INCLUSIVE: InclusiveLaunch<Self>;
    /// The exclusive scan's typed launcher.
    #[doc(hidden)]
    const LAUNCH_EXCLUSIVE: ExclusiveLaunch<Self>;
}

/// A typed launcher of a `gpu::inclusive_scan_kernel!` kernel: `(input, output, status, epoch)`.
#[doc(hidden)]
pub type InclusiveLaunch<T> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    &mut DeviceBuffer<T>,
    &mut DeviceBuffer<u64>,
    u32,
) -> Result<()>;

/// A typed launcher of a `gpu::exclusive_scan_kernel!` kernel:
/// `(input, init, output, status, epoch)`.
#[doc(hidden)]
pub type ExclusiveLaunch<T> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    T,
    &mut DeviceBuffer<T>,
    &mut DeviceBuffer<u64>,
    u32,
) -> Result<()>;

// One identifier per kernel names it and picks its launcher (a missing kernel does not compile).
macro_rules! builtins {
    ($($t:ident, $op:ident: $inc:ident $exc:ident;)*) => { $(
        impl ScanBuiltin<$op> for $t {
            const INCLUSIVE: &'static str = stringify!($inc);
            const EXCLUSIVE: &'static str = stringify!($exc);
            const LAUNCH_INCLUSIVE: InclusiveLaunch<$t> = Module::$inc;
            const LAUNCH_EXCLUSIVE: ExclusiveLaunch<$t> = Module::$exc;
        }
    )* };
}

builtins! {
    f32, Sum: inclusive_scan_sum_f32 exclusive_scan_sum_f32;
    f64, Sum: inclusive_scan_sum_f64 exclusive_scan_sum_f64;
    i32, Sum: inclusive_scan_sum_i32 exclusive_scan_sum_i32;
    u32, Sum: inclusive_scan_sum_u32 exclusive_scan_sum_u32;
    i64, Sum: inclusive_scan_sum_i64 exclusive_scan_sum_i64;
    u64, Sum: inclusive_scan_sum_u64 exclusive_scan_sum_u64;
    f32, Max: inclusive_scan_max_f32 exclusive_scan_max_f32;
    f32, Min: inclusive_scan_min_f32 exclusive_scan_min_f32;
    i32, Max: inclusive_scan_max_i32 exclusive_scan_max_i32;
    i32, Min: inclusive_scan_min_i32 exclusive_scan_min_i32;
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
        op: O,
    ) -> Result<()> {
        self.temps.with(
            stream,
            || Ok(ScanTemp::new()),
            |temp| self.inclusive_scan_with_temp(stream, input, output, op, temp),
        )
    }

    /// `output[0] = init`, `output[i] = init ⊕ input[0] ⊕ … ⊕ input[i-1]` (asynchronous).
    pub fn exclusive_scan<T: ScanBuiltin<O>, O>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        op: O,
        init: T,
    ) -> Result<()> {
        self.temps.with(
            stream,
            || Ok(ScanTemp::new()),
            |temp| self.exclusive_scan_with_temp(stream, input, output, op, init, temp),
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
        self.scan(
            stream,
            T::INCLUSIVE,
            input,
            output,
            temp,
            |cfg, input, output, status, epoch| {
                (T::LAUNCH_INCLUSIVE)(&self.module, stream, cfg, input, output, status, epoch)
            },
        )
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
        self.scan(
            stream,
            T::EXCLUSIVE,
            input,
            output,
            temp,
            |cfg, input, output, status, epoch| {
                (T::LAUNCH_EXCLUSIVE)(
                    &self.module,
                    stream,
                    cfg,
                    input,
                    init,
                    output,
                    status,
                    epoch,
                )
            },
        )
    }

    /// Checks the buffers, prepares the temporary storage and calls `launch` with the launch
    /// shape, the buffers, the status words and the epoch.
    fn scan<T: DeviceCopy>(
        &self,
        stream: &Stream,
        name: &'static str,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        temp: &mut ScanTemp,
        launch: impl FnOnce(
            LaunchConfig,
            &DeviceBuffer<T>,
            &mut DeviceBuffer<T>,
            &mut DeviceBuffer<u64>,
            u32,
        ) -> Result<()>,
    ) -> Result<()> {
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
        // `prepare` sizes `status` for the grid and gives a fresh epoch.
        let (cfg, status, epoch) = temp.prepare::<T>(stream, input.len())?;
        launch(cfg, input, output, status, epoch)
    }
}
