// tests/cuda/nvml_smi.cc - a monitoring tool in a tenant's container, as nvidia-smi is one.
//
// Makes no CUDA call: it loads libnvidia-ml.so.1 and prints the device, its memory use,
// its utilization and its processes, as nvidia-smi's summary does. With
//   -expect-pid PID -expect-used BYTES   PID must be listed holding at least BYTES, and
//                                        memory used must be at least BYTES
//   -expect-absent PID                   PID must not be listed
//   -expect-total BYTES                  memory total must be BYTES (the tenant's limit)
// it exits 1 (FAIL) when what it sees differs.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/nvml_tool.h"

namespace {

constexpr nvmlReturn_t kNvmlNotFound = 6;

// nvmlDeviceGetPciInfo_v3's layout, as a tool declares it.
struct NvmlPciInfo {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

// Frameworks find their GPU's NVML handle by the PCI address (PyTorch's allocator does):
// the address NVML reports must find the same device, and another address none.
int CheckPciLookup(nvmlDevice_t dev) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto info = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, NvmlPciInfo*)>(
      lib ? dlsym(lib, "nvmlDeviceGetPciInfo_v3") : nullptr);
  auto by_bus = reinterpret_cast<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>(
      lib ? dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2") : nullptr);
  if (info == nullptr || by_bus == nullptr) {
    std::printf("FAIL: NVML lacks nvmlDeviceGetPciInfo_v3 or nvmlDeviceGetHandleByPciBusId_v2\n");
    return 1;
  }
  NvmlPciInfo pci{};
  nvmlDevice_t found = nullptr, other = nullptr;
  if (nvmlReturn_t r = info(dev, &pci); r != kNvmlSuccess) {
    std::printf("FAIL: nvmlDeviceGetPciInfo_v3 -> %d\n", r);
    return 1;
  }
  if (nvmlReturn_t r = by_bus(pci.bus_id, &found); r != kNvmlSuccess || found != dev) {
    std::printf("FAIL: device at %s not found by its address (%d)\n", pci.bus_id, r);
    return 1;
  }
  char elsewhere[32];
  std::snprintf(elsewhere, sizeof elsewhere, "%08X:%02X:%02X.0", pci.domain, (pci.bus + 1) & 0xFF,
                pci.device);
  if (nvmlReturn_t r = by_bus(elsewhere, &other); r != kNvmlNotFound) {
    std::printf("FAIL: address %s with no GPU -> %d, want NVML_ERROR_NOT_FOUND\n", elsewhere, r);
    return 1;
  }
  return 0;
}

long long Arg(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  Nvml nvml;
  if (!nvml.Load()) return 1;
  NVML_CHECK(nvml, nvml.Init());
  char driver[80];
  NVML_CHECK(nvml, nvml.GetDriverVersion(driver, sizeof driver));
  nvmlDevice_t dev = nullptr;
  NVML_CHECK(nvml, nvml.GetHandleByIndex(0, &dev));
  char name[96];
  NVML_CHECK(nvml, nvml.GetName(dev, name, sizeof name));
  NvmlMemory mem{};
  NVML_CHECK(nvml, nvml.GetMemoryInfo(dev, &mem));
  NvmlUtilization util{};
  NVML_CHECK(nvml, nvml.GetUtilization(dev, &util));
  unsigned int n = 0;
  nvmlReturn_t r = nvml.GetProcesses(dev, &n, nullptr);
  if (r != kNvmlSuccess && r != kNvmlInsufficientSize) NVML_CHECK(nvml, r);
  std::vector<NvmlProcessInfo> procs(n);
  if (n > 0) NVML_CHECK(nvml, nvml.GetProcesses(dev, &n, procs.data()));

  std::printf("Driver Version: %s\n", driver);
  std::printf("GPU  Name                      Memory-Usage            GPU-Util\n");
  std::printf("  0  %-24s  %6lluMiB / %6lluMiB   %3u%%\n", name, mem.used >> 20, mem.total >> 20,
              util.gpu);
  std::printf("Processes:\n  PID       GPU Memory\n");
  for (unsigned int i = 0; i < n; ++i)
    std::printf("  %-8u  %lluMiB\n", procs[i].pid, procs[i].usedGpuMemory >> 20);

  int failures = CheckPciLookup(dev);
  const long long pid = Arg(argc, argv, "-expect-pid"), used = Arg(argc, argv, "-expect-used");
  if (pid >= 0) {
    bool seen = false;
    for (unsigned int i = 0; i < n; ++i)
      seen |= procs[i].pid == pid && static_cast<long long>(procs[i].usedGpuMemory) >= used;
    if (!seen) std::printf("FAIL: pid %lld is not listed with %lld bytes\n", pid, used), ++failures;
    if (static_cast<long long>(mem.used) < used)
      std::printf("FAIL: %llu bytes used, want at least %lld\n", mem.used, used), ++failures;
  }
  if (const long long gone = Arg(argc, argv, "-expect-absent"); gone >= 0)
    for (unsigned int i = 0; i < n; ++i)
      if (procs[i].pid == gone) std::printf("FAIL: pid %lld is still listed\n", gone), ++failures;
  if (const long long total = Arg(argc, argv, "-expect-total");
      total >= 0 && static_cast<long long>(mem.total) != total)
    std::printf("FAIL: total %llu, want %lld\n", mem.total, total), ++failures;
  NVML_CHECK(nvml, nvml.Shutdown());
  std::printf(failures == 0 ? "PASS nvml_smi\n" : "FAIL nvml_smi\n");
  return failures == 0 ? 0 : 1;
}
