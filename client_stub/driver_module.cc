// client_stub/driver_module.cc - libcuda.so.1's modules, libraries and launches, and its
// entry points by name. A module (or library) the program loads goes to the server as a
// RegisterModule of its images; kernels and variables are asked for by name
// (ModuleGetFunction, ModuleGetGlobal); a launch is the core's PostLaunch.
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "client_stub/connection.h"
#include "client_stub/driver_internal.h"
#include "client_stub/image_module.h"
#include "client_stub/kernels.h"
#include "client_stub/state.h"
#include "fatbin/fatbin.h"

namespace remora::client_stub::driver {
namespace {

using DriverModule = ImageModule;

// Loads `image` as a module of the session. A library (cuLibraryLoadData) is the same thing,
// loaded without a current context: the session outlives contexts. `preserved`: the caller
// keeps the image valid (image_module.h).
CUresult LoadModule(DriverModule** module, const void* image, bool need_context = true,
                    bool preserved = false) {
  if (CUresult r = need_context ? NeedContext() : NeedInit()) return r;
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaError_t e = LoadImageModule(image, preserved, module);
  return e == cudaErrorInvalidKernelImage ? CUDA_ERROR_INVALID_IMAGE : ToCu(e);
}

CUresult UnloadModule(DriverModule* module) {
  if (CUresult r = NeedInit()) return r;
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return ToCu(UnloadImageModule(module));
}

// Kernel `name` of `m`, asked of the server once; a CUfunction and a CUkernel alike.
CUresult KernelOf(DriverModule* m, const char* name, Kernel** out) {
  cudaError_t e = ImageModuleKernel(m, name, out);
  return e == cudaErrorInvalidDeviceFunction ? CUDA_ERROR_NOT_FOUND : ToCu(e);
}

// The number of `m`'s kernels; and the first `n` of them, each found as KernelOf finds it.
CUresult KernelCount(DriverModule* m, unsigned int* count) {
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::vector<std::string>* names = nullptr;
  if (cudaError_t e = ImageModuleKernelNames(m, &names)) return ToCu(e);
  *count = static_cast<unsigned int>(names->size());
  return CUDA_SUCCESS;
}

CUresult KernelsOf(DriverModule* m, Kernel** out, unsigned int n) {
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::vector<std::string>* names = nullptr;
  if (cudaError_t e = ImageModuleKernelNames(m, &names)) return ToCu(e);
  for (size_t i = 0; i < n && i < names->size(); ++i)
    if (CUresult r = KernelOf(m, (*names)[i].c_str(), &out[i])) return r;
  return CUDA_SUCCESS;
}

// Variable `name` of `m`: its address and size, as `find` gives them (ImageModuleManaged for a
// __managed__ variable, which it also mirrors).
CUresult GlobalOf(DriverModule* m, const char* name, CUdeviceptr* dptr, size_t* bytes,
                  cudaError_t (*find)(ImageModule*, const char*, uint64_t*,
                                      size_t*) = &ImageModuleGlobal) {
  uint64_t at = 0;
  cudaError_t e = find(m, name, &at, bytes);
  if (e == cudaSuccess && dptr) *dptr = at;
  return e == cudaErrorInvalidSymbol ? CUDA_ERROR_NOT_FOUND : ToCu(e);
}

// How a launch whose shape is past the device's limits fails. The driver API documents
// CUDA_ERROR_INVALID_VALUE. NVIDIA's runtime passes its driver's codes through unchanged (every
// code from 1 to 999 was tried under it) yet reports cudaErrorInvalidConfiguration (9) for such
// a launch on a GPU, so the launch entry points it asks for by name (cuGetProcAddress) hand it
// 9, a number no CUresult names.
enum class ShapeError { kDriver, kRuntime };

// A launch with `params` (one pointer per parameter) or `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER
// and _SIZE: the parameters packed), never both.
CUresult Launch(CUfunction fn, dim3 grid, dim3 block, unsigned int shared, CUstream s,
                void** params, void** extra, LaunchMode mode, ShapeError shape) {
  if (CUresult r = NeedContext()) return r;
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const auto& k = *reinterpret_cast<const Kernel*>(fn);
  std::string packed;
  if (cudaError_t e = PackLaunchArgs(k, params, extra, &packed)) return ToCu(e);
  const cudaError_t e = PostLaunch(k, grid, block, packed, shared, s, mode);
  if (e == cudaErrorInvalidConfiguration && shape == ShapeError::kRuntime)
    return static_cast<CUresult>(e);
  return ToCu(e);
}

// Says once, on stderr, that launch attribute `id` is not served.
CUresult RefuseAttribute(int id) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr,
                 "remora: cuLaunchKernelEx: launch attribute %d would change what the launch "
                 "does (launch events, device-updatable nodes) and is not served by Remora's "
                 "libcuda.so.1; the launch returns CUDA_ERROR_NOT_SUPPORTED\n",
                 id);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// cuLaunchKernel, cuLaunchCooperativeKernel and cuLaunchKernelEx, failing a shape past the
// device's limits as `shape` says.
template <ShapeError shape>
CUresult LaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                      unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                      CUstream s, void** params, void** extra) {
  DriverCallScope scope;
  return Launch(fn, dim3(gx, gy, gz), dim3(bx, by, bz), shared, s, params, extra, {}, shape);
}

template <ShapeError shape>
CUresult LaunchCooperativeKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                                 unsigned int bx, unsigned int by, unsigned int bz,
                                 unsigned int shared, CUstream s, void** params) {
  DriverCallScope scope;
  return Launch(fn, dim3(gx, gy, gz), dim3(bx, by, bz), shared, s, params, nullptr,
                LaunchMode{.cooperative = true}, shape);
}

// Launch attributes (launch_mode.h): cooperative and cluster dimensions are served; a priority
// the stream already has is the launch's.
template <ShapeError shape>
CUresult LaunchKernelEx(const CUlaunchConfig* config, CUfunction fn, void** params, void** extra) {
  DriverCallScope scope;
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LaunchMode mode;
  int refused = 0;
  const auto* attrs = reinterpret_cast<const cudaLaunchAttribute*>(config->attrs);
  if (cudaError_t e = ApplyLaunchAttributes(attrs, config->numAttrs, &mode, &refused))
    return e == cudaErrorNotSupported ? RefuseAttribute(refused) : ToCu(e);
  return Launch(fn, dim3(config->gridDimX, config->gridDimY, config->gridDimZ),
                dim3(config->blockDimX, config->blockDimY, config->blockDimZ),
                config->sharedMemBytes, config->hStream, params, extra, mode, shape);
}

// The module (or library) a kernel was found in. Kernels the program's own runtime registered
// (nvcc's fat binaries under the stub runtime) belong to no module handle here.
CUresult ModuleOf(const void* fn, void** out) {
  if (CUresult r = NeedInit()) return r;
  if (out == nullptr || fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ImageModule* m = static_cast<const Kernel*>(fn)->image;
  if (m == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  *out = m;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace remora::client_stub::driver

using namespace remora::client_stub;          // NOLINT: the exported C entry points below
using namespace remora::client_stub::driver;  // NOLINT
using remora::CallId;
namespace v1 = remora::v1;

extern "C" {

// ---- Modules and launches ------------------------------------------------------

// Modules load lazily here as on NVIDIA's driver by default: the server keeps an image and
// builds a kernel when it is first named. CUDA_MODULE_LOADING=EAGER is reported as asked.
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const char* env = std::getenv("CUDA_MODULE_LOADING");
  *mode =
      env && std::string_view(env) == "EAGER" ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  DriverCallScope scope;
  return LoadModule(reinterpret_cast<DriverModule**>(module), image);
}

// JIT options that tune the compiler are the server's; the outputs are written back.
CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                            CUjit_option* options, void** optionValues) {
  DriverCallScope scope;
  const auto start = std::chrono::steady_clock::now();
  const CUresult r = LoadModule(reinterpret_cast<DriverModule**>(module), image);
  WriteJitOutputs(numOptions, options, optionValues, start, r);
  return r;
}

CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatbin) {
  DriverCallScope scope;
  return LoadModule(reinterpret_cast<DriverModule**>(module), fatbin);
}

CUresult cuModuleLoad(CUmodule* module, const char* path) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  remora::Result<std::string> bytes = ReadImageFile(path);
  if (!bytes.ok()) return CUDA_ERROR_FILE_NOT_FOUND;
  return LoadModule(reinterpret_cast<DriverModule**>(module), bytes->data());
}

CUresult cuModuleUnload(CUmodule module) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return UnloadModule(reinterpret_cast<DriverModule*>(module));
}

CUresult cuModuleGetFunction(CUfunction* fn, CUmodule module, const char* name) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return KernelOf(reinterpret_cast<DriverModule*>(module), name, reinterpret_cast<Kernel**>(fn));
}

CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule module) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return KernelCount(reinterpret_cast<DriverModule*>(module), count);
}

CUresult cuModuleEnumerateFunctions(CUfunction* fns, unsigned int n, CUmodule module) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return KernelsOf(reinterpret_cast<DriverModule*>(module), reinterpret_cast<Kernel**>(fns), n);
}

CUresult cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule module, const char* name) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return GlobalOf(reinterpret_cast<DriverModule*>(module), name, dptr, bytes);
}

// Libraries: modules loaded with no context current, whose kernels (CUkernel, usable as a
// CUfunction) outlive contexts. The session is both here.
// A library whose caller preserves its image (NVIDIA's runtime does) is reloaded from it after
// a device reset; any other is copied. JIT options that tune the compiler are the server's.
CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jit,
                           void** jit_values, unsigned int njit, CUlibraryOption* opts,
                           void** values, unsigned int nopts) {
  DriverCallScope scope;
  const auto start = std::chrono::steady_clock::now();
  const CUresult r =
      LoadModule(reinterpret_cast<DriverModule**>(library), code, /*need_context=*/false,
                 PreservedOption(opts, values, nopts, CU_LIBRARY_BINARY_IS_PRESERVED));
  WriteJitOutputs(njit, jit, jit_values, start, r);
  return r;
}

CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* path, CUjit_option* jit,
                               void** jit_values, unsigned int njit, CUlibraryOption*, void**,
                               unsigned int) {
  DriverCallScope scope;
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  remora::Result<std::string> bytes = ReadImageFile(path);
  if (!bytes.ok()) return CUDA_ERROR_FILE_NOT_FOUND;
  // Read into this call's memory, so never preserved: a copy is kept.
  return cuLibraryLoadData(library, bytes->data(), jit, jit_values, njit, nullptr, nullptr, 0);
}

CUresult cuLibraryUnload(CUlibrary library) {
  DriverCallScope scope;
  return UnloadModule(reinterpret_cast<DriverModule*>(library));
}

CUresult cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  return KernelOf(reinterpret_cast<DriverModule*>(library), name,
                  reinterpret_cast<Kernel**>(kernel));
}

CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary library) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  return KernelCount(reinterpret_cast<DriverModule*>(library), count);
}

CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int n, CUlibrary library) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  return KernelsOf(reinterpret_cast<DriverModule*>(library), reinterpret_cast<Kernel**>(kernels),
                   n);
}

CUresult cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (module == nullptr || library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *module = reinterpret_cast<CUmodule>(library);
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return GlobalOf(reinterpret_cast<DriverModule*>(library), name, dptr, bytes);
}

// What NVIDIA's runtime asks for each __managed__ variable of a module it loads, before any
// context is current: managed memory is the process's, not a context's.
CUresult cuLibraryGetManaged(CUdeviceptr* dptr, size_t* bytes, CUlibrary library,
                             const char* name) {
  DriverCallScope scope;
  if (library == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return GlobalOf(reinterpret_cast<DriverModule*>(library), name, dptr, bytes, &ImageModuleManaged);
}

CUresult cuKernelGetFunction(CUfunction* fn, CUkernel kernel) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (fn == nullptr || kernel == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *fn = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}

CUresult cuFuncGetModule(CUmodule* module, CUfunction fn) {
  DriverCallScope scope;
  return ModuleOf(fn, reinterpret_cast<void**>(module));
}

CUresult cuKernelGetLibrary(CUlibrary* library, CUkernel kernel) {
  DriverCallScope scope;
  return ModuleOf(kernel, reinterpret_cast<void**>(library));
}

// A function found by name is ready to launch: the server builds it when it is named.
CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction fn) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (state == nullptr || fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}

CUresult cuFuncLoad(CUfunction fn) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  return fn == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attrib, int value) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  v1::FuncAttributeRequest req;
  req.set_kernel(reinterpret_cast<const Kernel*>(fn)->handle);
  req.set_attribute(attrib);
  req.set_value(value);
  v1::Empty rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kFuncSetAttribute, req, &rep)) return ToCu(e);
  NoteAttribute(*reinterpret_cast<Kernel*>(fn), attrib, value);
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction fn, int block_size,
                                                     size_t dynamic_shared) {
  DriverCallScope scope;
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

// The cluster attribute of `config`, if any, is the shape asked about.
CUresult ClusterOccupancy(CUfunction fn, const CUlaunchConfig* config, bool potential_size,
                          int* out) {
  if (CUresult r = NeedContext()) return r;
  if (out == nullptr || fn == nullptr || config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* attrs = reinterpret_cast<const cudaLaunchAttribute*>(config->attrs);
  return ToCu(remora::client_stub::ClusterOccupancy(
      *reinterpret_cast<const Kernel*>(fn),
      dim3(config->gridDimX, config->gridDimY, config->gridDimZ),
      dim3(config->blockDimX, config->blockDimY, config->blockDimZ), config->sharedMemBytes,
      ClusterDimensionOf(attrs, config->numAttrs), potential_size, out));
}

CUresult cuOccupancyMaxActiveClusters(int* clusters, CUfunction fn, const CUlaunchConfig* config) {
  DriverCallScope scope;
  return ClusterOccupancy(fn, config, false, clusters);
}

CUresult cuOccupancyMaxPotentialClusterSize(int* size, CUfunction fn,
                                            const CUlaunchConfig* config) {
  DriverCallScope scope;
  return ClusterOccupancy(fn, config, true, size);
}

CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attrib, CUfunction fn) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (value == nullptr || fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto& k = *reinterpret_cast<const Kernel*>(fn);
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = k.max_threads_per_block ? k.max_threads_per_block : St().prop.maxThreadsPerBlock;
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
      *value = k.ptx_version ? k.ptx_version : St().prop.major * 10 + St().prop.minor;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *value = k.binary_version ? k.binary_version : St().prop.major * 10 + St().prop.minor;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = MaxDynamicShared(k, St().prop);
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *value = k.carveout.load();
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
      *value = k.cluster_size_must_be_set;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      *value = k.cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH].load();
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      *value = k.non_portable_cluster.load();
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      *value = 0;  // no L1 caching preference, the default scheduling policy
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                        CUstream s, void** params, void** extra) {
  return LaunchKernel<ShapeError::kDriver>(fn, gx, gy, gz, bx, by, bz, shared, s, params, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz,
                                   unsigned int shared, CUstream s, void** params) {
  return LaunchCooperativeKernel<ShapeError::kDriver>(fn, gx, gy, gz, bx, by, bz, shared, s,
                                                      params);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction fn, void** params,
                          void** extra) {
  return LaunchKernelEx<ShapeError::kDriver>(config, fn, params, extra);
}

CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void* data) {
  return ForwardInContext([&] { return cudaLaunchHostFunc(s, fn, data); });
}

// ---- Entry points by name ------------------------------------------------------

// The ABI of `symbol` as CUDA `version` defined it (driver_abi.def): the export of the newest
// ABI not newer than `version`. A runtime built against an older CUDA asks for the older ABI,
// whose arguments differ (driver_legacy.cc). A name older than every ABI it has is
// VERSION_NOT_SUFFICIENT; a name the table lacks is looked up as it is, then with the newest
// suffix exported. A name the driver does not have is CUDA_SUCCESS with no function, as NVIDIA's
// driver answers. A per-thread default stream request gets the entry point's _ptsz or _ptds twin
// where it has one (driver_per_thread.cc), as NVIDIA's driver hands them out.
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status) {
  DriverCallScope scope;
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static void* const self = [] {
    Dl_info info{};
    (void)dladdr(reinterpret_cast<void*>(&cuGetProcAddress), &info);
    return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }();
  struct Abi {
    std::string_view name;
    int since;
    const char* symbol;
  };
  static constexpr Abi kAbis[] = {
#define ABI(name, since, symbol) {#name, since, #symbol},
#include "client_stub/driver_abi.def"
  };
  *pfn = nullptr;
  const std::string_view name(symbol);
  const Abi* abi = nullptr;
  bool known = false;
  for (const Abi& a : kAbis) {
    if (a.name != name) continue;
    known = true;
    if (a.since <= version && (abi == nullptr || a.since > abi->since)) abi = &a;
  }
  std::string found;
  if (abi != nullptr) {
    found = abi->symbol;
    *pfn = dlsym(self, abi->symbol);
  } else if (!known) {
    for (const char* suffix : {"", "_v4", "_v3", "_v2"})
      if ((*pfn = dlsym(self, (found = std::string(name) + suffix).c_str())) != nullptr) break;
  }
  if (*pfn != nullptr && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    for (const char* twin : {"_ptsz", "_ptds"})
      if (void* p = dlsym(self, (found + twin).c_str())) {
        *pfn = p;
        break;
      }
  // The launches NVIDIA's runtime asks for by name fail a shape as it expects (ShapeError).
  const auto is = [&](auto f) { return *pfn == reinterpret_cast<void*>(f); };
  if (is(&cuLaunchKernel))
    *pfn = reinterpret_cast<void*>(&LaunchKernel<ShapeError::kRuntime>);
  else if (is(&cuLaunchCooperativeKernel))
    *pfn = reinterpret_cast<void*>(&LaunchCooperativeKernel<ShapeError::kRuntime>);
  else if (is(&cuLaunchKernelEx))
    *pfn = reinterpret_cast<void*>(&LaunchKernelEx<ShapeError::kRuntime>);
  else if (is(&PerThreadTwin<&cuLaunchKernel>::Call))
    *pfn = reinterpret_cast<void*>(&PerThreadTwin<&LaunchKernel<ShapeError::kRuntime>>::Call);
  else if (is(&PerThreadTwin<&cuLaunchCooperativeKernel>::Call))
    *pfn = reinterpret_cast<void*>(
        &PerThreadTwin<&LaunchCooperativeKernel<ShapeError::kRuntime>>::Call);
  else if (is(&PerThreadTwin<&cuLaunchKernelEx>::Call))
    *pfn = reinterpret_cast<void*>(&PerThreadTwin<&LaunchKernelEx<ShapeError::kRuntime>>::Call);
  if (status)
    *status = *pfn    ? CU_GET_PROC_ADDRESS_SUCCESS
              : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_SUCCESS;
}

}  // extern "C"
