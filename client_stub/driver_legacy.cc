// client_stub/driver_legacy.cc - the older ABIs of driver entry points whose arguments
// changed: what cuGetProcAddress hands a runtime or framework built against an older CUDA
// (driver_abi.def), and what programs linked against an older libcuda call by name. Each
// adapts its arguments to the current ABI's entry point and calls it. Older ABIs with the same
// arguments as the current one are linker aliases (driver_same_abi.def).
#include <cstdint>
#include <cstring>

#include "client_stub/driver_internal.h"

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below

// cuda.h names the current ABI by each of these names; below they are the older ones.
#undef cuCtxCreate
#undef cuMemAdvise
#undef cuMemPrefetchAsync
#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
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
#undef cuStreamUpdateCaptureDependencies
#undef cuMemcpyBatchAsync
#undef cuGraphAddNode

namespace {

// CUdevice as the ABIs before CUDA 12.2 name a place: CU_DEVICE_CPU is the host.
CUmemLocation Location(CUdevice dev) {
  CUmemLocation loc{};
  loc.type = dev == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  loc.id = dev == CU_DEVICE_CPU ? 0 : dev;
  return loc;
}

CUDA_KERNEL_NODE_PARAMS Current(const CUDA_KERNEL_NODE_PARAMS_v1& p) {
  CUDA_KERNEL_NODE_PARAMS c{};
  c.func = p.func;
  c.gridDimX = p.gridDimX;
  c.gridDimY = p.gridDimY;
  c.gridDimZ = p.gridDimZ;
  c.blockDimX = p.blockDimX;
  c.blockDimY = p.blockDimY;
  c.blockDimZ = p.blockDimZ;
  c.sharedMemBytes = p.sharedMemBytes;
  c.kernelParams = p.kernelParams;
  c.extra = p.extra;
  return c;
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
  std::memcpy(p, &c, sizeof *p);  // the older structure is the current one's first part
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

}  // extern "C"
#pragma GCC visibility pop
