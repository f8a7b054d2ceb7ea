//! Element-wise conversions, and the launch shape for your own transform kernels.

use gpu_host::gpu::device::{TRANSFORM_BLOCK, transform_items};
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};
use half::{bf16, f16};

use crate::Algorithms;
use crate::algorithm_kernels::{Module, index};

/// `(From, To)` pairs with a built-in conversion kernel.
pub trait ConvertBuiltin<To: DeviceCopy>: DeviceCopy + Send {
    /// The kernel's name.
    const KERNEL: &'static str;
    /// The kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH: ConvertLaunch<Self, To>;
    /// The kernel's position in the module (for its occupancy).
    #[doc(hidden)]
    const INDEX: usize;
}

/// A typed launcher of a `gpu::transform_kernel!` conversion: `(input, output)`.
#[doc(hidden)]
pub type ConvertLaunch<From, To> =
    fn(&Module, &Stream, LaunchConfig, &DeviceBuffer<From>, &mut DeviceBuffer<To>) -> Result<()>;

// One identifier per kernel names it and picks its launcher (a missing kernel does not compile).
macro_rules! builtins {
    ($($from:ident => $to:ident: $name:ident;)*) => { $(
        impl ConvertBuiltin<$to> for $from {
            const KERNEL: &'static str = stringify!($name);
            const LAUNCH: ConvertLaunch<$from, $to> = Module::$name;
            const INDEX: usize = index::$name;
        }
    )* };
}

builtins! {
    f32 => f16: convert_f32_f16;
    f32 => bf16: convert_f32_bf16;
    f16 => f32: convert_f16_f32;
    bf16 => f32: convert_bf16_f32;
}

/// The launch configuration for a transform kernel (made with `gpu::transform_kernel!`) over
/// `n` elements of input type `A`: one block per tile, up to `max_blocks` (blocks then loop).
pub fn transform_config<A>(n: usize, max_blocks: u32) -> LaunchConfig {
    let tile = TRANSFORM_BLOCK as usize * transform_items::<A>();
    let blocks = n.div_ceil(tile).clamp(1, max_blocks.max(1) as usize);
    LaunchConfig::new(blocks as u32, TRANSFORM_BLOCK)
}

impl Algorithms {
    /// `output[i] = input[i] as To` (round to nearest even), asynchronous. `output` must be at
    /// least as long as `input`.
    pub fn convert<From: ConvertBuiltin<To>, To: DeviceCopy>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<From>,
        output: &mut DeviceBuffer<To>,
    ) -> Result<()> {
        let kernel = self.kernel_at(From::INDEX)?;
        if output.len() < input.len() {
            return Err(Error::SizeMismatch {
                operation: format!("{}: output", From::KERNEL),
                expected: input.len(),
                actual: output.len(),
            });
        }
        if input.is_empty() {
            return Ok(());
        }
        let cfg = transform_config::<From>(
            input.len(),
            self.resident_blocks(kernel, TRANSFORM_BLOCK)? * 4,
        );
        // The output length was checked above.
        (From::LAUNCH)(&self.module, stream, cfg, input, output)
    }
}
