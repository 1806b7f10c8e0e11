// client_stub/graph.cc - graphs' nodes, instantiation and the streams' capture state.
#include "client_stub/graph.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>

#include "client_stub/array.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"

namespace remora::client_stub {

void RetainUserObject(CUuserObject_st* o, unsigned n) {
  o->refs.fetch_add(n, std::memory_order_relaxed);
}

void ReleaseUserObject(CUuserObject_st* o, unsigned n) {
  if (o->refs.fetch_sub(n, std::memory_order_acq_rel) == n) {
    std::unique_ptr<CUuserObject_st> gone(o);
    if (gone->destroy) gone->destroy(gone->ptr);
  }
}

}  // namespace remora::client_stub

namespace remora::client_stub {

size_t ElementBytes(const cudaChannelFormatDesc& d) {
  const int bits = d.x + d.y + d.z + d.w;
  return bits > 0 && bits % 8 == 0 ? size_t(bits / 8) : 0;
}

// With a CUDA array on either side, positions on the array side and the extent's width count
// elements; on the linear side positions count bytes.
cudaError_t Linear3D(const cudaMemcpy3DParms& p, GraphOp* op) {
  const cudaArray* arr = p.srcArray ? p.srcArray : p.dstArray;
  const size_t elem = arr ? arr->elem : 1;
  auto side = [&](const cudaArray* a, cudaPitchedPtr ptr, cudaPos pos, size_t* slice) {
    if (a) {
      *slice = a->Slice();
      return static_cast<char*>(a->dptr) + pos.z * a->Slice() + pos.y * a->pitch + pos.x * elem;
    }
    *slice = ptr.pitch * ptr.ysize;
    return static_cast<char*>(ptr.ptr) + pos.z * *slice + pos.y * ptr.pitch + pos.x;
  };
  size_t sslice = 0, dslice = 0;
  op->src = side(p.srcArray, p.srcPtr, p.srcPos, &sslice);
  op->dst = side(p.dstArray, p.dstPtr, p.dstPos, &dslice);
  if (p.srcArray && p.dstArray && p.srcArray->elem != p.dstArray->elem)
    return cudaErrorInvalidValue;
  const size_t spitch_a = p.srcArray ? p.srcArray->pitch : p.srcPtr.pitch;
  const size_t dpitch_a = p.dstArray ? p.dstArray->pitch : p.dstPtr.pitch;
  op->width = p.extent.width * elem;
  op->height = p.extent.height ? p.extent.height : 1;
  op->depth = p.extent.depth ? p.extent.depth : 1;
  op->spitch = op->height > 1 || op->depth > 1 ? spitch_a : op->width;
  op->dpitch = op->height > 1 || op->depth > 1 ? dpitch_a : op->width;
  op->sslice = sslice;
  op->dslice = dslice;
  op->kind = p.kind;
  return cudaSuccess;
}

GraphOp LinearCopyOp(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  GraphOp op;
  op.type = cudaGraphNodeTypeMemcpy;
  op.dst = dst;
  op.src = src;
  op.width = op.dpitch = op.spitch = n;
  op.kind = kind;
  return op;
}

cudaError_t AddNode(cudaGraph_t g, const cudaGraphNode_t* deps, size_t ndeps, GraphOp op,
                    cudaGraphNode_t* out) {
  if (g == nullptr || (ndeps > 0 && deps == nullptr)) return cudaErrorInvalidValue;
  auto node = std::make_unique<CUgraphNode_st>();
  node->graph = g;
  node->op = std::move(op);
  for (size_t i = 0; i < ndeps; ++i) {
    if (deps[i] == nullptr || deps[i]->graph != g) return cudaErrorInvalidValue;
    if (std::find(node->deps.begin(), node->deps.end(), deps[i]) == node->deps.end())
      node->deps.push_back(deps[i]);
  }
  if (out) *out = node.get();
  g->nodes.push_back(std::move(node));
  return cudaSuccess;
}

std::unique_ptr<CUgraph_st> CloneGraph(const CUgraph_st& g) {
  auto copy = std::make_unique<CUgraph_st>();
  std::unordered_map<const CUgraphNode_st*, CUgraphNode_st*> to;
  for (const auto& n : g.nodes) {
    auto c = std::make_unique<CUgraphNode_st>();
    c->graph = copy.get();
    c->op = n->op;
    c->cloned_from = n.get();
    c->allocation = n->allocation;
    if (n->child) c->child = CloneGraph(*n->child);
    for (const auto& body : n->bodies) {
      c->bodies.push_back(CloneGraph(*body));
      c->body_handles.push_back(c->bodies.back().get());
    }
    to[n.get()] = c.get();
    copy->nodes.push_back(std::move(c));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const CUgraphNode_st* d : g.nodes[i]->deps) copy->nodes[i]->deps.push_back(to[d]);
  copy->conditionals = g.conditionals;
  return copy;
}

cudaError_t Instantiate(const CUgraph_st& g, CUgraphExec_st* exec) {
  // Kahn's order: a node once every dependency has run, in the order nodes were added.
  std::unordered_map<const CUgraphNode_st*, size_t> waiting;
  std::unordered_map<const CUgraphNode_st*, std::vector<const CUgraphNode_st*>> after;
  for (const auto& n : g.nodes) {
    waiting[n.get()] = n->deps.size();
    for (const CUgraphNode_st* d : n->deps) after[d].push_back(n.get());
  }
  std::vector<const CUgraphNode_st*> ready;
  for (const auto& n : g.nodes)
    if (n->deps.empty()) ready.push_back(n.get());
  for (auto& [o, n] : g.user_objects) {
    RetainUserObject(o, n);
    exec->user_objects[o] += n;
  }
  exec->conditionals.insert(exec->conditionals.end(), g.conditionals.begin(), g.conditionals.end());
  size_t done = 0;
  for (size_t i = 0; i < ready.size(); ++i) {
    const CUgraphNode_st* n = ready[i];
    ++done;
    if (n->allocation) exec->allocations.push_back(n->allocation);
    if (n->op.type == cudaGraphNodeTypeMemFree) exec->frees.push_back(n->op.dst);
    if (n->child) {
      CUgraphExec_st inner;
      if (cudaError_t e = Instantiate(*n->child, &inner)) return e;
      for (GraphOp& op : inner.steps) {
        exec->steps.push_back(std::move(op));
        exec->origin.push_back(n);
      }
      for (auto& a : inner.allocations) exec->allocations.push_back(std::move(a));
      exec->frees.insert(exec->frees.end(), inner.frees.begin(), inner.frees.end());
      for (auto& w : inner.conditionals) exec->conditionals.push_back(std::move(w));
    } else if (n->op.type == cudaGraphNodeTypeConditional) {
      // Its bodies run as executables of their own, when and as often as its value says.
      GraphOp op = n->op;
      for (const auto& body : n->bodies) {
        auto inner = std::make_shared<CUgraphExec_st>();
        if (cudaError_t e = Instantiate(*body, inner.get())) return e;
        // NVIDIA's graphs take no memory nodes in a conditional body either.
        if (!inner->allocations.empty() || !inner->frees.empty()) return cudaErrorInvalidValue;
        exec->conditionals.insert(exec->conditionals.end(), inner->conditionals.begin(),
                                  inner->conditionals.end());
        op.bodies.push_back(std::move(inner));
      }
      exec->steps.push_back(std::move(op));
      exec->origin.push_back(n);
    } else if (n->op.type != cudaGraphNodeTypeEmpty && n->op.type != cudaGraphNodeTypeMemAlloc &&
               n->op.type != cudaGraphNodeTypeMemFree) {
      exec->steps.push_back(n->op);
      exec->origin.push_back(n);
    }
    for (const CUgraphNode_st* m : after[n])
      if (--waiting[m] == 0) ready.push_back(m);
  }
  exec->enabled.assign(exec->steps.size(), 1);
  return done == g.nodes.size() ? cudaSuccess : cudaErrorInvalidValue;  // a cycle
}

// ---- stream capture ----------------------------------------------------------------------

namespace {

struct Capture {
  unsigned long long id = 0;
  uint64_t origin = 0;                // the stream that began it
  std::unique_ptr<CUgraph_st> owned;  // the new graph; none when capturing into the caller's
  CUgraph_st* graph = nullptr;
  bool invalid = false;
};

struct Joined {
  std::shared_ptr<Capture> capture;
  std::vector<cudaGraphNode_t> deps;  // what the stream's next operation runs after
};

struct Registry {
  std::mutex mu;
  std::unordered_map<uint64_t, Joined> streams;    // by StreamId
  std::unordered_map<cudaEvent_t, Joined> events;  // recorded during a capture
  std::atomic<int> active{0};                      // streams capturing
  unsigned long long next_id = 1;
};

Registry& Reg() {
  static NoDestructor<Registry> r;
  return *r;
}

thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;

}  // namespace

bool AnyCapture() {
  return Reg().active.load(std::memory_order_relaxed) != 0;
}

cudaError_t BeginCapture(cudaStream_t s, cudaStreamCaptureMode, cudaGraph_t into,
                         const cudaGraphNode_t* deps, size_t ndeps) {
  const uint64_t id = StreamId(s);
  if (id == 0) return cudaErrorStreamCaptureUnsupported;  // the legacy default stream
  if (ndeps > 0 && (deps == nullptr || into == nullptr)) return cudaErrorInvalidValue;
  for (size_t i = 0; i < ndeps; ++i)
    if (deps[i] == nullptr || deps[i]->graph != into) return cudaErrorInvalidValue;
  Registry& r = Reg();
  std::lock_guard lock(r.mu);
  if (r.streams.count(id)) return cudaErrorIllegalState;
  auto c = std::make_shared<Capture>();
  c->id = r.next_id++;
  c->origin = id;
  if (into == nullptr) c->owned = std::make_unique<CUgraph_st>();
  c->graph = into ? into : c->owned.get();
  r.streams[id] = Joined{std::move(c), std::vector<cudaGraphNode_t>(deps, deps + ndeps)};
  r.active.fetch_add(1, std::memory_order_relaxed);
  return cudaSuccess;
}

cudaError_t EndCapture(cudaStream_t s, cudaGraph_t* graph) {
  if (graph) *graph = nullptr;
  const uint64_t id = StreamId(s);
  Registry& r = Reg();
  std::lock_guard lock(r.mu);
  auto it = r.streams.find(id);
  if (it == r.streams.end() || it->second.capture->origin != id) return cudaErrorIllegalState;
  std::shared_ptr<Capture> c = it->second.capture;
  // A capture into the caller's graph (cudaStreamBeginCaptureToGraph) may end without asking
  // for it back, as the public graphConditionalNodes sample does; a new graph must be taken.
  if (graph == nullptr && c->owned) return cudaErrorInvalidValue;
  for (auto j = r.streams.begin(); j != r.streams.end();) {
    if (j->second.capture == c) {
      j = r.streams.erase(j);
      r.active.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++j;
    }
  }
  std::erase_if(r.events, [&](const auto& e) { return e.second.capture == c; });
  if (c->invalid) return cudaErrorStreamCaptureInvalidated;
  if (graph)
    *graph = c->owned ? c->owned.release() : c->graph;  // cudaGraphDestroy deletes a new one
  return cudaSuccess;
}

cudaError_t CaptureInfo(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                        cudaGraph_t* graph, const cudaGraphNode_t** deps, size_t* ndeps) {
  Registry& r = Reg();
  std::lock_guard lock(r.mu);
  auto it = r.streams.find(StreamId(s));
  if (it == r.streams.end()) {
    if (status) *status = cudaStreamCaptureStatusNone;
    if (graph) *graph = nullptr;
    if (deps) *deps = nullptr;
    if (ndeps) *ndeps = 0;
    return cudaSuccess;
  }
  const Joined& j = it->second;
  if (status)
    *status =
        j.capture->invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  if (id) *id = j.capture->id;
  if (graph) *graph = j.capture->graph;
  if (deps) *deps = j.deps.data();
  if (ndeps) *ndeps = j.deps.size();
  return cudaSuccess;
}

std::optional<cudaError_t> CaptureOp(cudaStream_t s, GraphOp op) {
  Registry& r = Reg();
  if (r.active.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::lock_guard lock(r.mu);
  auto it = r.streams.find(StreamId(s));
  if (it == r.streams.end()) return std::nullopt;
  Joined& j = it->second;
  if (j.capture->invalid) return cudaErrorStreamCaptureInvalidated;
  cudaGraphNode_t node = nullptr;
  if (cudaError_t e = AddNode(j.capture->graph, j.deps.data(), j.deps.size(), std::move(op), &node))
    return e;
  j.deps.assign(1, node);
  return cudaSuccess;
}

std::optional<cudaError_t> CaptureEventRecord(cudaEvent_t e, cudaStream_t s) {
  Registry& r = Reg();
  // With no capture active, no event stands for a capture (EndCapture forgets them).
  if (r.active.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::lock_guard lock(r.mu);
  auto it = r.streams.find(StreamId(s));
  if (it == r.streams.end()) {
    r.events.erase(e);  // recorded outside any capture again
    return std::nullopt;
  }
  if (it->second.capture->invalid) return cudaErrorStreamCaptureInvalidated;
  r.events[e] = it->second;
  return cudaSuccess;
}

std::optional<cudaError_t> CaptureEventWait(cudaStream_t s, cudaEvent_t e) {
  Registry& r = Reg();
  if (r.active.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::lock_guard lock(r.mu);
  auto ev = r.events.find(e);
  if (ev == r.events.end()) return std::nullopt;
  const uint64_t id = StreamId(s);
  if (id == 0) return cudaErrorStreamCaptureImplicit;
  auto it = r.streams.find(id);
  if (it == r.streams.end()) {  // the stream joins the capture, after the event's work
    r.streams[id] = ev->second;
    r.active.fetch_add(1, std::memory_order_relaxed);
    return cudaSuccess;
  }
  if (it->second.capture != ev->second.capture) {
    it->second.capture->invalid = true;  // two captures cannot be merged
    return cudaErrorStreamCaptureIsolation;
  }
  for (cudaGraphNode_t d : ev->second.deps)
    if (std::find(it->second.deps.begin(), it->second.deps.end(), d) == it->second.deps.end())
      it->second.deps.push_back(d);
  return cudaSuccess;
}

cudaError_t UpdateCaptureDependencies(cudaStream_t s, const cudaGraphNode_t* deps, size_t n,
                                      bool set) {
  if (n > 0 && deps == nullptr) return cudaErrorInvalidValue;
  Registry& r = Reg();
  std::lock_guard lock(r.mu);
  auto it = r.streams.find(StreamId(s));
  if (it == r.streams.end()) return cudaErrorIllegalState;
  Joined& j = it->second;
  for (size_t i = 0; i < n; ++i)
    if (deps[i] == nullptr || deps[i]->graph != j.capture->graph) return cudaErrorInvalidValue;
  if (set) j.deps.clear();
  for (size_t i = 0; i < n; ++i)
    if (std::find(j.deps.begin(), j.deps.end(), deps[i]) == j.deps.end()) j.deps.push_back(deps[i]);
  return cudaSuccess;
}

std::optional<cudaError_t> RefuseWhileCapturing(cudaStream_t s) {
  Registry& r = Reg();
  if (r.active.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::lock_guard lock(r.mu);
  auto it = r.streams.find(StreamId(s));
  if (it == r.streams.end()) return std::nullopt;
  it->second.capture->invalid = true;
  return cudaErrorStreamCaptureUnsupported;
}

cudaStreamCaptureMode ExchangeCaptureMode(cudaStreamCaptureMode mode) {
  std::swap(mode, t_mode);
  return mode;
}

}  // namespace remora::client_stub
