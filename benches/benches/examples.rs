//! Example kernels under criterion, timed with CUDA events. Without a GPU this prints SKIPPED.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use example_kernels::matmul::{MatDims, TILE};
use gpu_examples::ExampleKernels;
use gpu_host::{Gpu, LaunchConfig};

fn seed(c: &mut Criterion) {
    let gpu = match Gpu::first() {
        Ok(gpu) => gpu,
        Err(err) => {
            println!("SKIPPED seed benchmarks: needs a GPU ({err})");
            return;
        }
    };
    let kernels = ExampleKernels::load(&gpu).expect("loading the example kernels");
    let stream = gpu.default_stream();

    let n = 1 << 26;
    let a = gpu.to_device(&gpu_examples::random_f32(n, 1)).unwrap();
    let b = gpu.to_device(&gpu_examples::random_f32(n, 2)).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let mut group = c.benchmark_group("vector");
    group.throughput(Throughput::Bytes(3 * 4 * n as u64));
    group.bench_function("vector_add 2^26", |bench| {
        bench.iter_custom(|iters| {
            benches::gpu_time(stream, iters, |s| {
                kernels.vector_add(s, LaunchConfig::for_elements(n, 256), &a, &b, &mut out)
            })
            .unwrap()
        })
    });
    group.finish();

    let dims = MatDims {
        m: 2048,
        n: 2048,
        k: 2048,
    };
    let ma = gpu
        .to_device(&gpu_examples::random_f32(2048 * 2048, 3))
        .unwrap();
    let mb = gpu
        .to_device(&gpu_examples::random_f32(2048 * 2048, 4))
        .unwrap();
    let mut mc = gpu.alloc_zeroed::<f32>(2048 * 2048).unwrap();
    let config = LaunchConfig::tiles_2d(dims.n, dims.m, (TILE, TILE));
    let mut group = c.benchmark_group("matmul");
    group.throughput(Throughput::Elements(2 * 2048u64.pow(3)));
    group.sample_size(20);
    group.bench_function("matmul_tiled 2048^3", |bench| {
        bench.iter_custom(|iters| {
            benches::gpu_time(stream, iters, |s| {
                kernels.matmul_tiled(s, config, &ma, &mb, &mut mc, dims)
            })
            .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, seed);
criterion_main!(benches);
