//! Device-wide reduction.

use gpu_host::gpu::device::{REDUCE_BLOCK, reduce_items};
use gpu_host::gpu::ops::{Max, Min, Sum};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};
use half::{bf16, f16};

use crate::Algorithms;
use crate::algorithm_kernels::Module;

/// Element types with a built-in reduction kernel for operator `O`.
pub trait ReduceBuiltin<O>: DeviceCopy + Send {
    /// The kernel's name in the algorithm module.
    const KERNEL: &'static str;
    /// The kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH: ReduceLaunch<Self>;
}

/// A typed launcher of a `gpu::reduce_kernel!` kernel: `(input, init, partials, counter, out)`.
#[doc(hidden)]
pub type ReduceLaunch<T> = fn(
    &Module,
    &Stream,
    LaunchConfig,
    &DeviceBuffer<T>,
    T,
    &mut DeviceBuffer<T>,
    &mut DeviceBuffer<u32>,
    &mut DeviceBuffer<T>,
) -> Result<()>;

// One identifier per kernel names it and picks its launcher, so a kernel missing from
// `algorithm-kernels` is a compile error.
macro_rules! builtins {
    ($($t:ident: $sum:ident $min:ident $max:ident;)*) => { $(
        impl ReduceBuiltin<Sum> for $t {
            const KERNEL: &'static str = stringify!($sum);
            const LAUNCH: ReduceLaunch<$t> = Module::$sum;
        }
        impl ReduceBuiltin<Min> for $t {
            const KERNEL: &'static str = stringify!($min);
            const LAUNCH: ReduceLaunch<$t> = Module::$min;
        }
        impl ReduceBuiltin<Max> for $t {
            const KERNEL: &'static str = stringify!($max);
            const LAUNCH: ReduceLaunch<$t> = Module::$max;
        }
    )* };
}

builtins! {
    f32: reduce_sum_f32 reduce_min_f32 reduce_max_f32;
    f64: reduce_sum_f64 reduce_min_f64 reduce_max_f64;
    i32: reduce_sum_i32 reduce_min_i32 reduce_max_i32;
    u32: reduce_sum_u32 reduce_min_u32 reduce_max_u32;
    i64: reduce_sum_i64 reduce_min_i64 reduce_max_i64;
    u64: reduce_sum_u64 reduce_min_u64 reduce_max_u64;
    f16: reduce_sum_f16 reduce_min_f16 reduce_max_f16;
    bf16: reduce_sum_bf16 reduce_min_bf16 reduce_max_bf16;
}

/// Temporary storage of a reduction of `T`: one partial result per block and the completion
/// counter (zero between launches; the kernel's last block resets it).
///
/// For a kernel of your own made with `gpu::reduce_kernel!`:
/// ```ignore
/// let mut temp = ReduceTemp::<Pair>::new(&stream, algos.reduce_blocks_limit())?;
/// let cfg = temp.config(input.len());
/// let (partials, counter) = temp.buffers();
/// my_kernels.argmax_reduce(&stream, cfg, &input, init, partials, counter, &mut out)?;
/// ```
pub struct ReduceTemp<T: DeviceCopy> {
    partials: DeviceBuffer<T>,
    counter: DeviceBuffer<u32>,
}

impl<T: DeviceCopy> ReduceTemp<T> {
    /// Storage for launches of at most `max_blocks` blocks (see
    /// [`Algorithms::reduce_blocks_limit`]).
    pub fn new(stream: &Stream, max_blocks: u32) -> Result<ReduceTemp<T>> {
        Ok(ReduceTemp {
            partials: stream.alloc_zeroed(max_blocks.max(1) as usize)?,
            counter: stream.alloc_zeroed(1)?,
        })
    }

    /// The launch configuration for `n` elements: `REDUCE_BLOCK` threads, as many blocks as
    /// there are full tiles, capped by the storage's block count.
    pub fn config(&self, n: usize) -> LaunchConfig {
        let tile = REDUCE_BLOCK as usize * reduce_items::<T>();
        let blocks = (n / tile).clamp(1, self.partials.len());
        LaunchConfig::new(blocks as u32, REDUCE_BLOCK)
    }

    /// The `partials` and `counter` arguments of the kernel.
    pub fn buffers(&mut self) -> (&mut DeviceBuffer<T>, &mut DeviceBuffer<u32>) {
        (&mut self.partials, &mut self.counter)
    }
}

impl Algorithms {
    /// Most blocks a built-in reduction launches on this GPU (blocks resident at once, so
    /// each SM is filled once and threads loop over tiles).
    pub fn reduce_blocks_limit(&self) -> Result<u32> {
        let kernel = self.kernel_at(crate::algorithm_kernels::index::reduce_sum_f32)?;
        self.resident_blocks(kernel, REDUCE_BLOCK)
    }

    /// `init ⊕ input[0] ⊕ … ⊕ input[n-1]`, returned to the host (synchronizes `stream`).
    ///
    /// The operator is applied in an unspecified order (it must be commutative, like all
    /// built-ins); float sums differ from a sequential sum by rounding, bounded by about
    /// `(n / (blocks · 256) + 20) · ε · Σ|x|`. Integer sums wrap. See
    /// [`gpu::device::reduce`](gpu_host::gpu::device::reduce) for the algorithm.
    pub fn reduce<T: ReduceBuiltin<O>, O>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        op: O,
        init: T,
    ) -> Result<T> {
        let mut out = stream.alloc_zeroed::<T>(1)?;
        self.reduce_into(stream, input, op, init, &mut out)?;
        let v = out.to_vec()?;
        Ok(v[0])
    }

    /// Like [`Algorithms::reduce`], but writes the result to `out[0]` on the device without
    /// synchronizing. Errors if `out` is empty.
    pub fn reduce_into<T: ReduceBuiltin<O>, O>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        op: O,
        init: T,
        out: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.temps.with(
            stream,
            // The limit (an occupancy query) only sizes new storage: not asked on every call.
            || ReduceTemp::<T>::new(stream, self.reduce_blocks_limit()?),
            |temp| self.reduce_with_temp(stream, input, op, init, out, temp),
        )
    }

    /// [`Algorithms::reduce_into`] with caller-owned temporary storage.
    pub fn reduce_with_temp<T: ReduceBuiltin<O>, O>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        _op: O,
        init: T,
        out: &mut DeviceBuffer<T>,
        temp: &mut ReduceTemp<T>,
    ) -> Result<()> {
        if out.is_empty() {
            return Err(Error::Argument {
                kernel: T::KERNEL.to_string(),
                argument: "out".to_string(),
                message: "the output buffer is empty; it needs 1 element".to_string(),
            });
        }
        let cfg = temp.config(input.len());
        let (partials, counter) = temp.buffers();
        // The grid is within the partials' length (`config`).
        (T::LAUNCH)(
            &self.module,
            stream,
            cfg,
            input,
            init,
            partials,
            counter,
            out,
        )
    }
}
