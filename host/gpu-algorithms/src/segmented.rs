//! Device-wide segmented reduction.

use gpu_host::gpu::device::SEGMENTED_BLOCK;
use gpu_host::gpu::ops::{Max, Min, Sum};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};

use crate::Algorithms;
use crate::algorithm_kernels::Module;

/// Element types with a built-in segmented reduction for operator `O`.
pub trait SegmentedBuiltin<O>: DeviceCopy + Send {
    /// The kernel's name.
    const KERNEL: &'static str;
    /// The kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH: SegmentedLaunch<Self>;
}

/// A typed launcher of a `gpu::segmented_reduce_kernel!` kernel: `(input, offsets, init, out)`.
#[doc(hidden)]
pub type SegmentedLaunch<T> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    &DeviceBuffer<u64>,
    T,
    &mut DeviceBuffer<T>,
) -> Result<()>;

// One identifier per kernel names it and picks its launcher (a missing kernel does not compile).
macro_rules! builtins {
    ($($t:ident: $sum:ident $min:ident $max:ident;)*) => { $(
        impl SegmentedBuiltin<Sum> for $t {
            const KERNEL: &'static str = stringify!($sum);
            const LAUNCH: SegmentedLaunch<$t> = Module::$sum;
        }
        impl SegmentedBuiltin<Min> for $t {
            const KERNEL: &'static str = stringify!($min);
            const LAUNCH: SegmentedLaunch<$t> = Module::$min;
        }
        impl SegmentedBuiltin<Max> for $t {
            const KERNEL: &'static str = stringify!($max);
            const LAUNCH: SegmentedLaunch<$t> = Module::$max;
        }
    )* };
}

builtins! {
    f32: segmented_reduce_sum_f32 segmented_reduce_min_f32 segmented_reduce_max_f32;
    f64: segmented_reduce_sum_f64 segmented_reduce_min_f64 segmented_reduce_max_f64;
    i32: segmented_reduce_sum_i32 segmented_reduce_min_i32 segmented_reduce_max_i32;
    u32: segmented_reduce_sum_u32 segmented_reduce_min_u32 segmented_reduce_max_u32;
}

/// Checks segment offsets against an input of `len` elements: non-decreasing, within the input,
/// at least one offset. Returns the number of segments.
pub(crate) fn check_offsets(kernel: &str, offsets: &[usize], len: usize) -> Result<usize> {
    let bad = |message: String| Error::Argument {
        kernel: kernel.to_string(),
        argument: "offsets".to_string(),
        message,
    };
    if offsets.is_empty() {
        return Err(bad(
            "no offsets: S segments need S + 1 offsets (begin of each, then the end)".into(),
        ));
    }
    if let Some(i) = offsets.windows(2).position(|w| w[0] > w[1]) {
        return Err(bad(format!(
            "offsets out of order: offsets[{i}] = {} > offsets[{}] = {}",
            offsets[i],
            i + 1,
            offsets[i + 1]
        )));
    }
    let last = *offsets.last().expect("not empty");
    if last > len {
        return Err(bad(format!(
            "the last offset {last} is past the end of the input ({len} elements)"
        )));
    }
    let segments = offsets.len() - 1;
    if segments > i32::MAX as usize {
        return Err(bad(format!("{segments} segments; at most 2^31 - 1")));
    }
    Ok(segments)
}

impl Algorithms {
    /// `out[s] = init ⊕ input[offsets[s]] ⊕ … ⊕ input[offsets[s+1] - 1]` for each of the
    /// `offsets.len() - 1` segments (`init` for an empty segment), asynchronous. The offsets are
    /// checked on the host (in order, within the input) and uploaded; one block reduces each
    /// segment. The operator must be commutative (all built-ins are).
    pub fn segmented_reduce<T: SegmentedBuiltin<O>, O>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        offsets: &[usize],
        _op: O,
        init: T,
        out: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let segments = check_offsets(T::KERNEL, offsets, input.len())?;
        if out.len() < segments {
            return Err(Error::SizeMismatch {
                operation: format!("{}: out", T::KERNEL),
                expected: segments,
                actual: out.len(),
            });
        }
        if segments == 0 {
            return Ok(());
        }
        let offsets: Vec<u64> = offsets.iter().map(|&o| o as u64).collect();
        let offsets = stream.to_device(&offsets)?;
        let cfg = LaunchConfig::new(segments as u32, SEGMENTED_BLOCK);
        // The offsets were checked above and one block runs per segment.
        (T::LAUNCH)(&self.module, stream, cfg, input, &offsets, init, out)
    }
}
