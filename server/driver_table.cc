// server/driver_table.cc - dlopen/dlsym of the driver table.
#include "server/driver_table.h"

#include <dlfcn.h>

#include "server/dl_rows.h"
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
#define DRIVER_FN(name)                                                      \
  if (!Resolve<CUDA_ERROR_NOT_SUPPORTED>(lib, REMORA_XSTR(name), t->name)) { \
    ++missing;                                                               \
    Log(Level::kDebug, "driver", {{"missing", REMORA_XSTR(name)}});          \
  }
#include "server/driver.def"
  t->remoraEmuSetPrintfHandler =
      reinterpret_cast<SetPrintfHandlerFn>(dlsym(lib, "remoraEmuSetPrintfHandler"));
  t->remoraEmuGetStreamBusyTime =
      reinterpret_cast<StreamBusyTimeFn>(dlsym(lib, "remoraEmuGetStreamBusyTime"));
  t->remoraEmuGetFaultStream =
      reinterpret_cast<FaultStreamFn>(dlsym(lib, "remoraEmuGetFaultStream"));
  t->remoraEmuCancelStream = reinterpret_cast<CancelStreamFn>(dlsym(lib, "remoraEmuCancelStream"));
  t->remoraEmuSetLaunchHeapOwner =
      reinterpret_cast<SetLaunchHeapOwnerFn>(dlsym(lib, "remoraEmuSetLaunchHeapOwner"));
  t->remoraEmuHeapSetLimit = reinterpret_cast<HeapSetLimitFn>(dlsym(lib, "remoraEmuHeapSetLimit"));
  t->remoraEmuHeapRelease = reinterpret_cast<HeapReleaseFn>(dlsym(lib, "remoraEmuHeapRelease"));
  t->remoraEmuTexObjectCreatePitched =
      reinterpret_cast<TexObjectCreatePitchedFn>(dlsym(lib, "remoraEmuTexObjectCreatePitched"));
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

Result<std::shared_ptr<DriverTable>> DriverTable::Load(DeviceKind kind,
                                                       const std::string& emu_dir) {
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

// How driver results read to a tenant. Codes absent here are reported as
// cudaErrorUnknown, with the driver's own text in the server log.
struct ErrorMapping {
  CUresult driver;
  int32_t runtime;
};
constexpr ErrorMapping kErrorMap[] = {
    {CUDA_SUCCESS, 0},
    {CUDA_ERROR_INVALID_VALUE, err::kInvalidValue},
    {CUDA_ERROR_OUT_OF_MEMORY, err::kMemoryAllocation},
    {CUDA_ERROR_NOT_INITIALIZED, err::kInitializationError},
    {CUDA_ERROR_INVALID_DEVICE, err::kInvalidDevice},
    {CUDA_ERROR_INVALID_HANDLE, err::kInvalidResourceHandle},
    {CUDA_ERROR_NOT_READY, err::kNotReady},
    {CUDA_ERROR_ILLEGAL_ADDRESS, err::kIllegalAddress},
    {CUDA_ERROR_LAUNCH_FAILED, err::kLaunchFailure},
    {CUDA_ERROR_ASSERT, err::kAssert},
    {CUDA_ERROR_NOT_SUPPORTED, err::kNotSupported},
    {CUDA_ERROR_NOT_PERMITTED, err::kNotPermitted},
    {CUDA_ERROR_NOT_FOUND, err::kInvalidDeviceFunction},
    {CUDA_ERROR_INVALID_PTX, err::kInvalidPtx},
    {CUDA_ERROR_INVALID_IMAGE, err::kInvalidPtx},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, err::kNoKernelImage},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, err::kLaunchOutOfResources},
    {CUDA_ERROR_LAUNCH_TIMEOUT, err::kLaunchTimeout},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, err::kHardwareStackError},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, err::kIllegalInstruction},
    {CUDA_ERROR_MISALIGNED_ADDRESS, err::kMisalignedAddress},
    {CUDA_ERROR_INVALID_ADDRESS_SPACE, err::kInvalidAddressSpace},
    {CUDA_ERROR_INVALID_PC, err::kInvalidPc},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 713},
};

int32_t ToCudaError(CUresult r) {
  for (const ErrorMapping& m : kErrorMap)
    if (m.driver == r) return m.runtime;
  return err::kUnknown;
}

}  // namespace remora::server
