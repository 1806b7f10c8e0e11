// client_stub/api_graph.cc - CUDA graphs: built node by node or captured from streams
// (graph.h), instantiated into a topological order, launched as that order's work issued on
// one stream. Running the nodes one after another is one valid schedule of any graph.
//
// Node kinds served: kernel, memcpy (linear memory and CUDA arrays), memset, host, empty,
// child graph, event record and event wait, memory allocation and free (graph_memory.h: an
// address when the node is made, memory from the graph memory pool as launches reach it).
// Conditional nodes (if, if/else, while, switch) on the emulated GPU: the handle is a word of
// device memory that kernels set (the emulated GPU's cudaGraphSetConditional stores to it); the
// launch reads it when the node's turn comes, after the work before it, and issues the body it
// selects. The launch therefore waits for the stream's work up to each conditional node. On a GPU
// kernels set a handle through NVIDIA's device runtime, which only NVIDIA's graphs understand:
// there the handle's creation is refused by name.
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "client_stub/api.h"
#include "client_stub/api_graph.h"
#include "client_stub/connection.h"
#include "client_stub/errors.h"
#include "client_stub/graph.h"
#include "client_stub/graph_memory.h"
#include "client_stub/kernels.h"
#include "client_stub/memcpy.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"
#include "emu/device.h"

namespace cs = remora::client_stub;
using cs::GraphOp;
using cs::Ret;

namespace remora::client_stub {

namespace {

std::mutex g_conditionals_mu;
std::unordered_map<cudaGraphConditionalHandle, ConditionalWord*>& Conditionals() {
  static NoDestructor<std::unordered_map<cudaGraphConditionalHandle, ConditionalWord*>> m;
  return *m;
}

}  // namespace

ConditionalWord::ConditionalWord(void* d, unsigned v, bool a) : dptr(d), dflt(v), assign(a) {
  std::lock_guard lock(g_conditionals_mu);
  Conditionals()[reinterpret_cast<uintptr_t>(d)] = this;
}

ConditionalWord::~ConditionalWord() {
  {
    std::lock_guard lock(g_conditionals_mu);
    Conditionals().erase(reinterpret_cast<uintptr_t>(dptr));
  }
  (void)cudaFree(dptr);
}

std::shared_ptr<ConditionalWord> FindConditional(cudaGraphConditionalHandle handle) {
  std::lock_guard lock(g_conditionals_mu);
  auto it = Conditionals().find(handle);
  return it == Conditionals().end() ? nullptr : it->second->weak_from_this().lock();
}

}  // namespace remora::client_stub

namespace remora::client_stub::graphs {

cudaError_t KernelNodeOp(const cudaKernelNodeParams* p, GraphOp* op) {
  if (p == nullptr) return cudaErrorInvalidValue;
  cs::Kernel* k = cs::FindKernel(p->func);
  if (k == nullptr) return cudaErrorInvalidDeviceFunction;
  if (cudaError_t e = cs::EnsureRegistered(*k)) return e;
  if (k->handle == 0) return cudaErrorInvalidDeviceFunction;
  std::string params;
  if (cudaError_t e = cs::PackLaunchArgs(*k, p->kernelParams, p->extra, &params)) return e;
  *op = cs::KernelOp(*k, p->gridDim, p->blockDim, params, p->sharedMemBytes, {});
  return cudaSuccess;
}

cudaError_t MemcpyNodeOp(const cudaMemcpy3DParms* p, GraphOp* op) {
  if (p == nullptr) return cudaErrorInvalidValue;
  if (cudaError_t e = cs::Linear3D(*p, op)) return e;
  op->type = cudaGraphNodeTypeMemcpy;
  return cudaSuccess;
}

cudaError_t MemsetNodeOp(const cudaMemsetParams* p, GraphOp* op) {
  if (p == nullptr || p->dst == nullptr) return cudaErrorInvalidValue;
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4)
    return cudaErrorInvalidValue;
  op->type = cudaGraphNodeTypeMemset;
  op->dst = p->dst;
  op->dpitch = p->pitch;
  op->value = p->value;
  op->elem = p->elementSize;
  op->width = p->width;
  op->height = p->height ? p->height : 1;
  return cudaSuccess;
}

namespace {

// Issues the body a conditional step's value selects, as often as it says: the value is read once
// the stream's work before it has run.
cudaError_t RunConditional(const GraphOp& op, cudaStream_t s) {
  while (true) {
    unsigned v = 0;
    if (cudaError_t e = cudaMemcpyAsync(&v, op.word->dptr, sizeof v, cudaMemcpyDeviceToHost, s))
      return e;
    if (cudaError_t e = cudaStreamSynchronize(s)) return e;
    size_t body = op.bodies.size();  // none
    if (op.cond == cudaGraphCondTypeSwitch)
      body = v;
    else if (v != 0)
      body = 0;
    else if (op.cond == cudaGraphCondTypeIf)
      body = 1;  // the else branch, when it has one
    if (body >= op.bodies.size()) return cudaSuccess;
    if (cudaError_t e = RunSteps(*op.bodies[body], s)) return e;
    if (op.cond != cudaGraphCondTypeWhile) return cudaSuccess;
  }
}

}  // namespace

cudaError_t RunSteps(const CUgraphExec_st& exec, cudaStream_t s) {
  for (size_t i = 0; i < exec.steps.size(); ++i)
    if (exec.enabled[i])
      if (cudaError_t e = Run(exec.steps[i], s)) return e;
  return cudaSuccess;
}

// Issues a launch of `exec` on `s`: each launch first resets the conditional handles that ask.
cudaError_t LaunchSteps(const CUgraphExec_st& exec, cudaStream_t s) {
  if (!exec.conditionals.empty()) {
    // Its conditional nodes decide as the launch runs: nothing a capture could record.
    if (auto r = cs::RefuseWhileCapturing(s)) return *r;
    for (const auto& w : exec.conditionals)
      if (w->assign)
        if (cudaError_t e = cs::FillPattern(w->dptr, 0, w->dflt, sizeof(unsigned), 1, 1, s, true))
          return e;
  }
  return RunSteps(exec, s);
}

// Issues one step of a graph on `s`.
cudaError_t Run(const GraphOp& op, cudaStream_t s) {
  switch (op.type) {
    case cudaGraphNodeTypeConditional:
      return RunConditional(op, s);
    case cudaGraphNodeTypeKernel:
      return cs::PostLaunch(*op.kernel, op.grid, op.block, op.params, op.shared, s, op.mode);
    case cudaGraphNodeTypeMemcpy:
      return cs::Copy3D(op.dst, op.dpitch, op.dslice, op.src, op.spitch, op.sslice, op.width,
                        op.height, op.depth, op.kind, s, true);
    case cudaGraphNodeTypeMemset:
      return cs::FillPattern(op.dst, op.dpitch, op.value, op.elem, op.width, op.height, s, true);
    case cudaGraphNodeTypeHost:
      return cudaLaunchHostFunc(s, op.fn, op.data);
    case cudaGraphNodeTypeEventRecord:
      return cudaEventRecord(op.event, s);
    case cudaGraphNodeTypeWaitEvent:
      return cudaStreamWaitEvent(s, op.event, 0);
    default:
      return cudaSuccess;
  }
}

cudaError_t Add(cudaGraphNode_t* node, cudaGraph_t g, const cudaGraphNode_t* deps, size_t n,
                GraphOp op) {
  if (node == nullptr) return Ret(cudaErrorInvalidValue);
  return Ret(cs::AddNode(g, deps, n, std::move(op), node));
}

// An event record or wait node (`type`) for `e`.
cudaError_t AddEventNode(cudaGraphNode_t* node, cudaGraph_t g, const cudaGraphNode_t* deps,
                         size_t n, cudaGraphNodeType type, cudaEvent_t e) {
  if (e == nullptr) return Ret(cudaErrorInvalidValue);
  GraphOp op;
  op.type = type;
  op.event = e;
  return Add(node, g, deps, n, std::move(op));
}

}  // namespace remora::client_stub::graphs

using namespace remora::client_stub::graphs;  // NOLINT: the entry points below

extern "C" {

cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned int flags) {
  if (graph == nullptr || flags != 0) return Ret(cudaErrorInvalidValue);
  *graph = std::make_unique<CUgraph_st>().release();  // cudaGraphDestroy deletes it
  return cudaSuccess;
}

// An allocation node's address range outlives the graph while an executable made from it
// holds it, or while a launch's allocation there is not yet freed (graph_memory.h).
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (graph == nullptr) return Ret(cudaErrorInvalidValue);
  std::unique_ptr<CUgraph_st> owned(graph);
  return cudaSuccess;
}

cudaError_t cudaGraphClone(cudaGraph_t* clone, cudaGraph_t original) {
  if (clone == nullptr || original == nullptr) return Ret(cudaErrorInvalidValue);
  *clone = cs::CloneGraph(*original).release();
  return cudaSuccess;
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* found, cudaGraphNode_t original,
                                     cudaGraph_t clone) {
  if (found == nullptr || original == nullptr || clone == nullptr)
    return Ret(cudaErrorInvalidValue);
  for (auto& n : clone->nodes)
    if (n->cloned_from == original) {
      *found = n.get();
      return cudaSuccess;
    }
  return Ret(cudaErrorInvalidValue);
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                   const cudaGraphNode_t* deps, size_t n,
                                   const cudaKernelNodeParams* params) {
  GraphOp op;
  if (cudaError_t e = KernelNodeOp(params, &op)) return Ret(e);
  return Add(node, graph, deps, n, std::move(op));
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                   const cudaGraphNode_t* deps, size_t n,
                                   const cudaMemcpy3DParms* params) {
  GraphOp op;
  if (cudaError_t e = MemcpyNodeOp(params, &op)) return Ret(e);
  return Add(node, graph, deps, n, std::move(op));
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* node, cudaGraph_t graph,
                                     const cudaGraphNode_t* deps, size_t n, void* dst,
                                     const void* src, size_t count, enum cudaMemcpyKind kind) {
  if (dst == nullptr || src == nullptr) return Ret(cudaErrorInvalidValue);
  return Add(node, graph, deps, n, cs::LinearCopyOp(dst, src, count, kind));
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                   const cudaGraphNode_t* deps, size_t n,
                                   const cudaMemsetParams* params) {
  GraphOp op;
  if (cudaError_t e = MemsetNodeOp(params, &op)) return Ret(e);
  return Add(node, graph, deps, n, std::move(op));
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                 const cudaGraphNode_t* deps, size_t n,
                                 const cudaHostNodeParams* params) {
  if (params == nullptr || params->fn == nullptr) return Ret(cudaErrorInvalidValue);
  GraphOp op;
  op.type = cudaGraphNodeTypeHost;
  op.fn = params->fn;
  op.data = params->userData;
  return Add(node, graph, deps, n, std::move(op));
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                  const cudaGraphNode_t* deps, size_t n) {
  return Add(node, graph, deps, n, GraphOp{});
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                        const cudaGraphNode_t* deps, size_t n, cudaEvent_t e) {
  return AddEventNode(node, graph, deps, n, cudaGraphNodeTypeEventRecord, e);
}

cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                      const cudaGraphNode_t* deps, size_t n, cudaEvent_t e) {
  return AddEventNode(node, graph, deps, n, cudaGraphNodeTypeWaitEvent, e);
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                       const cudaGraphNode_t* deps, size_t n, cudaGraph_t child) {
  if (child == nullptr) return Ret(cudaErrorInvalidValue);
  GraphOp op;
  op.type = cudaGraphNodeTypeGraph;
  if (cudaError_t e = Add(node, graph, deps, n, std::move(op))) return e;
  (*node)->child = cs::CloneGraph(*child);
  return cudaSuccess;
}

cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* graph) {
  if (node == nullptr || graph == nullptr || !node->child) return Ret(cudaErrorInvalidValue);
  *graph = node->child.get();
  return cudaSuccess;
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                     const cudaGraphNode_t* to, const cudaGraphEdgeData*,
                                     size_t n) {
  if (graph == nullptr || (n > 0 && (from == nullptr || to == nullptr)))
    return Ret(cudaErrorInvalidValue);
  for (size_t i = 0; i < n; ++i) {
    if (!from[i] || !to[i] || from[i]->graph != graph || to[i]->graph != graph || from[i] == to[i])
      return Ret(cudaErrorInvalidValue);
    auto& d = to[i]->deps;
    if (std::find(d.begin(), d.end(), from[i]) == d.end()) d.push_back(from[i]);
  }
  return cudaSuccess;
}

cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                        const cudaGraphNode_t* to, const cudaGraphEdgeData*,
                                        size_t n) {
  if (graph == nullptr || (n > 0 && (from == nullptr || to == nullptr)))
    return Ret(cudaErrorInvalidValue);
  for (size_t i = 0; i < n; ++i) {
    if (!to[i] || to[i]->graph != graph) return Ret(cudaErrorInvalidValue);
    if (std::erase(to[i]->deps, from[i]) == 0) return Ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* n) {
  if (graph == nullptr) return Ret(cudaErrorInvalidValue);
  std::vector<cudaGraphNode_t> all;
  for (auto& node : graph->nodes) all.push_back(node.get());
  return List(all, nodes, n);
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* n) {
  if (graph == nullptr) return Ret(cudaErrorInvalidValue);
  std::vector<cudaGraphNode_t> roots;
  for (auto& node : graph->nodes)
    if (node->deps.empty()) roots.push_back(node.get());
  return List(roots, nodes, n);
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* deps,
                                         cudaGraphEdgeData* edges, size_t* n) {
  if (node == nullptr) return Ret(cudaErrorInvalidValue);
  if (edges != nullptr && n != nullptr && deps != nullptr)
    std::memset(edges, 0, sizeof *edges * std::min(*n, node->deps.size()));
  return List(node->deps, deps, n);
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* type) {
  if (node == nullptr || type == nullptr) return Ret(cudaErrorInvalidValue);
  *type = node->op.type;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  if (node == nullptr) return Ret(cudaErrorInvalidValue);
  CUgraph_st* g = node->graph;
  for (auto& other : g->nodes) std::erase(other->deps, node);
  std::erase_if(g->nodes, [&](const auto& n) { return n.get() == node; });
  return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const cudaKernelNodeParams* p) {
  if (node == nullptr || node->op.type != cudaGraphNodeTypeKernel)
    return Ret(cudaErrorInvalidValue);
  return Ret(KernelNodeOp(p, &node->op));
}

cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const cudaHostNodeParams* p) {
  if (node == nullptr || node->op.type != cudaGraphNodeTypeHost || p == nullptr || !p->fn)
    return Ret(cudaErrorInvalidValue);
  node->op.fn = p->fn;
  node->op.data = p->userData;
  return cudaSuccess;
}

cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const cudaMemsetParams* p) {
  if (node == nullptr || node->op.type != cudaGraphNodeTypeMemset)
    return Ret(cudaErrorInvalidValue);
  return Ret(MemsetNodeOp(p, &node->op));
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  if (exec == nullptr || graph == nullptr) return Ret(cudaErrorInvalidValue);
  if (flags & ~static_cast<unsigned long long>(cudaGraphInstantiateFlagAutoFreeOnLaunch |
                                               cudaGraphInstantiateFlagUpload |
                                               cudaGraphInstantiateFlagUseNodePriority))
    return Ret(cudaErrorNotSupported);  // device launch
  auto e = std::make_unique<CUgraphExec_st>();
  if (cudaError_t r = cs::Instantiate(*graph, e.get())) return Ret(r);
  cs::SettleGraphMemory(e.get());
  e->flags = flags;
  *exec = e.release();  // cudaGraphExecDestroy deletes it
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* exec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams* p) {
  if (p == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t e = cudaGraphInstantiate(exec, graph, p->flags);
  p->result_out = e == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
  p->errNode_out = nullptr;
  if (e == cudaSuccess && (p->flags & cudaGraphInstantiateFlagUpload))
    e = cudaGraphUpload(*exec, p->uploadStream);
  return e;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (exec == nullptr) return Ret(cudaErrorInvalidValue);
  std::unique_ptr<CUgraphExec_st> owned(exec);
  return cudaSuccess;
}

cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t exec, unsigned long long* flags) {
  if (exec == nullptr || flags == nullptr) return Ret(cudaErrorInvalidValue);
  *flags = exec->flags;
  return cudaSuccess;
}

// Nothing to place on the device ahead of a launch: the steps are issued as they run.
cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return Ret(cudaErrorInvalidValue);
  return Ret(cs::CheckStream(stream));
}

cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  return cudaGraphUpload(exec, cs::PerThread(stream));
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = cs::CheckStream(stream)) return Ret(e);
  if (!exec->allocations.empty() || !exec->frees.empty()) {
    // Its memory is mapped and given back as it is launched: nothing a capture could record.
    if (auto r = cs::RefuseWhileCapturing(stream)) return Ret(*r);
    if (cudaError_t e = cs::BeginGraphMemory(*exec, stream)) return Ret(e);
    cudaError_t e = LaunchSteps(*exec, stream);
    cudaError_t end = cs::EndGraphMemory(*exec, stream);
    return Ret(e ? e : end);
  }
  return Ret(LaunchSteps(*exec, stream));
}

// A conditional node's handle: a word of device memory holding `value` (graph.h:
// ConditionalWord). Only the emulated GPU's kernels set it the way this reads it.
cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* handle, cudaGraph_t graph,
                                             unsigned int value, unsigned int flags) {
  if (handle == nullptr || graph == nullptr || (flags & ~unsigned{cudaGraphCondAssignDefault}))
    return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = cs::Connection::Get().Ensure()) return Ret(e);
  if (cs::Connection::Get().welcome().device().name() != remora::emu::kDeviceName)
    return Ret(static_cast<cudaError_t>(
        cs::Unsupported("cudaGraphConditionalHandleCreate",
                        "conditional nodes on a GPU, whose kernels set them through NVIDIA's "
                        "device runtime")));
  void* word = nullptr;
  if (cudaError_t e = cudaMalloc(&word, sizeof value)) return e;
  auto w = std::make_shared<cs::ConditionalWord>(word, value, flags != 0);
  if (cudaError_t e = cudaMemcpy(word, &value, sizeof value, cudaMemcpyHostToDevice)) return e;
  graph->conditionals.push_back(std::move(w));
  *handle = reinterpret_cast<uintptr_t>(word);
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  return cudaGraphLaunch(exec, cs::PerThread(stream));
}

// The graph must have the executable's shape: the same steps, of the same kinds, in the same
// order (kernels of the same function); their parameters are then taken over.
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                cudaGraphExecUpdateResultInfo* info) {
  if (exec == nullptr || graph == nullptr || info == nullptr) return Ret(cudaErrorInvalidValue);
  *info = {};
  CUgraphExec_st fresh;
  cudaError_t e = cs::Instantiate(*graph, &fresh);
  bool same = e == cudaSuccess && fresh.steps.size() == exec->steps.size();
  for (size_t i = 0; same && i < fresh.steps.size(); ++i) {
    same = fresh.steps[i].type == exec->steps[i].type &&
           fresh.steps[i].kernel == exec->steps[i].kernel;
    if (!same) info->errorNode = const_cast<cudaGraphNode_t>(fresh.origin[i]);
  }
  if (!same) {
    info->result = cudaGraphExecUpdateErrorTopologyChanged;
    return Ret(cudaErrorGraphExecUpdateFailure);
  }
  exec->steps = std::move(fresh.steps);  // the steps keep their nodes: handles stay valid
  exec->conditionals = std::move(fresh.conditionals);
  info->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const cudaKernelNodeParams* p) {
  if (exec == nullptr || node == nullptr) return Ret(cudaErrorInvalidValue);
  GraphOp op;
  if (cudaError_t e = KernelNodeOp(p, &op)) return Ret(e);
  return cs::ForEachStep(exec, node, cudaGraphNodeTypeKernel, [&](GraphOp& s, size_t) { s = op; })
             ? cudaSuccess
             : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                           const cudaHostNodeParams* p) {
  if (exec == nullptr || node == nullptr || p == nullptr || !p->fn)
    return Ret(cudaErrorInvalidValue);
  return cs::ForEachStep(exec, node, cudaGraphNodeTypeHost,
                         [&](GraphOp& s, size_t) {
                           s.fn = p->fn;
                           s.data = p->userData;
                         })
             ? cudaSuccess
             : Ret(cudaErrorInvalidValue);
}

}  // extern "C"
