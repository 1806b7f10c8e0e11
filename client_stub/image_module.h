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
#include <optional>
#include <string>
#include <vector>

#include "proto/status.h"

namespace remora::client_stub {

struct Kernel;

struct ImageModule {
  uint64_t id = 0;  // the server's, in device epoch `epoch`
  uint64_t epoch = 0;
  // What a reload after a device reset sends: the caller's image where it stays valid (an nvcc
  // wrapper's fat binaries live in the program; a library loaded as preserved), else a copy.
  const void* preserved = nullptr;
  std::vector<std::string> kept;
  bool rdc = false;
  std::string origin;  // ImageOrigin of the image loaded
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Kernel>> kernels;  // asked for so far
  std::optional<std::vector<std::string>> kernel_names;    // all, once asked for
  std::vector<uint64_t> managed;  // its __managed__ variables mirrored so far (mirror.h)
  ~ImageModule();
};

// Loads `image`: an nvcc fat-binary wrapper (an -rdc one links its translation units), a fat
// binary, a cubin or NUL-terminated PTX. `preserved`: the caller keeps the image valid as long
// as the module (otherwise it may free it on return, and a copy is kept). Errors:
// cudaErrorInvalidValue for a null pointer; cudaErrorInvalidKernelImage for an image it cannot
// read; the server's answer, and for a module with no image the device can run
// (cudaErrorNoKernelImageForDevice) a line on stderr naming it. The caller owns *out and ends
// it with UnloadImageModule.
cudaError_t LoadImageModule(const void* image, bool preserved, ImageModule** out);
// Whether library options (`opts`, with `values` beside them, the driver's or the runtime's
// numbering) hold `preserved` with a nonzero value.
template <class Option>
bool PreservedOption(const Option* opts, void* const* values, unsigned n, Option preserved) {
  for (unsigned i = 0; opts != nullptr && values != nullptr && i < n; ++i)
    if (opts[i] == preserved && values[i] != nullptr) return true;
  return false;
}
// The path of the program or library whose memory holds `image` (what NVIDIA's libraries
// load from their own files), or "" for memory no loaded object holds (an image read at run time).
std::string ImageOrigin(const void* image);
// For a message about the library at `path`: how `remora run --remote-libs` serves it from the
// server instead, when it is one of NVIDIA's cuBLAS, cuBLASLt or cuDNN, else "".
const char* RemoteLibsHint(const std::string& path);
// The bytes of the image file `path`, NUL-terminated (PTX text is read up to its end);
// cudaErrorFileNotFound if it cannot be read.
Result<std::string> ReadImageFile(const char* path);
// Unloads and deletes `m` (its kernels' handles die with it).
cudaError_t UnloadImageModule(ImageModule* m);
// Kernel `name` of `m`, a launchable handle that FindKernel also accepts; asked of the server
// once. cudaErrorInvalidDeviceFunction if the module has no such kernel.
cudaError_t ImageModuleKernel(ImageModule* m, const char* name, Kernel** out);
// The names of all of `m`'s kernels, in the module's order: asked of the server once, and
// valid as long as `m`.
cudaError_t ImageModuleKernelNames(ImageModule* m, const std::vector<std::string>** names);
// After a device reset (DeviceEpoch), loads `k`'s module again and asks for its kernel again,
// as NVIDIA's driver keeps libraries and kernels across a primary-context reset; nothing to
// do otherwise.
cudaError_t RefreshImageKernel(Kernel& k);
// Variable `name` of `m`: its device address and size. cudaErrorInvalidSymbol if none.
cudaError_t ImageModuleGlobal(ImageModule* m, const char* name, uint64_t* dptr, size_t* bytes);
// The same for a __managed__ variable (cuLibraryGetManaged), which the host then reaches at
// that address: mirrored (mirror.h) until `m` is unloaded. The variable is not checked to be
// declared managed. Errors: as ImageModuleGlobal, and Mirrors::Adopt's.
cudaError_t ImageModuleManaged(ImageModule* m, const char* name, uint64_t* dptr, size_t* bytes);

}  // namespace remora::client_stub
