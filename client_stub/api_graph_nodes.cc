// client_stub/api_graph_nodes.cc - the runtime's graph entry points beyond building and
// launching (api_graph.cc): node parameters read and changed, in a graph and in an executable,
// edges, enabling, user objects, memory allocation nodes, the generic cudaGraphAddNode,
// capture into an existing graph, and a DOT picture of a graph.
#include <cstdio>
#include <memory>

#include "client_stub/api.h"
#include "client_stub/api_graph.h"
#include "client_stub/graph_memory.h"
#include "client_stub/kernels.h"

namespace cs = remora::client_stub;
using cs::GraphOp;
using cs::Ret;
using namespace cs::graphs;  // NOLINT: the entry points below

namespace {

// Applies `change` to every step of `exec` that came from `node` (a node of the graph it was
// instantiated from) and has `type`. cudaErrorInvalidValue if there is none.
template <class F>
cudaError_t ForSteps(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNodeType type,
                     F&& change) {
  if (exec == nullptr || node == nullptr) return Ret(cudaErrorInvalidValue);
  return cs::ForEachStep(exec, node, type, change) ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t SymbolCopyOp(const void* symbol, size_t count, size_t offset, GraphOp* op,
                         bool to_symbol, void* other, cudaMemcpyKind kind) {
  auto var = cs::ResolveSymbol(symbol);
  if (!var.ok()) return static_cast<cudaError_t>(var.status().code());
  if (offset > (*var)->size || count > (*var)->size - offset) return cudaErrorInvalidValue;
  void* at = reinterpret_cast<char*>((*var)->dptr) + offset;
  *op = cs::LinearCopyOp(to_symbol ? at : other, to_symbol ? other : at, count, kind);
  return cudaSuccess;
}

// The generic node parameters' kernel and memset members as the typed calls take them.
cudaKernelNodeParams KernelParams(const cudaKernelNodeParamsV2& k) {
  return {k.func, k.gridDim, k.blockDim, k.sharedMemBytes, k.kernelParams, k.extra};
}
cudaMemsetParams MemsetParams(const cudaMemsetParamsV2& m) {
  return {m.dst, m.pitch, m.value, m.elementSize, m.width, m.height};
}

cudaGraphNode_t NodeOfType(cudaGraphNode_t node, cudaGraphNodeType type) {
  return node != nullptr && node->op.type == type ? node : nullptr;
}

// The event of an event record or wait node (`type`), read or replaced.
cudaError_t GetEvent(cudaGraphNode_t node, cudaGraphNodeType type, cudaEvent_t* e) {
  node = NodeOfType(node, type);
  if (node == nullptr || e == nullptr) return Ret(cudaErrorInvalidValue);
  *e = node->op.event;
  return cudaSuccess;
}
cudaError_t SetEvent(cudaGraphNode_t node, cudaGraphNodeType type, cudaEvent_t e) {
  node = NodeOfType(node, type);
  if (node == nullptr || e == nullptr) return Ret(cudaErrorInvalidValue);
  node->op.event = e;
  return cudaSuccess;
}

// A conditional node: `p->size` empty bodies, handed out in p->phGraph_out, run as the value of
// p->handle (made by cudaGraphConditionalHandleCreate) says.
cudaError_t AddConditionalNode(cudaGraphNode_t* node, cudaGraph_t graph,
                               const cudaGraphNode_t* deps, size_t n,
                               cudaConditionalNodeParams* p) {
  std::shared_ptr<cs::ConditionalWord> word = cs::FindConditional(p->handle);
  const bool sized = p->type == cudaGraphCondTypeIf      ? p->size == 1 || p->size == 2
                     : p->type == cudaGraphCondTypeWhile ? p->size == 1
                                                         : p->type == cudaGraphCondTypeSwitch;
  if (!word || !sized || p->size == 0) return Ret(cudaErrorInvalidValue);
  GraphOp op;
  op.type = cudaGraphNodeTypeConditional;
  op.word = std::move(word);
  op.cond = p->type;
  if (cudaError_t e = Add(node, graph, deps, n, std::move(op))) return e;
  for (unsigned i = 0; i < p->size; ++i) {
    (*node)->bodies.push_back(std::make_unique<CUgraph_st>());
    (*node)->body_handles.push_back((*node)->bodies.back().get());
  }
  p->phGraph_out = (*node)->body_handles.data();
  return cudaSuccess;
}

}  // namespace

extern "C" {

// ---- Kernel nodes ---------------------------------------------------------------------

// The parameters point into the node's own packed copy.
cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* p) {
  node = NodeOfType(node, cudaGraphNodeTypeKernel);
  if (node == nullptr || p == nullptr) return Ret(cudaErrorInvalidValue);
  const cs::Kernel& k = *node->op.kernel;
  node->arg_ptrs.clear();
  for (uint32_t off : k.offsets) node->arg_ptrs.push_back(node->op.params.data() + off);
  *p = {};
  p->func = k.host_fun ? const_cast<void*>(k.host_fun) : node->op.kernel;
  p->gridDim = node->op.grid;
  p->blockDim = node->op.block;
  p->sharedMemBytes = static_cast<unsigned>(node->op.shared);
  p->kernelParams = node->arg_ptrs.data();
  return cudaSuccess;
}

// Attributes are kept with the node; cooperative and cluster ones shape its launch.
cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t node, cudaKernelNodeAttrID attr,
                                            const cudaKernelNodeAttrValue* value) {
  node = NodeOfType(node, cudaGraphNodeTypeKernel);
  if (node == nullptr || value == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = cs::ApplyLaunchAttribute(attr, *value, &node->op.mode)) return Ret(e);
  node->attrs[attr] = *value;
  return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t node, cudaKernelNodeAttrID attr,
                                            cudaKernelNodeAttrValue* value) {
  node = NodeOfType(node, cudaGraphNodeTypeKernel);
  if (node == nullptr || value == nullptr) return Ret(cudaErrorInvalidValue);
  auto it = node->attrs.find(attr);
  *value = it != node->attrs.end() ? it->second : cudaKernelNodeAttrValue{};
  return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t dst, cudaGraphNode_t src) {
  dst = NodeOfType(dst, cudaGraphNodeTypeKernel);
  src = NodeOfType(src, cudaGraphNodeTypeKernel);
  if (dst == nullptr || src == nullptr) return Ret(cudaErrorInvalidValue);
  dst->attrs = src->attrs;
  dst->op.mode = src->op.mode;
  return cudaSuccess;
}

// ---- Copy, memset, host and event nodes -------------------------------------------------

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, cudaMemcpy3DParms* p) {
  node = NodeOfType(node, cudaGraphNodeTypeMemcpy);
  if (node == nullptr || p == nullptr) return Ret(cudaErrorInvalidValue);
  const GraphOp& op = node->op;
  *p = {};
  p->srcPtr = cudaPitchedPtr{const_cast<void*>(op.src), op.spitch, op.width,
                             op.sslice && op.spitch ? op.sslice / op.spitch : op.height};
  p->dstPtr = cudaPitchedPtr{op.dst, op.dpitch, op.width,
                             op.dslice && op.dpitch ? op.dslice / op.dpitch : op.height};
  p->extent = cudaExtent{op.width, op.height, op.depth};
  p->kind = op.kind;
  return cudaSuccess;
}

cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const cudaMemcpy3DParms* p) {
  node = NodeOfType(node, cudaGraphNodeTypeMemcpy);
  if (node == nullptr) return Ret(cudaErrorInvalidValue);
  return Ret(MemcpyNodeOp(p, &node->op));
}

cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src,
                                           size_t count, enum cudaMemcpyKind kind) {
  node = NodeOfType(node, cudaGraphNodeTypeMemcpy);
  if (node == nullptr || dst == nullptr || src == nullptr) return Ret(cudaErrorInvalidValue);
  node->op = cs::LinearCopyOp(dst, src, count, kind);
  return cudaSuccess;
}

cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, cudaMemsetParams* p) {
  node = NodeOfType(node, cudaGraphNodeTypeMemset);
  if (node == nullptr || p == nullptr) return Ret(cudaErrorInvalidValue);
  *p = {node->op.dst,  node->op.dpitch, node->op.value,
        node->op.elem, node->op.width,  node->op.height};
  return cudaSuccess;
}

cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, cudaHostNodeParams* p) {
  node = NodeOfType(node, cudaGraphNodeTypeHost);
  if (node == nullptr || p == nullptr) return Ret(cudaErrorInvalidValue);
  *p = {node->op.fn, node->op.data};
  return cudaSuccess;
}

cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* e) {
  return GetEvent(node, cudaGraphNodeTypeEventRecord, e);
}

cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t e) {
  return SetEvent(node, cudaGraphNodeTypeEventRecord, e);
}

cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* e) {
  return GetEvent(node, cudaGraphNodeTypeWaitEvent, e);
}

cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t e) {
  return SetEvent(node, cudaGraphNodeTypeWaitEvent, e);
}

cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t* node, cudaGraph_t graph,
                                           const cudaGraphNode_t* deps, size_t n,
                                           const void* symbol, const void* src, size_t count,
                                           size_t offset, enum cudaMemcpyKind kind) {
  GraphOp op;
  if (cudaError_t e = SymbolCopyOp(symbol, count, offset, &op, true, const_cast<void*>(src), kind))
    return Ret(e);
  return Add(node, graph, deps, n, std::move(op));
}

cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t* node, cudaGraph_t graph,
                                             const cudaGraphNode_t* deps, size_t n, void* dst,
                                             const void* symbol, size_t count, size_t offset,
                                             enum cudaMemcpyKind kind) {
  GraphOp op;
  if (cudaError_t e = SymbolCopyOp(symbol, count, offset, &op, false, dst, kind)) return Ret(e);
  return Add(node, graph, deps, n, std::move(op));
}

cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t node, const void* symbol,
                                                 const void* src, size_t count, size_t offset,
                                                 enum cudaMemcpyKind kind) {
  node = NodeOfType(node, cudaGraphNodeTypeMemcpy);
  if (node == nullptr) return Ret(cudaErrorInvalidValue);
  return Ret(SymbolCopyOp(symbol, count, offset, &node->op, true, const_cast<void*>(src), kind));
}

cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t node, void* dst,
                                                   const void* symbol, size_t count, size_t offset,
                                                   enum cudaMemcpyKind kind) {
  node = NodeOfType(node, cudaGraphNodeTypeMemcpy);
  if (node == nullptr) return Ret(cudaErrorInvalidValue);
  return Ret(SymbolCopyOp(symbol, count, offset, &node->op, false, dst, kind));
}

// ---- Executables -------------------------------------------------------------------------

cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const cudaMemsetParams* p) {
  GraphOp op;
  if (cudaError_t e = MemsetNodeOp(p, &op)) return Ret(e);
  return ForSteps(exec, node, cudaGraphNodeTypeMemset, [&](GraphOp& s, size_t) { s = op; });
}

cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const cudaMemcpy3DParms* p) {
  GraphOp op;
  if (cudaError_t e = MemcpyNodeOp(p, &op)) return Ret(e);
  return ForSteps(exec, node, cudaGraphNodeTypeMemcpy, [&](GraphOp& s, size_t) { s = op; });
}

cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node,
                                               void* dst, const void* src, size_t count,
                                               enum cudaMemcpyKind kind) {
  if (dst == nullptr || src == nullptr) return Ret(cudaErrorInvalidValue);
  const GraphOp op = cs::LinearCopyOp(dst, src, count, kind);
  return ForSteps(exec, node, cudaGraphNodeTypeMemcpy, [&](GraphOp& s, size_t) { s = op; });
}

cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                     const void* symbol, const void* src,
                                                     size_t count, size_t offset,
                                                     enum cudaMemcpyKind kind) {
  GraphOp op;
  if (cudaError_t e = SymbolCopyOp(symbol, count, offset, &op, true, const_cast<void*>(src), kind))
    return Ret(e);
  return ForSteps(exec, node, cudaGraphNodeTypeMemcpy, [&](GraphOp& s, size_t) { s = op; });
}

cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                       void* dst, const void* symbol, size_t count,
                                                       size_t offset, enum cudaMemcpyKind kind) {
  GraphOp op;
  if (cudaError_t e = SymbolCopyOp(symbol, count, offset, &op, false, dst, kind)) return Ret(e);
  return ForSteps(exec, node, cudaGraphNodeTypeMemcpy, [&](GraphOp& s, size_t) { s = op; });
}

cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                 cudaEvent_t e) {
  if (e == nullptr) return Ret(cudaErrorInvalidValue);
  return ForSteps(exec, node, cudaGraphNodeTypeEventRecord,
                  [&](GraphOp& s, size_t) { s.event = e; });
}

cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node,
                                               cudaEvent_t e) {
  if (e == nullptr) return Ret(cudaErrorInvalidValue);
  return ForSteps(exec, node, cudaGraphNodeTypeWaitEvent, [&](GraphOp& s, size_t) { s.event = e; });
}

// The child's steps are replaced when the new child graph has the same shape.
cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                 cudaGraph_t child) {
  if (exec == nullptr || node == nullptr || child == nullptr || !node->child)
    return Ret(cudaErrorInvalidValue);
  CUgraphExec_st fresh;
  if (cudaError_t e = cs::Instantiate(*child, &fresh)) return Ret(e);
  size_t j = 0;
  for (size_t i = 0; i < exec->steps.size(); ++i)
    if (exec->origin[i] == node) {
      if (j >= fresh.steps.size() || fresh.steps[j].type != exec->steps[i].type)
        return Ret(cudaErrorGraphExecUpdateFailure);
      ++j;
    }
  if (j != fresh.steps.size()) return Ret(cudaErrorGraphExecUpdateFailure);
  j = 0;
  for (size_t i = 0; i < exec->steps.size(); ++i)
    if (exec->origin[i] == node) exec->steps[i] = fresh.steps[j++];
  return cudaSuccess;
}

// Kernel, copy and memset nodes may be disabled in an executable; they then do nothing.
cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned int on) {
  if (exec == nullptr || node == nullptr) return Ret(cudaErrorInvalidValue);
  const cudaGraphNodeType t = node->op.type;
  if (t != cudaGraphNodeTypeKernel && t != cudaGraphNodeTypeMemcpy && t != cudaGraphNodeTypeMemset)
    return Ret(cudaErrorInvalidValue);
  return ForSteps(exec, node, t, [&](GraphOp&, size_t i) { exec->enabled[i] = on != 0; });
}

cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned int* on) {
  if (on == nullptr || node == nullptr) return Ret(cudaErrorInvalidValue);
  return ForSteps(exec, node, node->op.type,
                  [&](GraphOp&, size_t i) { *on = exec->enabled[i] ? 1 : 0; });
}

cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* exec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams* p) {
  if (p == nullptr) return cudaGraphInstantiateWithParams(exec, graph, p);
  cudaGraphInstantiateParams own = *p;
  own.uploadStream = cs::PerThread(p->uploadStream);
  const cudaError_t e = cudaGraphInstantiateWithParams(exec, graph, &own);
  p->errNode_out = own.errNode_out;
  p->result_out = own.result_out;
  return e;
}

// ---- Edges --------------------------------------------------------------------------------

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                              cudaGraphEdgeData* edges, size_t* n) {
  if (graph == nullptr || n == nullptr || (from == nullptr) != (to == nullptr))
    return Ret(cudaErrorInvalidValue);
  std::vector<cudaGraphNode_t> f, t;
  for (auto& node : graph->nodes)
    for (cudaGraphNode_t d : node->deps) {
      f.push_back(d);
      t.push_back(node.get());
    }
  if (from != nullptr) {
    const size_t room = *n;
    for (size_t i = 0; i < std::min(room, f.size()); ++i) {
      from[i] = f[i];
      to[i] = t[i];
      if (edges) edges[i] = {};
    }
  }
  if (from == nullptr || *n > f.size()) *n = f.size();
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* out,
                                           cudaGraphEdgeData* edges, size_t* n) {
  if (node == nullptr) return Ret(cudaErrorInvalidValue);
  std::vector<cudaGraphNode_t> after;
  for (auto& other : node->graph->nodes)
    if (std::find(other->deps.begin(), other->deps.end(), node) != other->deps.end())
      after.push_back(other.get());
  if (edges != nullptr && out != nullptr && n != nullptr)
    for (size_t i = 0; i < std::min(*n, after.size()); ++i) edges[i] = {};
  return List(after, out, n);
}

// A DOT picture: one box per node, named by its kind, and its dependencies.
cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int) {
  if (graph == nullptr || path == nullptr) return Ret(cudaErrorInvalidValue);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path, "w"), &std::fclose);
  if (!f) return Ret(cudaErrorOperatingSystem);
  static const char* const kKinds[] = {
      "kernel",       "memcpy",     "memset",   "host",      "graph",    "empty",      "wait_event",
      "event_record", "ext_signal", "ext_wait", "mem_alloc", "mem_free", "conditional"};
  std::fprintf(f.get(), "digraph remora_graph {\n");
  for (auto& node : graph->nodes) {
    const unsigned k = node->op.type;
    const char* kind = k < std::size(kKinds) ? kKinds[k] : "node";
    const char* name = node->op.kernel ? node->op.kernel->name.c_str() : "";
    std::fprintf(f.get(), "  n%p [shape=box label=\"%s %s\"];\n", static_cast<void*>(node.get()),
                 kind, name);
    for (cudaGraphNode_t d : node->deps)
      std::fprintf(f.get(), "  n%p -> n%p;\n", static_cast<void*>(d),
                   static_cast<void*>(node.get()));
  }
  std::fprintf(f.get(), "}\n");
  return cudaSuccess;
}

// ---- User objects -----------------------------------------------------------------------

cudaError_t cudaUserObjectCreate(cudaUserObject_t* out, void* ptr, cudaHostFn_t destroy,
                                 unsigned int refs, unsigned int flags) {
  if (out == nullptr || destroy == nullptr || refs == 0 || flags != cudaUserObjectNoDestructorSync)
    return Ret(cudaErrorInvalidValue);
  *out = std::make_unique<CUuserObject_st>(refs, ptr, destroy).release();  // its last release
                                                                           // deletes it
  return cudaSuccess;
}

cudaError_t cudaUserObjectRetain(cudaUserObject_t o, unsigned int n) {
  if (o == nullptr || n == 0) return Ret(cudaErrorInvalidValue);
  cs::RetainUserObject(o, n);
  return cudaSuccess;
}

cudaError_t cudaUserObjectRelease(cudaUserObject_t o, unsigned int n) {
  if (o == nullptr || n == 0) return Ret(cudaErrorInvalidValue);
  cs::ReleaseUserObject(o, n);
  return cudaSuccess;
}

// cudaGraphUserObjectMove hands over references the caller holds; otherwise new ones.
cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t o, unsigned int n,
                                      unsigned int flags) {
  if (graph == nullptr || o == nullptr || n == 0) return Ret(cudaErrorInvalidValue);
  if (!(flags & cudaGraphUserObjectMove)) cs::RetainUserObject(o, n);
  graph->user_objects[o] += n;
  return cudaSuccess;
}

cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t o, unsigned int n) {
  if (graph == nullptr || o == nullptr || n == 0) return Ret(cudaErrorInvalidValue);
  auto it = graph->user_objects.find(o);
  if (it == graph->user_objects.end() || it->second < n) return Ret(cudaErrorInvalidValue);
  if ((it->second -= n) == 0) graph->user_objects.erase(it);
  cs::ReleaseUserObject(o, n);
  return cudaSuccess;
}

// ---- Memory allocation nodes ------------------------------------------------------------

// The node's address holds for every launch; memory is mapped there as launches reach it
// (graph_memory.h).
cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                     const cudaGraphNode_t* deps, size_t n,
                                     cudaMemAllocNodeParams* p) {
  if (p == nullptr || node == nullptr || graph == nullptr || p->bytesize == 0)
    return Ret(cudaErrorInvalidValue);
  if (p->poolProps.location.type == cudaMemLocationTypeDevice && p->poolProps.location.id != 0)
    return Ret(cudaErrorInvalidDevice);
  for (size_t i = 0; i < n; ++i)
    if (deps == nullptr || deps[i] == nullptr || deps[i]->graph != graph)
      return Ret(cudaErrorInvalidValue);
  std::shared_ptr<cs::GraphRegion> region;
  if (cudaError_t e = cs::GraphRegionFor(*graph, deps, n, p->bytesize, &region)) return Ret(e);
  GraphOp op;
  op.type = cudaGraphNodeTypeMemAlloc;
  op.dst = reinterpret_cast<void*>(cs::RegionAddress(*region));
  op.width = p->bytesize;
  if (cudaError_t e = Add(node, graph, deps, n, std::move(op))) return e;
  cs::NoteRegionHolder(*region, *node);
  (*node)->allocation = std::move(region);
  p->dptr = (*node)->op.dst;
  return cudaSuccess;
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, cudaMemAllocNodeParams* p) {
  node = NodeOfType(node, cudaGraphNodeTypeMemAlloc);
  if (node == nullptr || p == nullptr) return Ret(cudaErrorInvalidValue);
  *p = {};
  p->poolProps.allocType = cudaMemAllocationTypePinned;
  p->poolProps.location = {cudaMemLocationTypeDevice, 0};
  p->bytesize = node->op.width;
  p->dptr = node->op.dst;
  return cudaSuccess;
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                    const cudaGraphNode_t* deps, size_t n, void* dptr) {
  if (dptr == nullptr) return Ret(cudaErrorInvalidValue);
  GraphOp op;
  op.type = cudaGraphNodeTypeMemFree;
  op.dst = dptr;
  return Add(node, graph, deps, n, std::move(op));
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* dptr_out) {
  node = NodeOfType(node, cudaGraphNodeTypeMemFree);
  if (node == nullptr || dptr_out == nullptr) return Ret(cudaErrorInvalidValue);
  *static_cast<void**>(dptr_out) = node->op.dst;
  return cudaSuccess;
}

cudaError_t cudaDeviceGraphMemTrim(int device) {
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  return Ret(cs::TrimGraphMemory());
}

// The pool's memory is all associated with graphs, whether an allocation uses it now or not:
// used and reserved are the same figure here.
cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                           void* value) {
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  if (value == nullptr) return Ret(cudaErrorInvalidValue);
  switch (attr) {
    case cudaGraphMemAttrUsedMemCurrent:
    case cudaGraphMemAttrReservedMemCurrent:
      *static_cast<uint64_t*>(value) = cs::GraphMemoryInUse();
      return cudaSuccess;
    case cudaGraphMemAttrUsedMemHigh:
    case cudaGraphMemAttrReservedMemHigh:
      *static_cast<uint64_t*>(value) = cs::GraphMemoryHigh();
      return cudaSuccess;
    default:
      return Ret(cudaErrorInvalidValue);
  }
}

// Only the high watermarks can be set, and only to 0 (a reset), as NVIDIA's runtime takes it.
cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                           void* value) {
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  if (value == nullptr || *static_cast<const uint64_t*>(value) != 0 ||
      (attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh))
    return Ret(cudaErrorInvalidValue);
  cs::ResetGraphMemoryHigh();
  return cudaSuccess;
}

// ---- Generic nodes ----------------------------------------------------------------------

cudaError_t cudaGraphAddNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                             const cudaGraphEdgeData*, size_t n, cudaGraphNodeParams* p) {
  if (p == nullptr) return Ret(cudaErrorInvalidValue);
  switch (p->type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParams k = KernelParams(p->kernel);
      return cudaGraphAddKernelNode(node, graph, deps, n, &k);
    }
    case cudaGraphNodeTypeMemcpy:
      return cudaGraphAddMemcpyNode(node, graph, deps, n, &p->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
      const cudaMemsetParams m = MemsetParams(p->memset);
      return cudaGraphAddMemsetNode(node, graph, deps, n, &m);
    }
    case cudaGraphNodeTypeHost: {
      const cudaHostNodeParams h{p->host.fn, p->host.userData};
      return cudaGraphAddHostNode(node, graph, deps, n, &h);
    }
    case cudaGraphNodeTypeGraph:
      return cudaGraphAddChildGraphNode(node, graph, deps, n, p->graph.graph);
    case cudaGraphNodeTypeEmpty:
      return cudaGraphAddEmptyNode(node, graph, deps, n);
    case cudaGraphNodeTypeEventRecord:
      return cudaGraphAddEventRecordNode(node, graph, deps, n, p->eventRecord.event);
    case cudaGraphNodeTypeWaitEvent:
      return cudaGraphAddEventWaitNode(node, graph, deps, n, p->eventWait.event);
    case cudaGraphNodeTypeMemAlloc: {
      cudaMemAllocNodeParams a{};
      a.poolProps = p->alloc.poolProps;
      a.bytesize = p->alloc.bytesize;
      cudaError_t e = cudaGraphAddMemAllocNode(node, graph, deps, n, &a);
      p->alloc.dptr = a.dptr;
      return e;
    }
    case cudaGraphNodeTypeMemFree:
      return cudaGraphAddMemFreeNode(node, graph, deps, n, p->free.dptr);
    case cudaGraphNodeTypeConditional:
      return AddConditionalNode(node, graph, deps, n, &p->conditional);
    default:  // external semaphores
      return Ret(cudaErrorNotSupported);
  }
}

// A node's new parameters, of the node's own kind, in the graph or in an executable.
cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, cudaGraphNodeParams* p) {
  if (node == nullptr || p == nullptr || p->type != node->op.type)
    return Ret(cudaErrorInvalidValue);
  switch (p->type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParams k = KernelParams(p->kernel);
      return cudaGraphKernelNodeSetParams(node, &k);
    }
    case cudaGraphNodeTypeMemcpy:
      return cudaGraphMemcpyNodeSetParams(node, &p->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
      const cudaMemsetParams m = MemsetParams(p->memset);
      return cudaGraphMemsetNodeSetParams(node, &m);
    }
    case cudaGraphNodeTypeHost: {
      const cudaHostNodeParams h{p->host.fn, p->host.userData};
      return cudaGraphHostNodeSetParams(node, &h);
    }
    case cudaGraphNodeTypeEventRecord:
      return cudaGraphEventRecordNodeSetEvent(node, p->eventRecord.event);
    case cudaGraphNodeTypeWaitEvent:
      return cudaGraphEventWaitNodeSetEvent(node, p->eventWait.event);
    default:
      return Ret(cudaErrorNotSupported);
  }
}

cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                       cudaGraphNodeParams* p) {
  if (node == nullptr || p == nullptr || p->type != node->op.type)
    return Ret(cudaErrorInvalidValue);
  switch (p->type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParams k = KernelParams(p->kernel);
      return cudaGraphExecKernelNodeSetParams(exec, node, &k);
    }
    case cudaGraphNodeTypeMemcpy:
      return cudaGraphExecMemcpyNodeSetParams(exec, node, &p->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
      const cudaMemsetParams m = MemsetParams(p->memset);
      return cudaGraphExecMemsetNodeSetParams(exec, node, &m);
    }
    case cudaGraphNodeTypeHost: {
      const cudaHostNodeParams h{p->host.fn, p->host.userData};
      return cudaGraphExecHostNodeSetParams(exec, node, &h);
    }
    case cudaGraphNodeTypeEventRecord:
      return cudaGraphExecEventRecordNodeSetEvent(exec, node, p->eventRecord.event);
    case cudaGraphNodeTypeWaitEvent:
      return cudaGraphExecEventWaitNodeSetEvent(exec, node, p->eventWait.event);
    case cudaGraphNodeTypeGraph:
      return cudaGraphExecChildGraphNodeSetParams(exec, node, p->graph.graph);
    default:
      return Ret(cudaErrorNotSupported);
  }
}

// ---- Capture into an existing graph -------------------------------------------------------

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                          const cudaGraphNode_t* deps, const cudaGraphEdgeData*,
                                          size_t n, enum cudaStreamCaptureMode mode) {
  if (graph == nullptr || mode > cudaStreamCaptureModeRelaxed) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = cs::CheckStream(stream)) return Ret(e);
  return Ret(cs::BeginCapture(stream, mode, graph, deps, n));
}

cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                               const cudaGraphNode_t* deps,
                                               const cudaGraphEdgeData* edges, size_t n,
                                               enum cudaStreamCaptureMode mode) {
  return cudaStreamBeginCaptureToGraph(cs::PerThread(stream), graph, deps, edges, n, mode);
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* deps,
                                                const cudaGraphEdgeData*, size_t n,
                                                unsigned int flags) {
  if (flags > cudaStreamSetCaptureDependencies) return Ret(cudaErrorInvalidValue);
  return Ret(
      cs::UpdateCaptureDependencies(stream, deps, n, flags == cudaStreamSetCaptureDependencies));
}

cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t* deps,
                                                     const cudaGraphEdgeData* edges, size_t n,
                                                     unsigned int flags) {
  return cudaStreamUpdateCaptureDependencies(cs::PerThread(stream), deps, edges, n, flags);
}

}  // extern "C"
