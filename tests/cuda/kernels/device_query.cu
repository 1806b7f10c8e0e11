// tests/cuda/kernels/device_query.cu - device count, properties and attributes, driver/runtime
// versions.
#include "common.h"

int main() {
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) std::printf("mismatch: %s\n", what);
    failures += !ok;
  };
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  expect(count >= 1, "at least one device");
  CHECK(cudaSetDevice(0));
  int device = -1;
  CHECK(cudaGetDevice(&device));
  expect(device == 0, "current device is 0");

  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device 0: %s, compute %d.%d, %d SMs, %.0f MiB, warp %d\n", prop.name, prop.major,
              prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1048576.0, prop.warpSize);
  expect(prop.name[0] != '\0', "a device name");
  expect(prop.major >= 7, "compute capability 7.0 or newer");
  expect(prop.warpSize == 32, "warp size 32");
  expect(prop.totalGlobalMem > 0, "global memory");
  size_t free_bytes = 0, total_bytes = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  expect(prop.totalGlobalMem == total_bytes, "the properties' memory is cudaMemGetInfo's total");
  expect(prop.multiProcessorCount > 0, "SM count");
  expect(prop.maxThreadsPerBlock >= 1024, "1024 threads per block");
  expect(prop.sharedMemPerBlock >= 48 * 1024, "48 KiB shared memory per block");
  expect(prop.maxGridSize[0] >= 65535, "grid x limit");

  struct {
    cudaDeviceAttr attr;
    int expected;
    const char* what;
  } const checks[] = {
      {cudaDevAttrComputeCapabilityMajor, prop.major, "major"},
      {cudaDevAttrComputeCapabilityMinor, prop.minor, "minor"},
      {cudaDevAttrWarpSize, prop.warpSize, "warp size"},
      {cudaDevAttrMaxThreadsPerBlock, prop.maxThreadsPerBlock, "max threads per block"},
      {cudaDevAttrMultiProcessorCount, prop.multiProcessorCount, "SM count"},
      {cudaDevAttrMaxBlockDimX, prop.maxThreadsDim[0], "block dim x"},
      {cudaDevAttrMaxGridDimX, prop.maxGridSize[0], "grid dim x"},
      {cudaDevAttrMaxSharedMemoryPerBlock, static_cast<int>(prop.sharedMemPerBlock),
       "shared per block"},
  };
  for (const auto& c : checks) {
    int value = -1;
    CHECK(cudaDeviceGetAttribute(&value, c.attr, 0));
    expect(value == c.expected, c.what);
  }
  int bad = 0;
  EXPECT_CUDA(cudaDeviceGetAttribute(&bad, cudaDevAttrWarpSize, count), cudaErrorInvalidDevice);
  EXPECT_CUDA(cudaGetDeviceProperties(&prop, count), cudaErrorInvalidDevice);
  EXPECT_CUDA(cudaSetDevice(count), cudaErrorInvalidDevice);
  (void)cudaGetLastError();  // clear the deliberate errors

  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf("driver %d, runtime %d\n", driver, runtime);
  expect(runtime / 1000 == 13, "runtime 13.x");
  expect(driver >= runtime, "driver at least as new as the runtime");

  // The device by its PCI bus id, both ways; device 0's default pool by location.
  char bus[32] = {};
  CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
  int by_bus = -1;
  CHECK(cudaDeviceGetByPCIBusId(&by_bus, bus));
  expect(by_bus == 0, "cudaDeviceGetByPCIBusId finds device 0");
  EXPECT_CUDA(cudaDeviceGetByPCIBusId(&by_bus, "0000:ff:1f.7"), cudaErrorInvalidDevice);
  (void)cudaGetLastError();
  cudaMemPool_t pool_dev = nullptr, pool_loc = nullptr;
  CHECK(cudaDeviceGetDefaultMemPool(&pool_dev, 0));
  cudaMemLocation loc{cudaMemLocationTypeDevice, 0};
  CHECK(cudaMemGetDefaultMemPool(&pool_loc, &loc, cudaMemAllocationTypePinned));
  expect(pool_dev == pool_loc, "the default pool by device and by location");
  CHECK(cudaDeviceSynchronize());
  return Finish(failures, "device_query");
}
