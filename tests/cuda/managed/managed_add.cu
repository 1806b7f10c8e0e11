// tests/cuda/managed/managed_add.cu - "An Even Easier Introduction to CUDA": add
// two arrays in managed memory with a grid-stride kernel, checked against a CPU
// reference on random data. Also: cudaMemAdvise/cudaMemPrefetchAsync are accepted,
// the pointer reports cudaMemoryTypeManaged, the device reports managed memory (and, whatever
// it says of concurrent access, the host touches the arrays only between synchronisations).
#include "common.h"

__global__ void add(int n, const float* x, float* y) {
  int index = blockIdx.x * blockDim.x + threadIdx.x;
  int stride = blockDim.x * gridDim.x;
  for (int i = index; i < n; i += stride) y[i] = x[i] + y[i];
}

int main(int argc, char** argv) {
  const int n = static_cast<int>(Flag(argc, argv, "n", 1 << 16));
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 7)));
  float *x = nullptr, *y = nullptr;
  cudaError_t e = cudaMallocManaged(&x, n * sizeof(float));
  if (e == cudaErrorNotSupported) Unsupported("cudaMallocManaged", cudaDevAttrManagedMemory);
  CHECK(e);
  CHECK(cudaMallocManaged(&y, n * sizeof(float)));
  int managed = 0, concurrent = -1;
  CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
  CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
  REQUIRE(managed == 1);
  // Either answer is a device's own (an H200 says 1); this program touches managed memory from
  // the host only between synchronisations, which is right under both.
  REQUIRE(concurrent == 0 || concurrent == 1);
  // Remora serves managed memory as host copies made coherent at synchronisations.
  if (UnderRemora("concurrent managed access")) REQUIRE(concurrent == 0);

  std::vector<float> ref(n);
  for (int i = 0; i < n; ++i) {
    x[i] = rng.Uniform(-100.0f, 100.0f);
    y[i] = rng.Uniform(-100.0f, 100.0f);
    ref[i] = x[i] + y[i];
  }
  cudaPointerAttributes attr;
  CHECK(cudaPointerGetAttributes(&attr, y));
  REQUIRE(attr.type == cudaMemoryTypeManaged);
  REQUIRE(attr.devicePointer == y && attr.hostPointer == y);

  cudaMemLocation dev{};
  dev.type = cudaMemLocationTypeDevice;
  dev.id = 0;
  CHECK(cudaMemAdvise(x, n * sizeof(float), cudaMemAdviseSetReadMostly, dev));
  CHECK(cudaMemPrefetchAsync(x, n * sizeof(float), dev, 0, nullptr));
  CHECK(cudaMemPrefetchAsync(y, n * sizeof(float), dev, 0, nullptr));

  int block = 256;
  int grid = (n + block - 1) / block;
  if (grid > 64) grid = 64;  // the grid-stride loop covers the rest
  add<<<grid, block>>>(n, x, y);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  int failures = 0;
  for (int i = 0; i < n; ++i)
    if (y[i] != ref[i] && failures++ < 5) std::printf("y[%d] = %f, expected %f\n", i, y[i], ref[i]);
  // The host writes again, the kernel sees it after the next launch.
  for (int i = 0; i < n; ++i) y[i] = 1.0f;
  add<<<grid, block>>>(n, x, y);
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; ++i)
    if (y[i] != x[i] + 1.0f && failures++ < 10)
      std::printf("second pass y[%d] = %f, expected %f\n", i, y[i], x[i] + 1.0f);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  return Finish(failures, "managed add");
}
