// client_stub/driver.cc - libcuda.so.1: the CUDA driver API over the process's one session.
//
// Driver-API programs (cuModuleLoadData, cuLaunchKernel, ...) run under Remora like runtime
// programs: every call goes over the same client core and session as the stub runtime's (one
// tenant per process), so the same quotas, checks and scheduling apply. The process has one
// context: the session. A primary-context retain and cuCtxCreate hand out the same handle; the
// current context is per thread, as the driver's. Entry points this file does not serve are
// exported by driver_refused.cc and refused by name (CUDA_ERROR_NOT_SUPPORTED, one line on
// stderr), so a program that links one still loads.
//
// NVIDIA's own runtime (nvcc's default static runtime, or a framework's libcudart) runs over
// this library too: it asks for its private export tables first (driver_tables.cc).
#include "client_stub/driver_internal.h"

#include <cuda_profiler_api.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "client_stub/no_destructor.h"
#include "client_stub/state.h"

namespace remora::client_stub::driver {

CUresult ToCu(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return CUDA_SUCCESS;
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorInvalidPitchValue:
      return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorInvalidDeviceFunction:
      return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorInvalidSymbol:
      return CUDA_ERROR_NOT_FOUND;
    case cudaErrorInitializationError:
      return CUDA_ERROR_NOT_INITIALIZED;
    case cudaErrorNoDevice:
      return CUDA_ERROR_NO_DEVICE;
    case cudaErrorCooperativeLaunchTooLarge:
      return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    default:
      return static_cast<CUresult>(e);
  }
}

namespace {
// The process's one context (its session), and this thread's current and pushed ones.
struct Context {};
Context g_context;
std::atomic<bool> g_initialized{false};
std::atomic<int> g_primary_refs{0};
// This thread's current and pushed contexts; back(): the current one.
std::vector<CUcontext>& Stack() {
  return ThreadScratch<std::vector<CUcontext>, struct ContextStackTag>();
}
}  // namespace

CUcontext TheContext() {
  return reinterpret_cast<CUcontext>(&g_context);
}

namespace {

// The thread's current context: the one it set or pushed last, else the runtime's primary
// context where the program's own runtime calls made it current.
CUcontext Current() {
  if (!Stack().empty()) return Stack().back();
  return RuntimeUsedOnThisThread() ? TheContext() : nullptr;
}

}  // namespace

CUresult NeedInit() {
  // NVIDIA's runtime initializes the driver for the process on its first call.
  return g_initialized.load(std::memory_order_acquire) || RuntimeUsedInProcess()
             ? CUDA_SUCCESS
             : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult NeedContext() {
  if (CUresult r = NeedInit()) return r;
  return Current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult NeedDevice(CUdevice dev) {
  if (CUresult r = NeedInit()) return r;
  int n = 0;
  if (cudaError_t e = cudaGetDeviceCount(&n)) return ToCu(e);
  return dev >= 0 && dev < n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

namespace {

// Names the driver knows without a session.
const char* ErrorName(CUresult r) {
  switch (r) {
#define NAME(code) \
  case code:       \
    return #code;
    NAME(CUDA_SUCCESS)
    NAME(CUDA_ERROR_INVALID_VALUE)
    NAME(CUDA_ERROR_OUT_OF_MEMORY)
    NAME(CUDA_ERROR_NOT_INITIALIZED)
    NAME(CUDA_ERROR_DEINITIALIZED)
    NAME(CUDA_ERROR_NO_DEVICE)
    NAME(CUDA_ERROR_INVALID_DEVICE)
    NAME(CUDA_ERROR_INVALID_IMAGE)
    NAME(CUDA_ERROR_INVALID_CONTEXT)
    NAME(CUDA_ERROR_NO_BINARY_FOR_GPU)
    NAME(CUDA_ERROR_INVALID_PTX)
    NAME(CUDA_ERROR_INVALID_SOURCE)
    NAME(CUDA_ERROR_FILE_NOT_FOUND)
    NAME(CUDA_ERROR_INVALID_HANDLE)
    NAME(CUDA_ERROR_NOT_FOUND)
    NAME(CUDA_ERROR_NOT_READY)
    NAME(CUDA_ERROR_ILLEGAL_ADDRESS)
    NAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    NAME(CUDA_ERROR_LAUNCH_TIMEOUT)
    NAME(CUDA_ERROR_ASSERT)
    NAME(CUDA_ERROR_ILLEGAL_INSTRUCTION)
    NAME(CUDA_ERROR_MISALIGNED_ADDRESS)
    NAME(CUDA_ERROR_LAUNCH_FAILED)
    NAME(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
    NAME(CUDA_ERROR_NOT_PERMITTED)
    NAME(CUDA_ERROR_NOT_SUPPORTED)
    NAME(CUDA_ERROR_DEVICE_UNAVAILABLE)
    NAME(CUDA_ERROR_UNKNOWN)
#undef NAME
    default:
      return nullptr;
  }
}

}  // namespace
}  // namespace remora::client_stub::driver

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below
using remora::client_stub::DriverCallScope;
using remora::client_stub::St;

extern "C" {

// ---- Initialization, versions, errors -----------------------------------------

CUresult cuInit(unsigned int flags) {
  DriverCallScope scope;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  int n = 0;
  if (cudaError_t e = cudaGetDeviceCount(&n)) return ToCu(e);  // reaches the server
  if (n == 0) return CUDA_ERROR_NO_DEVICE;
  g_initialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  DriverCallScope scope;
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** str) {
  DriverCallScope scope;
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *str = ErrorName(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** str) {
  DriverCallScope scope;
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const char* name = ErrorName(error);
  *str = name ? cudaGetErrorString(static_cast<cudaError_t>(error)) : nullptr;
  return name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// NVIDIA's runtime (shared, or linked statically into a program or library) asks for its
// private tables first: served by driver_tables.cc.
CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  DriverCallScope scope;
  NoteNvidiaRuntime(__builtin_return_address(0));
  return ExportTable(table, id, __builtin_return_address(0));
}

// ---- Devices ------------------------------------------------------------------

CUresult cuDeviceGetCount(int* count) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ToCu(cudaGetDeviceCount(count));
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  DriverCallScope scope;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = NeedDevice(ordinal)) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, dev)) return ToCu(e);
  std::snprintf(name, static_cast<size_t>(len), "%s", p.name);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, dev)) return ToCu(e);
  *bytes = p.totalGlobalMem;
  return CUDA_SUCCESS;
}

// CUdevice_attribute and cudaDeviceAttr number the same attributes alike.
CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ToCu(cudaDeviceGetAttribute(value, static_cast<cudaDeviceAttr>(attrib), dev));
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, dev)) return ToCu(e);
  std::memcpy(uuid->bytes, p.uuid.bytes, sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* id) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  return ToCu(cudaDeviceGetByPCIBusId(dev, id));
}

CUresult cuDeviceGetPCIBusId(char* id, int len, CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  return ToCu(cudaDeviceGetPCIBusId(id, len, dev));
}

// Execution affinity (an SM count per context) needs MPS: the one context has none.
CUresult cuDeviceGetExecAffinitySupport(int* pi, CUexecAffinityType type, CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  if (pi == nullptr || type >= CU_EXEC_AFFINITY_TYPE_MAX) return CUDA_ERROR_INVALID_VALUE;
  *pi = 0;
  return CUDA_SUCCESS;
}

// ---- Contexts: one per process, the session -----------------------------------

// The one context has no execution affinity (cuDeviceGetExecAffinitySupport says 0).
CUresult cuCtxGetExecAffinity(CUexecAffinityParam* param, CUexecAffinityType type) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (param == nullptr || type >= CU_EXEC_AFFINITY_TYPE_MAX) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  g_primary_refs.fetch_add(1);
  *ctx = TheContext();
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  int refs = g_primary_refs.load();
  while (refs > 0 && !g_primary_refs.compare_exchange_weak(refs, refs - 1)) {
  }
  return refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = St().device_flags.load(std::memory_order_relaxed);
  *active = g_primary_refs.load() > 0;
  return CUDA_SUCCESS;
}

// The primary context's flags are the stub runtime's device flags (cudaSetDeviceFlags).
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  return ToCu(cudaSetDeviceFlags(flags));
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  DestroyContextStorage(TheContext());
  return ToCu(cudaDeviceReset());
}

// Execution affinity needs MPS and a CIG context a graphics API's; the one context has neither,
// as a GPU without MPS answers.
CUresult cuCtxCreate(CUcontext* ctx, CUctxCreateParams* params, unsigned int, CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (params && params->numExecAffinityParams > 0) return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
  if (params && params->cigParams) return CUDA_ERROR_NOT_SUPPORTED;
  *ctx = TheContext();
  Stack().push_back(*ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::erase(Stack(), ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = Current();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (ctx != nullptr && ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!Stack().empty()) Stack().pop_back();
  Stack().push_back(ctx);  // null too: no context, whatever the runtime made current
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  Stack().push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext* ctx) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (ctx) *ctx = Current();
  Stack().pop_back();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* dev) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice* dev, CUcontext ctx) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (ctx != nullptr && ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx == nullptr) return cuCtxGetDevice(dev);
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx != nullptr ? ctx != TheContext() : Current() == nullptr)
    return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020;  // the context API's version, as NVIDIA's driver reports it
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() {
  return ForwardInContext([&] { return cudaDeviceSynchronize(); });
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (ctx != nullptr && ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx == nullptr && Current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return ToCu(cudaDeviceSynchronize());
}

// No profiler is attached to a tenant: starting and stopping collection is the runtime's
// (api_device.cc), which does nothing, as NVIDIA's driver does without a profiler.
CUresult cuProfilerStart() {
  return ForwardInContext([&] { return cudaProfilerStart(); });
}

CUresult cuProfilerStop() {
  return ForwardInContext([&] { return cudaProfilerStop(); });
}

// ---- Memory ---------------------------------------------------------------------

CUresult cuMemGetInfo(size_t* free, size_t* total) {
  return ForwardInContext([&] { return cudaMemGetInfo(free, total); });
}

CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytes) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  CUresult r = ToCu(cudaMalloc(&p, bytes));
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

CUresult cuMemFree(CUdeviceptr dptr) {
  return ForwardInContext([&] { return cudaFree(reinterpret_cast<void*>(dptr)); });
}

CUresult cuMemAllocHost(void** pp, size_t bytes) {
  return ForwardInContext([&] { return cudaMallocHost(pp, bytes); });
}

CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  // CU_MEMHOSTALLOC_* are cudaHostAlloc*'s bits
  return ForwardInContext([&] { return cudaHostAlloc(pp, bytes, flags); });
}

CUresult cuMemHostRegister(void* p, size_t bytes, unsigned int flags) {
  // CU_MEMHOSTREGISTER_* are cudaHostRegister*
  return ForwardInContext([&] { return cudaHostRegister(p, bytes, flags); });
}

CUresult cuMemHostUnregister(void* p) {
  return ForwardInContext([&] { return cudaHostUnregister(p); });
}

CUresult cuMemFreeHost(void* p) {
  return ForwardInContext([&] { return cudaFreeHost(p); });
}

// CUipcMemHandle and cudaIpcMemHandle_t are the same 64 bytes.
CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr p) {
  return ForwardInContext([&] {
    return cudaIpcGetMemHandle(reinterpret_cast<cudaIpcMemHandle_t*>(handle),
                               reinterpret_cast<void*>(p));
  });
}

CUresult cuIpcOpenMemHandle(CUdeviceptr* p, CUipcMemHandle handle, unsigned int flags) {
  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS is cudaIpcMemLazyEnablePeerAccess
  return ForwardInContext([&] {
    cudaIpcMemHandle_t h;
    std::memcpy(&h, &handle, sizeof h);
    return cudaIpcOpenMemHandle(reinterpret_cast<void**>(p), h, flags);
  });
}

// CUipcEventHandle and cudaIpcEventHandle_t are the same 64 bytes; CUevent is cudaEvent_t.
CUresult cuIpcGetEventHandle(CUipcEventHandle* handle, CUevent event) {
  return ForwardInContext([&] {
    return cudaIpcGetEventHandle(reinterpret_cast<cudaIpcEventHandle_t*>(handle),
                                 reinterpret_cast<cudaEvent_t>(event));
  });
}

CUresult cuIpcOpenEventHandle(CUevent* event, CUipcEventHandle handle) {
  return ForwardInContext([&] {
    cudaIpcEventHandle_t h;
    std::memcpy(&h, &handle, sizeof h);
    return cudaIpcOpenEventHandle(reinterpret_cast<cudaEvent_t*>(event), h);
  });
}

CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
  return ForwardInContext([&] { return cudaIpcCloseMemHandle(reinterpret_cast<void*>(p)); });
}

// What the process's tables say of a pointer: memory the driver does not know (an ordinary
// host pointer) is CUDA_ERROR_INVALID_VALUE, as NVIDIA's driver answers.
CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaPointerAttributes a{};
  if (cudaError_t e = cudaPointerGetAttributes(&a, reinterpret_cast<void*>(ptr))) return ToCu(e);
  if (a.type == cudaMemoryTypeUnregistered) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = TheContext();
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) =
          a.type == cudaMemoryTypeHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      if (a.devicePointer == nullptr) return CUDA_ERROR_INVALID_VALUE;  // host memory, unmapped
      *static_cast<CUdeviceptr*>(data) = reinterpret_cast<CUdeviceptr>(a.devicePointer);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (a.hostPointer == nullptr) return CUDA_ERROR_INVALID_VALUE;  // device memory
      *static_cast<void**>(data) = a.hostPointer;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned int*>(data) = a.type == cudaMemoryTypeManaged;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = a.device;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// Only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS can be set, and it asks for what Remora's
// synchronous copies always do: they return once the device has the bytes.
CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute, CUdeviceptr ptr) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (value == nullptr || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
    return CUDA_ERROR_INVALID_VALUE;
  cudaPointerAttributes a{};
  if (cudaError_t e = cudaPointerGetAttributes(&a, reinterpret_cast<void*>(ptr))) return ToCu(e);
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  return ForwardInContext(
      [&] { return cudaMemcpy(reinterpret_cast<void*>(dst), src, n, cudaMemcpyHostToDevice); });
}

CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  return ForwardInContext(
      [&] { return cudaMemcpy(dst, reinterpret_cast<void*>(src), n, cudaMemcpyDeviceToHost); });
}

CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return ForwardInContext([&] {
    return cudaMemcpy(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n,
                      cudaMemcpyDeviceToDevice);
  });
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return ForwardInContext([&] {
    return cudaMemcpy(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n,
                      cudaMemcpyDefault);
  });
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return ForwardInContext([&] {
    return cudaMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n,
                           cudaMemcpyDefault, s);
  });
}

// Between contexts of devices: here both are the one context, so a copy within the device.
CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                      size_t n) {
  if (dst_ctx != TheContext() || src_ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  return cuMemcpyDtoD(dst, src, n);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                           size_t n, CUstream s) {
  if (dst_ctx != TheContext() || src_ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  return cuMemcpyDtoDAsync(dst, src, n, s);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return ForwardInContext([&] {
    return cudaMemcpyAsync(reinterpret_cast<void*>(dst), src, n, cudaMemcpyHostToDevice, s);
  });
}

CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return ForwardInContext([&] {
    return cudaMemcpyAsync(dst, reinterpret_cast<void*>(src), n, cudaMemcpyDeviceToHost, s);
  });
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return ForwardInContext([&] {
    return cudaMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n,
                           cudaMemcpyDeviceToDevice, s);
  });
}

CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t n) {
  return ForwardInContext([&] { return cudaMemset(reinterpret_cast<void*>(dst), value, n); });
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) {
  return ForwardInContext(
      [&] { return cudaMemsetAsync(reinterpret_cast<void*>(dst), value, n, s); });
}

// A 32-bit pattern: a byte memset when its four bytes agree, else the pattern copied in.
CUresult cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t n) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  const unsigned char b = value & 0xff;
  if (value == b * 0x01010101u) return ToCu(cudaMemset(reinterpret_cast<void*>(dst), b, n * 4));
  std::vector<unsigned int> pattern(n, value);
  return ToCu(
      cudaMemcpy(reinterpret_cast<void*>(dst), pattern.data(), n * 4, cudaMemcpyHostToDevice));
}

// ---- Streams and events --------------------------------------------------------

CUresult cuStreamCreate(CUstream* s, unsigned int flags) {
  // CU_STREAM_* are cudaStream*'s flags
  return ForwardInContext([&] { return cudaStreamCreateWithFlags(s, flags); });
}

CUresult cuStreamDestroy(CUstream s) {
  return ForwardInContext([&] { return cudaStreamDestroy(s); });
}

CUresult cuStreamSynchronize(CUstream s) {
  return ForwardInContext([&] { return cudaStreamSynchronize(s); });
}

CUresult cuStreamQuery(CUstream s) {
  return ForwardInContext([&] { return cudaStreamQuery(s); });
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  return ForwardInContext([&] { return cudaStreamWaitEvent(s, e, flags); });
}

CUresult cuStreamCreateWithPriority(CUstream* s, unsigned int flags, int priority) {
  return ForwardInContext([&] { return cudaStreamCreateWithPriority(s, flags, priority); });
}

CUresult cuStreamGetPriority(CUstream s, int* priority) {
  return ForwardInContext([&] { return cudaStreamGetPriority(s, priority); });
}

CUresult cuStreamGetFlags(CUstream s, unsigned int* flags) {
  return ForwardInContext([&] { return cudaStreamGetFlags(s, flags); });
}

// Every stream is the one context's; asking checks that `s` is a stream.
CUresult cuStreamGetCtx_v2(CUstream s, CUcontext* ctx, CUgreenCtx* green) {
  return ForwardInContext([&] {
    if (ctx == nullptr || green == nullptr) return cudaErrorInvalidValue;
    unsigned int flags = 0;
    if (cudaError_t e = cudaStreamGetFlags(s, &flags)) return e;
    *ctx = TheContext();
    *green = nullptr;
    return cudaSuccess;
  });
}

CUresult cuStreamGetCtx(CUstream s, CUcontext* ctx) {
  CUgreenCtx green = nullptr;
  return ctx == nullptr ? CUDA_ERROR_INVALID_VALUE : cuStreamGetCtx_v2(s, ctx, &green);
}

CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  return ForwardInContext([&] { return cudaDeviceGetStreamPriorityRange(least, greatest); });
}

CUresult cuEventCreate(CUevent* e, unsigned int flags) {
  return ForwardInContext([&] { return cudaEventCreateWithFlags(e, flags); });
}

CUresult cuEventRecord(CUevent e, CUstream s) {
  return ForwardInContext([&] { return cudaEventRecord(e, s); });
}

CUresult cuEventSynchronize(CUevent e) {
  return ForwardInContext([&] { return cudaEventSynchronize(e); });
}

CUresult cuEventQuery(CUevent e) {
  return ForwardInContext([&] { return cudaEventQuery(e); });
}

CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return ForwardInContext([&] { return cudaEventElapsedTime(ms, start, end); });
}

CUresult cuEventDestroy(CUevent e) {
  return ForwardInContext([&] { return cudaEventDestroy(e); });
}

}  // extern "C"
