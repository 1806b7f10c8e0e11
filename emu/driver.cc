// emu/driver.cc - entry points: initialisation, device, context, errors, extensions.
#include "emu/driver.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>

#include "emu/device.h"

namespace remora::emu {
namespace {

thread_local Context* tls_current = nullptr;

struct ErrorRow {
  CUresult code;
  const char* name;
  const char* text;
};

constexpr ErrorRow kErrors[] = {
#define CU_ERROR(name, text) {name, #name, text},
#include "emu/cuda_errors.def"
};

const ErrorRow* FindError(CUresult code) {
  for (const ErrorRow& r : kErrors) {
    if (r.code == code) return &r;
  }
  return nullptr;
}

CUresult CheckDevice(CUdevice dev) {
  EMU_RETURN_IF_ERROR(CheckInit());
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

}  // namespace

Driver& TheDriver() {
  alignas(Driver) static unsigned char storage[sizeof(Driver)];
  static Driver* driver = std::construct_at(reinterpret_cast<Driver*>(storage));
  return *driver;
}

CUresult CheckInit() {
  return TheDriver().initialized.load(std::memory_order_acquire) ? CUDA_SUCCESS
                                                                 : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult CurrentContext(Context** ctx) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (tls_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  EMU_RETURN_IF_ERROR(tls_current->Check());
  *ctx = tls_current;
  return CUDA_SUCCESS;
}

Context* GetCurrent() {
  return tls_current;
}
void SetCurrent(Context* ctx) {
  tls_current = ctx;
}

}  // namespace remora::emu

using namespace remora::emu;  // NOLINT: entry points are global by ABI

// --- initialisation and version -------------------------------------------------

REMORA_EMU_API CUresult CUDAAPI cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  TheDriver().initialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorRow* r = FindError(error);
  *pStr = r == nullptr ? nullptr : r->name;
  return r == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorRow* r = FindError(error);
  *pStr = r == nullptr ? nullptr : r->text;
  return r == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

// --- device ----------------------------------------------------------------------

REMORA_EMU_API CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuDeviceGetCount(int* count) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(CheckDevice(dev));
  const size_t n = std::min(sizeof(kDeviceName) - 1, static_cast<size_t>(len) - 1);
  std::memcpy(name, kDeviceName, n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib,
                                                     CUdevice dev) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(CheckDevice(dev));
  auto v = DeviceAttribute(attrib);
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *pi = *v;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(CheckDevice(dev));
  *bytes = TheDriver().primary.memory().total();
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(CheckDevice(dev));
  *uuid = DeviceUuid();
  return CUDA_SUCCESS;
}

// --- primary context ---------------------------------------------------------------

REMORA_EMU_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(CheckDevice(dev));
  Context& ctx = TheDriver().primary;
  if (CUresult lost = ctx.ProcessFault(); lost != CUDA_SUCCESS) return lost;
  ctx.Retain();
  *pctx = ctx.handle();
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  EMU_RETURN_IF_ERROR(CheckDevice(dev));
  return TheDriver().primary.Release();
}

REMORA_EMU_API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  EMU_RETURN_IF_ERROR(CheckDevice(dev));
  TheDriver().primary.Reset();
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (ctx == nullptr) {
    SetCurrent(nullptr);
    return CUDA_SUCCESS;
  }
  Context& primary = TheDriver().primary;
  if (ctx != primary.handle()) return CUDA_ERROR_INVALID_CONTEXT;
  SetCurrent(&primary);
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* c = GetCurrent();
  *pctx = c == nullptr ? nullptr : c->handle();
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuCtxSynchronize(void) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->Synchronize();
}

REMORA_EMU_API CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->SetLimit(limit, value);
}

REMORA_EMU_API CUresult CUDAAPI cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  EMU_CURRENT_CONTEXT(ctx);
  if (pvalue == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->GetLimit(limit, pvalue);
}

REMORA_EMU_API CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* leastPriority,
                                                            int* greatestPriority) {
  EMU_CURRENT_CONTEXT(ctx);
  if (leastPriority != nullptr) *leastPriority = kStreamPriorityLeast;
  if (greatestPriority != nullptr) *greatestPriority = kStreamPriorityGreatest;
  return CUDA_SUCCESS;
}

// --- Green contexts: not on the emulated GPU -------------------------------------------
// Its multiprocessors are host cores the block dispatcher hands out to every grid alike, so
// there is no partition to make; the server then runs every class on the whole device.

REMORA_EMU_API CUresult CUDAAPI cuDeviceGetDevResource(CUdevice, CUdevResource*,
                                                       CUdevResourceType) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
REMORA_EMU_API CUresult CUDAAPI cuDevSmResourceSplitByCount(CUdevResource*, unsigned int*,
                                                            const CUdevResource*, CUdevResource*,
                                                            unsigned int, unsigned int) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
REMORA_EMU_API CUresult CUDAAPI cuDevResourceGenerateDesc(CUdevResourceDesc*, CUdevResource*,
                                                          unsigned int) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
REMORA_EMU_API CUresult CUDAAPI cuGreenCtxCreate(CUgreenCtx*, CUdevResourceDesc, CUdevice,
                                                 unsigned int) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
REMORA_EMU_API CUresult CUDAAPI cuGreenCtxDestroy(CUgreenCtx) {
  return CUDA_ERROR_INVALID_CONTEXT;  // none was ever made
}
REMORA_EMU_API CUresult CUDAAPI cuGreenCtxStreamCreate(CUstream*, CUgreenCtx, unsigned int, int) {
  return CUDA_ERROR_INVALID_CONTEXT;
}

// --- Remora extensions ---------------------------------------------------------------

REMORA_EMU_API CUresult remoraEmuSetPrintfHandler(PrintfHandler fn, void* user) {
  SetPrintfHandler(fn, user);
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult remoraEmuGetFaultStream(CUstream* stream) {
  EMU_RETURN_IF_ERROR(CheckInit());
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *stream = TheDriver().primary.FaultStream();
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult remoraEmuGetStreamBusyTime(CUstream s, unsigned long long* ns) {
  EMU_CURRENT_CONTEXT(ctx);
  if (ns == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t v = 0;
  EMU_RETURN_IF_ERROR(ctx->StreamBusyTime(s, &v));
  *ns = v;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult remoraEmuCancelStream(CUstream s) {
  EMU_CURRENT_CONTEXT(ctx);
  // REMORA_EMU_CANCEL=off: as NVIDIA's driver, which cannot stop a kernel (for tests of
  // what the server does there).
  static const bool off = [] {
    const char* v = std::getenv("REMORA_EMU_CANCEL");
    return v != nullptr && std::string_view(v) == "off";
  }();
  if (off) return CUDA_ERROR_NOT_SUPPORTED;
  return ctx->CancelStream(s);
}

// Device-side heaps kept apart by owner (Context::SetLaunchOwner): the server names the
// tenant whose launch it enqueues, sizes a tenant's heap, and forgets it when the tenant goes.
REMORA_EMU_API CUresult remoraEmuSetLaunchHeapOwner(unsigned long long owner) {
  Context::SetLaunchOwner(owner);
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult remoraEmuHeapSetLimit(unsigned long long owner, size_t bytes) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->SetOwnerHeapLimit(owner, bytes);
}

REMORA_EMU_API CUresult remoraEmuHeapRelease(unsigned long long owner) {
  EMU_CURRENT_CONTEXT(ctx);
  ctx->ReleaseOwnerHeap(owner);
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult remoraEmuGetProgramCacheStats(unsigned long long* programs,
                                                      unsigned long long* parses) {
  const ProgramCacheStats s = GetProgramCacheStats();
  if (programs != nullptr) *programs = s.entries;
  if (parses != nullptr) *parses = s.parses;
  return CUDA_SUCCESS;
}
