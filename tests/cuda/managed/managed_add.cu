// tests/cuda/managed/managed_add.cu - "An Even Easier Introduction to CUDA": add
// two arrays in managed memory with a grid-stride kernel, checked against a CPU
// reference on random data. Also: cudaMemAdvise/cudaMemPrefetchAsync are accepted and
// cudaMemRangeGetAttribute reports them back as a GPU does, the pointer reports
// cudaMemoryTypeManaged, the device reports managed memory (and, whatever
// it says of concurrent access, the host touches the arrays only between synchronisations).
#include "common.h"

__global__ void add(int n, const float* x, float* y) {
  int index = blockIdx.x * blockDim.x + threadIdx.x;
  int stride = blockDim.x * gridDim.x;
  for (int i = index; i < n; i += stride) y[i] = x[i] + y[i];
}

int Attribute(cudaMemRangeAttribute a, const void* p, size_t bytes) {
  int v = 12345;
  CHECK(cudaMemRangeGetAttribute(&v, sizeof v, a, p, bytes));
  return v;
}

// What the arrays were told, read back: an attribute holds for a range only if it holds on
// every page of it. `x` was advised read-mostly and both were prefetched to the device.
int CheckAdvice(const float* x, float* y, size_t bytes) {
  int failures = 0;
  auto expect = [&](const char* what, int got, int want) {
    if (got != want && failures++ < 10) std::printf("%s: %d, expected %d\n", what, got, want);
  };
  const size_t half = bytes / 2;
  cudaMemLocation dev{}, host{};
  dev.type = cudaMemLocationTypeDevice;
  dev.id = 0;
  host.type = cudaMemLocationTypeHost;
  expect("x read-mostly", Attribute(cudaMemRangeAttributeReadMostly, x, bytes), 1);
  expect("y read-mostly", Attribute(cudaMemRangeAttributeReadMostly, y, bytes), 0);
  expect("x last prefetch", Attribute(cudaMemRangeAttributeLastPrefetchLocation, x, bytes), 0);
  expect("x last prefetch type", Attribute(cudaMemRangeAttributeLastPrefetchLocationType, x, bytes),
         cudaMemLocationTypeDevice);
  expect("x preferred (never set)", Attribute(cudaMemRangeAttributePreferredLocation, x, bytes),
         cudaInvalidDeviceId);

  CHECK(cudaMemAdvise(y, half, cudaMemAdviseSetPreferredLocation, host));
  expect("y's first half preferred", Attribute(cudaMemRangeAttributePreferredLocation, y, half),
         cudaCpuDeviceId);
  expect("y's first half preferred type",
         Attribute(cudaMemRangeAttributePreferredLocationType, y, half), cudaMemLocationTypeHost);
  expect("y preferred (half of it)", Attribute(cudaMemRangeAttributePreferredLocation, y, bytes),
         cudaInvalidDeviceId);
  CHECK(cudaMemAdvise(y, bytes, cudaMemAdviseUnsetPreferredLocation, host));
  expect("y's first half preferred, unset",
         Attribute(cudaMemRangeAttributePreferredLocation, y, half), cudaInvalidDeviceId);

  CHECK(cudaMemAdvise(y, bytes, cudaMemAdviseSetAccessedBy, dev));
  int by[3] = {7, 7, 7};
  CHECK(cudaMemRangeGetAttribute(by, sizeof by, cudaMemRangeAttributeAccessedBy, y, bytes));
  expect("y accessed by [0]", by[0], 0);
  expect("y accessed by [1]", by[1], cudaInvalidDeviceId);
  expect("y accessed by [2]", by[2], cudaInvalidDeviceId);
  CHECK(cudaMemAdvise(y, bytes, cudaMemAdviseUnsetAccessedBy, dev));
  CHECK(cudaMemRangeGetAttribute(by, sizeof by, cudaMemRangeAttributeAccessedBy, y, bytes));
  expect("y accessed by [0], unset", by[0], cudaInvalidDeviceId);

  CHECK(cudaMemPrefetchAsync(y + half / sizeof(float), bytes - half, host, 0, nullptr));
  CHECK(cudaDeviceSynchronize());
  expect(
      "y's second half last prefetch",
      Attribute(cudaMemRangeAttributeLastPrefetchLocation, y + half / sizeof(float), bytes - half),
      cudaCpuDeviceId);
  expect("y last prefetch (two places)",
         Attribute(cudaMemRangeAttributeLastPrefetchLocation, y, bytes), cudaInvalidDeviceId);
  CHECK(cudaMemAdvise(x, bytes, cudaMemAdviseUnsetReadMostly, dev));
  expect("x read-mostly, unset", Attribute(cudaMemRangeAttributeReadMostly, x, bytes), 0);
  return failures;
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
  CHECK(cudaDeviceSynchronize());
  int failures = CheckAdvice(x, y, n * sizeof(float));

  int block = 256;
  int grid = (n + block - 1) / block;
  if (grid > 64) grid = 64;  // the grid-stride loop covers the rest
  add<<<grid, block>>>(n, x, y);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

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
