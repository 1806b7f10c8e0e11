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

// Spins until %globaltimer reaches `deadline_ns` (on the emulated GPU the host's
// CLOCK_REALTIME), then stores the time it stopped in *ended.
extern "C" __global__ void remora_e2e_until(unsigned long long deadline_ns,
                                            unsigned long long* ended) {
  unsigned long long t = 0;
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t < deadline_ns);
  *ended = t;
}

// Launches remora_e2e_until<<<1, 1, 0, s>>>; returns cudaGetLastError().
extern "C" int RemoraE2eLaunchUntilOn(cudaStream_t s, unsigned long long deadline_ns,
                                      unsigned long long* ended) {
  remora_e2e_until<<<1, 1, 0, s>>>(deadline_ns, ended);
  return static_cast<int>(cudaGetLastError());
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
