// server/driver_table.cc - dlopen/dlsym of the driver table.
#include "server/driver_table.h"

#include <dlfcn.h>

#include "server/log.h"

namespace remora::server {

struct DriverTable::Handle {
  void* lib = nullptr;
  ~Handle() {
    // Unloading a CUDA driver while its threads may still run is unsafe; the
    // process keeps it until exit, as NVIDIA's runtime does.
  }
};

namespace {

// A missing row answers "not supported" with whatever arguments it gets.
template <typename R, typename... A>
R NotSupported(A...) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
template <typename R, typename... A>
auto NotSupportedFor(R (*)(A...)) -> R (*)(A...) {
  return &NotSupported<R, A...>;
}

#define REMORA_XSTR(x) REMORA_STR(x)
#define REMORA_STR(x) #x

Result<std::shared_ptr<DriverTable>> Open(const std::string& path, bool emulated) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    return Error(err::kInitializationError, "cannot load " + path + ": " + (e ? e : "?"));
  }
  auto t = std::make_shared<DriverTable>();
  t->handle = std::make_shared<DriverTable::Handle>();
  t->handle->lib = lib;
  t->library = path;
  t->emulated = emulated;
  int missing = 0;
#define DRIVER_FN(name)                                                  \
  if (void* f = dlsym(lib, REMORA_XSTR(name))) {                         \
    t->name = reinterpret_cast<decltype(t->name)>(f);                    \
  } else {                                                               \
    t->name = NotSupportedFor(t->name);                                  \
    ++missing;                                                           \
    Log(Level::kDebug, "driver", {{"missing", REMORA_XSTR(name)}});      \
  }
#include "server/driver.def"
  t->remoraEmuSetPrintfHandler =
      reinterpret_cast<SetPrintfHandlerFn>(dlsym(lib, "remoraEmuSetPrintfHandler"));
  t->remoraEmuGetStreamBusyTime =
      reinterpret_cast<StreamBusyTimeFn>(dlsym(lib, "remoraEmuGetStreamBusyTime"));
  if (missing) Log(Level::kWarn, "driver", {{"library", path}, {"missing_rows", missing}});
  CUresult r = t->cuInit(0);
  if (r != CUDA_SUCCESS)
    return Error(err::kInitializationError, path + ": cuInit failed: " + t->Describe(r));
  int count = 0;
  r = t->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count < 1)
    return Error(err::kInitializationError, path + ": no CUDA device (" + t->Describe(r) + ")");
  return t;
}

}  // namespace

Result<DeviceKind> ParseDeviceKind(const std::string& s) {
  if (s == "auto") return DeviceKind::kAuto;
  if (s == "cuda") return DeviceKind::kCuda;
  if (s == "emu") return DeviceKind::kEmu;
  return Error(err::kInvalidValue, "--device must be auto, cuda or emu, not '" + s + "'");
}

Result<std::shared_ptr<DriverTable>> DriverTable::Load(DeviceKind kind, const std::string& emu_dir) {
  const std::string emu = emu_dir + "/libcuda.so.1";
  if (kind == DeviceKind::kEmu) return Open(emu, true);
  auto nvidia = Open("libcuda.so.1", false);
  if (nvidia.ok() || kind == DeviceKind::kCuda) return nvidia;
  Log(Level::kInfo, "driver",
      {{"event", "no_gpu"}, {"reason", nvidia.status().message()}, {"fallback", emu}});
  return Open(emu, true);
}

std::string DriverTable::Describe(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "CUDA_ERROR_UNKNOWN_CODE";
  if (cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "";
  return std::string(name) + " (" + std::to_string(r) + "): " + text;
}

int32_t ToCudaError(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return 0;
    case CUDA_ERROR_INVALID_VALUE: return err::kInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return err::kMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return err::kInitializationError;
    case CUDA_ERROR_INVALID_HANDLE: return err::kInvalidResourceHandle;
    case CUDA_ERROR_NOT_READY: return err::kNotReady;
    case CUDA_ERROR_ILLEGAL_ADDRESS: return err::kIllegalAddress;
    case CUDA_ERROR_LAUNCH_FAILED: return err::kLaunchFailure;
    case CUDA_ERROR_ASSERT: return err::kAssert;
    case CUDA_ERROR_NOT_SUPPORTED: return err::kNotSupported;
    case CUDA_ERROR_NOT_FOUND: return err::kInvalidDeviceFunction;
    case CUDA_ERROR_INVALID_PTX: return err::kInvalidPtx;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return err::kNoKernelImage;
    case CUDA_ERROR_INVALID_IMAGE: return err::kInvalidPtx;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return 701;  // cudaErrorLaunchOutOfResources
    case CUDA_ERROR_INVALID_DEVICE: return err::kInvalidDevice;
    default: return err::kUnknown;
  }
}

}  // namespace remora::server
