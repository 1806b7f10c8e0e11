// client_stub/nvml_abi.h - the part of NVML's C ABI (libnvidia-ml.so.1) the stub answers.
//
// nvml.h is not part of the CUDA toolkit on these machines, so the types the stub's entry
// points take are declared here, laid out as NVML's: return codes, the device handle and
// the memory, utilization and process structs. Tests that play a monitoring tool declare
// their own copies, as tools that dlopen NVML do.
#pragma once

#include <cstdint>

extern "C" {

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

typedef struct nvmlDevice_st* nvmlDevice_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;  // nvmlMemory_v2: sizeof | 2 << 24
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;     // percent of time a kernel ran, over the last sample period
  unsigned int memory;  // percent of time device memory was read or written
} nvmlUtilization_t;

typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

// The layout of nvmlDeviceGetComputeRunningProcesses_v2 and _v3.
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;      // 0xFFFFFFFF: not a MIG instance
  unsigned int computeInstanceId;  // likewise
} nvmlProcessInfo_t;

// nvmlDeviceGetPciInfo_v3's layout.
typedef struct nvmlPciInfo_st {
  char busIdLegacy[16];  // "DDDD:BB:DD.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     // device id << 16 | vendor id
  unsigned int pciSubSystemId;  // not known here: 0
  char busId[32];               // "DDDDDDDD:BB:DD.0"
} nvmlPciInfo_t;

}  // extern "C"

inline constexpr unsigned int kNvmlMemoryV2 =
    static_cast<unsigned int>(sizeof(nvmlMemory_v2_t)) | (2u << 24);
inline constexpr unsigned int kNvmlNoInstance = 0xFFFFFFFFu;
