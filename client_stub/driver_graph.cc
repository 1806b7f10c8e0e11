// client_stub/driver_graph.cc - the driver API's graphs and stream capture: the stub runtime's
// graphs (graph.h, api_graph.cc) under the driver's names and structures. NVIDIA's runtime,
// running over this library, builds its graphs here too. The copies CUDA_MEMCPY2D/3D describe
// are made here as a graph's memcpy node makes them.
#include <cstring>
#include <vector>

#include "client_stub/array.h"
#include "client_stub/driver_internal.h"
#include "client_stub/errors.h"
#include "client_stub/graph.h"
#include "client_stub/kernels.h"
#include "client_stub/memcpy.h"

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below
using remora::client_stub::DriverCallScope;
namespace cs = remora::client_stub;
using cs::GraphOp;

namespace remora::client_stub::driver {
namespace {

// A kernel node's work from the driver's parameters (a CUfunction, or a CUkernel, which is
// the same object here).
CUresult KernelOp(const CUDA_KERNEL_NODE_PARAMS* p, GraphOp* op) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const void* f = p->func ? static_cast<const void*>(p->func) : static_cast<const void*>(p->kern);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const auto& k = *static_cast<const Kernel*>(f);
  std::string params;
  if (cudaError_t e = PackLaunchArgs(k, p->kernelParams, p->extra, &params)) return ToCu(e);
  *op = cs::KernelOp(k, dim3(p->gridDimX, p->gridDimY, p->gridDimZ),
                     dim3(p->blockDimX, p->blockDimY, p->blockDimZ), params, p->sharedMemBytes, {});
  return CUDA_SUCCESS;
}

// Whether the region at (x, y, z) of `width` bytes, `height` rows and `depth` slices lies in
// the array.
bool InArray(CUarray array, size_t x, size_t y, size_t z, size_t width, size_t height,
             size_t depth) {
  const auto* a = reinterpret_cast<const cudaArray*>(array);
  return x <= a->Row() && width <= a->Row() - x && y <= a->Rows() && height <= a->Rows() - y &&
         z <= a->Slices() && depth <= a->Slices() - z;
}

// The copy `c` describes, of linear memory or CUDA arrays; a region outside an array is
// CUDA_ERROR_INVALID_VALUE.
CUresult MemcpyOp(const CUDA_MEMCPY3D* c, GraphOp* op) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // A side's first byte, pitch and slice stride; a CUDA array's are its own (array.h).
  auto side = [](CUmemorytype t, const void* host, CUdeviceptr dev, CUarray array, size_t pitch,
                 size_t height, size_t x, size_t y, size_t z, size_t* pitch_out,
                 size_t* slice_out) -> const char* {
    const char* base = t == CU_MEMORYTYPE_HOST ? static_cast<const char*>(host)
                       : t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED
                           ? reinterpret_cast<const char*>(dev)
                           : nullptr;  // an array, or no memory type at all
    if (t == CU_MEMORYTYPE_ARRAY) {
      if (array == nullptr) return nullptr;
      const auto* a = reinterpret_cast<const cudaArray*>(array);
      base = static_cast<const char*>(a->dptr);
      pitch = a->pitch;
      height = a->Rows();
    }
    *pitch_out = pitch;
    *slice_out = pitch * height;
    return base ? base + z * *slice_out + y * pitch + x : nullptr;
  };
  op->type = cudaGraphNodeTypeMemcpy;
  size_t spitch = 0, dpitch = 0;
  op->src = side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcPitch, c->srcHeight,
                 c->srcXInBytes, c->srcY, c->srcZ, &spitch, &op->sslice);
  op->dst =
      const_cast<char*>(side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstPitch,
                             c->dstHeight, c->dstXInBytes, c->dstY, c->dstZ, &dpitch, &op->dslice));
  if (op->src == nullptr || op->dst == nullptr) return CUDA_ERROR_INVALID_VALUE;
  op->width = c->WidthInBytes;
  op->height = c->Height ? c->Height : 1;
  op->depth = c->Depth ? c->Depth : 1;
  if ((c->srcMemoryType == CU_MEMORYTYPE_ARRAY &&
       !InArray(c->srcArray, c->srcXInBytes, c->srcY, c->srcZ, op->width, op->height, op->depth)) ||
      (c->dstMemoryType == CU_MEMORYTYPE_ARRAY &&
       !InArray(c->dstArray, c->dstXInBytes, c->dstY, c->dstZ, op->width, op->height, op->depth)))
    return CUDA_ERROR_INVALID_VALUE;
  op->spitch = op->height > 1 || op->depth > 1 ? spitch : op->width;
  op->dpitch = op->height > 1 || op->depth > 1 ? dpitch : op->width;
  op->kind = cudaMemcpyDefault;
  return CUDA_SUCCESS;
}

// A 2-D copy as a 3-D one of depth 1.
CUDA_MEMCPY3D As3D(const CUDA_MEMCPY2D& c) {
  CUDA_MEMCPY3D d{};
  d.srcXInBytes = c.srcXInBytes;
  d.srcY = c.srcY;
  d.srcMemoryType = c.srcMemoryType;
  d.srcHost = c.srcHost;
  d.srcDevice = c.srcDevice;
  d.srcArray = c.srcArray;
  d.srcPitch = c.srcPitch;
  d.dstXInBytes = c.dstXInBytes;
  d.dstY = c.dstY;
  d.dstMemoryType = c.dstMemoryType;
  d.dstHost = c.dstHost;
  d.dstDevice = c.dstDevice;
  d.dstArray = c.dstArray;
  d.dstPitch = c.dstPitch;
  d.WidthInBytes = c.WidthInBytes;
  d.Height = c.Height;
  d.Depth = 1;
  return d;
}

// Makes the copy `c` describes: on `s` after what it holds, or at once.
CUresult Copy(const CUDA_MEMCPY3D* c, CUstream s, bool async) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  GraphOp op;
  if (CUresult r = MemcpyOp(c, &op)) return r;
  return ToCu(cs::Copy3D(op.dst, op.dpitch, op.dslice, op.src, op.spitch, op.sslice, op.width,
                         op.height, op.depth, op.kind, s, async));
}

// A 2-D copy of no rows copies nothing, once its sides are known to be memory.
CUresult Copy(const CUDA_MEMCPY2D* c, CUstream s, bool async) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_MEMCPY3D d = As3D(*c);
  if (c->Height != 0) return Copy(&d, s, async);
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  GraphOp op;
  return MemcpyOp(&d, &op);
}

// A CUDA_MEMCPY3D_PEER's copy, once its contexts are the one context or null.
CUresult FromPeer(const CUDA_MEMCPY3D_PEER* c, CUDA_MEMCPY3D* d) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (CUcontext ctx : {c->srcContext, c->dstContext})
    if (ctx != nullptr && ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  *d = {};
  d->srcXInBytes = c->srcXInBytes;
  d->srcY = c->srcY;
  d->srcZ = c->srcZ;
  d->srcLOD = c->srcLOD;
  d->srcMemoryType = c->srcMemoryType;
  d->srcHost = c->srcHost;
  d->srcDevice = c->srcDevice;
  d->srcArray = c->srcArray;
  d->srcPitch = c->srcPitch;
  d->srcHeight = c->srcHeight;
  d->dstXInBytes = c->dstXInBytes;
  d->dstY = c->dstY;
  d->dstZ = c->dstZ;
  d->dstLOD = c->dstLOD;
  d->dstMemoryType = c->dstMemoryType;
  d->dstHost = c->dstHost;
  d->dstDevice = c->dstDevice;
  d->dstArray = c->dstArray;
  d->dstPitch = c->dstPitch;
  d->dstHeight = c->dstHeight;
  d->WidthInBytes = c->WidthInBytes;
  d->Height = c->Height;
  d->Depth = c->Depth;
  return CUDA_SUCCESS;
}

// One side of a copy the driver describes by arguments: an array and a byte offset into its
// row, host memory or device memory.
struct Side {
  CUarray array = nullptr;
  size_t offset = 0;
  const void* host = nullptr;
  CUdeviceptr device = 0;
};

CUmemorytype Type(const Side& side) {
  return side.array ? CU_MEMORYTYPE_ARRAY : side.host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
}

// A copy of `n` bytes; a null side is CUDA_ERROR_INVALID_VALUE (MemcpyOp).
CUresult Copy1D(const Side& dst, const Side& src, size_t n, CUstream s, bool async) {
  CUDA_MEMCPY3D c{};
  c.dstMemoryType = Type(dst);
  c.dstHost = const_cast<void*>(dst.host);
  c.dstDevice = dst.device;
  c.dstArray = dst.array;
  c.dstXInBytes = dst.offset;
  c.srcMemoryType = Type(src);
  c.srcHost = src.host;
  c.srcDevice = src.device;
  c.srcArray = src.array;
  c.srcXInBytes = src.offset;
  c.WidthInBytes = n;
  c.Height = 1;
  c.Depth = 1;
  return Copy(&c, s, async);
}

CUresult Add(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n, GraphOp op) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ToCu(AddNode(g, deps, n, std::move(op), node));
}

}  // namespace
}  // namespace remora::client_stub::driver

extern "C" {

#define GRAPH_FORWARD(name, params, call)  \
  CUresult name params {                   \
    DriverCallScope scope;                 \
    if (CUresult r = NeedInit()) return r; \
    return ToCu(call);                     \
  }
GRAPH_FORWARD(cuGraphCreate, (CUgraph * g, unsigned int flags), cudaGraphCreate(g, flags))
GRAPH_FORWARD(cuGraphDestroy, (CUgraph g), cudaGraphDestroy(g))
GRAPH_FORWARD(cuGraphClone, (CUgraph * clone, CUgraph g), cudaGraphClone(clone, g))
GRAPH_FORWARD(cuGraphNodeFindInClone, (CUgraphNode * found, CUgraphNode n, CUgraph clone),
              cudaGraphNodeFindInClone(found, n, clone))
static_assert(sizeof(CUgraphConditionalHandle) == sizeof(cudaGraphConditionalHandle));
GRAPH_FORWARD(cuGraphConditionalHandleCreate,
              (CUgraphConditionalHandle * handle, CUgraph g, CUcontext, unsigned int value,
               unsigned int flags),
              cudaGraphConditionalHandleCreate(
                  reinterpret_cast<cudaGraphConditionalHandle*>(handle), g, value, flags))
GRAPH_FORWARD(cuGraphAddEmptyNode,
              (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t n),
              cudaGraphAddEmptyNode(node, g, deps, n))
GRAPH_FORWARD(cuGraphAddHostNode,
              (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t n,
               const CUDA_HOST_NODE_PARAMS* p),
              cudaGraphAddHostNode(node, g, deps, n,
                                   reinterpret_cast<const cudaHostNodeParams*>(p)))
GRAPH_FORWARD(cuGraphAddMemsetNode,
              (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t n,
               const CUDA_MEMSET_NODE_PARAMS* p, CUcontext),
              cudaGraphAddMemsetNode(node, g, deps, n,
                                     reinterpret_cast<const cudaMemsetParams*>(p)))
GRAPH_FORWARD(cuGraphAddEventRecordNode,
              (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t n, CUevent e),
              cudaGraphAddEventRecordNode(node, g, deps, n, e))
GRAPH_FORWARD(cuGraphAddEventWaitNode,
              (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t n, CUevent e),
              cudaGraphAddEventWaitNode(node, g, deps, n, e))
GRAPH_FORWARD(cuGraphAddChildGraphNode,
              (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t n, CUgraph child),
              cudaGraphAddChildGraphNode(node, g, deps, n, child))
GRAPH_FORWARD(cuGraphChildGraphNodeGetGraph, (CUgraphNode node, CUgraph* g),
              cudaGraphChildGraphNodeGetGraph(node, g))
GRAPH_FORWARD(cuGraphAddDependencies,
              (CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
               const CUgraphEdgeData* edges, size_t n),
              cudaGraphAddDependencies(g, from, to,
                                       reinterpret_cast<const cudaGraphEdgeData*>(edges), n))
GRAPH_FORWARD(cuGraphRemoveDependencies,
              (CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
               const CUgraphEdgeData* edges, size_t n),
              cudaGraphRemoveDependencies(g, from, to,
                                          reinterpret_cast<const cudaGraphEdgeData*>(edges), n))
GRAPH_FORWARD(cuGraphGetNodes, (CUgraph g, CUgraphNode* nodes, size_t* n),
              cudaGraphGetNodes(g, nodes, n))
GRAPH_FORWARD(cuGraphGetRootNodes, (CUgraph g, CUgraphNode* nodes, size_t* n),
              cudaGraphGetRootNodes(g, nodes, n))
GRAPH_FORWARD(cuGraphNodeGetDependencies,
              (CUgraphNode node, CUgraphNode* deps, CUgraphEdgeData* edges, size_t* n),
              cudaGraphNodeGetDependencies(node, deps, reinterpret_cast<cudaGraphEdgeData*>(edges),
                                           n))
GRAPH_FORWARD(cuGraphNodeGetType, (CUgraphNode node, CUgraphNodeType* type),
              cudaGraphNodeGetType(node, reinterpret_cast<cudaGraphNodeType*>(type)))
GRAPH_FORWARD(cuGraphDestroyNode, (CUgraphNode node), cudaGraphDestroyNode(node))
GRAPH_FORWARD(cuGraphHostNodeSetParams, (CUgraphNode node, const CUDA_HOST_NODE_PARAMS* p),
              cudaGraphHostNodeSetParams(node, reinterpret_cast<const cudaHostNodeParams*>(p)))
GRAPH_FORWARD(cuGraphMemsetNodeSetParams, (CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p),
              cudaGraphMemsetNodeSetParams(node, reinterpret_cast<const cudaMemsetParams*>(p)))
GRAPH_FORWARD(cuGraphInstantiate, (CUgraphExec * exec, CUgraph g, unsigned long long flags),
              cudaGraphInstantiate(exec, g, flags))
GRAPH_FORWARD(cuGraphInstantiateWithParams,
              (CUgraphExec * exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p),
              cudaGraphInstantiateWithParams(exec, g,
                                             reinterpret_cast<cudaGraphInstantiateParams*>(p)))
GRAPH_FORWARD(cuGraphExecDestroy, (CUgraphExec exec), cudaGraphExecDestroy(exec))
GRAPH_FORWARD(cuGraphExecGetFlags, (CUgraphExec exec, cuuint64_t* flags),
              cudaGraphExecGetFlags(exec, reinterpret_cast<unsigned long long*>(flags)))
GRAPH_FORWARD(cuGraphUpload, (CUgraphExec exec, CUstream s), cudaGraphUpload(exec, s))
GRAPH_FORWARD(cuGraphLaunch, (CUgraphExec exec, CUstream s), cudaGraphLaunch(exec, s))
GRAPH_FORWARD(cuGraphExecUpdate, (CUgraphExec exec, CUgraph g, CUgraphExecUpdateResultInfo* info),
              cudaGraphExecUpdate(exec, g, reinterpret_cast<cudaGraphExecUpdateResultInfo*>(info)))
GRAPH_FORWARD(cuGraphExecHostNodeSetParams,
              (CUgraphExec exec, CUgraphNode node, const CUDA_HOST_NODE_PARAMS* p),
              cudaGraphExecHostNodeSetParams(exec, node,
                                             reinterpret_cast<const cudaHostNodeParams*>(p)))
GRAPH_FORWARD(cuStreamBeginCapture, (CUstream s, CUstreamCaptureMode mode),
              cudaStreamBeginCapture(s, cudaStreamCaptureMode(mode)))
GRAPH_FORWARD(cuStreamEndCapture, (CUstream s, CUgraph* g), cudaStreamEndCapture(s, g))
GRAPH_FORWARD(cuStreamIsCapturing, (CUstream s, CUstreamCaptureStatus* status),
              cudaStreamIsCapturing(s, reinterpret_cast<cudaStreamCaptureStatus*>(status)))
GRAPH_FORWARD(cuStreamGetCaptureInfo,
              (CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* g,
               const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* n),
              cudaStreamGetCaptureInfo(s, reinterpret_cast<cudaStreamCaptureStatus*>(status),
                                       reinterpret_cast<unsigned long long*>(id), g, deps,
                                       reinterpret_cast<const cudaGraphEdgeData**>(edges), n))
GRAPH_FORWARD(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode),
              cudaThreadExchangeStreamCaptureMode(reinterpret_cast<cudaStreamCaptureMode*>(mode)))
GRAPH_FORWARD(cuGraphNodeSetEnabled, (CUgraphExec exec, CUgraphNode node, unsigned int on),
              cudaGraphNodeSetEnabled(exec, node, on))
GRAPH_FORWARD(cuGraphNodeGetEnabled, (CUgraphExec exec, CUgraphNode node, unsigned int* on),
              cudaGraphNodeGetEnabled(exec, node, on))
GRAPH_FORWARD(cuGraphGetEdges,
              (CUgraph g, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edges, size_t* n),
              cudaGraphGetEdges(g, from, to, reinterpret_cast<cudaGraphEdgeData*>(edges), n))
GRAPH_FORWARD(cuGraphNodeGetDependentNodes,
              (CUgraphNode node, CUgraphNode* out, CUgraphEdgeData* edges, size_t* n),
              cudaGraphNodeGetDependentNodes(node, out, reinterpret_cast<cudaGraphEdgeData*>(edges),
                                             n))
GRAPH_FORWARD(cuUserObjectCreate,
              (CUuserObject * out, void* ptr, CUhostFn destroy, unsigned int refs,
               unsigned int flags),
              cudaUserObjectCreate(out, ptr, destroy, refs, flags))
GRAPH_FORWARD(cuUserObjectRetain, (CUuserObject o, unsigned int n), cudaUserObjectRetain(o, n))
GRAPH_FORWARD(cuUserObjectRelease, (CUuserObject o, unsigned int n), cudaUserObjectRelease(o, n))
GRAPH_FORWARD(cuGraphRetainUserObject,
              (CUgraph g, CUuserObject o, unsigned int n, unsigned int flags),
              cudaGraphRetainUserObject(g, o, n, flags))
GRAPH_FORWARD(cuGraphReleaseUserObject, (CUgraph g, CUuserObject o, unsigned int n),
              cudaGraphReleaseUserObject(g, o, n))
GRAPH_FORWARD(cuGraphAddMemAllocNode,
              (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t n,
               CUDA_MEM_ALLOC_NODE_PARAMS* p),
              cudaGraphAddMemAllocNode(node, g, deps, n,
                                       reinterpret_cast<cudaMemAllocNodeParams*>(p)))
GRAPH_FORWARD(cuGraphAddMemFreeNode,
              (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t n, CUdeviceptr p),
              cudaGraphAddMemFreeNode(node, g, deps, n, reinterpret_cast<void*>(p)))
GRAPH_FORWARD(cuGraphMemAllocNodeGetParams, (CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS* p),
              cudaGraphMemAllocNodeGetParams(node, reinterpret_cast<cudaMemAllocNodeParams*>(p)))
GRAPH_FORWARD(cuGraphMemFreeNodeGetParams, (CUgraphNode node, CUdeviceptr* p),
              cudaGraphMemFreeNodeGetParams(node, p))
GRAPH_FORWARD(cuDeviceGraphMemTrim, (CUdevice d), cudaDeviceGraphMemTrim(d))
GRAPH_FORWARD(cuDeviceGetGraphMemAttribute, (CUdevice d, CUgraphMem_attribute a, void* v),
              cudaDeviceGetGraphMemAttribute(d, cudaGraphMemAttributeType(a), v))
GRAPH_FORWARD(cuDeviceSetGraphMemAttribute, (CUdevice d, CUgraphMem_attribute a, void* v),
              cudaDeviceSetGraphMemAttribute(d, cudaGraphMemAttributeType(a), v))
GRAPH_FORWARD(cuGraphDebugDotPrint, (CUgraph g, const char* path, unsigned int flags),
              cudaGraphDebugDotPrint(g, path, flags))
GRAPH_FORWARD(cuStreamBeginCaptureToGraph,
              (CUstream s, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* edges,
               size_t n, CUstreamCaptureMode mode),
              cudaStreamBeginCaptureToGraph(s, g, deps,
                                            reinterpret_cast<const cudaGraphEdgeData*>(edges), n,
                                            cudaStreamCaptureMode(mode)))
GRAPH_FORWARD(cuStreamUpdateCaptureDependencies,
              (CUstream s, CUgraphNode* deps, const CUgraphEdgeData* edges, size_t n,
               unsigned int flags),
              cudaStreamUpdateCaptureDependencies(s, deps,
                                                  reinterpret_cast<const cudaGraphEdgeData*>(edges),
                                                  n, flags))
GRAPH_FORWARD(cuGraphMemsetNodeGetParams, (CUgraphNode node, CUDA_MEMSET_NODE_PARAMS* p),
              cudaGraphMemsetNodeGetParams(node, reinterpret_cast<cudaMemsetParams*>(p)))
GRAPH_FORWARD(cuGraphHostNodeGetParams, (CUgraphNode node, CUDA_HOST_NODE_PARAMS* p),
              cudaGraphHostNodeGetParams(node, reinterpret_cast<cudaHostNodeParams*>(p)))
GRAPH_FORWARD(cuGraphEventRecordNodeGetEvent, (CUgraphNode node, CUevent* e),
              cudaGraphEventRecordNodeGetEvent(node, e))
GRAPH_FORWARD(cuGraphEventRecordNodeSetEvent, (CUgraphNode node, CUevent e),
              cudaGraphEventRecordNodeSetEvent(node, e))
GRAPH_FORWARD(cuGraphEventWaitNodeGetEvent, (CUgraphNode node, CUevent* e),
              cudaGraphEventWaitNodeGetEvent(node, e))
GRAPH_FORWARD(cuGraphEventWaitNodeSetEvent, (CUgraphNode node, CUevent e),
              cudaGraphEventWaitNodeSetEvent(node, e))
GRAPH_FORWARD(cuGraphExecMemsetNodeSetParams,
              (CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext),
              cudaGraphExecMemsetNodeSetParams(exec, node,
                                               reinterpret_cast<const cudaMemsetParams*>(p)))
GRAPH_FORWARD(cuGraphExecEventRecordNodeSetEvent, (CUgraphExec exec, CUgraphNode node, CUevent e),
              cudaGraphExecEventRecordNodeSetEvent(exec, node, e))
GRAPH_FORWARD(cuGraphExecEventWaitNodeSetEvent, (CUgraphExec exec, CUgraphNode node, CUevent e),
              cudaGraphExecEventWaitNodeSetEvent(exec, node, e))
GRAPH_FORWARD(cuGraphExecChildGraphNodeSetParams, (CUgraphExec exec, CUgraphNode node, CUgraph g),
              cudaGraphExecChildGraphNodeSetParams(exec, node, g))
GRAPH_FORWARD(cuGraphKernelNodeGetAttribute,
              (CUgraphNode node, CUkernelNodeAttrID a, CUkernelNodeAttrValue* v),
              cudaGraphKernelNodeGetAttribute(node, cudaKernelNodeAttrID(a),
                                              reinterpret_cast<cudaKernelNodeAttrValue*>(v)))
GRAPH_FORWARD(cuGraphKernelNodeSetAttribute,
              (CUgraphNode node, CUkernelNodeAttrID a, const CUkernelNodeAttrValue* v),
              cudaGraphKernelNodeSetAttribute(node, cudaKernelNodeAttrID(a),
                                              reinterpret_cast<const cudaKernelNodeAttrValue*>(v)))
GRAPH_FORWARD(cuGraphKernelNodeCopyAttributes, (CUgraphNode dst, CUgraphNode src),
              cudaGraphKernelNodeCopyAttributes(dst, src))
#undef GRAPH_FORWARD

CUresult cuGraphAddKernelNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                              const CUDA_KERNEL_NODE_PARAMS* p) {
  GraphOp op;
  if (CUresult r = KernelOp(p, &op)) return r;
  return Add(node, g, deps, n, std::move(op));
}

CUresult cuGraphAddMemcpyNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                              const CUDA_MEMCPY3D* p, CUcontext) {
  GraphOp op;
  if (CUresult r = MemcpyOp(p, &op)) return r;
  return Add(node, g, deps, n, std::move(op));
}

// Copies described by CUDA_MEMCPY2D/3D: the copy a graph's memcpy node would make, made now.
CUresult cuMemcpy3D(const CUDA_MEMCPY3D* c) {
  return Copy(c, nullptr, false);
}

CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D* c, CUstream s) {
  return Copy(c, s, true);
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D* c) {
  return Copy(c, nullptr, false);
}

CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D* c) {
  return Copy(c, nullptr, false);
}

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D* c, CUstream s) {
  return Copy(c, s, true);
}

// Between contexts: here both are the one context (a null one is the current), so a copy
// within the device.
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* c) {
  CUDA_MEMCPY3D d;
  if (CUresult r = FromPeer(c, &d)) return r;
  return Copy(&d, nullptr, false);
}

CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* c, CUstream s) {
  CUDA_MEMCPY3D d;
  if (CUresult r = FromPeer(c, &d)) return r;
  return Copy(&d, s, true);
}

// Copies to and from 1-D arrays: `offset` bytes into the array's row.
CUresult cuMemcpyHtoA(CUarray dst, size_t offset, const void* src, size_t n) {
  return Copy1D({.array = dst, .offset = offset}, {.host = src}, n, nullptr, false);
}

CUresult cuMemcpyHtoAAsync(CUarray dst, size_t offset, const void* src, size_t n, CUstream s) {
  return Copy1D({.array = dst, .offset = offset}, {.host = src}, n, s, true);
}

CUresult cuMemcpyAtoH(void* dst, CUarray src, size_t offset, size_t n) {
  return Copy1D({.host = dst}, {.array = src, .offset = offset}, n, nullptr, false);
}

CUresult cuMemcpyAtoHAsync(void* dst, CUarray src, size_t offset, size_t n, CUstream s) {
  return Copy1D({.host = dst}, {.array = src, .offset = offset}, n, s, true);
}

CUresult cuMemcpyDtoA(CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
  return Copy1D({.array = dst, .offset = offset}, {.device = src}, n, nullptr, false);
}

CUresult cuMemcpyAtoD(CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
  return Copy1D({.device = dst}, {.array = src, .offset = offset}, n, nullptr, false);
}

CUresult cuMemcpyAtoA(CUarray dst, size_t dst_offset, CUarray src, size_t src_offset, size_t n) {
  return Copy1D({.array = dst, .offset = dst_offset}, {.array = src, .offset = src_offset}, n,
                nullptr, false);
}

// The CUfunction is the node's kernel; its parameters point into the node's packed copy.
CUresult cuGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* p) {
  DriverCallScope scope;
  if (node == nullptr || p == nullptr || node->op.type != cudaGraphNodeTypeKernel)
    return CUDA_ERROR_INVALID_VALUE;
  const GraphOp& op = node->op;
  node->arg_ptrs.clear();
  for (uint32_t off : op.kernel->offsets) node->arg_ptrs.push_back(node->op.params.data() + off);
  *p = {};
  p->func = reinterpret_cast<CUfunction>(op.kernel);
  p->kern = reinterpret_cast<CUkernel>(op.kernel);  // the same object here
  p->ctx = TheContext();
  p->gridDimX = op.grid.x;
  p->gridDimY = op.grid.y;
  p->gridDimZ = op.grid.z;
  p->blockDimX = op.block.x;
  p->blockDimY = op.block.y;
  p->blockDimZ = op.block.z;
  p->sharedMemBytes = static_cast<unsigned>(op.shared);
  p->kernelParams = node->arg_ptrs.data();
  return CUDA_SUCCESS;
}

// The copy as the stub runtime keeps it: both sides by unified address.
CUresult cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D* c) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaMemcpy3DParms p{};
  if (cudaError_t e = cudaGraphMemcpyNodeGetParams(node, &p)) return ToCu(e);
  *c = {};
  c->srcMemoryType = c->dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  c->srcDevice = reinterpret_cast<CUdeviceptr>(p.srcPtr.ptr);
  c->srcPitch = p.srcPtr.pitch;
  c->srcHeight = p.srcPtr.ysize;
  c->dstDevice = reinterpret_cast<CUdeviceptr>(p.dstPtr.ptr);
  c->dstPitch = p.dstPtr.pitch;
  c->dstHeight = p.dstPtr.ysize;
  c->WidthInBytes = p.extent.width;
  c->Height = p.extent.height;
  c->Depth = p.extent.depth;
  return CUDA_SUCCESS;
}

CUresult cuGraphMemcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D* c) {
  DriverCallScope scope;
  if (node == nullptr || node->op.type != cudaGraphNodeTypeMemcpy) return CUDA_ERROR_INVALID_VALUE;
  return MemcpyOp(c, &node->op);
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D* c,
                                        CUcontext) {
  DriverCallScope scope;
  if (exec == nullptr || node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GraphOp op;
  if (CUresult r = MemcpyOp(c, &op)) return r;
  return cs::ForEachStep(exec, node, cudaGraphNodeTypeMemcpy, [&](GraphOp& s, size_t) { s = op; })
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphKernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  DriverCallScope scope;
  if (node == nullptr || node->op.type != cudaGraphNodeTypeKernel) return CUDA_ERROR_INVALID_VALUE;
  return KernelOp(p, &node->op);
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                        const CUDA_KERNEL_NODE_PARAMS* p) {
  DriverCallScope scope;
  if (exec == nullptr || node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GraphOp op;
  if (CUresult r = KernelOp(p, &op)) return r;
  return cs::ForEachStep(exec, node, cudaGraphNodeTypeKernel, [&](GraphOp& s, size_t) { s = op; })
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"

// ---- Nodes by their generic parameters (CUDA 12.2): each type's own entry point ----------

namespace {

// The generic parameters' kernel structure is the current one under another name.
const CUDA_KERNEL_NODE_PARAMS* Kernel(const CUDA_KERNEL_NODE_PARAMS_v3& p) {
  static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS_v3) == sizeof(CUDA_KERNEL_NODE_PARAMS));
  return reinterpret_cast<const CUDA_KERNEL_NODE_PARAMS*>(&p);
}

CUDA_MEMSET_NODE_PARAMS Memset(const CUDA_MEMSET_NODE_PARAMS_v2& p) {
  return {p.dst, p.pitch, p.value, p.elementSize, p.width, p.height};
}

// A type this cannot make, named: external semaphores, batched memory operations, conditional
// nodes' parameters changed, and a child graph moved rather than cloned into its node.
CUresult RefuseNode(const char* call, CUgraphNodeType type) {
  const char* why = type == CU_GRAPH_NODE_TYPE_GRAPH          ? "a child graph moved into its node"
                    : type == CU_GRAPH_NODE_TYPE_CONDITIONAL  ? "conditional nodes"
                    : type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP ? "batched memory operation nodes"
                                                              : "external semaphore nodes";
  (void)remora::client_stub::Unsupported(call, why);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// A node's parameters changed in the graph (`exec` null) or in an executable graph made from
// it: the types whose parameters can change.
CUresult SetParams(const char* call, CUgraphExec exec, CUgraphNode node, CUgraphNodeParams* p) {
  if (node == nullptr || p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNodeType type;
  if (CUresult r = cuGraphNodeGetType(node, &type)) return r;
  if (type != p->type) return CUDA_ERROR_INVALID_VALUE;
  switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return exec ? cuGraphExecKernelNodeSetParams(exec, node, Kernel(p->kernel))
                  : cuGraphKernelNodeSetParams(node, Kernel(p->kernel));
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return exec ? cuGraphExecMemcpyNodeSetParams(exec, node, &p->memcpy.copyParams,
                                                   p->memcpy.copyCtx)
                  : cuGraphMemcpyNodeSetParams(node, &p->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS m = Memset(p->memset);
      return exec ? cuGraphExecMemsetNodeSetParams(exec, node, &m, p->memset.ctx)
                  : cuGraphMemsetNodeSetParams(node, &m);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      const CUDA_HOST_NODE_PARAMS h{p->host.fn, p->host.userData};
      return exec ? cuGraphExecHostNodeSetParams(exec, node, &h)
                  : cuGraphHostNodeSetParams(node, &h);
    }
    case CU_GRAPH_NODE_TYPE_GRAPH:
      if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;  // a child graph is set in place
      return cuGraphExecChildGraphNodeSetParams(exec, node, p->graph.graph);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return exec ? cuGraphExecEventWaitNodeSetEvent(exec, node, p->eventWait.event)
                  : cuGraphEventWaitNodeSetEvent(node, p->eventWait.event);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return exec ? cuGraphExecEventRecordNodeSetEvent(exec, node, p->eventRecord.event)
                  : cuGraphEventRecordNodeSetEvent(node, p->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      return RefuseNode(call, p->type);
    default:  // empty nodes and memory nodes have nothing to change
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

extern "C" {

CUresult cuGraphAddNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                        const CUgraphEdgeData* edges, size_t n, CUgraphNodeParams* p) {
  if (node == nullptr || p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // With edge data the node is made first, then its edges with their data.
  const size_t direct = edges ? 0 : n;
  CUresult r = CUDA_SUCCESS;
  switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      r = cuGraphAddKernelNode(node, g, deps, direct, Kernel(p->kernel));
      break;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      r = cuGraphAddMemcpyNode(node, g, deps, direct, &p->memcpy.copyParams, p->memcpy.copyCtx);
      break;
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS m = Memset(p->memset);
      r = cuGraphAddMemsetNode(node, g, deps, direct, &m, p->memset.ctx);
      break;
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      const CUDA_HOST_NODE_PARAMS h{p->host.fn, p->host.userData};
      r = cuGraphAddHostNode(node, g, deps, direct, &h);
      break;
    }
    case CU_GRAPH_NODE_TYPE_GRAPH:
      if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
        return RefuseNode("cuGraphAddNode", p->type);
      r = cuGraphAddChildGraphNode(node, g, deps, direct, p->graph.graph);
      break;
    case CU_GRAPH_NODE_TYPE_EMPTY:
      r = cuGraphAddEmptyNode(node, g, deps, direct);
      break;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      r = cuGraphAddEventWaitNode(node, g, deps, direct, p->eventWait.event);
      break;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      r = cuGraphAddEventRecordNode(node, g, deps, direct, p->eventRecord.event);
      break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      r = cuGraphAddMemAllocNode(node, g, deps, direct,
                                 reinterpret_cast<CUDA_MEM_ALLOC_NODE_PARAMS*>(&p->alloc));
      break;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      r = cuGraphAddMemFreeNode(node, g, deps, direct, p->free.dptr);
      break;
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: {
      DriverCallScope scope;
      if ((r = NeedInit()) != CUDA_SUCCESS) return r;
      cudaGraphNodeParams rt{};
      rt.type = cudaGraphNodeTypeConditional;
      rt.conditional.handle = p->conditional.handle;
      rt.conditional.type = static_cast<cudaGraphConditionalNodeType>(p->conditional.type);
      rt.conditional.size = p->conditional.size;
      r = ToCu(cudaGraphAddNode(node, g, deps, nullptr, direct, &rt));
      if (r == CUDA_SUCCESS) p->conditional.phGraph_out = rt.conditional.phGraph_out;
      break;
    }
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return RefuseNode("cuGraphAddNode", p->type);
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (r != CUDA_SUCCESS || direct == n) return r;
  std::vector<CUgraphNode> to(n, *node);
  if ((r = cuGraphAddDependencies_v2(g, deps, to.data(), edges, n)) != CUDA_SUCCESS) {
    (void)cuGraphDestroyNode(*node);
    *node = nullptr;
  }
  return r;
}

CUresult cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams* p) {
  return SetParams("cuGraphNodeSetParams", nullptr, node, p);
}

CUresult cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraphNodeParams* p) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return SetParams("cuGraphExecNodeSetParams", exec, node, p);
}

}  // extern "C"
