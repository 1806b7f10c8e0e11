// client_stub/nvml.cc - libnvidia-ml.so.1: what a tenant's monitoring tools see is its slice.
//
// One device (the server's GPU), named as it is; its memory is the tenant's (total = its
// limit, used = its allocations, every process of it together); utilization is the share
// of GPU time it achieved; the process list is its client processes. Everything comes from
// a monitoring session (client_stub/monitor.h) opened by nvmlInit, which holds nothing.
// Queries NVML answers from hardware Remora does not expose (temperature, power, clocks,
// ECC) are not exported: a tool that looks them up finds them missing, as on a GPU whose
// driver lacks them.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include <cuda.h>

#include "client_stub/monitor.h"
#include "client_stub/no_destructor.h"
#include "client_stub/nvml_abi.h"

// The one device's handle type: its address is all a caller holds.
struct nvmlDevice_st {
  unsigned int index = 0;
};

namespace remora::client_stub {
namespace {

struct Nvml {
  std::mutex mu;
  int inits = 0;  // nvmlInit calls not yet matched by nvmlShutdown
  std::unique_ptr<MonitorSession> session;
};

Nvml& N() {
  static NoDestructor<Nvml> n;
  return *n;
}

nvmlDevice_st g_device;

nvmlReturn_t FromStatus(const Status& s) {
  switch (s.code()) {
    case err::kDevicesUnavailable:
      return NVML_ERROR_GPU_IS_LOST;
    case err::kNotPermitted:
      return NVML_ERROR_NO_PERMISSION;
    default:
      return NVML_ERROR_UNKNOWN;
  }
}

// Runs `fn(session)` if NVML is initialized and `device` is ours.
template <class Fn>
nvmlReturn_t WithSession(nvmlDevice_t device, Fn fn) {
  Nvml& n = N();
  std::lock_guard lock(n.mu);
  if (n.session == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (device != &g_device) return NVML_ERROR_INVALID_ARGUMENT;
  return fn(*n.session);
}

template <class Fn>
nvmlReturn_t WithSlice(nvmlDevice_t device, Fn fn) {
  return WithSession(device, [&](MonitorSession& m) {
    Result<v1::SliceReply> slice = m.Slice();
    if (!slice.ok()) return FromStatus(slice.status());
    return fn(*slice);
  });
}

constexpr unsigned int kNvidiaVendor = 0x10DE;

struct PciAddress {
  unsigned int domain = 0, bus = 0, device = 0;
};

// The device's PCI address from its attributes, as cudaDeviceGetPCIBusId spells it.
PciAddress PciOf(MonitorSession& m) {
  const auto& attrs = m.welcome().device().attributes();
  auto at = [&](int i) { return i < attrs.size() ? static_cast<unsigned int>(attrs[i]) : 0u; };
  return {at(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID), at(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
          at(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)};
}

nvmlReturn_t CopyString(const std::string& s, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

std::string VersionText(int cuda_version) {
  return std::to_string(cuda_version / 1000) + "." + std::to_string(cuda_version % 1000 / 10) +
         " (remora)";
}

// Fills `count` entries of `infos` (any of NVML's process-info layouts) through `put`.
template <class Info, class Put>
nvmlReturn_t Processes(nvmlDevice_t device, unsigned int* count, Info* infos, Put put) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSlice(device, [&](const v1::SliceReply& s) {
    const auto n = static_cast<unsigned int>(s.processes_size());
    if (*count < n || (n > 0 && infos == nullptr)) {
      *count = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = n;
    for (unsigned int i = 0; i < n; ++i) put(infos[i], s.processes(static_cast<int>(i)));
    return NVML_SUCCESS;
  });
}

void PutV1(nvmlProcessInfo_v1_t& out, const v1::SliceReply::Process& p) {
  out.pid = static_cast<unsigned int>(p.pid());
  out.usedGpuMemory = p.memory_used();
}

void PutV2(nvmlProcessInfo_t& out, const v1::SliceReply::Process& p) {
  out.pid = static_cast<unsigned int>(p.pid());
  out.usedGpuMemory = p.memory_used();
  out.gpuInstanceId = kNvmlNoInstance;
  out.computeInstanceId = kNvmlNoInstance;
}

}  // namespace
}  // namespace remora::client_stub

using namespace remora::client_stub;  // NOLINT: the entry points below are its front
namespace v1 = remora::v1;

extern "C" {

nvmlReturn_t nvmlInit_v2() {
  Nvml& n = N();
  std::lock_guard lock(n.mu);
  if (n.session == nullptr) {
    auto opened = MonitorSession::Open();
    if (!opened.ok()) {
      std::fprintf(stderr, "remora: NVML cannot reach remora-server: %s\n",
                   opened.status().message().c_str());
      return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    n.session = std::move(opened).value();
  }
  ++n.inits;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit() {
  return nvmlInit_v2();
}

nvmlReturn_t nvmlInitWithFlags(unsigned int) {
  return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown() {
  Nvml& n = N();
  std::lock_guard lock(n.mu);
  if (n.inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (--n.inits == 0) n.session.reset();
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded (remora-server cannot be reached)";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost (the session with remora-server ended)";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return WithSession(&g_device, [&](MonitorSession& m) {
    return CopyString(VersionText(m.welcome().device().driver_version()), version, length);
  });
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return nvmlSystemGetDriverVersion(version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSession(&g_device, [&](MonitorSession& m) {
    *version = m.welcome().device().driver_version();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSession(&g_device, [&](MonitorSession&) {
    *count = 1;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return nvmlDeviceGetCount_v2(count);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (device == nullptr || index != 0) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSession(&g_device, [&](MonitorSession&) {
    *device = &g_device;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSession(device, [&](MonitorSession&) {
    *index = 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return WithSession(device, [&](MonitorSession& m) {
    return CopyString(m.welcome().device().name(), name, length);
  });
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return WithSession(device, [&](MonitorSession& m) {
    const std::string& b = m.welcome().device().uuid();
    std::string text = "GPU-";
    for (size_t i = 0; i < 16; ++i) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", i < b.size() ? static_cast<unsigned char>(b[i]) : 0u);
      text += hex;
      if (i == 3 || i == 5 || i == 7 || i == 9) text += '-';
    }
    return CopyString(text, uuid, length);
  });
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  char ours[96];
  if (nvmlReturn_t r = nvmlDeviceGetUUID(&g_device, ours, sizeof ours); r != NVML_SUCCESS) return r;
  if (std::strcmp(uuid, ours) != 0) return NVML_ERROR_NOT_FOUND;
  *device = &g_device;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSession(device, [&](MonitorSession& m) {
    // Indexed by CUdevice_attribute: 75 and 76 are the compute capability.
    const auto& attrs = m.welcome().device().attributes();
    if (attrs.size() <= 76) return NVML_ERROR_NOT_SUPPORTED;
    *major = attrs[75];
    *minor = attrs[76];
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSession(device, [&](MonitorSession& m) {
    const PciAddress a = PciOf(m);
    *pci = nvmlPciInfo_t{};
    pci->domain = a.domain;
    pci->bus = a.bus;
    pci->device = a.device;
    pci->pciDeviceId = kNvidiaVendor;
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", a.domain & 0xFFFF,
                  a.bus, a.device);
    std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", a.domain, a.bus, a.device);
    return NVML_SUCCESS;
  });
}

// Any spelling of the one device's address (with or without the domain, either case) finds it.
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  if (bus_id == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int domain = 0, bus = 0, dev = 0, function = 0;
  const bool full = std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &function) == 4;
  if (!full) {
    domain = 0;
    if (std::sscanf(bus_id, "%x:%x.%x", &bus, &dev, &function) != 3)
      return NVML_ERROR_INVALID_ARGUMENT;
  }
  return WithSession(&g_device, [&](MonitorSession& m) {
    const PciAddress a = PciOf(m);
    if (domain != a.domain || bus != a.bus || dev != a.device || function != 0)
      return NVML_ERROR_NOT_FOUND;
    *device = &g_device;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* bus_id, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(bus_id, device);
}

// The tenant sees no NVLink: every link query answers as for a GPU without links.
nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int, int* type) {
  if (type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSession(device, [](MonitorSession&) { return NVML_ERROR_NOT_SUPPORTED; });
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int,
                                                 nvmlPciInfo_t* pci) {
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSession(device, [](MonitorSession&) { return NVML_ERROR_NOT_SUPPORTED; });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSlice(device, [&](const v1::SliceReply& s) {
    memory->total = s.memory_total();
    memory->used = s.memory_used();
    memory->free = s.memory_free();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != kNvmlMemoryV2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  return WithSlice(device, [&](const v1::SliceReply& s) {
    memory->total = s.memory_total();
    memory->reserved = 0;
    memory->used = s.memory_used();
    memory->free = s.memory_free();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithSlice(device, [&](const v1::SliceReply& s) {
    const double percent = std::lround(std::fmin(std::fmax(s.achieved_share(), 0.0), 1.0) * 100);
    utilization->gpu = static_cast<unsigned int>(percent);
    utilization->memory = 0;  // not measured
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* count,
                                                  nvmlProcessInfo_v1_t* infos) {
  return Processes(device, count, infos, PutV1);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  return Processes(device, count, infos, PutV2);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  return Processes(device, count, infos, PutV2);
}

}  // extern "C"
