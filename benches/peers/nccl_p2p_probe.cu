// NCCL point-to-point probe: grouped send + recv of 1 GiB each way between GPUs 0 and 1 in one
// process, best of 8, CUDA events; what the distributed sort's exchange can reach on this link.
// Modes: 0 cudaMalloc buffers, 1 ncclMemAlloc buffers, 2 ncclMemAlloc + ncclCommRegister,
// 3 cudaMemcpyPeerAsync both ways at once (copy engines, no NCCL). Built on the GPU machine
// against the nvidia-nccl wheel:
//
//   NCCL=$(python3 -c "import nvidia, glob; print(glob.glob(nvidia.__path__[0] + '/nccl')[0])")
//   nvcc -O2 -o /tmp/p2p benches/peers/nccl_p2p_probe.cu -I$NCCL/include -L$NCCL/lib \
//       -l:libnccl.so.2 -Xlinker -rpath=$NCCL/lib
//   /tmp/p2p 0      # sets NCCL_NVLS_ENABLE=0 itself
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nccl.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define NK(x) do { ncclResult_t r = (x); if (r != ncclSuccess) { printf("nccl %s line %d\n", ncclGetErrorString(r), __LINE__); exit(1);} } while (0)
int main(int argc, char** argv) {
  // NVLink multicast stays off on the shared machines, whatever the caller's environment.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  size_t bytes = (size_t)1 << 30;
  int mode = argc > 1 ? atoi(argv[1]) : 0;
  int devs[2] = {0, 1};
  ncclComm_t comms[2];
  NK(ncclCommInitAll(comms, 2, devs));
  void *sb[2], *rb[2], *sh[2], *rh[2];
  cudaStream_t st[2];
  cudaEvent_t e0[2], e1[2];
  for (int d = 0; d < 2; d++) {
    CK(cudaSetDevice(d));
    CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0[d])); CK(cudaEventCreate(&e1[d]));
    if (mode == 0 || mode == 3) { CK(cudaMalloc(&sb[d], bytes)); CK(cudaMalloc(&rb[d], bytes)); }
    else { NK(ncclMemAlloc(&sb[d], bytes)); NK(ncclMemAlloc(&rb[d], bytes)); }
    CK(cudaMemset(sb[d], d + 1, bytes));
    if (mode == 2) { NK(ncclCommRegister(comms[d], sb[d], bytes, &sh[d])); NK(ncclCommRegister(comms[d], rb[d], bytes, &rh[d])); }
    if (mode == 3) { int can; cudaDeviceCanAccessPeer(&can, d, 1 - d); if (can) cudaDeviceEnablePeerAccess(1 - d, 0); }
  }
  float best = 1e9;
  for (int it = 0; it < 8; it++) {
    for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaDeviceSynchronize()); }
    for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaEventRecord(e0[d], st[d])); }
    if (mode == 3) {
      for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaMemcpyPeerAsync(rb[1 - d], 1 - d, sb[d], d, bytes, st[d])); }
    } else {
      NK(ncclGroupStart());
      for (int d = 0; d < 2; d++) {
        NK(ncclSend(sb[d], bytes, ncclUint8, 1 - d, comms[d], st[d]));
        NK(ncclRecv(rb[d], bytes, ncclUint8, 1 - d, comms[d], st[d]));
      }
      NK(ncclGroupEnd());
    }
    for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaEventRecord(e1[d], st[d])); }
    float worst = 0;
    for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaEventSynchronize(e1[d])); float ms; CK(cudaEventElapsedTime(&ms, e0[d], e1[d])); if (ms > worst) worst = ms; }
    if (worst < best) best = worst;
  }
  unsigned char v; CK(cudaSetDevice(0)); CK(cudaMemcpy(&v, (char*)rb[0] + bytes - 1, 1, cudaMemcpyDeviceToHost));
  printf("mode %d: best %.3f ms, %.1f GB/s per direction, check %s\n", mode, best, bytes / best / 1e6, v == 2 ? "ok" : "BAD");
  return 0;
}
