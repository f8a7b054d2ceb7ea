//! The algorithms on the CPU simulator: the 98-kernel module loads with its simulator entries
//! and the multi-block algorithms (decoupled look-back scan, onesweep sort) give the CPU's
//! answers. Runs everywhere (no GPU needed).

use gpu_algorithms::Algorithms;
use gpu_algorithms::gpu::ops::{Max, Sum};
use gpu_host::Gpu;

#[test]
fn reduce_scan_and_sort_on_the_simulator() {
    let gpu = Gpu::simulator().unwrap();
    let algos = Algorithms::load(&gpu).unwrap_or_else(|e| panic!("{e}"));
    let stream = gpu.default_stream();
    let n = 50_000u32;
    let values: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    let x = gpu.to_device(&values).unwrap();

    let sum = algos.reduce(stream, &x, Sum, 0u32).unwrap();
    assert_eq!(sum, values.iter().fold(0u32, |a, &v| a.wrapping_add(v)));
    let max = algos.reduce(stream, &x, Max, 0u32).unwrap();
    assert_eq!(max, *values.iter().max().unwrap());

    let mut prefix = gpu.alloc_zeroed::<u32>(values.len()).unwrap();
    algos.inclusive_scan(stream, &x, &mut prefix, Sum).unwrap();
    let expected: Vec<u32> = values
        .iter()
        .scan(0u32, |acc, &v| {
            *acc = acc.wrapping_add(v);
            Some(*acc)
        })
        .collect();
    assert_eq!(prefix.to_vec().unwrap(), expected);

    let mut sorted = gpu.alloc_zeroed::<u32>(values.len()).unwrap();
    algos.sort_keys(stream, &x, &mut sorted).unwrap();
    let mut expected = values.clone();
    expected.sort_unstable();
    assert_eq!(sorted.to_vec().unwrap(), expected);
}
