//! SGEMM on CUDA cores (fp32, no tensor cores): `C = alpha·A·B + beta·C`.

use dense_kernels::sgemm::{SGEMM_BM, SGEMM_BN, SGEMM_THREADS};
use gpu_host::{DeviceBuffer, Error, LaunchConfig, Occupancy, Result, Stream};

use crate::Dense;

/// The kernel's name, for errors.
const KERNEL: &str = "sgemm_f32";

impl Dense {
    /// The SGEMM kernel's occupancy at its block shape (resident blocks per SM), for benchmarks
    /// and tuning notes: registers and shared memory decide it.
    pub fn sgemm_occupancy(&self) -> Result<Occupancy> {
        self.dense.raw().kernel(KERNEL)?.occupancy(SGEMM_THREADS, 0)
    }

    /// `C = alpha·A·B + beta·C` in fp32 on the CUDA cores (asynchronous on `stream`), for
    /// row-major A (m×k), B (k×n) and C (m×n), with any shapes: edge tiles are bounds-checked.
    /// With `beta == 0` C is only written (its old contents, even NaN, do not matter), as in
    /// BLAS. Accumulation is in fp32 FMAs along k, in order.
    ///
    /// Errors (nothing launched): a buffer whose length is not the product of its dimensions
    /// (`a.len() != m·k`, ...), dimensions above `u32::MAX`, or an m too large for the grid
    /// (more than 65535 row tiles of 128). `m == 0` or `n == 0` is an empty product: nothing is
    /// launched.
    #[allow(clippy::too_many_arguments)]
    pub fn sgemm(
        &self,
        stream: &Stream,
        alpha: f32,
        a: &DeviceBuffer<f32>,
        b: &DeviceBuffer<f32>,
        beta: f32,
        c: &mut DeviceBuffer<f32>,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<()> {
        let bad = |argument: &str, message: String| Error::Argument {
            kernel: KERNEL.to_string(),
            argument: argument.to_string(),
            message,
        };
        for (name, dim) in [("m", m), ("n", n), ("k", k)] {
            if dim > u32::MAX as usize {
                return Err(bad(name, format!("{name} = {dim} is above u32::MAX")));
            }
        }
        for (name, len, rows, cols, what) in [
            ("a", a.len(), m, k, "m·k"),
            ("b", b.len(), k, n, "k·n"),
            ("c", c.len(), m, n, "m·n"),
        ] {
            match rows.checked_mul(cols) {
                Some(want) if want == len => {}
                Some(want) => {
                    return Err(bad(
                        name,
                        format!(
                            "length {len}, but {what} = {rows}·{cols} = {want} (row-major, \
                             m = {m}, n = {n}, k = {k})"
                        ),
                    ));
                }
                None => {
                    return Err(bad(name, format!("{what} = {rows}·{cols} overflows usize")));
                }
            }
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        let grid_x = n.div_ceil(SGEMM_BN as usize);
        let grid_y = m.div_ceil(SGEMM_BM as usize);
        if grid_y > 65535 {
            return Err(bad(
                "m",
                format!("m = {m} needs {grid_y} row tiles of {SGEMM_BM}; the grid allows 65535"),
            ));
        }
        let cfg = LaunchConfig::new((grid_x as u32, grid_y as u32), SGEMM_THREADS);
        self.dense.sgemm_f32(
            stream, cfg, a, b, c, m as u32, n as u32, k as u32, alpha, beta,
        )
    }
}
