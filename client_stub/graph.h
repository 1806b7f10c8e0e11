// client_stub/graph.h - CUDA graphs in the tenant: nodes recorded explicitly or by stream
// capture, and the capture state of streams. A graph runs as its nodes' work issued in a
// topological order on the launching stream (api_graph.cc), one valid schedule of the graph.
//
// The handle types are the toolkit's opaque ones (cudaGraph_t is CUgraph_st*, ...), completed
// here; the stub runtime and Remora's libcuda.so.1 hand out and take the same objects.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client_stub/launch_mode.h"

namespace remora::client_stub {

struct Kernel;

// A conditional node's value (cudaGraphConditionalHandleCreate): a 32-bit word of device memory,
// whose address is the handle, set by kernels (cudaGraphSetConditional) and read when the node
// runs. Freed when the last graph or executable holding it lets go.
struct ConditionalWord : std::enable_shared_from_this<ConditionalWord> {
  // Frees `dptr` at the end.
  ConditionalWord(void* dptr, unsigned dflt, bool assign);
  ~ConditionalWord();
  ConditionalWord(const ConditionalWord&) = delete;
  ConditionalWord& operator=(const ConditionalWord&) = delete;
  void* const dptr;
  const unsigned dflt;  // the value each launch starts with, when `assign`
  const bool assign;    // cudaGraphCondAssignDefault
};

// The live conditional handle `handle` names; null for none.
std::shared_ptr<ConditionalWord> FindConditional(cudaGraphConditionalHandle handle);

// What one node does when its graph runs.
struct GraphOp {
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  // Kernel: its parameters packed by the server's layout.
  Kernel* kernel = nullptr;
  dim3 grid, block;
  size_t shared = 0;
  std::string params;
  LaunchMode mode;
  // Memcpy (2-D over linear memory; height 1 for a plain copy) and memset (width in elements
  // of `elem` bytes, each `value`'s low bytes).
  void* dst = nullptr;
  const void* src = nullptr;
  size_t dpitch = 0, spitch = 0, width = 0, height = 1;
  size_t depth = 1, dslice = 0, sslice = 0;  // memcpy: slices of a 3-D copy
  cudaMemcpyKind kind = cudaMemcpyDefault;
  unsigned value = 0, elem = 1;
  // Host function.
  cudaHostFn_t fn = nullptr;
  void* data = nullptr;
  // Event record or wait.
  cudaEvent_t event = nullptr;
  // Conditional: its value, its kind, and (in an executable) its bodies, instantiated.
  std::shared_ptr<ConditionalWord> word;
  cudaGraphConditionalNodeType cond = cudaGraphCondTypeIf;
  std::vector<std::shared_ptr<CUgraphExec_st>> bodies;
};

// An allocation node's address range (graph_memory.h).
struct GraphRegion;

}  // namespace remora::client_stub

// A user object: a value with a destructor that graphs hold references to.
struct CUuserObject_st {
  std::atomic<unsigned> refs;
  void* ptr;
  cudaHostFn_t destroy;
};

struct CUgraphNode_st {
  CUgraph_st* graph = nullptr;
  remora::client_stub::GraphOp op;
  std::vector<CUgraphNode_st*> deps;            // nodes of the same graph this one runs after
  std::unique_ptr<CUgraph_st> child;            // cudaGraphNodeTypeGraph: a copy of the child graph
  const CUgraphNode_st* cloned_from = nullptr;  // the node this one is a clone of
  std::shared_ptr<remora::client_stub::GraphRegion> allocation;  // an allocation node's
  std::vector<void*> arg_ptrs;  // cudaGraphKernelNodeGetParams's kernelParams, into op.params
  std::map<int, cudaLaunchAttributeValue> attrs;  // kernel node attributes set
  // cudaGraphNodeTypeConditional: its body graphs, and the array of them handed out.
  std::vector<std::unique_ptr<CUgraph_st>> bodies;
  std::vector<CUgraph_st*> body_handles;
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
  std::map<CUuserObject_st*, unsigned> user_objects;  // references this graph holds
  // Conditional handles made for this graph; each launch of it resets those that ask.
  std::vector<std::shared_ptr<remora::client_stub::ConditionalWord>> conditionals;
  ~CUgraph_st();
};

struct CUgraphExec_st {
  std::vector<remora::client_stub::GraphOp> steps;    // in a topological order, children inlined
  std::vector<const CUgraphNode_st*> origin;          // the graph's node each step came from
  std::vector<char> enabled;                          // per step (cudaGraphNodeSetEnabled)
  std::map<CUuserObject_st*, unsigned> user_objects;  // taken from the graph at instantiation
  // Graph memory (graph_memory.h): its allocation nodes' ranges, children's included, and the
  // addresses its free nodes free; once settled, each range once, whether the graph frees it,
  // and the addresses of other graphs' allocations it frees.
  std::vector<std::shared_ptr<remora::client_stub::GraphRegion>> allocations;
  std::vector<void*> frees;
  std::vector<char> graph_frees;  // per range
  unsigned long long flags = 0;   // cudaGraphInstantiate's
  // The graph's conditional handles (children's included), reset at each launch that asks.
  std::vector<std::shared_ptr<remora::client_stub::ConditionalWord>> conditionals;
  ~CUgraphExec_st();
};

namespace remora::client_stub {

// A cudaMemcpy3DParms as a copy's fields of `op` (pointers at the positions, pitches and slice
// strides, extent in bytes), CUDA arrays (array.h) being packed device memory.
cudaError_t Linear3D(const cudaMemcpy3DParms& p, GraphOp* op);

// A copy of `n` bytes, as a node does it.
GraphOp LinearCopyOp(void* dst, const void* src, size_t n, cudaMemcpyKind kind);

// Applies `change(step, index)` to every step of `exec` that came from `node` (a node of the
// graph it was instantiated from) and has `type`; false if there is none.
template <class F>
bool ForEachStep(CUgraphExec_st* exec, const CUgraphNode_st* node, cudaGraphNodeType type,
                 F&& change);

// Adds a node doing `op` after `deps` (which must be nodes of `g`). Errors:
// cudaErrorInvalidValue for a null graph or a dependency not in it.
cudaError_t AddNode(cudaGraph_t g, const cudaGraphNode_t* deps, size_t ndeps, GraphOp op,
                    cudaGraphNode_t* out);
// A deep copy of `g`; each copied node knows the node it was cloned from.
std::unique_ptr<CUgraph_st> CloneGraph(const CUgraph_st& g);
// The steps of `g` in a topological order, child graphs inlined. cudaErrorInvalidValue if the
// dependencies have a cycle.
cudaError_t Instantiate(const CUgraph_st& g, CUgraphExec_st* exec);

// User objects: Retain adds `n` references; Release drops them and, at none, runs the
// destructor and deletes the object.
void RetainUserObject(CUuserObject_st* o, unsigned n);
void ReleaseUserObject(CUuserObject_st* o, unsigned n);

// ---- stream capture ----------------------------------------------------------------------

// True while any stream captures: the hot paths ask this before building a GraphOp.
bool AnyCapture();

// Begins capturing `s` into a new graph, or into `into` (the caller's) after `deps`. Errors:
// cudaErrorStreamCaptureUnsupported for the legacy default stream; cudaErrorIllegalState if
// `s` already captures.
cudaError_t BeginCapture(cudaStream_t s, cudaStreamCaptureMode mode, cudaGraph_t into = nullptr,
                         const cudaGraphNode_t* deps = nullptr, size_t ndeps = 0);
// Replaces (`set`) or extends the dependencies of the capturing stream `s`.
cudaError_t UpdateCaptureDependencies(cudaStream_t s, const cudaGraphNode_t* deps, size_t n,
                                      bool set);
// Ends the capture `s` began and hands out its graph (every stream that joined it stops
// capturing); `graph` may be null for a capture into the caller's graph, not for a new one
// (cudaErrorInvalidValue). cudaErrorIllegalState if `s` does not capture, or did not begin it;
// cudaErrorStreamCaptureInvalidated (and no graph) if an operation invalidated it.
cudaError_t EndCapture(cudaStream_t s, cudaGraph_t* graph);
// What cudaStreamGetCaptureInfo reports for `s`; any out pointer may be null.
cudaError_t CaptureInfo(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                        cudaGraph_t* graph, const cudaGraphNode_t** deps, size_t* ndeps);
// While `s` captures, `op` becomes a node after the stream's current dependencies and the
// stream's only dependency; the result is that of recording it. nullopt: `s` does not capture.
std::optional<cudaError_t> CaptureOp(cudaStream_t s, GraphOp op);
// Event record on a capturing stream: the event stands for the stream's dependencies (no
// node). Event wait on a stream by a captured event: the stream joins that capture. nullopt:
// no capture is involved.
std::optional<cudaError_t> CaptureEventRecord(cudaEvent_t e, cudaStream_t s);
std::optional<cudaError_t> CaptureEventWait(cudaStream_t s, cudaEvent_t e);
// An operation that cannot be captured was asked of `s`: when `s` captures, its capture is
// invalidated and cudaErrorStreamCaptureUnsupported returned; else nullopt.
std::optional<cudaError_t> RefuseWhileCapturing(cudaStream_t s);
// cudaThreadExchangeStreamCaptureMode's per-thread mode.
cudaStreamCaptureMode ExchangeCaptureMode(cudaStreamCaptureMode mode);

}  // namespace remora::client_stub

template <class F>
bool remora::client_stub::ForEachStep(CUgraphExec_st* exec, const CUgraphNode_st* node,
                                      cudaGraphNodeType type, F&& change) {
  bool found = false;
  for (size_t i = 0; i < exec->steps.size(); ++i) {
    if (exec->origin[i] != node || exec->steps[i].type != type) continue;
    change(exec->steps[i], i);
    found = true;
  }
  return found;
}

// Inline: the client core exports namespace remora only.
inline CUgraph_st::~CUgraph_st() {
  for (auto& [o, n] : user_objects) remora::client_stub::ReleaseUserObject(o, n);
}
inline CUgraphExec_st::~CUgraphExec_st() {
  for (auto& [o, n] : user_objects) remora::client_stub::ReleaseUserObject(o, n);
}
