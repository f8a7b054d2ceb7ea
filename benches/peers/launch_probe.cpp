// The C++ peer of `launch-bench`: host wall time per `cuLaunchKernel` of the same tiny kernel
// (`saxpy` on 256 floats, one block of 256 threads).
//
// As a shared library (what `launch-bench --probe-lib` loads), the C++ loop runs in the bench's
// own process, on the same context, stream, kernel and buffers as the Rust rows, interleaved
// trial by trial with them:
//
//   nvcc -O2 -shared -Xcompiler -fPIC -o liblaunch_probe.so launch_probe.cpp -lcuda
//
// As a program, it loads the kernel from the example crate's PTX itself:
//
//   nvcc -O2 -o launch_probe launch_probe.cpp -lcuda
//   ./launch_probe example_kernels.ptx   -> "cuLaunchKernel_us <best microseconds per launch>"
//
// Timing: the submit loop only (a synchronize follows outside the timed part, so the launch
// queue never fills).
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

// `launches` back-to-back launches of `f` (one block of 256 threads) on `stream` with `params`;
// the mean host time per launch in microseconds, or -1 if a launch failed (reported on stderr).
extern "C" double launch_probe_loop(CUfunction f, CUstream stream, void** params, int launches) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) {
        CUresult r = cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, stream, params, nullptr);
        if (r != CUDA_SUCCESS) {
            const char* s = nullptr;
            cuGetErrorString(r, &s);
            std::fprintf(stderr, "cuLaunchKernel failed: %s\n", s ? s : "?");
            return -1.0;
        }
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / launches;
}

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
    if (launch_probe_loop(f, stream, params, 2000) < 0) return 1;
    CHECK(cuStreamSynchronize(stream));
    double best = 1e30;
    for (int trial = 0; trial < 20; ++trial) {
        double us = launch_probe_loop(f, stream, params, 1000);
        CHECK(cuStreamSynchronize(stream));
        if (us < 0) return 1;
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
