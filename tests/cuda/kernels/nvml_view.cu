// tests/cuda/kernels/nvml_view.cu - a tenant's own NVML view is its slice of the GPU.
//
// Allocates, runs kernels, and checks what libnvidia-ml.so.1 (loaded as tools load it)
// says against what the CUDA runtime says: one device with the runtime's name, memory
// total covering cudaMemGetInfo's total, used covering what it allocated, a non-zero
// utilization after kernels kept the device busy, and NVML's own errors for a bad index, a
// short buffer, a wrong struct version and a call after nvmlShutdown. Under remora run also
// what only Remora's view gives: the total equal to the tenant's limit, the program's own
// process listed with its memory, and a handle NVML never gave refused (NVIDIA's NVML takes a
// handle as a pointer to its own data and reads through it: a made-up one crashes it, as it
// did on an H200, so natively that is not asked).
// With "-hold 1" it then prints "HOLDING <pid> <bytes>" and keeps its memory until a
// line arrives on stdin, for a separate monitoring process to look at.
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "common.h"
#include "nvml_tool.h"

__global__ void spin(float* x, int n, int rounds) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < rounds; ++r) v = v * 0.999f + 0.001f;
  x[i] = v;
}

int main(int argc, char** argv) {
  const size_t bytes = size_t{48} << 20;
  const bool hold = Flag(argc, argv, "hold", 0) != 0;
  Nvml nvml;
  if (!nvml.Load()) return 1;
  NVML_CHECK(nvml, nvml.Init());

  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  float* d = nullptr;
  CHECK(cudaMalloc(&d, bytes));
  CHECK(cudaMemset(d, 0, bytes));
  size_t cuda_free = 0, cuda_total = 0;
  CHECK(cudaMemGetInfo(&cuda_free, &cuda_total));

  unsigned int count = 0;
  NVML_CHECK(nvml, nvml.GetCount(&count));
  REQUIRE(count == 1);
  nvmlDevice_t dev = nullptr, none = nullptr;
  NVML_CHECK(nvml, nvml.GetHandleByIndex(0, &dev));
  REQUIRE(nvml.GetHandleByIndex(1, &none) == kNvmlInvalidArgument);
  char name[96];
  NVML_CHECK(nvml, nvml.GetName(dev, name, sizeof name));
  REQUIRE(std::string(name) == prop.name);
  REQUIRE(nvml.GetName(dev, name, 3) == kNvmlInsufficientSize);
  char uuid[96];
  NVML_CHECK(nvml, nvml.GetUUID(dev, uuid, sizeof uuid));
  REQUIRE(std::string(uuid).rfind("GPU-", 0) == 0 && std::strlen(uuid) == 40);
  const bool remora = UnderRemora("the tenant's slice in NVML, and a made-up handle");
  if (remora)
    REQUIRE(nvml.GetName(reinterpret_cast<nvmlDevice_t>(&count), name, sizeof name) ==
            kNvmlInvalidArgument);

  // NVML counts the whole memory, CUDA what contexts may have: under Remora both are the
  // tenant's limit.
  NvmlMemory mem{};
  NVML_CHECK(nvml, nvml.GetMemoryInfo(dev, &mem));
  REQUIRE(mem.total >= cuda_total);
  if (remora) REQUIRE(mem.total == cuda_total);
  REQUIRE(mem.used >= bytes && mem.used <= mem.total);
  REQUIRE(mem.free <= mem.total - mem.used);
  NvmlMemoryV2 mem2{};
  mem2.version = 1;
  REQUIRE(nvml.GetMemoryInfoV2(dev, &mem2) == kNvmlVersionMismatch);
  mem2.version = kNvmlMemoryV2;
  NVML_CHECK(nvml, nvml.GetMemoryInfoV2(dev, &mem2));
  REQUIRE(mem2.total >= cuda_total && mem2.used >= bytes);
  if (remora) REQUIRE(mem2.total == cuda_total);

  // The processes: a count first, then the list. Natively a container may see none, or see
  // them by the host's process ids; under Remora the program is listed by its own.
  unsigned int n = 0;
  const nvmlReturn_t counted = nvml.GetProcesses(dev, &n, nullptr);
  REQUIRE(counted == (n == 0 ? kNvmlSuccess : kNvmlInsufficientSize));
  if (remora) REQUIRE(n >= 1);
  std::vector<NvmlProcessInfo> procs(n + 4);  // room for a few started since
  n = static_cast<unsigned int>(procs.size());
  NVML_CHECK(nvml, nvml.GetProcesses(dev, &n, procs.data()));
  bool me = false;
  for (unsigned int i = 0; i < n; ++i)
    if (procs[i].pid == static_cast<unsigned int>(getpid()) && procs[i].usedGpuMemory >= bytes)
      me = true;
  if (remora) REQUIRE(me);

  // Busy for a while (a second at least: NVML's sample period is up to one), then the
  // utilization (the share of time a kernel ran) shows it.
  const int elems = 16384;
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < 10 || std::chrono::steady_clock::now() - start < std::chrono::seconds(1);
       ++k) {
    spin<<<(elems + 255) / 256, 256>>>(d, elems, 256);
    if (k % 10 == 9) CHECK(cudaDeviceSynchronize());
  }
  CHECK(cudaDeviceSynchronize());
  NvmlUtilization util{};
  NVML_CHECK(nvml, nvml.GetUtilization(dev, &util));
  REQUIRE(util.gpu > 0 && util.gpu <= 100);
  std::printf("nvml: %s, %llu of %llu bytes used, %u%% busy, %u process(es)\n", name, mem.used,
              mem.total, util.gpu, n);

  if (hold) {
    std::printf("HOLDING %d %zu\n", static_cast<int>(getpid()), bytes);
    std::fflush(stdout);
    char line[16];
    if (std::fgets(line, sizeof line, stdin) == nullptr) {
      std::printf("FAIL: stdin closed while holding\n");
      return 1;
    }
  }

  NVML_CHECK(nvml, nvml.Shutdown());
  REQUIRE(nvml.GetCount(&count) == kNvmlUninitialized);
  CHECK(cudaFree(d));
  return Finish(0, "nvml_view");
}
