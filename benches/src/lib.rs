//! Helpers for GPU benchmarks: criterion measures what CUDA events report, not the wall-clock
//! time of an asynchronous launch.

use std::time::Duration;

use gpu_host::{Result, Stream};

/// Runs `launch` `iters` times between two events on `stream` and returns the GPU time, for
/// criterion's `iter_custom`.
pub fn gpu_time(
    stream: &Stream,
    iters: u64,
    mut launch: impl FnMut(&Stream) -> Result<()>,
) -> Result<Duration> {
    let ((), ms) = stream.time(|s| {
        for _ in 0..iters {
            launch(s)?;
        }
        Ok(())
    })?;
    Ok(Duration::from_secs_f64(ms as f64 * 1e-3))
}
