// client_stub/graph_memory.cc - see graph_memory.h.
#include "client_stub/graph_memory.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "client_stub/connection.h"
#include "client_stub/errors.h"
#include "client_stub/kernels.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"
#include "client_stub/vmm.h"

namespace remora::client_stub {

namespace {
struct Chunk;
}  // namespace

// An allocation node's address range. Its holders are the nodes and executables naming it, and
// the pool while a launch's allocation in it is not yet freed.
struct GraphRegion {
  GraphRegion(uint64_t va, uint64_t size, uint64_t epoch) : va(va), size(size), epoch(epoch) {}
  ~GraphRegion();
  GraphRegion(const GraphRegion&) = delete;
  GraphRegion& operator=(const GraphRegion&) = delete;
  const uint64_t va, size;  // size: a whole number of granules
  const uint64_t epoch;     // DeviceEpoch() it was reserved in
  const CUgraphNode_st* holder = nullptr;
  // Guarded by the pool's mutex.
  Chunk* mapped = nullptr;  // mapped under it now, in use or not
  bool live = false;        // allocated by a launch and not yet freed
};

namespace {

// Recorded after the work that last used a chunk; destroyed with the last chunk naming it.
struct Marker {
  cudaEvent_t event = nullptr;
  Marker() = default;
  Marker(const Marker&) = delete;
  Marker& operator=(const Marker&) = delete;
  ~Marker() {
    if (event) (void)cudaEventDestroy(event);
  }
};

// One physical allocation of the pool.
struct Chunk {
  uint64_t handle = 0, size = 0;
  bool busy = false;             // backs a live allocation
  uint64_t stream = 0;           // StreamId of the stream whose work last used it
  std::shared_ptr<Marker> done;  // after that work; null once it is known done
  std::vector<GraphRegion*> at;  // ranges it is mapped under
};

struct Pool {
  std::mutex mu;
  uint64_t epoch = 0;
  std::vector<std::unique_ptr<Chunk>> chunks;
  std::unordered_map<uint64_t, GraphRegion*> regions;               // by address
  std::unordered_map<uint64_t, std::shared_ptr<GraphRegion>> live;  // by address
  std::vector<std::shared_ptr<GraphRegion>> dropped;                // let go of under the lock
  uint64_t bytes = 0, high = 0;
};

Pool& P() {
  static NoDestructor<Pool> p;
  return *p;
}

// The pool, locked, and brought to the current context: a device reset took every chunk and
// mapping with it. Ranges let go of while it is held are destroyed after it is released (their
// destructor takes the lock).
class Locked {
 public:
  Locked() : lock_(P().mu) {
    Pool& p = P();
    const uint64_t now = DeviceEpoch();
    if (p.epoch == now) return;
    p.epoch = now;
    p.chunks.clear();
    p.bytes = 0;
    for (auto& [va, r] : p.regions) {
      r->mapped = nullptr;
      r->live = false;
    }
    for (auto& [va, r] : p.live) p.dropped.push_back(std::move(r));
    p.live.clear();
  }
  ~Locked() {
    std::vector<std::shared_ptr<GraphRegion>> dropped = std::move(P().dropped);
    P().dropped.clear();
    lock_.unlock();
  }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;
  Pool* operator->() { return &P(); }

 private:
  std::unique_lock<std::mutex> lock_;
};

// REQUIRES: the pool locked. May a launch on stream `sid` take `c`?
bool Reusable(Chunk& c, uint64_t sid) {
  if (c.busy) return false;
  if (!c.done || c.stream == sid) return true;
  if (cudaEventQuery(c.done->event) != cudaSuccess) return false;
  c.done.reset();
  return true;
}

// REQUIRES: the pool locked. Takes `r`'s mapping away.
cudaError_t Unmap(GraphRegion& r) {
  cudaError_t e = vmm::Unmap(r.va, r.size);
  std::erase(r.mapped->at, &r);
  r.mapped = nullptr;
  return e;
}

// REQUIRES: the pool locked. Gives `c` back to the device.
cudaError_t Destroy(Pool& p, const Chunk& c) {
  cudaError_t first = cudaSuccess;
  for (GraphRegion* r : std::vector<GraphRegion*>(c.at))
    if (cudaError_t e = Unmap(*r); e && !first) first = e;
  if (cudaError_t e = vmm::Release(c.handle); e && !first) first = e;
  p.bytes -= c.size;
  std::erase_if(p.chunks, [&](const auto& owned) { return owned.get() == &c; });
  return first;
}

// REQUIRES: the pool locked. Gives back every chunk no allocation uses and no work may.
cudaError_t Trim(Pool& p) {
  cudaError_t first = cudaSuccess;
  std::vector<Chunk*> idle;
  for (auto& c : p.chunks)
    if (!c->busy && (!c->done || cudaEventQuery(c->done->event) == cudaSuccess))
      idle.push_back(c.get());
  for (Chunk* c : idle)
    if (cudaError_t e = Destroy(p, *c); e && !first) first = e;
  return first;
}

// REQUIRES: the pool locked. A chunk of at least `size` bytes for a launch on `sid`: the one
// mapped under `r` if it may be taken, else the smallest that may, else a new one.
cudaError_t Take(Pool& p, GraphRegion& r, uint64_t sid, Chunk** out) {
  Chunk* pick = nullptr;
  if (r.mapped && r.mapped->size >= r.size && Reusable(*r.mapped, sid)) {
    pick = r.mapped;
  } else {
    for (auto& c : p.chunks)
      if (c->size >= r.size && (!pick || c->size < pick->size) && Reusable(*c, sid)) pick = c.get();
  }
  if (!pick) {
    uint64_t handle = 0;
    cudaError_t e = vmm::Create(r.size, &handle);
    if (e == cudaErrorMemoryAllocation && Trim(p) == cudaSuccess) e = vmm::Create(r.size, &handle);
    if (e) return e;
    pick = p.chunks.emplace_back(std::make_unique<Chunk>()).get();
    pick->handle = handle;
    pick->size = r.size;
    p.bytes += r.size;
    p.high = std::max(p.high, p.bytes);
  }
  if (r.mapped != pick) {
    if (r.mapped)
      if (cudaError_t e = Unmap(r)) return e;
    if (cudaError_t e = vmm::Map(r.va, r.size, 0, pick->handle)) return e;
    pick->at.push_back(&r);
    r.mapped = pick;
    if (cudaError_t e = vmm::SetAccess(r.va, r.size, true)) return e;
  }
  pick->busy = true;
  pick->stream = sid;
  pick->done.reset();
  *out = pick;
  return cudaSuccess;
}

// REQUIRES: the pool locked. The allocation in `r` is freed by work on `sid` ending at `done`
// (null: work already done).
void Free(Pool& p, GraphRegion& r, uint64_t sid, std::shared_ptr<Marker> done) {
  if (r.mapped) {
    r.mapped->busy = false;
    r.mapped->stream = sid;
    r.mapped->done = std::move(done);
  }
  r.live = false;
  if (auto it = p.live.find(r.va); it != p.live.end()) {
    p.dropped.push_back(std::move(it->second));
    p.live.erase(it);
  }
}

uint64_t RoundUp(uint64_t n, uint64_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

GraphRegion::~GraphRegion() {
  Pool& p = P();
  std::unique_lock lock(p.mu);
  // After a device reset a newer range may hold the address.
  if (auto it = p.regions.find(va); it != p.regions.end() && it->second == this)
    p.regions.erase(it);
  if (epoch != p.epoch) return;  // the device forgot it
  if (mapped) (void)Unmap(*this);
  lock.unlock();
  (void)vmm::FreeAddress(va, size);
}

cudaError_t GraphRegionFor(const CUgraph_st& g, const cudaGraphNode_t* deps, size_t n, size_t bytes,
                           std::shared_ptr<GraphRegion>* out) {
  uint64_t granule = 0;
  if (cudaError_t e = vmm::Granularity(&granule)) return e;
  if (granule == 0)
    return static_cast<cudaError_t>(Unsupported(
        "cudaGraphAddMemAllocNode", "graph memory on a device without virtual memory management"));
  const uint64_t size = RoundUp(bytes, granule);
  // An allocation of `g` whose free node the new node runs after, and whose address no later
  // allocation node took, has ended before the new one begins.
  std::vector<const CUgraphNode_st*> todo(deps, deps + n);
  std::unordered_set<const CUgraphNode_st*> seen;
  while (!todo.empty()) {
    const CUgraphNode_st* node = todo.back();
    todo.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    if (node->op.type == cudaGraphNodeTypeMemFree)
      for (const auto& a : g.nodes)
        if (a->allocation && a->op.dst == node->op.dst && a->allocation->holder == a.get() &&
            a->allocation->size >= size) {
          *out = a->allocation;
          return cudaSuccess;
        }
    todo.insert(todo.end(), node->deps.begin(), node->deps.end());
  }
  uint64_t va = 0;
  if (cudaError_t e = vmm::Reserve(size, 0, 0, &va)) return e;
  Locked p;
  auto r = std::make_shared<GraphRegion>(va, size, p->epoch);
  p->regions[va] = r.get();
  *out = std::move(r);
  return cudaSuccess;
}

uint64_t RegionAddress(const GraphRegion& r) {
  return r.va;
}

void NoteRegionHolder(GraphRegion& r, const CUgraphNode_st* node) {
  r.holder = node;
}

void SettleGraphMemory(CUgraphExec_st* exec) {
  std::vector<std::shared_ptr<GraphRegion>> once;
  exec->graph_frees.clear();
  for (const auto& r : exec->allocations) {
    if (std::find(once.begin(), once.end(), r) != once.end()) continue;
    const void* va = reinterpret_cast<void*>(r->va);
    const auto allocs = std::count(exec->allocations.begin(), exec->allocations.end(), r);
    const auto frees = std::count(exec->frees.begin(), exec->frees.end(), va);
    exec->graph_frees.push_back(frees >= allocs);
    std::erase(exec->frees, va);
    once.push_back(r);
  }
  exec->allocations = std::move(once);
}

cudaError_t BeginGraphMemory(const CUgraphExec_st& exec, cudaStream_t s) {
  if (exec.allocations.empty()) return cudaSuccess;
  const uint64_t sid = StreamId(s);
  Locked p;
  for (const auto& r : exec.allocations) {
    if (r->epoch != p->epoch) return cudaErrorInvalidValue;  // made before a device reset
    if (!r->live) continue;
    if (!(exec.flags & cudaGraphInstantiateFlagAutoFreeOnLaunch)) return cudaErrorInvalidValue;
    Free(P(), *r, sid, nullptr);  // in this stream's order, before the launch's work
  }
  for (size_t i = 0; i < exec.allocations.size(); ++i) {
    Chunk* c = nullptr;
    if (cudaError_t e = Take(P(), *exec.allocations[i], sid, &c)) {
      for (size_t j = 0; j < i; ++j) exec.allocations[j]->mapped->busy = false;
      return e;
    }
  }
  return cudaSuccess;
}

cudaError_t EndGraphMemory(const CUgraphExec_st& exec, cudaStream_t s) {
  const uint64_t sid = StreamId(s);
  std::shared_ptr<Marker> done;
  if (!exec.frees.empty() ||
      std::find(exec.graph_frees.begin(), exec.graph_frees.end(), 1) != exec.graph_frees.end()) {
    done = std::make_shared<Marker>();
    if (cudaError_t e = cudaEventCreateWithFlags(&done->event, cudaEventDisableTiming)) return e;
    if (cudaError_t e = cudaEventRecord(done->event, s)) return e;
  }
  Locked p;
  for (size_t i = 0; i < exec.allocations.size(); ++i) {
    GraphRegion& r = *exec.allocations[i];
    if (exec.graph_frees[i]) {
      Free(P(), r, sid, done);
    } else {
      r.live = true;
      p->live[r.va] = exec.allocations[i];
    }
  }
  for (void* va : exec.frees)
    if (auto it = p->live.find(reinterpret_cast<uint64_t>(va)); it != p->live.end())
      Free(P(), *it->second, sid, done);
  return cudaSuccess;
}

std::optional<cudaError_t> FreeGraphAllocation(void* dptr) {
  const uint64_t va = reinterpret_cast<uint64_t>(dptr);
  {
    Locked p;
    if (!p->regions.count(va)) return std::nullopt;
    if (!p->live.count(va)) return cudaErrorInvalidValue;
  }
  // cudaFree synchronizes: no work may still use the memory when another launch takes it.
  if (cudaError_t e = Connection::Get().Call(CallId::kDeviceSynchronize, v1::Empty())) return e;
  Locked p;
  if (auto it = p->live.find(va); it != p->live.end()) Free(P(), *it->second, 0, nullptr);
  return cudaSuccess;
}

cudaError_t TrimGraphMemory() {
  Locked p;
  return Trim(P());
}

uint64_t GraphMemoryInUse() {
  Locked p;
  return p->bytes;
}

uint64_t GraphMemoryHigh() {
  Locked p;
  return p->high;
}

void ResetGraphMemoryHigh() {
  Locked p;
  p->high = p->bytes;
}

}  // namespace remora::client_stub
