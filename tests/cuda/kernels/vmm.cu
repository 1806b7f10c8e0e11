// tests/cuda/kernels/vmm.cu - virtual memory management as frameworks use it (PyTorch's
// expandable segments, NCCL): the runtime for kernels and copies, the driver API for an address
// reservation with physical allocations mapped into it side by side, access set over them, a
// kernel and copies that span two mappings, two mappings of one allocation seeing the same
// bytes, the memory counted in cudaMemGetInfo while it is held, and everything undone.
//
// Usage: vmm              the whole walk, results checked against the CPU on random data
//        vmm -limit 1     under remora run --gpu-memory-limit: allocations past the tenant's
//                         limit are refused with CUDA_ERROR_OUT_OF_MEMORY (Remora only)
//        vmm -leave 1     maps memory and exits without undoing anything: the server frees it
#include <cuda.h>

#include <vector>

#include "common.h"
#include "cu_check.h"

__global__ void AffineInPlace(float* v, size_t n, float a, float b) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    v[i] = a * v[i] + b;
}

// As PyTorch asks: device memory of device 0 that may be shared by a POSIX file descriptor.
static CUmemAllocationProp DeviceMemory() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

static void SetReadWrite(CUdeviceptr p, size_t size) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_CHECK(cuMemSetAccess(p, size, &access, 1));
}

static size_t FreeMemory() {
  size_t free = 0, total = 0;
  CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

// The tenant's limit holds for cuMemCreate as for cudaMalloc.
static int Limit(size_t g) {
  if (!UnderRemora("the memory limit")) return Finish(0, "vmm limit");
  size_t free = 0, total = 0;
  CHECK(cudaMemGetInfo(&free, &total));
  const CUmemAllocationProp prop = DeviceMemory();
  std::vector<CUmemGenericAllocationHandle> held;
  CUresult r = CUDA_SUCCESS;
  while (held.size() * g <= total) {
    CUmemGenericAllocationHandle h;
    if ((r = cuMemCreate(&h, g, &prop, 0)) != CUDA_SUCCESS) break;
    held.push_back(h);
  }
  CU_EXPECT(r, CUDA_ERROR_OUT_OF_MEMORY);
  REQUIRE(held.size() * g <= total && (held.size() + 1) * g > free);
  for (CUmemGenericAllocationHandle h : held) CU_CHECK(cuMemRelease(h));
  CUmemGenericAllocationHandle h;  // the memory is back: one more fits again
  CU_CHECK(cuMemCreate(&h, g, &prop, 0));
  CU_CHECK(cuMemRelease(h));
  std::printf("%zu allocations of %zu bytes within a limit of %zu\n", held.size(), g, total);
  return Finish(0, "vmm limit");
}

int main(int argc, char** argv) {
  CHECK(cudaFree(nullptr));  // the runtime's context, current for the driver API too
  CUdevice dev;
  CU_CHECK(cuCtxGetDevice(&dev));
  int vmm = 0;
  CU_CHECK(
      cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
  REQUIRE(vmm == 1);
  const CUmemAllocationProp prop = DeviceMemory();
  size_t g = 0;
  CU_CHECK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  REQUIRE(g > 0 && (g & (g - 1)) == 0);
  if (Flag(argc, argv, "limit", 0)) return Limit(g);

  const size_t free_before = FreeMemory();
  CUdeviceptr base = 0;
  CU_CHECK(cuMemAddressReserve(&base, 4 * g, 0, 0, 0));
  REQUIRE(base % g == 0);
  CUmemGenericAllocationHandle a, b;
  CU_CHECK(cuMemCreate(&a, g, &prop, 0));
  CU_CHECK(cuMemCreate(&b, g, &prop, 0));
  REQUIRE(FreeMemory() + 2 * g <= free_before);  // physical memory is held, mapped or not
  CU_CHECK(cuMemMap(base, g, 0, a, 0));
  CU_CHECK(cuMemMap(base + g, g, 0, b, 0));
  SetReadWrite(base, 2 * g);  // both mappings at once
  CUmemAllocationProp got{};
  CU_CHECK(cuMemGetAllocationPropertiesFromHandle(&got, a));
  REQUIRE(got.type == CU_MEM_ALLOCATION_TYPE_PINNED &&
          got.location.type == CU_MEM_LOCATION_TYPE_DEVICE && got.location.id == 0);
  unsigned long long flags = 0;
  CUmemLocation here{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CU_CHECK(cuMemGetAccess(&flags, &here, base + g + 64));
  REQUIRE(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  if (Flag(argc, argv, "leave", 0)) {  // exit holding all of it
    std::printf("PASS vmm leave\n");
    return 0;
  }

  // One copy in, a kernel and one copy out, each across the seam between the two mappings.
  const size_t n = 2 * g / sizeof(float);
  Rng rng(Flag(argc, argv, "seed", 11));
  std::vector<float> host(n), want(n), back(n);
  for (float& v : host) v = rng.Uniform(-4, 4);
  const float mul = rng.Uniform(0.5f, 2), add = rng.Uniform(-1, 1);
  for (size_t i = 0; i < n; ++i) want[i] = mul * host[i] + add;
  float* d = reinterpret_cast<float*>(base);
  CHECK(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  AffineInPlace<<<64, 256>>>(d, n, mul, add);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(back.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  int failures = 0;
  for (size_t i = 0; i < n; ++i) failures += !Near(back[i], want[i], 1e-6);

  // A second mapping of `a`: the same bytes through another address.
  CU_CHECK(cuMemMap(base + 3 * g, g, 0, a, 0));
  SetReadWrite(base + 3 * g, g);
  std::vector<float> alias(g / sizeof(float));
  CHECK(cudaMemcpy(alias.data(), d + 3 * g / sizeof(float), g, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < alias.size(); ++i) failures += alias[i] != back[i];
  CHECK(cudaMemset(d + 3 * g / sizeof(float), 0, 64));  // written there, read through the first
  CHECK(cudaMemcpy(alias.data(), d, 64, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < 16; ++i) failures += alias[i] != 0.0f;

  // The handle behind an address, released again; then everything undone in order.
  CUmemGenericAllocationHandle again;
  CU_CHECK(cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(base + 3 * g + 100)));
  REQUIRE(again == a);
  CU_CHECK(cuMemRelease(again));
  if (UnderRemora("refusals of unmapped and unreserved addresses")) {
    // The unmapped quarter of the reservation is no memory of the tenant's.
    EXPECT_CUDA(cudaMemcpy(d + 2 * g / sizeof(float), host.data(), 64, cudaMemcpyHostToDevice),
                cudaErrorInvalidValue);
    CU_EXPECT(cuMemMap(base + 3 * g, g, 0, b, 0), CUDA_ERROR_INVALID_VALUE);  // mapped already
    CU_EXPECT(cuMemMap(base + 4 * g, g, 0, b, 0), CUDA_ERROR_INVALID_VALUE);  // past the end
    CU_EXPECT(cuMemAddressFree(base, 4 * g), CUDA_ERROR_INVALID_VALUE);       // still mapped
  }
  CU_CHECK(cuMemUnmap(base + 3 * g, g));
  CU_CHECK(cuMemUnmap(base, 2 * g));  // both at once
  CU_CHECK(cuMemRelease(a));
  CU_CHECK(cuMemRelease(b));
  CU_CHECK(cuMemAddressFree(base, 4 * g));
  REQUIRE(FreeMemory() + g / 2 >= free_before);  // the memory is back
  return Finish(failures, "vmm");
}
