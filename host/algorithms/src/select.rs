//! Device-wide selection (stream compaction) and stable partition.

use gpu_host::gpu::device::{SELECT_BLOCK, scan_items};
use gpu_host::gpu::ops::CompareOp;
use gpu_host::{DeviceBuffer, DeviceCopy, Error, Result, Stream};
use half::{bf16, f16};

use crate::{Algorithms, ScanTemp};

/// Element types with a built-in threshold-selection kernel.
pub trait SelectBuiltin: DeviceCopy + Send {
    /// The kernel's name.
    const KERNEL: &'static str;
}

macro_rules! builtins {
    ($($t:ident: $name:literal;)*) => { $(
        impl SelectBuiltin for $t { const KERNEL: &'static str = $name; }
    )* };
}

builtins! {
    f32: "select_compare_f32";
    f64: "select_compare_f64";
    i32: "select_compare_i32";
    u32: "select_compare_u32";
    i64: "select_compare_i64";
    u64: "select_compare_u64";
    f16: "select_compare_f16";
    bf16: "select_compare_bf16";
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
        let kernel = self.kernel(T::KERNEL)?;
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
                let mut launch = kernel.prepare(stream, cfg)?;
                launch
                    .input("input", input)
                    .value("op", &(op as u32))
                    .value("threshold", &threshold)
                    .output("selected", selected)
                    .output("rejected", rejected)
                    .output("num_selected", num_selected)
                    .output("status", status)
                    .value("epoch", &epoch);
                // SAFETY: `T::KERNEL` was made by `gpu::select_compare_kernel!(_, T)`: (input: &[T],
                // op: u32, threshold: T, selected, rejected: DisjointSlice<T>, num_selected:
                // DisjointSlice<u32>, status: DisjointSlice<u64>, epoch: u32); outputs checked above,
                // status sized and epoch advanced by `prepare` (one block per tile, as scans).
                unsafe { launch.launch() }
            },
        )
    }
}
