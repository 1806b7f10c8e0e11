// tests/cuda/kernels/illegal_address.cu - a kernel writes outside every allocation, or (argument
// "misaligned") loads a float4 from an address 4 bytes past a 16-byte boundary; the error is
// sticky.
//
// Exits 0 and prints PASS when the runtime reports cudaErrorIllegalAddress (or
// cudaErrorMisalignedAddress) at the next synchronisation, from cudaGetLastError, and again
// afterwards.
#include <cstring>

#include "common.h"

__global__ void writeFarAway(int* p, long long offset) {
  p[offset] = 42;
}

__global__ void loadMisaligned(const float* p, float* out) {
  const float4 v = *reinterpret_cast<const float4*>(p + 1);
  out[0] = v.x + v.y + v.z + v.w;
}

int main(int argc, char** argv) {
  const bool misaligned = argc > 1 && std::strcmp(argv[1], "misaligned") == 0;
  const cudaError_t want = misaligned ? cudaErrorMisalignedAddress : cudaErrorIllegalAddress;
  int* dev;
  CHECK(cudaMalloc(&dev, 256 * sizeof(int)));
  CHECK(cudaMemset(dev, 0, 256 * sizeof(int)));
  if (misaligned) {
    loadMisaligned<<<1, 32>>>(reinterpret_cast<const float*>(dev),
                              reinterpret_cast<float*>(dev) + 128);
  } else {
    // 1 TiB past a small allocation: no allocation can be there.
    writeFarAway<<<1, 1>>>(dev, 1ll << 38);
  }
  cudaError_t launch = cudaGetLastError();
  // The launch is valid; a fast device may already have faulted, nothing else.
  if (launch != cudaSuccess && launch != want) {
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
  int failures = (sync != want) + (last != want) + (again != want) + (copy != want);
  std::printf("%s\n", cudaGetErrorString(sync));
  return Finish(failures, misaligned ? "misaligned_address" : "illegal_address");
}
