// client_stub/api_device.cc - device management, versions, errors, limits: answered locally.
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "client_stub/api.h"
#include "client_stub/connection.h"
#include "client_stub/errors.h"
#include "client_stub/kernels.h"
#include "client_stub/mirror.h"
#include "client_stub/state.h"

using remora::CallId;
using remora::client_stub::Connection;
using remora::client_stub::Ret;
using remora::client_stub::St;
namespace v1 = remora::v1;

namespace {

cudaError_t Ready() {
  return Connection::Get().Ensure();
}

cudaError_t CheckDevice(int device) {
  return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

// The recorded value of `limit`, or nullptr for an unknown one.
size_t* LimitSlot(remora::client_stub::Limits& l, cudaLimit limit) {
  auto i = static_cast<size_t>(limit);
  return i < l.value.size() ? &l.value[i] : nullptr;
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return Ret(cudaErrorInvalidValue);
  cudaError_t e = Ready();
  *count = e == cudaSuccess ? 1 : 0;
  return Ret(e);
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return Ret(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (cudaError_t e = CheckDevice(device)) return Ret(e);
  return Ret(Ready());
}

cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  if ((flags & ~cudaDeviceMask) || (flags & cudaDeviceScheduleMask) == 3 ||
      (flags & cudaDeviceScheduleMask) > cudaDeviceScheduleBlockingSync)
    return Ret(cudaErrorInvalidValue);
  St().device_flags.store(flags, std::memory_order_relaxed);
  Connection::Get().ApplySchedule(flags);
  return cudaSuccess;
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (!flags) return Ret(cudaErrorInvalidValue);
  *flags = St().device_flags.load(std::memory_order_relaxed) | cudaDeviceMapHost;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (!prop) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevice(device)) return Ret(e);
  if (cudaError_t e = Ready()) return Ret(e);
  *prop = St().prop;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (!value) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevice(device)) return Ret(e);
  if (cudaError_t e = Ready()) return Ret(e);
  const v1::DeviceInfo& d = Connection::Get().welcome().device();
  int a = static_cast<int>(attr);
  if (a <= 0 || a >= d.attributes_size()) return Ret(cudaErrorInvalidValue);
  *value = d.attributes(a);
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (!version) return Ret(cudaErrorInvalidValue);
  int v = 0;
  if (Ready() == cudaSuccess) v = Connection::Get().welcome().device().driver_version();
  *version = v ? v : (Connection::Get().Alive() ? CUDART_VERSION : 0);
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (!version) return Ret(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (!free || !total) return Ret(cudaErrorInvalidValue);
  v1::MemGetInfoReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kMemGetInfo, v1::Empty(), &rep)) return Ret(e);
  *free = rep.free();
  *total = rep.total();
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  return Ret(Connection::Get().Call(CallId::kDeviceSynchronize, v1::Empty()));
}

cudaError_t cudaDeviceReset(void) {
  cudaError_t e = Connection::Get().Call(CallId::kDeviceReset, v1::Empty());
  if (e == cudaSuccess) {
    remora::client_stub::ForgetDeviceState();
    auto& st = St();
    std::lock_guard lock(st.limits_mu);
    st.limits = {};  // the new context's are the defaults, and the server dropped its heap
  }
  return Ret(e);
}

cudaError_t cudaGetLastError(void) {
  return remora::client_stub::TakeLastError();
}

cudaError_t cudaPeekAtLastError(void) {
  return remora::client_stub::PeekLastError();
}

const char* cudaGetErrorName(cudaError_t error) {
  const char* n = remora::client_stub::CudaErrorName(error);
  return n ? n : "unrecognized error code";
}

const char* cudaGetErrorString(cudaError_t error) {
  const char* s = remora::client_stub::CudaErrorText(error);
  return s ? s : "unrecognized error code";
}

cudaError_t cudaProfilerStart(void) {
  return cudaSuccess;
}

cudaError_t cudaProfilerStop(void) {
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (cudaError_t e = Ready()) return Ret(e);
  if (leastPriority) *leastPriority = 0;
  if (greatestPriority) *greatestPriority = St().prop.streamPrioritiesSupported ? -5 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  if (!canAccessPeer) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevice(device)) return Ret(e);
  if (cudaError_t e = CheckDevice(peerDevice)) return Ret(e);
  *canAccessPeer = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  auto& st = St();
  std::lock_guard lock(st.limits_mu);
  size_t* slot = LimitSlot(st.limits, limit);
  if (!slot) return Ret(cudaErrorUnsupportedLimit);
  if (limit == cudaLimitStackSize || limit == cudaLimitMallocHeapSize) {
    v1::LimitRequest req;
    req.set_limit(limit);
    req.set_value(value);
    if (cudaError_t e = Connection::Get().Call(CallId::kDeviceSetLimit, req)) return Ret(e);
  }
  *slot = value;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetLimit(size_t* pValue, enum cudaLimit limit) {
  if (!pValue) return Ret(cudaErrorInvalidValue);
  auto& st = St();
  std::lock_guard lock(st.limits_mu);
  size_t* slot = LimitSlot(st.limits, limit);
  if (!slot) return Ret(cudaErrorUnsupportedLimit);
  *pValue = *slot;
  return cudaSuccess;
}

cudaError_t cudaChooseDevice(int* device, const struct cudaDeviceProp* prop) {
  if (!device || !prop) return Ret(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  if (!pciBusId || len <= 0) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckDevice(device)) return Ret(e);
  if (cudaError_t e = Ready()) return Ret(e);
  const cudaDeviceProp& p = St().prop;
  std::snprintf(pciBusId, static_cast<size_t>(len), "%08X:%02X:%02X.0", p.pciDomainID, p.pciBusID,
                p.pciDeviceID);
  return cudaSuccess;
}

// Device allocations and symbols: cudaMemoryTypeDevice. Managed (arena)
// memory: cudaMemoryTypeManaged, one pointer for both sides. Pinned memory:
// cudaMemoryTypeHost, with a device pointer only when it is device-mapped (registered memory's
// is its arena alias).
// Anything else: cudaMemoryTypeUnregistered (device -2), as CUDA 11+ answers.
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* ptr) {
  if (!attributes) return Ret(cudaErrorInvalidValue);
  std::memset(attributes, 0, sizeof *attributes);
  auto& st = St();
  auto p = reinterpret_cast<uintptr_t>(ptr);
  void* self = const_cast<void*>(ptr);
  // Managed and pinned memory before device memory: a mirrored block is both.
  if (st.host.IsManaged(ptr)) {
    attributes->type = cudaMemoryTypeManaged;
    attributes->device = 0;
    attributes->devicePointer = self;
    attributes->hostPointer = self;
  } else if (st.host.IsPinned(ptr)) {
    attributes->type = cudaMemoryTypeHost;
    attributes->device = 0;
    attributes->devicePointer = st.host.DeviceAlias(ptr);
    if (attributes->devicePointer == nullptr)
      if (uint64_t d = remora::client_stub::Mirrors::Get().DeviceOf(ptr))
        attributes->devicePointer = reinterpret_cast<void*>(d);
    attributes->hostPointer = self;
  } else if (st.device_ranges.Find(p)) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->device = 0;
    attributes->devicePointer = self;
  } else {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
  }
  return cudaSuccess;
}

// ---- Cache and shared-memory preferences: recorded, as hints a GPU may ignore. ----

namespace {
std::atomic<int> g_cache_config{cudaFuncCachePreferNone};
std::atomic<int> g_shared_config{cudaSharedMemBankSizeDefault};
}  // namespace

cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig) {
  if (static_cast<unsigned>(cacheConfig) > cudaFuncCachePreferEqual)
    return Ret(cudaErrorInvalidValue);
  g_cache_config.store(cacheConfig, std::memory_order_relaxed);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache* pCacheConfig) {
  if (!pCacheConfig) return Ret(cudaErrorInvalidValue);
  *pCacheConfig = static_cast<cudaFuncCache>(g_cache_config.load(std::memory_order_relaxed));
  return cudaSuccess;
}

cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config) {
  if (static_cast<unsigned>(config) > cudaSharedMemBankSizeEightByte)
    return Ret(cudaErrorInvalidValue);
  g_shared_config.store(config, std::memory_order_relaxed);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetSharedMemConfig(enum cudaSharedMemConfig* pConfig) {
  if (!pConfig) return Ret(cudaErrorInvalidValue);
  *pConfig = static_cast<cudaSharedMemConfig>(g_shared_config.load(std::memory_order_relaxed));
  return cudaSuccess;
}

// ---- Peers: there is one device, which is not its own peer. ----

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  if (flags != 0) return Ret(cudaErrorInvalidValue);
  (void)peerDevice;
  return Ret(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  (void)peerDevice;
  return Ret(cudaErrorInvalidDevice);
}

cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags) {
  if (cudaError_t e = CheckDevice(device)) return Ret(e);
  if (flags != 0) return Ret(cudaErrorInvalidValue);
  if (deviceFlags != 0)
    if (cudaError_t e = cudaSetDeviceFlags(deviceFlags)) return e;
  return Ret(Ready());
}

// ---- Driver entry points: those of the stub libcuda.so.1 beside this library -----------

namespace {

using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

// cuGetProcAddress of Remora's libcuda.so.1 (the file beside this library), loaded once; null
// if it is missing.
GetProcAddressFn DriverProcAddress() {
  static const GetProcAddressFn fn = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cudaGetDriverEntryPointByVersion), &info) == 0 ||
        info.dli_fname == nullptr)
      return GetProcAddressFn{nullptr};
    std::string path(info.dli_fname);
    path = path.substr(0, path.rfind('/') + 1) + "libcuda.so.1";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    return lib ? reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"))
               : GetProcAddressFn{nullptr};
  }();
  return fn;
}

cudaError_t EntryPoint(const char* symbol, void** funcPtr, int version,
                       cudaDriverEntryPointQueryResult* driverStatus) {
  if (!symbol || !funcPtr) return Ret(cudaErrorInvalidValue);
  *funcPtr = nullptr;
  if (driverStatus) *driverStatus = cudaDriverEntryPointSymbolNotFound;
  GetProcAddressFn get = DriverProcAddress();
  if (get == nullptr)
    return Ret(static_cast<cudaError_t>(remora::client_stub::Unsupported(
        "cudaGetDriverEntryPoint", "Remora's libcuda.so.1 is not beside the stub runtime")));
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get(symbol, funcPtr, version, 0, &found) != CUDA_SUCCESS || *funcPtr == nullptr) {
    *funcPtr = nullptr;
    if (driverStatus && found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
      *driverStatus = cudaDriverEntryPointVersionNotSufficent;
    return cudaSuccess;
  }
  if (driverStatus) *driverStatus = cudaDriverEntryPointSuccess;
  return cudaSuccess;
}

}  // namespace

// The runtime hands out what the driver serves: a program (PyTorch, say) that takes driver
// entry points this way gets the stub libcuda.so.1's, over the same session. A name the
// driver does not have answers cudaSuccess with cudaDriverEntryPointSymbolNotFound, as
// NVIDIA's runtime does.
cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult* driverStatus) {
  (void)flags;  // per-thread default streams are the legacy stream here
  return EntryPoint(symbol, funcPtr, CUDART_VERSION, driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult* driverStatus) {
  (void)flags;
  return EntryPoint(symbol, funcPtr, static_cast<int>(cudaVersion), driverStatus);
}

}  // extern "C"
