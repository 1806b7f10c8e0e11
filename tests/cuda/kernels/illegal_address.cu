// tests/cuda/kernels/illegal_address.cu - a kernel writes outside every allocation; the error is
// sticky.
//
// Exits 0 and prints PASS when the runtime reports cudaErrorIllegalAddress at
// the next synchronisation, from cudaGetLastError, and again afterwards.
#include "common.h"

__global__ void writeFarAway(int* p, long long offset) {
  p[offset] = 42;
}

int main() {
  int* dev;
  CHECK(cudaMalloc(&dev, 256 * sizeof(int)));
  CHECK(cudaMemset(dev, 0, 256 * sizeof(int)));
  // 1 TiB past a small allocation: no allocation can be there.
  writeFarAway<<<1, 1>>>(dev, 1ll << 38);
  cudaError_t launch = cudaGetLastError();
  // The launch is valid; a fast device may already have faulted, nothing else.
  if (launch != cudaSuccess && launch != cudaErrorIllegalAddress) {
    std::printf("FAIL: launch returned %s\n", cudaGetErrorName(launch));
    return 1;
  }
  cudaError_t sync = cudaDeviceSynchronize();
  cudaError_t last = cudaGetLastError();
  cudaError_t again = cudaDeviceSynchronize();  // sticky: the context stays broken
  int h = 0;
  cudaError_t copy = cudaMemcpy(&h, dev, sizeof(int), cudaMemcpyDeviceToHost);
  std::printf("sync %s, last %s, again %s, copy %s\n", cudaGetErrorName(sync),
              cudaGetErrorName(last), cudaGetErrorName(again), cudaGetErrorName(copy));
  int failures = (sync != cudaErrorIllegalAddress) + (last != cudaErrorIllegalAddress) +
                 (again != cudaErrorIllegalAddress) + (copy != cudaErrorIllegalAddress);
  std::printf("%s\n", cudaGetErrorString(sync));
  return Finish(failures, "illegal_address");
}
