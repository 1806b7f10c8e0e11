// client_stub/driver_legacy.cc - what a runtime, framework or program built against an older
// CUDA calls: the older ABIs of entry points whose arguments changed (cuGetProcAddress hands
// them out by version, driver_abi.def), each adapting its arguments to the current ABI's entry
// point; and the deprecated execution control API (cuFuncSetBlockShape, cuParamSet*,
// cuLaunchGrid), launches through cuLaunchKernel. Older ABIs with the current one's arguments
// are linker aliases (driver_same_abi.def).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>

#include "client_stub/driver_internal.h"
#include "client_stub/driver_legacy.h"
#include "client_stub/kernels.h"

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below

// cuda.h names the current ABI by each of these names; below they are the older ones.
#undef cuCtxCreate
#undef cuMemAdvise
#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams
#undef cuGraphExecKernelNodeSetParams
#undef cuGraphExecUpdate
#undef cuGraphInstantiate
#undef cuGraphAddDependencies
#undef cuGraphRemoveDependencies
#undef cuGraphGetEdges
#undef cuGraphNodeGetDependencies
#undef cuGraphNodeGetDependentNodes
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
#undef cuGraphAddNode

namespace {

// CUdevice as the ABIs before CUDA 12.2 name a place: CU_DEVICE_CPU is the host.
CUmemLocation Location(CUdevice dev) {
  CUmemLocation loc{};
  loc.type = dev == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  loc.id = dev == CU_DEVICE_CPU ? 0 : dev;
  return loc;
}

// The older kernel node structure is the current one's first part; kern and ctx stay null.
static_assert(offsetof(CUDA_KERNEL_NODE_PARAMS, extra) ==
              offsetof(CUDA_KERNEL_NODE_PARAMS_v1, extra));
CUDA_KERNEL_NODE_PARAMS Current(const CUDA_KERNEL_NODE_PARAMS_v1& p) {
  CUDA_KERNEL_NODE_PARAMS c{};
  std::memcpy(&c, &p, sizeof p);
  return c;
}

// The deprecated execution control API: a function's block shape, dynamic shared memory and
// packed parameters, set one call at a time, then launched. NVIDIA's is not thread-safe per
// function either; one lock keeps these from tearing.
std::mutex g_legacy_mu;

// `f`'s settings, made on first use. REQUIRES: g_legacy_mu.
remora::client_stub::Kernel::LegacyLaunch* LegacyOf(CUfunction f) {
  auto* k = reinterpret_cast<remora::client_stub::Kernel*>(f);
  if (!k->legacy) k->legacy = std::make_unique<remora::client_stub::Kernel::LegacyLaunch>();
  return k->legacy.get();
}

// Writes `n` bytes at `offset` of `f`'s parameters, which grow to hold them (programs of the
// time set the values first, then the size); past the largest parameter list a kernel may
// take, CUDA_ERROR_INVALID_VALUE.
CUresult SetParam(CUfunction f, int offset, const void* bytes, size_t n) {
  constexpr size_t kMaxParams = 32764;
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (offset < 0 || size_t(offset) > kMaxParams || n > kMaxParams - size_t(offset))
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g_legacy_mu);
  std::string& params = LegacyOf(f)->params;
  if (params.size() < offset + n) params.resize(offset + n);
  std::memcpy(params.data() + offset, bytes, n);
  return CUDA_SUCCESS;
}

// A launch of `f` as the execution control API set it up; a shape never set is refused.
CUresult LegacyLaunchOf(CUfunction f, int gx, int gy, CUstream s) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (gx <= 0 || gy <= 0) return CUDA_ERROR_INVALID_VALUE;
  remora::client_stub::Kernel::LegacyLaunch l;
  {
    std::lock_guard lock(g_legacy_mu);
    l = *LegacyOf(f);
  }
  if (l.block[0] <= 0 || l.block[1] <= 0 || l.block[2] <= 0) return CUDA_ERROR_INVALID_VALUE;
  size_t size = l.params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, l.params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  return cuLaunchKernel(f, unsigned(gx), unsigned(gy), 1, unsigned(l.block[0]),
                        unsigned(l.block[1]), unsigned(l.block[2]), l.shared, s, nullptr, extra);
}

}  // namespace

// Exported as cuda.h's declarations are (driver_api.h): these names are not declared there.
#pragma GCC visibility push(default)
extern "C" {

// ---- Contexts: before CUDA 12.5 --------------------------------------------------

// CUDA 2.0 and 3.2 (the same arguments on 64-bit hosts).
CUresult cuCtxCreate(CUcontext* ctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v4(ctx, nullptr, flags, dev);
}

CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v4(ctx, nullptr, flags, dev);
}

// CUDA 11.4: execution affinity, which needs MPS; the one context has none.
CUresult cuCtxCreate_v3(CUcontext* ctx, CUexecAffinityParam* params, int n, unsigned int flags,
                        CUdevice dev) {
  CUctxCreateParams p{};
  p.execAffinityParams = params;
  p.numExecAffinityParams = n;
  return cuCtxCreate_v4(ctx, n > 0 ? &p : nullptr, flags, dev);
}

// ---- Managed memory: a device number before CUDA 12.2 ----------------------------

CUresult cuMemAdvise(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUdevice dev) {
  return cuMemAdvise_v2(ptr, count, advice, Location(dev));
}

CUresult cuMemPrefetchAsync(CUdeviceptr ptr, size_t count, CUdevice dev, CUstream s) {
  return cuMemPrefetchAsync_v2(ptr, count, Location(dev), 0, s);
}

// ---- Stream capture ---------------------------------------------------------------

// CUDA 10.0: no mode argument; the mode was global.
CUresult cuStreamBeginCapture(CUstream s) {
  return cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

// CUDA 10.1 and 11.3: no edge data.
CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id) {
  return cuStreamGetCaptureInfo_v3(s, status, id, nullptr, nullptr, nullptr, nullptr);
}

CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** deps, size_t* n) {
  return cuStreamGetCaptureInfo_v3(s, status, id, graph, deps, nullptr, n);
}

CUresult cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode* deps, size_t n,
                                           unsigned int flags) {
  return cuStreamUpdateCaptureDependencies_v2(s, deps, nullptr, n, flags);
}

// ---- Graphs: kernel nodes without a CUkernel, edges without data ------------------

CUresult cuGraphAddKernelNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                              const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS c = Current(*p);
  return cuGraphAddKernelNode_v2(node, g, deps, n, &c);
}

CUresult cuGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_KERNEL_NODE_PARAMS c{};
  if (CUresult r = cuGraphKernelNodeGetParams_v2(node, &c)) return r;
  std::memcpy(p, &c, sizeof *p);  // its first part (Current)
  return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS c = Current(*p);
  return cuGraphKernelNodeSetParams_v2(node, &c);
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                        const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS c = Current(*p);
  return cuGraphExecKernelNodeSetParams_v2(exec, node, &c);
}

CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph g, CUgraphNode* error_node,
                           CUgraphExecUpdateResult* result) {
  CUgraphExecUpdateResultInfo info{};
  const CUresult r = cuGraphExecUpdate_v2(exec, g, &info);
  if (error_node) *error_node = info.errorNode;
  if (result) *result = info.result;
  return r;
}

// CUDA 10.0 and 11.0: the node at fault and a log, where the current ABI takes flags.
CUresult cuGraphInstantiate(CUgraphExec* exec, CUgraph g, CUgraphNode* error_node, char* log,
                            size_t log_size) {
  const CUresult r = cuGraphInstantiateWithFlags(exec, g, 0);
  if (error_node) *error_node = nullptr;
  if (log && log_size > 0) log[0] = '\0';
  return r;
}

CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph g, CUgraphNode* error_node, char* log,
                               size_t log_size) {
  return cuGraphInstantiate(exec, g, error_node, log, log_size);
}

CUresult cuGraphAddNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                        CUgraphNodeParams* p) {
  return cuGraphAddNode_v2(node, g, deps, nullptr, n, p);
}

CUresult cuGraphAddDependencies(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                size_t n) {
  return cuGraphAddDependencies_v2(g, from, to, nullptr, n);
}

CUresult cuGraphRemoveDependencies(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                   size_t n) {
  return cuGraphRemoveDependencies_v2(g, from, to, nullptr, n);
}

CUresult cuGraphGetEdges(CUgraph g, CUgraphNode* from, CUgraphNode* to, size_t* n) {
  return cuGraphGetEdges_v2(g, from, to, nullptr, n);
}

CUresult cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode* deps, size_t* n) {
  return cuGraphNodeGetDependencies_v2(node, deps, nullptr, n);
}

CUresult cuGraphNodeGetDependentNodes(CUgraphNode node, CUgraphNode* deps, size_t* n) {
  return cuGraphNodeGetDependentNodes_v2(node, deps, nullptr, n);
}

// ---- Batched copies: CUDA 12.8 reported the copy at fault ---------------------------

CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                            CUmemcpyAttributes* attrs, size_t* attr_idxs, size_t num_attrs,
                            size_t* fail_idx, CUstream s) {
  const CUresult r =
      cuMemcpyBatchAsync_v2(dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, s);
  if (r != CUDA_SUCCESS && fail_idx) *fail_idx = SIZE_MAX;  // not one copy's fault
  return r;
}

// 0 names the per-thread stream, as for the current ABI's twin (driver_forward.cc).
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                 CUmemcpyAttributes* attrs, size_t* attr_idxs, size_t num_attrs,
                                 size_t* fail_idx, CUstream s) {
  return cuMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, fail_idx,
                            s == nullptr ? CU_STREAM_PER_THREAD : s);
}

// CUDA 12.8's 3-D batch: the copy at fault too.
CUresult cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_idx,
                              unsigned long long flags, CUstream s) {
  const CUresult r = cuMemcpy3DBatchAsync_v2(n, ops, flags, s);
  if (r != CUDA_SUCCESS && fail_idx) *fail_idx = SIZE_MAX;  // not one copy's fault
  return r;
}

CUresult cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_idx,
                                   unsigned long long flags, CUstream s) {
  return cuMemcpy3DBatchAsync(n, ops, fail_idx, flags, s == nullptr ? CU_STREAM_PER_THREAD : s);
}

// ---- Device queries of CUDA 2.0 (deprecated; cuda.h no longer declares them) ---------------

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    return r;
  return cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
}

CUresult cuDeviceGetProperties(CUdevprop* prop, CUdevice dev) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::pair<int*, CUdevice_attribute> fields[] = {
      {&prop->maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&prop->maxThreadsDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X},
      {&prop->maxThreadsDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y},
      {&prop->maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z},
      {&prop->maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
      {&prop->maxGridSize[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y},
      {&prop->maxGridSize[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z},
      {&prop->sharedMemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&prop->totalConstantMemory, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY},
      {&prop->SIMDWidth, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {&prop->memPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH},
      {&prop->regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {&prop->clockRate, CU_DEVICE_ATTRIBUTE_CLOCK_RATE},
      {&prop->textureAlign, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT}};
  for (const auto& [field, attribute] : fields)
    if (CUresult r = cuDeviceGetAttribute(field, attribute, dev)) return r;
  return CUDA_SUCCESS;
}

// ---- The execution control API of CUDA 1.0 to 3.2 (deprecated) ----------------------------

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

CUresult cuFuncSetBlockShape(CUfunction f, int x, int y, int z) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (x <= 0 || y <= 0 || z <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g_legacy_mu);
  auto* l = LegacyOf(f);
  l->block[0] = x;
  l->block[1] = y;
  l->block[2] = z;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetSharedSize(CUfunction f, unsigned int bytes) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(g_legacy_mu);
  LegacyOf(f)->shared = bytes;
  return CUDA_SUCCESS;
}

CUresult cuParamSetSize(CUfunction f, unsigned int bytes) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (bytes > 32764) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g_legacy_mu);
  LegacyOf(f)->params.resize(bytes);
  return CUDA_SUCCESS;
}

CUresult cuParamSeti(CUfunction f, int offset, unsigned int value) {
  return SetParam(f, offset, &value, sizeof value);
}

CUresult cuParamSetf(CUfunction f, int offset, float value) {
  return SetParam(f, offset, &value, sizeof value);
}

CUresult cuParamSetv(CUfunction f, int offset, void* bytes, unsigned int n) {
  if (bytes == nullptr && n > 0) return CUDA_ERROR_INVALID_VALUE;
  return SetParam(f, offset, bytes, n);
}

CUresult cuLaunch(CUfunction f) {
  return LegacyLaunchOf(f, 1, 1, nullptr);
}

CUresult cuLaunchGrid(CUfunction f, int width, int height) {
  return LegacyLaunchOf(f, width, height, nullptr);
}

CUresult cuLaunchGridAsync(CUfunction f, int width, int height, CUstream s) {
  return LegacyLaunchOf(f, width, height, s);
}

#pragma GCC diagnostic pop

}  // extern "C"
#pragma GCC visibility pop
