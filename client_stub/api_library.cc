// client_stub/api_library.cc - cudaLibrary*: modules the program loads at run time (a fat
// binary, cubin or PTX), their kernels launchable like any other (image_module.h).
#include <string>

#include "client_stub/api.h"
#include "client_stub/errors.h"
#include "client_stub/image_module.h"
#include "client_stub/kernels.h"

namespace cs = remora::client_stub;
using cs::Ret;

namespace {

cs::ImageModule* Of(cudaLibrary_t library) {
  return reinterpret_cast<cs::ImageModule*>(library);
}

// Variable `name` of `library` as `find` gives it (its device address and size); a variable it
// lacks is cudaErrorSymbolNotFound.
cudaError_t VariableOf(cudaError_t (*find)(cs::ImageModule*, const char*, uint64_t*, size_t*),
                       void** dptr, size_t* bytes, cudaLibrary_t library, const char* name) {
  if (library == nullptr || name == nullptr) return Ret(cudaErrorInvalidValue);
  uint64_t at = 0;
  if (cudaError_t e = find(Of(library), name, &at, bytes))
    return Ret(e == cudaErrorInvalidSymbol ? cudaErrorSymbolNotFound : e);
  if (dptr) *dptr = reinterpret_cast<void*>(at);
  return cudaSuccess;
}

}  // namespace

extern "C" {

// JIT and library options only tune NVIDIA's loader; none changes what is loaded here.
// A library whose caller preserves its image is reloaded from it after a device reset; any
// other is copied. JIT options only tune NVIDIA's loader.
cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code, cudaJitOption*, void**,
                                unsigned int, cudaLibraryOption* opts, void** values,
                                unsigned int nopts) {
  if (library == nullptr || code == nullptr) return Ret(cudaErrorInvalidValue);
  cs::ImageModule* m = nullptr;
  if (cudaError_t e = cs::LoadImageModule(
          code, cs::PreservedOption(opts, values, nopts, cudaLibraryBinaryIsPreserved), &m))
    return Ret(e);
  *library = reinterpret_cast<cudaLibrary_t>(m);
  return cudaSuccess;
}

cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* library, const char* path, cudaJitOption* jit,
                                    void** jit_values, unsigned int njit, cudaLibraryOption*,
                                    void**, unsigned int) {
  if (library == nullptr || path == nullptr) return Ret(cudaErrorInvalidValue);
  remora::Result<std::string> bytes = cs::ReadImageFile(path);
  if (!bytes.ok()) return Ret(cudaErrorFileNotFound);
  // Read into this call's memory, so never preserved: a copy is kept.
  return cudaLibraryLoadData(library, bytes->data(), jit, jit_values, njit, nullptr, nullptr, 0);
}

cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  if (library == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  return Ret(cs::UnloadImageModule(Of(library)));
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) {
  if (kernel == nullptr || library == nullptr || name == nullptr) return Ret(cudaErrorInvalidValue);
  cs::Kernel* k = nullptr;
  if (cudaError_t e = cs::ImageModuleKernel(Of(library), name, &k))
    return Ret(e == cudaErrorInvalidDeviceFunction ? cudaErrorSymbolNotFound : e);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return cudaSuccess;
}

cudaError_t cudaLibraryGetKernelCount(unsigned int* count, cudaLibrary_t library) {
  if (count == nullptr || library == nullptr) return Ret(cudaErrorInvalidValue);
  const std::vector<std::string>* names = nullptr;
  if (cudaError_t e = cs::ImageModuleKernelNames(Of(library), &names)) return Ret(e);
  *count = static_cast<unsigned int>(names->size());
  return cudaSuccess;
}

cudaError_t cudaLibraryEnumerateKernels(cudaKernel_t* kernels, unsigned int n,
                                        cudaLibrary_t library) {
  if (kernels == nullptr || library == nullptr) return Ret(cudaErrorInvalidValue);
  const std::vector<std::string>* names = nullptr;
  if (cudaError_t e = cs::ImageModuleKernelNames(Of(library), &names)) return Ret(e);
  for (size_t i = 0; i < n && i < names->size(); ++i)
    if (cudaError_t e = cudaLibraryGetKernel(&kernels[i], library, (*names)[i].c_str())) return e;
  return cudaSuccess;
}

cudaError_t cudaLibraryGetGlobal(void** dptr, size_t* bytes, cudaLibrary_t library,
                                 const char* name) {
  return VariableOf(&cs::ImageModuleGlobal, dptr, bytes, library, name);
}

cudaError_t cudaLibraryGetManaged(void** dptr, size_t* bytes, cudaLibrary_t library,
                                  const char* name) {
  return VariableOf(&cs::ImageModuleManaged, dptr, bytes, library, name);
}

}  // extern "C"
