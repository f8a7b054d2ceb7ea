//! Segmented reduction: one block per segment, shared memory + warp shuffles.

use example_kernels::reduce::SEGMENT_BLOCK;
use gpu_host::{Error, Gpu, LaunchConfig, Result};

use crate::ExampleKernels;
use crate::check::{Comparison, compare};

/// Sum of each segment `values[offsets[s]..offsets[s + 1]]`, accumulated in f64.
pub fn segmented_sum_cpu(values: &[f32], offsets: &[u32]) -> Vec<f32> {
    offsets
        .windows(2)
        .map(|w| {
            values[w[0] as usize..w[1] as usize]
                .iter()
                .map(|&v| v as f64)
                .sum::<f64>() as f32
        })
        .collect()
}

/// Checks that `offsets` describe segments of `values`: non-decreasing, last ≤ len.
pub fn validate_offsets(offsets: &[u32], len: usize) -> Result<()> {
    if let Some(i) = offsets.windows(2).position(|w| w[0] > w[1]) {
        return Err(Error::Argument {
            kernel: "segmented_sum".into(),
            argument: "offsets".into(),
            message: format!(
                "offsets must not decrease, but offsets[{i}] = {} > offsets[{}] = {}",
                offsets[i],
                i + 1,
                offsets[i + 1]
            ),
        });
    }
    if let Some(&last) = offsets.last()
        && last as usize > len
    {
        return Err(Error::Argument {
            kernel: "segmented_sum".into(),
            argument: "offsets".into(),
            message: format!("the last offset {last} is past the end of the {len} values"),
        });
    }
    Ok(())
}

/// Per-segment sums on the GPU; returns the sums and the kernel time in ms.
pub fn segmented_sum(
    gpu: &Gpu,
    kernels: &ExampleKernels,
    values: &[f32],
    offsets: &[u32],
) -> Result<(Vec<f32>, f32)> {
    validate_offsets(offsets, values.len())?;
    let segments = offsets.len().saturating_sub(1);
    if segments == 0 {
        return Ok((Vec::new(), 0.0));
    }
    let (dv, doff) = (gpu.to_device(values)?, gpu.to_device(offsets)?);
    let mut sums = gpu.alloc_zeroed::<f32>(segments)?;
    let grid = u32::try_from(segments).map_err(|_| Error::Argument {
        kernel: "segmented_sum".into(),
        argument: "offsets".into(),
        message: format!("{segments} segments exceed one block per segment (2^32 - 1)"),
    })?;
    let config = LaunchConfig::new(grid, SEGMENT_BLOCK);
    let ((), ms) = gpu
        .default_stream()
        .time(|s| kernels.segmented_sum(s, config, &dv, &doff, &mut sums))?;
    Ok((sums.to_vec()?, ms))
}

/// Random segment lengths in `0..=2 * mean_len` (empty segments included) over random values.
pub fn random_segments(segments: usize, mean_len: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let lengths = crate::random_f32(segments, seed);
    let mut offsets = Vec::with_capacity(segments + 1);
    let mut total = 0u32;
    offsets.push(0);
    for l in lengths {
        total += ((l + 1.0) * mean_len as f32) as u32;
        offsets.push(total);
    }
    (crate::random_f32(total as usize, seed + 1), offsets)
}

pub fn run(
    gpu: &Gpu,
    kernels: &ExampleKernels,
    segments: usize,
    mean_len: usize,
) -> Result<(Comparison, f32, usize)> {
    let (values, offsets) = random_segments(segments, mean_len, 5);
    let (sums, ms) = segmented_sum(gpu, kernels, &values, &offsets)?;
    // f32 tree sums vs f64 sequential sums: error grows like sqrt(len) * eps * magnitude.
    let tol = 1e-5 * (2.0 * mean_len as f64).sqrt();
    Ok((
        compare(&sums, &segmented_sum_cpu(&values, &offsets), tol, tol),
        ms,
        values.len(),
    ))
}
