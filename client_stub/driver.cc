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
// NVIDIA's own runtime (nvcc's default static runtime, or a framework's libcudart) looks for
// its private export tables first (cuGetExportTable). Remora does not serve them yet: such a
// process is refused, saying why, instead of running outside Remora unconfined.
#include "client_stub/driver_api.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client_stub/connection.h"
#include "client_stub/kernels.h"
#include "fatbin/fatbin.h"

namespace remora::client_stub {
namespace {

// The runtime's error as the driver spells it. Most codes are the same number; these differ.
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

// The process's one context (its session), and this thread's current and pushed ones.
struct Context {};
Context g_context;
CUcontext TheContext() {
  return reinterpret_cast<CUcontext>(&g_context);
}
std::atomic<bool> g_initialized{false};
std::atomic<int> g_primary_refs{0};
thread_local std::vector<CUcontext> t_contexts;  // back(): the current one

CUcontext Current() {
  return t_contexts.empty() ? nullptr : t_contexts.back();
}

// What every call but cuInit and the queries of errors and versions needs.
CUresult NeedInit() {
  return g_initialized.load(std::memory_order_acquire) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}
// What calls that act on the device need: a current context on this thread.
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

// A module loaded through the driver API, and the kernels asked of it by name.
struct DriverModule {
  uint64_t id = 0;
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Kernel>> kernels;
};

// The images a cuModuleLoadData image stands for: an nvcc fat-binary wrapper's, a fat binary,
// a cubin (ELF) or PTX text (NUL-terminated), as NVIDIA's driver takes them.
Result<std::vector<std::string>> ImagesOf(const void* image) {
  constexpr uint32_t kWrapperMagic = 0x466243b1, kFatbinMagic = 0xBA55ED50;
  if (image == nullptr) return Error(cudaErrorInvalidValue, "no image");
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof magic);
  std::vector<std::string> out;
  auto keep = [&](const void* p, size_t n) { out.emplace_back(static_cast<const char*>(p), n); };
  if (magic == kWrapperMagic) {
    ASSIGN_OR_RETURN(std::vector<fatbin::Bytes> images, fatbin::WrapperImages(image));
    for (fatbin::Bytes b : images) keep(b.data(), b.size());
  } else if (magic == kFatbinMagic) {
    // No length comes with it: the header says how long the rest is.
    uint16_t header = 0;
    uint64_t body = 0;
    std::memcpy(&header, static_cast<const char*>(image) + 6, sizeof header);
    std::memcpy(&body, static_cast<const char*>(image) + 8, sizeof body);
    if (header < 16 || body > (uint64_t{1} << 34)) return Error(cudaErrorInvalidValue, "header");
    keep(image, header + body);
  } else if (std::memcmp(image,
                         "\x7f"
                         "ELF",
                         4) == 0) {
    // A 64-bit ELF ends with its section headers: e_shoff + e_shnum * e_shentsize.
    const auto* e = static_cast<const unsigned char*>(image);
    uint64_t shoff = 0;
    uint16_t shentsize = 0, shnum = 0;
    std::memcpy(&shoff, e + 0x28, sizeof shoff);
    std::memcpy(&shentsize, e + 0x3a, sizeof shentsize);
    std::memcpy(&shnum, e + 0x3c, sizeof shnum);
    keep(image, shoff + uint64_t{shentsize} * shnum);
  } else {
    keep(image, std::strlen(static_cast<const char*>(image)) + 1);  // PTX
  }
  return out;
}

// Loads `image` as a module of the session. A library (cuLibraryLoadData) is the same thing,
// loaded without a current context: the session outlives contexts.
CUresult LoadModule(DriverModule** module, const void* image, bool need_context = true) {
  if (CUresult r = need_context ? NeedContext() : NeedInit()) return r;
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Result<std::vector<std::string>> images = ImagesOf(image);
  if (!images.ok()) return CUDA_ERROR_INVALID_IMAGE;
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return ToCu(e);
  v1::RegisterModuleRequest req;
  std::vector<fatbin::Bytes> views;
  for (const std::string& img : *images) {
    req.add_images(img);
    views.push_back(std::as_bytes(std::span(img.data(), img.size())));
  }
  req.set_hash(fatbin::ImagesDigest(views));
  v1::RegisterModuleReply rep;
  if (cudaError_t e = c.Call(CallId::kRegisterModule, req, &rep)) return ToCu(e);
  auto m = std::make_unique<DriverModule>();
  m->id = rep.module();
  *module = m.release();  // cuModuleUnload or cuLibraryUnload deletes it
  return CUDA_SUCCESS;
}

CUresult UnloadModule(DriverModule* module) {
  if (CUresult r = NeedInit()) return r;
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::unique_ptr<DriverModule> m(module);
  v1::UnregisterModuleRequest req;
  req.set_module(m->id);
  return ToCu(Connection::Get().Post(CallId::kUnregisterModule, req));
}

// Kernel `name` of `m`, asked of the server once; a CUfunction and a CUkernel alike.
CUresult KernelOf(DriverModule* m, const char* name, Kernel** out) {
  if (out == nullptr || m == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(m->mu);
  std::unique_ptr<Kernel>& k = m->kernels[name];
  if (!k) {
    v1::ModuleFunctionRequest req;
    req.set_module(m->id);
    req.set_name(name);
    v1::KernelLayout rep;
    if (cudaError_t e = Connection::Get().Call(CallId::kModuleGetFunction, req, &rep)) {
      m->kernels.erase(name);
      return e == cudaErrorInvalidDeviceFunction ? CUDA_ERROR_NOT_FOUND : ToCu(e);
    }
    k = std::make_unique<Kernel>();
    k->name = name;
    ApplyLayout(*k, rep);
  }
  *out = k.get();
  return CUDA_SUCCESS;
}

// Variable `name` of `m`: its address and size.
CUresult GlobalOf(DriverModule* m, const char* name, CUdeviceptr* dptr, size_t* bytes) {
  if (m == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  v1::ModuleFunctionRequest req;
  req.set_module(m->id);
  req.set_name(name);
  v1::VariableInfo rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kModuleGetGlobal, req, &rep))
    return e == cudaErrorInvalidSymbol ? CUDA_ERROR_NOT_FOUND : ToCu(e);
  if (dptr) *dptr = rep.dptr();
  if (bytes) *bytes = rep.size();
  return CUDA_SUCCESS;
}

// A launch with `params` (one pointer per parameter) or `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER
// and _SIZE: the parameters packed), never both.
CUresult Launch(CUfunction fn, dim3 grid, dim3 block, unsigned int shared, CUstream s,
                void** params, void** extra, bool cooperative) {
  if (CUresult r = NeedContext()) return r;
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const auto& k = *reinterpret_cast<const Kernel*>(fn);
  std::string packed;
  if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (params != nullptr) {
    if (!PackParams(k, params, &packed)) return CUDA_ERROR_INVALID_VALUE;
  } else if (extra != nullptr) {
    const void* buffer = nullptr;
    const size_t* size = nullptr;
    for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
      if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buffer = e[1];
      else if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = static_cast<const size_t*>(e[1]);
      else
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (buffer == nullptr || size == nullptr || *size < k.param_bytes)
      return CUDA_ERROR_INVALID_VALUE;
    packed.assign(static_cast<const char*>(buffer), k.param_bytes);
  } else if (k.param_bytes != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return ToCu(PostLaunch(k, grid, block, packed, shared, s, cooperative));
}

// Says once, on stderr, that launch attribute `id` is not served.
CUresult RefuseAttribute(int id) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr,
                 "remora: cuLaunchKernelEx: launch attribute %d is not served by Remora's "
                 "libcuda.so.1 (the cooperative attribute is); the launch returns "
                 "CUDA_ERROR_NOT_SUPPORTED\n",
                 id);
  return CUDA_ERROR_NOT_SUPPORTED;
}

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
}  // namespace remora::client_stub

using namespace remora::client_stub;  // NOLINT: the exported C entry points below
using remora::CallId;
namespace v1 = remora::v1;

extern "C" {

// ---- Initialization, versions, errors -----------------------------------------

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  int n = 0;
  if (cudaError_t e = cudaGetDeviceCount(&n)) return ToCu(e);  // reaches the server
  if (n == 0) return CUDA_ERROR_NO_DEVICE;
  g_initialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** str) {
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *str = ErrorName(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** str) {
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const char* name = ErrorName(error);
  *str = name ? cudaGetErrorString(static_cast<cudaError_t>(error)) : nullptr;
  return name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// NVIDIA's runtime asks for its private tables first. Without them it cannot run here; say so
// (once) rather than let it find another way to the GPU.
CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr,
                 "remora: this process carries NVIDIA's own CUDA runtime (nvcc's default static "
                 "runtime, or a framework's libcudart), which asks libcuda.so.1 for NVIDIA's "
                 "private export tables. Remora's libcuda.so.1 does not serve them yet, so the "
                 "program is refused rather than run outside Remora; build it with "
                 "`-cudart shared` (CMake: CMAKE_CUDA_RUNTIME_LIBRARY=Shared) to run it under "
                 "Remora.\n");
  if (table) *table = nullptr;
  (void)id;
  return CUDA_ERROR_NOT_SUPPORTED;
}

// ---- Devices ------------------------------------------------------------------

CUresult cuDeviceGetCount(int* count) {
  if (CUresult r = NeedInit()) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ToCu(cudaGetDeviceCount(count));
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = NeedDevice(ordinal)) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (CUresult r = NeedDevice(dev)) return r;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, dev)) return ToCu(e);
  std::snprintf(name, static_cast<size_t>(len), "%s", p.name);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  if (CUresult r = NeedDevice(dev)) return r;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, dev)) return ToCu(e);
  *bytes = p.totalGlobalMem;
  return CUDA_SUCCESS;
}

// CUdevice_attribute and cudaDeviceAttr number the same attributes alike.
CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  if (CUresult r = NeedDevice(dev)) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ToCu(cudaDeviceGetAttribute(value, static_cast<cudaDeviceAttr>(attrib), dev));
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  if (CUresult r = NeedDevice(dev)) return r;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, dev)) return ToCu(e);
  std::memcpy(uuid->bytes, p.uuid.bytes, sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* id, int len, CUdevice dev) {
  if (CUresult r = NeedDevice(dev)) return r;
  return ToCu(cudaDeviceGetPCIBusId(id, len, dev));
}

// ---- Contexts: one per process, the session -----------------------------------

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  if (CUresult r = NeedDevice(dev)) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  g_primary_refs.fetch_add(1);
  *ctx = TheContext();
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  if (CUresult r = NeedDevice(dev)) return r;
  int refs = g_primary_refs.load();
  while (refs > 0 && !g_primary_refs.compare_exchange_weak(refs, refs - 1)) {
  }
  return refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (CUresult r = NeedDevice(dev)) return r;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = 0;
  *active = g_primary_refs.load() > 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int) {
  return NeedDevice(dev);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  if (CUresult r = NeedDevice(dev)) return r;
  return ToCu(cudaDeviceReset());
}

CUresult cuCtxCreate(CUcontext* ctx, CUctxCreateParams*, unsigned int, CUdevice dev) {
  if (CUresult r = NeedDevice(dev)) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = TheContext();
  t_contexts.push_back(*ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx) {
  if (CUresult r = NeedInit()) return r;
  if (ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::erase(t_contexts, ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (CUresult r = NeedInit()) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = Current();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (CUresult r = NeedInit()) return r;
  if (ctx != nullptr && ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!t_contexts.empty()) t_contexts.pop_back();
  if (ctx != nullptr) t_contexts.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) {
  if (CUresult r = NeedInit()) return r;
  if (ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  t_contexts.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext* ctx) {
  if (CUresult r = NeedContext()) return r;
  if (ctx) *ctx = Current();
  t_contexts.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* dev) {
  if (CUresult r = NeedContext()) return r;
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  if (CUresult r = NeedInit()) return r;
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx != nullptr ? ctx != TheContext() : Current() == nullptr)
    return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020;  // the context API's version, as NVIDIA's driver reports it
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaDeviceSynchronize());
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  if (CUresult r = NeedInit()) return r;
  if (ctx != nullptr && ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx == nullptr && Current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return ToCu(cudaDeviceSynchronize());
}

// ---- Memory ---------------------------------------------------------------------

CUresult cuMemGetInfo(size_t* free, size_t* total) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMemGetInfo(free, total));
}

CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytes) {
  if (CUresult r = NeedContext()) return r;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  CUresult r = ToCu(cudaMalloc(&p, bytes));
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

CUresult cuMemFree(CUdeviceptr dptr) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaFree(reinterpret_cast<void*>(dptr)));
}

CUresult cuMemAllocHost(void** pp, size_t bytes) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMallocHost(pp, bytes));
}

CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaHostAlloc(pp, bytes, flags));  // CU_MEMHOSTALLOC_* are cudaHostAlloc*'s bits
}

CUresult cuMemHostRegister(void* p, size_t bytes, unsigned int flags) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaHostRegister(p, bytes, flags));  // CU_MEMHOSTREGISTER_* are cudaHostRegister*
}

CUresult cuMemHostUnregister(void* p) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaHostUnregister(p));
}

CUresult cuMemFreeHost(void* p) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaFreeHost(p));
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMemcpy(reinterpret_cast<void*>(dst), src, n, cudaMemcpyHostToDevice));
}

CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMemcpy(dst, reinterpret_cast<void*>(src), n, cudaMemcpyDeviceToHost));
}

CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMemcpy(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n,
                         cudaMemcpyDeviceToDevice));
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(
      cudaMemcpy(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n, cudaMemcpyDefault));
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMemcpyAsync(reinterpret_cast<void*>(dst), src, n, cudaMemcpyHostToDevice, s));
}

CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMemcpyAsync(dst, reinterpret_cast<void*>(src), n, cudaMemcpyDeviceToHost, s));
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n,
                              cudaMemcpyDeviceToDevice, s));
}

CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t n) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMemset(reinterpret_cast<void*>(dst), value, n));
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaMemsetAsync(reinterpret_cast<void*>(dst), value, n, s));
}

// A 32-bit pattern: a byte memset when its four bytes agree, else the pattern copied in.
CUresult cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t n) {
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
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaStreamCreateWithFlags(s, flags));  // CU_STREAM_* are cudaStream*'s flags
}

CUresult cuStreamDestroy(CUstream s) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaStreamDestroy(s));
}

CUresult cuStreamSynchronize(CUstream s) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaStreamSynchronize(s));
}

CUresult cuStreamQuery(CUstream s) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaStreamQuery(s));
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaStreamWaitEvent(s, e, flags));
}

CUresult cuStreamCreateWithPriority(CUstream* s, unsigned int flags, int priority) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaStreamCreateWithPriority(s, flags, priority));
}

CUresult cuStreamGetPriority(CUstream s, int* priority) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaStreamGetPriority(s, priority));
}

CUresult cuStreamGetFlags(CUstream s, unsigned int* flags) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaStreamGetFlags(s, flags));
}

CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaDeviceGetStreamPriorityRange(least, greatest));
}

CUresult cuEventCreate(CUevent* e, unsigned int flags) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaEventCreateWithFlags(e, flags));
}

CUresult cuEventRecord(CUevent e, CUstream s) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaEventRecord(e, s));
}

CUresult cuEventSynchronize(CUevent e) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaEventSynchronize(e));
}

CUresult cuEventQuery(CUevent e) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaEventQuery(e));
}

CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaEventElapsedTime(ms, start, end));
}

CUresult cuEventDestroy(CUevent e) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaEventDestroy(e));
}

// ---- Modules and launches ------------------------------------------------------

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return LoadModule(reinterpret_cast<DriverModule**>(module), image);
}

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, CUjit_option*,
                            void**) {
  // JIT options tune a compiler the server runs.
  return LoadModule(reinterpret_cast<DriverModule**>(module), image);
}

CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatbin) {
  return LoadModule(reinterpret_cast<DriverModule**>(module), fatbin);
}

CUresult cuModuleLoad(CUmodule* module, const char* path) {
  if (CUresult r = NeedContext()) return r;
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.push_back('\0');  // PTX text is read as a C string
  return LoadModule(reinterpret_cast<DriverModule**>(module), bytes.data());
}

CUresult cuModuleUnload(CUmodule module) {
  if (CUresult r = NeedContext()) return r;
  return UnloadModule(reinterpret_cast<DriverModule*>(module));
}

CUresult cuModuleGetFunction(CUfunction* fn, CUmodule module, const char* name) {
  if (CUresult r = NeedContext()) return r;
  return KernelOf(reinterpret_cast<DriverModule*>(module), name, reinterpret_cast<Kernel**>(fn));
}

CUresult cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule module, const char* name) {
  if (CUresult r = NeedContext()) return r;
  return GlobalOf(reinterpret_cast<DriverModule*>(module), name, dptr, bytes);
}

// Libraries: modules loaded with no context current, whose kernels (CUkernel, usable as a
// CUfunction) outlive contexts. The session is both here.
CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**,
                           unsigned int, CUlibraryOption*, void**, unsigned int) {
  return LoadModule(reinterpret_cast<DriverModule**>(library), code, /*need_context=*/false);
}

CUresult cuLibraryUnload(CUlibrary library) {
  return UnloadModule(reinterpret_cast<DriverModule*>(library));
}

CUresult cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  if (CUresult r = NeedInit()) return r;
  return KernelOf(reinterpret_cast<DriverModule*>(library), name,
                  reinterpret_cast<Kernel**>(kernel));
}

CUresult cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  if (CUresult r = NeedContext()) return r;
  if (module == nullptr || library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *module = reinterpret_cast<CUmodule>(library);
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  if (CUresult r = NeedContext()) return r;
  return GlobalOf(reinterpret_cast<DriverModule*>(library), name, dptr, bytes);
}

CUresult cuKernelGetFunction(CUfunction* fn, CUkernel kernel) {
  if (CUresult r = NeedContext()) return r;
  if (fn == nullptr || kernel == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *fn = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attrib, int value) {
  if (CUresult r = NeedContext()) return r;
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  v1::FuncAttributeRequest req;
  req.set_kernel(reinterpret_cast<const Kernel*>(fn)->handle);
  req.set_attribute(attrib);
  req.set_value(value);
  v1::Empty rep;
  return ToCu(Connection::Get().Call(CallId::kFuncSetAttribute, req, &rep));
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction fn, int block_size,
                                                     size_t dynamic_shared) {
  if (CUresult r = NeedContext()) return r;
  if (blocks == nullptr || fn == nullptr || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  v1::OccupancyRequest req;
  req.set_kernel(reinterpret_cast<const Kernel*>(fn)->handle);
  req.set_block_size(block_size);
  req.set_dynamic_shared(dynamic_shared);
  v1::IntReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kOccupancyMaxActiveBlocks, req, &rep))
    return ToCu(e);
  *blocks = static_cast<int>(rep.value());
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attrib, CUfunction fn) {
  if (CUresult r = NeedContext()) return r;
  if (value == nullptr || fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto& k = *reinterpret_cast<const Kernel*>(fn);
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = k.max_threads_per_block;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *value = k.shared_size_bytes;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *value = k.const_size_bytes;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *value = k.local_size_bytes;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = k.num_regs;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
      *value = k.ptx_version;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *value = k.binary_version;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                        CUstream s, void** params, void** extra) {
  return Launch(fn, dim3(gx, gy, gz), dim3(bx, by, bz), shared, s, params, extra, false);
}

CUresult cuLaunchCooperativeKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz,
                                   unsigned int shared, CUstream s, void** params) {
  return Launch(fn, dim3(gx, gy, gz), dim3(bx, by, bz), shared, s, params, nullptr, true);
}

// The cooperative attribute is served; a priority the stream already has is the launch's.
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction fn, void** params,
                          void** extra) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
      cooperative = a.value.cooperative != 0;
    else
      return RefuseAttribute(a.id);
  }
  return Launch(fn, dim3(config->gridDimX, config->gridDimY, config->gridDimZ),
                dim3(config->blockDimX, config->blockDimY, config->blockDimZ),
                config->sharedMemBytes, config->hStream, params, extra, cooperative);
}

CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void* data) {
  if (CUresult r = NeedContext()) return r;
  return ToCu(cudaLaunchHostFunc(s, fn, data));
}

// ---- Entry points by name ------------------------------------------------------

// The current ABI of each entry point (cuda.h's `#define cuX cuX_vN`), then the name itself:
// what this library exports for it, served or refused.
CUresult cuGetProcAddress(const char* symbol, void** pfn, int, cuuint64_t,
                          CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static void* const self = [] {
    Dl_info info{};
    (void)dladdr(reinterpret_cast<void*>(&cuGetProcAddress), &info);
    return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }();
  *pfn = nullptr;
  const std::string name(symbol);
  for (const char* suffix : {"_v4", "_v3", "_v2", ""}) {
    if ((*pfn = dlsym(self, (name + suffix).c_str())) != nullptr) break;
  }
  if (status) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"
