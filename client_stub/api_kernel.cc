// client_stub/api_kernel.cc - nvcc's registration and launch internals, kernel attributes.
#include <cstring>

#include "client_stub/api.h"
#include "client_stub/connection.h"
#include "client_stub/kernels.h"
#include "client_stub/state.h"

using remora::CallId;
using remora::client_stub::Connection;
using remora::client_stub::Ret;
using remora::client_stub::St;
namespace v1 = remora::v1;
namespace cs = remora::client_stub;

namespace {

cs::Kernel* AsKernel(cudaKernel_t k) {
  return reinterpret_cast<cs::Kernel*>(k);
}

// The kernel for `func`, registered with the server.
cudaError_t Registered(const void* func, cs::Kernel** out) {
  cs::Kernel* k = cs::FindKernel(func);
  if (!k) return cudaErrorInvalidDeviceFunction;
  if (cudaError_t e = cs::EnsureRegistered(*k)) return e;
  if (k->handle == 0) return cudaErrorInvalidDeviceFunction;  // not in the loaded module
  *out = k;
  return cudaSuccess;
}

// cudaOccupancyMaxActiveClusters and cudaOccupancyMaxPotentialClusterSize: the launch's
// cluster attribute, if any, is the shape asked about.
cudaError_t ClusterOccupancy(const void* func, const cudaLaunchConfig_t* config,
                             bool potential_size, int* out) {
  if (!out || !config) return cudaErrorInvalidValue;
  cs::Kernel* k;
  if (cudaError_t e = Registered(func, &k)) return e;
  return cs::ClusterOccupancy(*k, config->gridDim, config->blockDim, config->dynamicSmemBytes,
                              cs::ClusterDimensionOf(config->attrs, config->numAttrs),
                              potential_size, out);
}

}  // namespace

extern "C" {

void** __cudaRegisterFatBinary(void* fatCubin) {
  return cs::AddModule(fatCubin);
}

void __cudaRegisterFatBinaryEnd(void**) {}

void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  cs::RemoveModule(fatCubinHandle);
}

void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char*,
                            const char* deviceName, int, uint3*, uint3*, dim3*, dim3*, int*) {
  cs::AddFunction(fatCubinHandle, hostFun, deviceName);
}

void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char*, const char* deviceName, int,
                       size_t size, int constant, int) {
  cs::AddVariable(fatCubinHandle, hostVar, deviceName, size, constant != 0);
}

void __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress, char*,
                              const char* deviceName, int, size_t size, int, int) {
  cs::AddManagedVariable(fatCubinHandle, hostVarPtrAddress, deviceName, size);
}

// Called by the program's host code before it first touches a __managed__ variable of the
// module (nvcc's __nv_init_managed_rt); 0 makes it ask again next time.
char __cudaInitModule(void** fatCubinHandle) {
  return cs::InitModule(fatCubinHandle) ? 1 : 0;
}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st* stream) {
  cs::PushConfig({gridDim, blockDim, sharedMem, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                       void* stream) {
  cs::LaunchConfig c;
  if (!cs::PopConfig(&c)) return Ret(cudaErrorMissingConfiguration);
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.shared_bytes;
  std::memcpy(stream, &c.stream, sizeof c.stream);
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  if (!kernel) return Ret(cudaErrorInvalidValue);
  cs::Kernel* k = cs::FindKernel(hostFun);
  if (!k) return Ret(cudaErrorInvalidDeviceFunction);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return cudaSuccess;
}

cudaError_t cudaGetKernel(cudaKernel_t* kernelPtr, const void* entryFuncAddr) {
  return __cudaGetKernel(kernelPtr, entryFuncAddr);
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream) {
  return cs::Launch(AsKernel(kernel), gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream) {
  return cs::Launch(AsKernel(kernel), gridDim, blockDim, args, sharedMem, cs::PerThread(stream));
}

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                             size_t sharedMem, cudaStream_t stream) {
  return cs::Launch(cs::FindKernel(func), gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream) {
  return cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem, cs::PerThread(stream));
}

// Launch attributes (launch_mode.h): cooperative and cluster dimensions are sent with the
// launch; hints are accepted; launch events are refused with cudaErrorNotSupported.
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (!config) return Ret(cudaErrorInvalidValue);
  cs::LaunchMode mode;
  if (cudaError_t e = cs::ApplyLaunchAttributes(config->attrs, config->numAttrs, &mode))
    return Ret(e);
  return cs::Launch(cs::FindKernel(func), config->gridDim, config->blockDim, args,
                    config->dynamicSmemBytes, config->stream, mode);
}

cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                        size_t sharedMem, cudaStream_t stream) {
  return cs::Launch(cs::FindKernel(func), gridDim, blockDim, args, sharedMem, stream,
                    cs::LaunchMode{.cooperative = true});
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                             void** args, size_t sharedMem, cudaStream_t stream) {
  return cudaLaunchCooperativeKernel(func, gridDim, blockDim, args, sharedMem,
                                     cs::PerThread(stream));
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                     void** args) {
  if (!config) return Ret(cudaErrorInvalidValue);
  cudaLaunchConfig_t own = *config;
  own.stream = cs::PerThread(config->stream);
  return cudaLaunchKernelExC(&own, func, args);
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func) {
  if (!attr) return Ret(cudaErrorInvalidValue);
  cs::Kernel* k;
  if (cudaError_t e = Registered(func, &k)) return Ret(e);
  const cudaDeviceProp& p = St().prop;
  std::memset(attr, 0, sizeof *attr);
  attr->sharedSizeBytes = k->shared_size_bytes;
  attr->localSizeBytes = k->local_size_bytes;
  attr->maxThreadsPerBlock =
      k->max_threads_per_block ? k->max_threads_per_block : p.maxThreadsPerBlock;
  attr->numRegs = k->num_regs;
  attr->constSizeBytes = k->const_size_bytes;
  attr->ptxVersion = k->ptx_version ? k->ptx_version : p.major * 10 + p.minor;
  attr->binaryVersion = k->binary_version ? k->binary_version : p.major * 10 + p.minor;
  attr->maxDynamicSharedSizeBytes = cs::MaxDynamicShared(*k, p);
  attr->preferredShmemCarveout = k->carveout.load();
  attr->requiredClusterWidth = k->cluster[0].load();
  attr->requiredClusterHeight = k->cluster[1].load();
  attr->requiredClusterDepth = k->cluster[2].load();
  attr->clusterDimMustBeSet = k->cluster_size_must_be_set;
  attr->nonPortableClusterSizeAllowed = k->non_portable_cluster.load();
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  cs::Kernel* k;
  if (cudaError_t e = Registered(func, &k)) return Ret(e);
  v1::FuncAttributeRequest req;
  req.set_kernel(k->handle);
  req.set_attribute(attr);
  req.set_value(value);
  if (cudaError_t e = Connection::Get().Call(CallId::kFuncSetAttribute, req)) return Ret(e);
  cs::NoteAttribute(*k, attr, value);
  return cudaSuccess;
}

cudaError_t cudaFuncSetCacheConfig(const void* func, enum cudaFuncCache cacheConfig) {
  if (static_cast<unsigned>(cacheConfig) > cudaFuncCachePreferEqual)
    return Ret(cudaErrorInvalidValue);
  if (!cs::FindKernel(func)) return Ret(cudaErrorInvalidDeviceFunction);
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveClusters(int* numClusters, const void* func,
                                           const cudaLaunchConfig_t* config) {
  return Ret(ClusterOccupancy(func, config, false, numClusters));
}

cudaError_t cudaOccupancyMaxPotentialClusterSize(int* clusterSize, const void* func,
                                                 const cudaLaunchConfig_t* config) {
  return Ret(ClusterOccupancy(func, config, true, clusterSize));
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func,
                                                          int blockSize, size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                dynamicSMemSize, 0);
}

// The server computes occupancy without the caching override; the flag is accepted.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func,
                                                                   int blockSize,
                                                                   size_t dynamicSMemSize,
                                                                   unsigned int flags) {
  if (!numBlocks || blockSize <= 0 || (flags & ~cudaOccupancyDisableCachingOverride))
    return Ret(cudaErrorInvalidValue);
  cs::Kernel* k;
  if (cudaError_t e = Registered(func, &k)) return Ret(e);
  v1::OccupancyRequest req;
  req.set_kernel(k->handle);
  req.set_block_size(blockSize);
  req.set_dynamic_shared(dynamicSMemSize);
  v1::IntReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kOccupancyMaxActiveBlocks, req, &rep))
    return Ret(e);
  *numBlocks = static_cast<int>(rep.value());
  return cudaSuccess;
}

// The name the kernel was registered under (its mangled device name).
cudaError_t cudaFuncGetName(const char** name, const void* func) {
  if (!name || !func) return Ret(cudaErrorInvalidValue);
  cs::Kernel* k = cs::FindKernel(func);
  if (!k) return Ret(cudaErrorInvalidDeviceFunction);
  *name = k->name.c_str();
  return cudaSuccess;
}

// From the parameter layout the server sent at registration.
cudaError_t cudaFuncGetParamInfo(const void* func, size_t paramIndex, size_t* paramOffset,
                                 size_t* paramSize) {
  cs::Kernel* k;
  if (cudaError_t e = Registered(func, &k)) return Ret(e);
  if (paramIndex >= k->offsets.size()) return Ret(cudaErrorInvalidValue);
  if (paramOffset) *paramOffset = k->offsets[paramIndex];
  if (paramSize) *paramSize = k->sizes[paramIndex];
  return cudaSuccess;
}

}  // extern "C"
