// The C++ peer of `launch-bench`: host wall time per `cuLaunchKernel` of the same tiny kernel
// (`saxpy` on 256 floats, one block of 256 threads), loaded from the seed crate's PTX unit.
//
//   nvcc -O2 -o launch_probe launch_probe.cpp -lcuda
//   ./launch_probe saxpy.ptx            -> "cuLaunchKernel_us <best microseconds per launch>"
//
// Same procedure as `launch-bench`: 2000 warm-up launches, then the best of 20 trials of 1000
// back-to-back launches (the submit loop only; each trial ends with a synchronize outside the
// timed part, so the launch queue never fills).
#include <cuda.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                              \
    do {                                                                      \
        CUresult r = (x);                                                     \
        if (r != CUDA_SUCCESS) {                                              \
            const char* s = nullptr;                                          \
            cuGetErrorString(r, &s);                                          \
            std::fprintf(stderr, "%s failed: %s\n", #x, s ? s : "?");         \
            std::exit(1);                                                     \
        }                                                                     \
    } while (0)

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s SAXPY_PTX\n", argv[0]);
        return 2;
    }
    CHECK(cuInit(0));
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CUmodule module;
    CHECK(cuModuleLoad(&module, argv[1]));
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, module, "saxpy"));
    const uint64_t n = 256;
    CUdeviceptr x, y, out;
    CHECK(cuMemAlloc(&x, n * 4));
    CHECK(cuMemAlloc(&y, n * 4));
    CHECK(cuMemAlloc(&out, n * 4));
    CHECK(cuMemsetD32(x, 0x3f800000u, n));  // 1.0f
    CHECK(cuMemsetD32(y, 0x40000000u, n));  // 2.0f
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    // saxpy(alpha: f32, x: &[f32], y: &[f32], out: DisjointSlice<f32>): pointer + length each.
    float alpha = 2.0f;
    uint64_t len = n;
    void* params[] = {&alpha, &x, &len, &y, &len, &out, &len};
    auto launch = [&] {
        CHECK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, stream, params, nullptr));
    };
    for (int i = 0; i < 2000; ++i) launch();
    CHECK(cuStreamSynchronize(stream));
    double best = 1e30;
    for (int trial = 0; trial < 20; ++trial) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 1000; ++i) launch();
        auto t1 = std::chrono::steady_clock::now();
        CHECK(cuStreamSynchronize(stream));
        double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / 1000.0;
        if (us < best) best = us;
    }
    float check[4];
    CHECK(cuMemcpyDtoH(check, out, sizeof check));
    if (check[0] != 4.0f) {
        std::fprintf(stderr, "saxpy computed %f, expected 4\n", check[0]);
        return 1;
    }
    std::printf("cuLaunchKernel_us %.4f\n", best);
    return 0;
}
