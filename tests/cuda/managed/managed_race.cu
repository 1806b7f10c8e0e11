// tests/cuda/managed/managed_race.cu - the host writes managed memory a running kernel also
// writes, which CUDA leaves undefined unless the device reports concurrent managed access
// (a GPU without it faults the host's access; with it, as an H200, the two race). Every
// element the host left alone must hold the kernel's value after the synchronization, and the
// one it wrote either value. Under Remora over gRPC, where the memory is mirrored and the
// device reports no concurrent access, the tenant's stderr must say the host's write was lost
// (the gRPC test checks that line).
#include "common.h"

__global__ void fill(int* a, int n, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = v;
}

int main() {
  const int n = 4096;
  int* a = nullptr;
  cudaError_t e = cudaMallocManaged(&a, n * sizeof(int));
  if (e == cudaErrorNotSupported) Unsupported("cudaMallocManaged", cudaDevAttrManagedMemory);
  CHECK(e);
  for (int i = 0; i < n; ++i) a[i] = 0;
  fill<<<n / 256, 256>>>(a, n, 1);
  CHECK(cudaGetLastError());
  a[5] = 7;  // while the kernel may run
  CHECK(cudaDeviceSynchronize());
  int failures = 0;
  for (int i = 0; i < n; ++i)
    if (i != 5 && a[i] != 1 && failures++ < 10) std::printf("a[%d] = %d, expected 1\n", i, a[i]);
  if (a[5] != 1 && a[5] != 7) {
    std::printf("a[5] = %d, expected 1 or 7\n", a[5]);
    ++failures;
  }
  CHECK(cudaFree(a));
  return Finish(failures, "managed_race");
}
