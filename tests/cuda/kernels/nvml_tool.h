// tests/cuda/kernels/nvml_tool.h - NVML as a monitoring tool reaches it: dlopen and dlsym.
//
// Tools such as nvidia-smi clones, Prometheus exporters and frameworks' device probes
// load libnvidia-ml.so.1 at run time with their own declarations of its C ABI; these are
// this test's, written from NVML's documented layouts.
#pragma once

#include <dlfcn.h>

#include <cstdio>

typedef int nvmlReturn_t;  // NVML_SUCCESS = 0
typedef struct nvmlDevice_st* nvmlDevice_t;
struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlMemoryV2 {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct NvmlProcessInfo {  // the _v2/_v3 layout
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
constexpr nvmlReturn_t kNvmlSuccess = 0, kNvmlUninitialized = 1, kNvmlInvalidArgument = 2,
                       kNvmlInsufficientSize = 7, kNvmlVersionMismatch = 25;
constexpr unsigned int kNvmlMemoryV2 = sizeof(NvmlMemoryV2) | (2u << 24);

struct Nvml {
  void* lib = nullptr;
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*GetCount)(unsigned int*) = nullptr;
  nvmlReturn_t (*GetHandleByIndex)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*GetUUID)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*GetMemoryInfo)(nvmlDevice_t, NvmlMemory*) = nullptr;
  nvmlReturn_t (*GetMemoryInfoV2)(nvmlDevice_t, NvmlMemoryV2*) = nullptr;
  nvmlReturn_t (*GetUtilization)(nvmlDevice_t, NvmlUtilization*) = nullptr;
  nvmlReturn_t (*GetProcesses)(nvmlDevice_t, unsigned int*, NvmlProcessInfo*) = nullptr;
  nvmlReturn_t (*GetDriverVersion)(char*, unsigned int) = nullptr;

  // Loads every entry point; false (saying which is missing) if any is.
  bool Load() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (lib == nullptr) {
      std::printf("FAIL: dlopen libnvidia-ml.so.1: %s\n", dlerror());
      return false;
    }
    return Sym(Init, "nvmlInit_v2") && Sym(Shutdown, "nvmlShutdown") &&
           Sym(ErrorString, "nvmlErrorString") && Sym(GetCount, "nvmlDeviceGetCount_v2") &&
           Sym(GetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2") &&
           Sym(GetName, "nvmlDeviceGetName") && Sym(GetUUID, "nvmlDeviceGetUUID") &&
           Sym(GetMemoryInfo, "nvmlDeviceGetMemoryInfo") &&
           Sym(GetMemoryInfoV2, "nvmlDeviceGetMemoryInfo_v2") &&
           Sym(GetUtilization, "nvmlDeviceGetUtilizationRates") &&
           Sym(GetProcesses, "nvmlDeviceGetComputeRunningProcesses_v3") &&
           Sym(GetDriverVersion, "nvmlSystemGetDriverVersion");
  }

 private:
  template <class F>
  bool Sym(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    if (f == nullptr) std::printf("FAIL: libnvidia-ml.so.1 lacks %s\n", name);
    return f != nullptr;
  }
};

#define NVML_CHECK(nvml, call)                                                  \
  do {                                                                          \
    nvmlReturn_t r_ = (call);                                                   \
    if (r_ != kNvmlSuccess) {                                                   \
      std::printf("FAIL: %s:%d %s -> %d (%s)\n", __FILE__, __LINE__, #call, r_, \
                  (nvml).ErrorString ? (nvml).ErrorString(r_) : "?");           \
      return 1;                                                                 \
    }                                                                           \
  } while (0)
