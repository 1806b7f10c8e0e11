// scripts/gpu/launch_errors.cc - what NVIDIA's driver returns from cuLaunchKernel for launches
// past the device's limits. NVIDIA's runtime passes the driver's code through unchanged (seen
// over Remora's libcuda.so.1) and reports cudaErrorInvalidConfiguration (9) for these natively,
// while the driver API documents CUDA_ERROR_INVALID_VALUE (1): which one does the driver give?
// Native driver API.
#include <cuda.h>

#include <cstdio>

#include "chain_cubin.h"  // chain.cu as a cubin (prepare.sh)

int main() {
  cuInit(0);
  CUdevice d;
  cuDeviceGet(&d, 0);
  CUcontext c;
  cuDevicePrimaryCtxRetain(&c, d);
  cuCtxSetCurrent(c);
  CUmodule mod;
  CUfunction fn;
  if (cuModuleLoadData(&mod, chain_cubin) || cuModuleGetFunction(&fn, mod, "Chain")) {
    std::printf("LAUNCH_ERRORS: the module did not load\n");
    return 1;
  }
  CUdeviceptr buf = 0;
  cuMemAlloc(&buf, 1 << 20);
  int iters = 1;
  void* args[] = {&buf, &buf, &iters};
  struct Case {
    const char* what;
    unsigned gx, gy, gz, bx, by, bz, shared;
  } cases[] = {
      {"1025 threads", 1, 1, 1, 1025, 1, 1, 0},
      {"grid.y 65536", 1, 65536, 1, 32, 1, 1, 0},
      {"block.z 65", 1, 1, 1, 1, 1, 65, 0},
      {"1 MiB dynamic shared", 1, 1, 1, 32, 1, 1, 1u << 20},
  };
  for (const Case& k : cases) {
    CUresult r = cuLaunchKernel(fn, k.gx, k.gy, k.gz, k.bx, k.by, k.bz, k.shared, nullptr, args,
                                nullptr);
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::printf("LAUNCH_ERRORS %s: cuLaunchKernel %d (%s)\n", k.what, static_cast<int>(r),
                name ? name : "no name");
  }
  return 0;
}
