//! Row-wise kernels: softmax and layer normalization of the rows of a row-major matrix, for f32
//! and bf16 (math in f32).
//!
//! One block per row. Rows of up to 32 values per thread (32768 elements at 1024 threads) are
//! read once and written once, staying in registers between; longer rows take a general path
//! that reads the row again (softmax: 2 reads, layernorm: 3 reads) instead of failing.

use gpu_host::{DeviceBuffer, DeviceCopy, Error, LaunchConfig, Result, Stream};
use half::bf16;

use crate::{Dense, dense_kernels};

/// Element types of the row kernels: `f32` and `bf16`.
pub trait RowElement: DeviceCopy + sealed::Sealed {
    /// Elements per 16-byte vector.
    #[doc(hidden)]
    const VEC: usize;
    /// 16-byte chunks per thread the kernels hold in registers.
    #[doc(hidden)]
    const CHUNKS: usize;
    /// The softmax kernel's name.
    const SOFTMAX: &'static str;
    /// The layernorm kernel's name.
    const LAYERNORM: &'static str;
    #[doc(hidden)]
    fn softmax(
        m: &dense_kernels::Module,
        s: &Stream,
        cfg: LaunchConfig,
        x: &DeviceBuffer<Self>,
        y: &mut DeviceBuffer<Self>,
        cols: u32,
    ) -> Result<()>;
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn layernorm(
        m: &dense_kernels::Module,
        s: &Stream,
        cfg: LaunchConfig,
        x: &DeviceBuffer<Self>,
        gamma: &DeviceBuffer<Self>,
        beta: &DeviceBuffer<Self>,
        y: &mut DeviceBuffer<Self>,
        cols: u32,
        eps: f32,
    ) -> Result<()>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::bf16 {}
}

macro_rules! row_element {
    ($t:ty, $vec:expr, $chunks:expr, $softmax:ident, $layernorm:ident) => {
        impl RowElement for $t {
            const VEC: usize = $vec;
            const CHUNKS: usize = $chunks;
            const SOFTMAX: &'static str = stringify!($softmax);
            const LAYERNORM: &'static str = stringify!($layernorm);
            fn softmax(
                m: &dense_kernels::Module,
                s: &Stream,
                cfg: LaunchConfig,
                x: &DeviceBuffer<Self>,
                y: &mut DeviceBuffer<Self>,
                cols: u32,
            ) -> Result<()> {
                m.$softmax(s, cfg, x, y, cols)
            }
            fn layernorm(
                m: &dense_kernels::Module,
                s: &Stream,
                cfg: LaunchConfig,
                x: &DeviceBuffer<Self>,
                gamma: &DeviceBuffer<Self>,
                beta: &DeviceBuffer<Self>,
                y: &mut DeviceBuffer<Self>,
                cols: u32,
                eps: f32,
            ) -> Result<()> {
                m.$layernorm(s, cfg, x, gamma, beta, y, cols, eps)
            }
        }
    };
}

row_element!(
    f32,
    4,
    ::dense_kernels::softmax::CHUNKS_F32,
    softmax_f32,
    layernorm_f32
);
row_element!(
    bf16,
    8,
    ::dense_kernels::softmax::CHUNKS_BF16,
    softmax_bf16,
    layernorm_bf16
);

/// Threads per block for rows of `cols` elements: enough that the row fits in registers
/// (`CHUNKS` vectors per thread) when it can, a multiple of 32, at most 1024; 1024 for rows
/// longer than that (the general path).
pub fn row_block_size<T: RowElement>(cols: usize) -> u32 {
    let chunks = cols.div_ceil(T::VEC);
    let threads = chunks.div_ceil(T::CHUNKS).next_multiple_of(32);
    threads.clamp(32, 1024) as u32
}

fn arg_error(kernel: &str, argument: &str, message: String) -> Error {
    Error::Argument {
        kernel: kernel.to_string(),
        argument: argument.to_string(),
        message,
    }
}

/// Checks a `rows × cols` launch of `kernel`; returns `false` when there is nothing to do.
fn check_shape(
    kernel: &str,
    rows: usize,
    cols: usize,
    lens: &[(&str, usize, usize)],
    threads: u32,
) -> Result<bool> {
    let n = rows
        .checked_mul(cols)
        .ok_or_else(|| arg_error(kernel, "rows", format!("{rows} × {cols} overflows usize")))?;
    if cols > u32::MAX as usize {
        return Err(arg_error(
            kernel,
            "cols",
            format!("{cols} columns; at most 2^32 - 1"),
        ));
    }
    if rows > i32::MAX as usize {
        return Err(arg_error(
            kernel,
            "rows",
            format!("{rows} rows; at most 2^31 - 1 (one block per row)"),
        ));
    }
    if threads == 0 || threads > 1024 || !threads.is_multiple_of(32) {
        return Err(arg_error(
            kernel,
            "threads",
            format!("{threads} threads per block; a multiple of 32 up to 1024"),
        ));
    }
    for &(name, len, per_row) in lens {
        let expected = if per_row == 0 { n } else { cols };
        if len != expected {
            let what = if per_row == 0 {
                format!("rows × cols = {rows} × {cols} = {n}")
            } else {
                format!("cols = {cols}")
            };
            return Err(arg_error(
                kernel,
                name,
                format!("{len} elements; expected {what}"),
            ));
        }
    }
    Ok(n > 0)
}

impl Dense {
    /// Softmax of each row of the row-major `rows × cols` matrix `x` into `y` (asynchronous on
    /// `stream`): `y[r][j] = exp(x[r][j] − max_r) / Σ_j exp(x[r][j] − max_r)`, in f32 whatever
    /// the storage type. Any row length; rows of up to 32768 elements make one pass over
    /// memory. Errors (before launching) when `x` or `y` does not hold `rows · cols` values.
    pub fn softmax<T: RowElement>(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<T>,
        y: &mut DeviceBuffer<T>,
        rows: usize,
        cols: usize,
    ) -> Result<()> {
        self.softmax_with_threads(stream, x, y, rows, cols, row_block_size::<T>(cols))
    }

    /// [`Self::softmax`] with an explicit block size (a multiple of 32 up to 1024), for tuning
    /// and for testing the general path on short rows.
    #[doc(hidden)]
    pub fn softmax_with_threads<T: RowElement>(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<T>,
        y: &mut DeviceBuffer<T>,
        rows: usize,
        cols: usize,
        threads: u32,
    ) -> Result<()> {
        let lens = [("x", x.len(), 0), ("y", y.len(), 0)];
        if !check_shape(T::SOFTMAX, rows, cols, &lens, threads)? {
            return Ok(());
        }
        let cfg = LaunchConfig::new(rows as u32, threads);
        T::softmax(&self.dense, stream, cfg, x, y, cols as u32)
    }

    /// Layer normalization of each row of the row-major `rows × cols` matrix `x` into `y`
    /// (asynchronous): `y = (x − mean) / sqrt(var + eps) · gamma + beta` with the row's mean
    /// and biased variance, `gamma` and `beta` of `cols` values; math in f32. Errors (before
    /// launching) on wrong lengths or an `eps` that is negative or not finite.
    #[allow(clippy::too_many_arguments)]
    pub fn layernorm<T: RowElement>(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<T>,
        gamma: &DeviceBuffer<T>,
        beta: &DeviceBuffer<T>,
        y: &mut DeviceBuffer<T>,
        rows: usize,
        cols: usize,
        eps: f32,
    ) -> Result<()> {
        let threads = row_block_size::<T>(cols);
        self.layernorm_with_threads(stream, x, gamma, beta, y, rows, cols, eps, threads)
    }

    /// [`Self::layernorm`] with an explicit block size (a multiple of 32 up to 1024).
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn layernorm_with_threads<T: RowElement>(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<T>,
        gamma: &DeviceBuffer<T>,
        beta: &DeviceBuffer<T>,
        y: &mut DeviceBuffer<T>,
        rows: usize,
        cols: usize,
        eps: f32,
        threads: u32,
    ) -> Result<()> {
        let lens = [
            ("x", x.len(), 0),
            ("gamma", gamma.len(), 1),
            ("beta", beta.len(), 1),
            ("y", y.len(), 0),
        ];
        if !(eps.is_finite() && eps >= 0.0) {
            return Err(arg_error(
                T::LAYERNORM,
                "eps",
                format!("{eps}; must be finite and ≥ 0"),
            ));
        }
        if !check_shape(T::LAYERNORM, rows, cols, &lens, threads)? {
            return Ok(());
        }
        let cfg = LaunchConfig::new(rows as u32, threads);
        T::layernorm(
            &self.dense,
            stream,
            cfg,
            x,
            gamma,
            beta,
            y,
            cols as u32,
            eps,
        )
    }
}
