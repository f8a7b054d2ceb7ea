/* A do-nothing CUDA driver, for timing the host side of launches on a machine without a GPU
 * (host/gpu-host/tests/launch_overhead.rs, `launch_cost_around_the_driver`): every call that
 * gpu-host and cudarc make there succeeds, memory is host memory, kernels never run, and the
 * device reports an H100's limits. Not a simulator: kernels' results are never computed.
 *
 *   mkdir -p /tmp/stub-libcuda
 *   cc -O2 -shared -fPIC -o /tmp/stub-libcuda/libcuda.so host/gpu-host/tests/stub_libcuda.c
 *   LD_LIBRARY_PATH=/tmp/stub-libcuda cargo test --release -p gpu-host \
 *       --test launch_overhead -- --ignored --nocapture launch_cost
 *
 * A call the stub lacks makes cudarc panic naming the symbol; add it here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef int CUresult;
typedef void *CUcontext, *CUstream, *CUmodule, *CUfunction, *CUevent;
typedef unsigned long long CUdeviceptr;
static __thread CUcontext current;
static char the_ctx, a_module, a_function;
CUresult cuInit(unsigned f) { return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 12080; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int o) { *d = o; return 0; }
CUresult cuDeviceGetName(char *n, int len, int d) { strncpy(n, "stub libcuda (no GPU)", len); return 0; }
CUresult cuDeviceTotalMem_v2(size_t *b, int d) { *b = 80ull << 30; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  switch (attr) {
  case 1: *v = 1024; break;            // max threads per block
  case 2: case 3: *v = 1024; break;    // block dims x y
  case 4: *v = 64; break;              // block z
  case 5: *v = 2147483647; break;      // grid x
  case 6: case 7: *v = 65535; break;   // grid y z
  case 8: *v = 49152; break;           // shared per block
  case 10: *v = 32; break;             // warp size
  case 12: *v = 65536; break;          // registers per block
  case 16: *v = 132; break;            // SMs
  case 39: *v = 2048; break;           // threads per SM
  case 75: *v = 9; break;              // cc major
  case 76: *v = 0; break;              // cc minor
  case 81: *v = 233472; break;         // shared per SM
  case 82: *v = 65536; break;          // registers per SM
  case 97: *v = 232448; break;         // shared opt-in
  case 106: *v = 32; break;            // blocks per SM
  case 13: *v = 1980000; break;
  case 36: *v = 2619000; break;
  case 37: *v = 5120; break;
  case 38: *v = 50 << 20; break;
  default: *v = 0;
  }
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, int d) { *c = &the_ctx; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return 0; }
CUresult cuCtxSetCurrent(CUcontext c) { current = c; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }
CUresult cuStreamCreate(CUstream *s, unsigned f) { *s = malloc(16); return 0; }
CUresult cuStreamCreateWithPriority(CUstream *s, unsigned f, int p) { *s = malloc(16); return 0; }
CUresult cuStreamDestroy_v2(CUstream s) { free(s); return 0; }
CUresult cuStreamSynchronize(CUstream s) { return 0; }
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) { return 0; }
CUresult cuEventCreate(CUevent *e, unsigned f) { *e = malloc(16); return 0; }
CUresult cuEventDestroy_v2(CUevent e) { free(e); return 0; }
CUresult cuEventRecord(CUevent e, CUstream s) { return 0; }
CUresult cuEventSynchronize(CUevent e) { return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { *p = (CUdeviceptr)aligned_alloc(256, (n + 255) / 256 * 256); return 0; }
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)d, s, n); return 0; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st) { memcpy((void *)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (void *)s, n); return 0; }
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st) { memcpy(d, (void *)s, n); return 0; }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void *)d, v, n); return 0; }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { memset((void *)d, v, n); return 0; }
CUresult cuModuleLoadData(CUmodule *m, const void *img) { *m = &a_module; return 0; }
CUresult cuModuleLoadDataEx(CUmodule *m, const void *img, unsigned n, void *o, void **ov) { *m = &a_module; return 0; }
CUresult cuModuleUnload(CUmodule m) { return 0; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) { *f = &a_function; return 0; }
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *n, CUmodule m, const char *name) { return 500; } // not found
CUresult cuFuncGetAttribute(int *v, int attr, CUfunction f) {
  switch (attr) { case 0: *v = 1024; break; case 4: *v = 16; break; case 5: *v = 80; break; case 6: *v = 90; break; case 8: *v = 49152; break; default: *v = 0; }
  return 0;
}
CUresult cuFuncSetAttribute(CUfunction f, int attr, int v) { return 0; }
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream s, void **params, void **extra) { return 0; }
CUresult cuGetErrorString(CUresult e, const char **s) { *s = "stub error"; return 0; }
CUresult cuGetErrorName(CUresult e, const char **s) { *s = "STUB_ERROR"; return 0; }
CUresult cuPointerGetAttribute(void *d, int a, CUdeviceptr p) { return 0; }
CUresult cuCtxPushCurrent_v2(CUcontext c) { current = c; return 0; }
CUresult cuCtxPopCurrent_v2(CUcontext *c) { if (c) *c = current; return 0; }
