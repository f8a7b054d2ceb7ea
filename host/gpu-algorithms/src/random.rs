//! Random fills: `fill_uniform` (`u32`, `f32`, `f64`) and `fill_normal` (`f32`, `f64`) from
//! Philox4x32-10 streams ([`gpu::random`](gpu_host::gpu::random)).

use gpu_host::gpu::device::FILL_BLOCK;
use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};

use crate::Algorithms;
use crate::algorithm_kernels::{Module, index};

/// Where a fill draws its numbers: counter blocks `offset, offset + 1, ...` of the Philox4x32-10
/// stream `(seed, subsequence)`. Every fill advances `offset` past the blocks it used (one per
/// four 32-bit or two 64-bit values), so successive fills with the same `Philox` never reuse
/// numbers, as torch's generator offset does; fills are reproducible from the three fields.
///
/// Element `i` of a fill is value `i % N` of counter block `offset + i / N` (`N` = 4 for 32-bit,
/// 2 for 64-bit types), whatever the GPU or launch shape: the simulator gives the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Philox {
    /// The key.
    pub seed: u64,
    /// The high 64 bits of the counter: 2^64 non-overlapping streams per seed.
    pub subsequence: u64,
    /// The next counter block (low 64 bits of the counter) to use.
    pub offset: u64,
}

impl Philox {
    /// Subsequence 0 of `seed`, from its start.
    pub fn new(seed: u64) -> Philox {
        Philox {
            seed,
            subsequence: 0,
            offset: 0,
        }
    }
}

/// Element types with a built-in uniform fill.
pub trait UniformBuiltin: DeviceCopy + Send {
    /// The kernel's name.
    const KERNEL: &'static str;
    /// Values per counter block.
    const PER_BLOCK: usize;
    /// The kernel's `(a, b)` parameters for the default range: `(0, 1)` for floats.
    const UNIT: (Self, Self);
    /// The kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH: FillLaunch<Self>;
    /// The kernel's position in the module (for its occupancy).
    #[doc(hidden)]
    const INDEX: usize;
}

/// A typed launcher of a `gpu::random_fill_kernel!` kernel: `(out, seed, subsequence, offset, a,
/// b)`.
#[doc(hidden)]
pub type FillLaunch<T> =
    fn(&Module, &Stream, LaunchConfig, &mut DeviceBuffer<T>, u64, u64, u64, T, T) -> Result<()>;

impl UniformBuiltin for u32 {
    const KERNEL: &'static str = stringify!(fill_uniform_u32);
    const LAUNCH: FillLaunch<u32> = Module::fill_uniform_u32;
    const INDEX: usize = index::fill_uniform_u32;
    const PER_BLOCK: usize = 4;
    const UNIT: (u32, u32) = (0, 0);
}
impl UniformBuiltin for f32 {
    const KERNEL: &'static str = stringify!(fill_uniform_f32);
    const LAUNCH: FillLaunch<f32> = Module::fill_uniform_f32;
    const INDEX: usize = index::fill_uniform_f32;
    const PER_BLOCK: usize = 4;
    const UNIT: (f32, f32) = (0.0, 1.0);
}
impl UniformBuiltin for f64 {
    const KERNEL: &'static str = stringify!(fill_uniform_f64);
    const LAUNCH: FillLaunch<f64> = Module::fill_uniform_f64;
    const INDEX: usize = index::fill_uniform_f64;
    const PER_BLOCK: usize = 2;
    const UNIT: (f64, f64) = (0.0, 1.0);
}

/// Element types with a built-in normal fill.
pub trait NormalBuiltin: DeviceCopy + Send + Into<f64> {
    /// The kernel's name.
    const KERNEL: &'static str;
    /// Values per counter block.
    const PER_BLOCK: usize;
    /// The kernel's typed launcher (generated from its signature).
    #[doc(hidden)]
    const LAUNCH: FillLaunch<Self>;
    /// The kernel's position in the module (for its occupancy).
    #[doc(hidden)]
    const INDEX: usize;
}

impl NormalBuiltin for f32 {
    const KERNEL: &'static str = stringify!(fill_normal_f32);
    const LAUNCH: FillLaunch<f32> = Module::fill_normal_f32;
    const INDEX: usize = index::fill_normal_f32;
    const PER_BLOCK: usize = 4;
}
impl NormalBuiltin for f64 {
    const KERNEL: &'static str = stringify!(fill_normal_f64);
    const LAUNCH: FillLaunch<f64> = Module::fill_normal_f64;
    const INDEX: usize = index::fill_normal_f64;
    const PER_BLOCK: usize = 2;
}

impl Algorithms {
    /// Fills `out` with uniform random numbers, asynchronously: `u32` words as they come from
    /// Philox; floats in the open interval `(0, 1)` (`f32`: midpoints of 2^23 cells, `f64`: of
    /// 2^52, see [`gpu::random`](gpu_host::gpu::random)). Advances `rng.offset`. An empty `out`
    /// launches nothing.
    pub fn fill_uniform<T: UniformBuiltin>(
        &self,
        stream: &Stream,
        rng: &mut Philox,
        out: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let (a, b) = T::UNIT;
        self.fill(stream, (T::INDEX, T::LAUNCH), T::PER_BLOCK, rng, out, a, b)
    }

    /// Fills `out` with normal random numbers of mean `mean` and standard deviation `std_dev`
    /// (Box–Muller, two values per pair of uniforms; an odd length uses the first of the last
    /// pair), asynchronously. Advances `rng.offset`. A non-finite `mean` or a negative or
    /// non-finite `std_dev` is an error, and nothing is launched.
    pub fn fill_normal<T: NormalBuiltin>(
        &self,
        stream: &Stream,
        rng: &mut Philox,
        mean: T,
        std_dev: T,
        out: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let (m, s): (f64, f64) = (mean.into(), std_dev.into());
        let bad = |argument: &str, message: String| Error::Argument {
            kernel: T::KERNEL.to_string(),
            argument: argument.to_string(),
            message,
        };
        if !m.is_finite() {
            return Err(bad("mean", format!("must be finite, got {m}")));
        }
        if !(s.is_finite() && s >= 0.0) {
            return Err(bad(
                "std_dev",
                format!("must be finite and non-negative, got {s}"),
            ));
        }
        self.fill(
            stream,
            (T::INDEX, T::LAUNCH),
            T::PER_BLOCK,
            rng,
            out,
            mean,
            std_dev,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn fill<T: DeviceCopy>(
        &self,
        stream: &Stream,
        (index, launch): (usize, FillLaunch<T>),
        per_block: usize,
        rng: &mut Philox,
        out: &mut DeviceBuffer<T>,
        a: T,
        b: T,
    ) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let kernel = self.kernel_at(index)?;
        let blocks = out.len().div_ceil(per_block);
        let max_blocks = self.resident_blocks(kernel, FILL_BLOCK)? as usize * 8;
        let grid = blocks
            .div_ceil(FILL_BLOCK as usize)
            .clamp(1, max_blocks.max(1));
        let cfg = LaunchConfig::new(grid as u32, FILL_BLOCK);
        // The kernel writes only within `out`.
        launch(
            &self.module,
            stream,
            cfg,
            out,
            rng.seed,
            rng.subsequence,
            rng.offset,
            a,
            b,
        )?;
        rng.offset = rng.offset.wrapping_add(blocks as u64);
        Ok(())
    }
}
