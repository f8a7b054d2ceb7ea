//! Device-wide selection (stream compaction) and stable partition.

use gpu_host::gpu::device::{SELECT_BLOCK, scan_items};
use gpu_host::gpu::ops::CompareOp;
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};
use half::{bf16, f16};

use crate::algorithm_kernels::Module;
use crate::{Algorithms, ScanTemp};

/// Element types with a built-in threshold-selection kernel.
pub trait SelectBuiltin: DeviceCopy + Send {
    /// The kernel's name.
    const KERNEL: &'static str;
    /// The kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH: SelectLaunch<Self>;
}

/// A typed launcher of a `gpu::select_compare_kernel!` kernel: `(input, op, threshold, selected,
/// rejected, num_selected, status, epoch)`.
#[doc(hidden)]
pub type SelectLaunch<T> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    u32,
    T,
    &mut DeviceBuffer<T>,
    &mut DeviceBuffer<T>,
    &mut DeviceBuffer<u32>,
    &mut DeviceBuffer<u64>,
    u32,
) -> Result<()>;

// One identifier per kernel names it and picks its launcher (a missing kernel does not compile).
macro_rules! builtins {
    ($($t:ident: $name:ident;)*) => { $(
        impl SelectBuiltin for $t {
            const KERNEL: &'static str = stringify!($name);
            const LAUNCH: SelectLaunch<$t> = Module::$name;
        }
    )* };
}

builtins! {
    f32: select_compare_f32;
    f64: select_compare_f64;
    i32: select_compare_i32;
    u32: select_compare_u32;
    i64: select_compare_i64;
    u64: select_compare_u64;
    f16: select_compare_f16;
    bf16: select_compare_bf16;
}

const _: () = assert!(SELECT_BLOCK == gpu_host::gpu::device::SCAN_BLOCK);

impl Algorithms {
    /// Copies the elements `x` of `input` with `x <op> threshold` to the front of `selected`, in
    /// their original order, and writes their number to `num_selected[0]` (asynchronous).
    /// `selected` must be at least as long as `input`.
    ///
    /// One pass over the data (a scan of the per-thread counts with decoupled look-back).
    pub fn select_if<T: SelectBuiltin>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        op: CompareOp,
        threshold: T,
        selected: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        let mut no_rejected = stream.alloc_zeroed::<T>(0)?;
        self.select(
            stream,
            input,
            op,
            threshold,
            selected,
            &mut no_rejected,
            num_selected,
        )
    }

    /// Stable partition: the elements with `x <op> threshold` go to `selected`, the others to
    /// `rejected`, both in their original order; `num_selected[0]` gets the count
    /// (asynchronous). Both outputs must be at least as long as `input`.
    #[allow(clippy::too_many_arguments)]
    pub fn partition<T: SelectBuiltin>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        op: CompareOp,
        threshold: T,
        selected: &mut DeviceBuffer<T>,
        rejected: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        if rejected.len() < input.len() {
            return Err(Error::SizeMismatch {
                operation: format!("{}: rejected output", T::KERNEL),
                expected: input.len(),
                actual: rejected.len(),
            });
        }
        self.select(
            stream,
            input,
            op,
            threshold,
            selected,
            rejected,
            num_selected,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn select<T: SelectBuiltin>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        op: CompareOp,
        threshold: T,
        selected: &mut DeviceBuffer<T>,
        rejected: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        if selected.len() < input.len() {
            return Err(Error::SizeMismatch {
                operation: format!("{}: selected output", T::KERNEL),
                expected: input.len(),
                actual: selected.len(),
            });
        }
        if num_selected.is_empty() {
            return Err(Error::Argument {
                kernel: T::KERNEL.to_string(),
                argument: "num_selected".to_string(),
                message: "the count output is empty; it needs 1 element".to_string(),
            });
        }
        if input.len() > u32::MAX as usize {
            return Err(Error::Argument {
                kernel: T::KERNEL.to_string(),
                argument: "input".to_string(),
                message: format!("{} elements; selection counts are u32", input.len()),
            });
        }
        debug_assert_eq!(
            SELECT_BLOCK as usize * scan_items::<T>(),
            gpu_host::gpu::device::SCAN_BLOCK as usize * scan_items::<T>()
        );
        self.temps.with(
            stream,
            || Ok(ScanTemp::new()),
            |temp| {
                let (cfg, status, epoch) = temp.prepare::<T>(stream, input.len())?;
                // Outputs checked above; `prepare` sized the status words and advanced the
                // epoch (one block per tile, as scans).
                (T::LAUNCH)(
                    &self.module,
                    stream,
                    cfg,
                    input,
                    op as u32,
                    threshold,
                    selected,
                    rejected,
                    num_selected,
                    status,
                    epoch,
                )
            },
        )
    }
}
