// client_stub/image_module.h - modules loaded from an image at run time (cuModuleLoadData,
// cuLibraryLoadData, cudaLibraryLoadData), as opposed to those nvcc registers (kernels.h).
//
// A module goes to the server as a RegisterModule of its images, by hash first (the server
// keeps what it was sent, so a framework's large fat binaries cross once); its kernels and
// variables are asked for by name (ModuleGetFunction, ModuleGetGlobal), each kernel once.
// Thread-safe.
#pragma once

#include <driver_types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace remora::client_stub {

struct Kernel;

struct ImageModule {
  uint64_t id = 0;  // the server's, in device epoch `epoch`
  uint64_t epoch = 0;
  const void* image = nullptr;  // as given: the caller keeps it (NVIDIA's runtime preserves it)
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Kernel>> kernels;  // asked for so far
  ~ImageModule();
};

// Loads `image`: an nvcc fat-binary wrapper (an -rdc one links its translation units), a fat
// binary, a cubin or NUL-terminated PTX. Errors: cudaErrorInvalidValue for a null pointer;
// cudaErrorInvalidKernelImage for an image it cannot read; the server's answer, and for a
// module with no image the device can run (cudaErrorNoKernelImageForDevice) a line on stderr
// naming it. The caller owns *out and ends it with UnloadImageModule.
cudaError_t LoadImageModule(const void* image, ImageModule** out);
// Unloads and deletes `m` (its kernels' handles die with it).
cudaError_t UnloadImageModule(ImageModule* m);
// Kernel `name` of `m`, a launchable handle that FindKernel also accepts; asked of the server
// once. cudaErrorInvalidDeviceFunction if the module has no such kernel.
cudaError_t ImageModuleKernel(ImageModule* m, const char* name, Kernel** out);
// After a device reset (DeviceEpoch), loads `k`'s module again and asks for its kernel again,
// as NVIDIA's driver keeps libraries and kernels across a primary-context reset; nothing to
// do otherwise.
cudaError_t RefreshImageKernel(Kernel& k);
// Variable `name` of `m`: its device address and size. cudaErrorInvalidSymbol if none.
cudaError_t ImageModuleGlobal(ImageModule* m, const char* name, uint64_t* dptr, size_t* bytes);

}  // namespace remora::client_stub
