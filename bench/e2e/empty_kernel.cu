// bench/e2e/empty_kernel.cu - the e2e kernels and launch loops, built by nvcc -cudart shared.
//
// Compiled twice at build time: to an object linked into remora_e2e_bench (its
// fat binary registers with the stub runtime, launches go through
// __cudaPushCallConfiguration/cudaLaunchKernel as in any user program), and to
// PTX (compute_75) that the in-process baseline loads with cuModuleLoadData.
#include <cuda_runtime_api.h>

extern "C" __global__ void remora_e2e_empty() {}

// Writes through `p`: launched with a null pointer, a device fault (illegal address).
extern "C" __global__ void remora_e2e_fault(int* p) {
  *p = 1;
}

// Launches remora_e2e_empty<<<1, 1>>> `n` times on the legacy stream without
// waiting. Returns the first launch error, else cudaGetLastError().
extern "C" int RemoraE2eLaunchEmpty(int n) {
  for (int i = 0; i < n; ++i) {
    remora_e2e_empty<<<1, 1>>>();
  }
  return static_cast<int>(cudaGetLastError());
}

// Launches remora_e2e_empty<<<1, 1, 0, s>>> once; returns cudaGetLastError().
extern "C" int RemoraE2eLaunchEmptyOn(cudaStream_t s) {
  remora_e2e_empty<<<1, 1, 0, s>>>();
  return static_cast<int>(cudaGetLastError());
}

// Launches remora_e2e_fault<<<1, 1>>>(nullptr) on the legacy stream without waiting.
// Returns cudaGetLastError() (the fault itself shows at the next synchronisation).
extern "C" int RemoraE2eLaunchFault() {
  remora_e2e_fault<<<1, 1>>>(nullptr);
  return static_cast<int>(cudaGetLastError());
}
