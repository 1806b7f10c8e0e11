// bench/e2e/empty_kernel.cu - the empty kernel and its launch loop, built by nvcc -cudart shared.
//
// Compiled twice at build time: to an object linked into remora_e2e_bench (its
// fat binary registers with the stub runtime, launches go through
// __cudaPushCallConfiguration/cudaLaunchKernel as in any user program), and to
// PTX (compute_75) that the in-process baseline loads with cuModuleLoadData.
#include <cuda_runtime_api.h>

extern "C" __global__ void remora_e2e_empty() {}

// Launches remora_e2e_empty<<<1, 1>>> `n` times on the legacy stream without
// waiting. Returns the first launch error, else cudaGetLastError().
extern "C" int RemoraE2eLaunchEmpty(int n) {
  for (int i = 0; i < n; ++i) {
    remora_e2e_empty<<<1, 1>>>();
  }
  return static_cast<int>(cudaGetLastError());
}
