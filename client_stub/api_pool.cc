// client_stub/api_pool.cc - stream-ordered allocation, the memory pool, stream attributes.
//
// The device has one memory pool, its default one. cudaMallocAsync allocates at once: the
// memory is usable by work on any stream from the call on, which is what stream order promises
// and more. cudaFreeAsync frees once the work queued before it on its stream has run (that
// stream is synchronized, then the block goes as cudaFree goes), so a free never races a
// kernel still reading the block. Pool attributes are recorded; its usage counters count what
// this process holds through the pool. Other pools (cudaMemPoolCreate) are refused, naming why.
//
// Stream attributes (the L2 access-policy window, the synchronization policy, ...) are checked
// as CUDA checks them and recorded per stream: tenants share the GPU's L2, so a window is the
// hint it is on any GPU, and never a reservation.
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "client_stub/api.h"
#include "client_stub/errors.h"
#include "client_stub/graph.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"

using remora::client_stub::CheckStream;
using remora::client_stub::Ret;
using remora::client_stub::St;
using remora::client_stub::StreamId;
namespace cs = remora::client_stub;

namespace {

struct Pool {
  std::mutex mu;
  uint64_t release_threshold = 0;
  int follow_event_dependencies = 1, allow_opportunistic = 1, allow_internal_dependencies = 1;
  std::map<uintptr_t, size_t> blocks;  // what cudaMallocAsync handed out and is not freed
  uint64_t used = 0, used_high = 0;
};

Pool& DefaultPool() {
  static remora::client_stub::NoDestructor<Pool> pool;  // static destructors may still call in
  return *pool;
}

cudaMemPool_t DefaultPoolHandle() {
  return reinterpret_cast<cudaMemPool_t>(&DefaultPool());
}

// The pool's recorded reuse flag `attr`, or null if `attr` is not one.
int* ReuseFlag(Pool& p, cudaMemPoolAttr attr) {
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
      return &p.follow_event_dependencies;
    case cudaMemPoolReuseAllowOpportunistic:
      return &p.allow_opportunistic;
    case cudaMemPoolReuseAllowInternalDependencies:
      return &p.allow_internal_dependencies;
    default:
      return nullptr;
  }
}

cudaError_t Allocate(void** ptr, size_t size, cudaStream_t stream) {
  if (ptr == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckStream(stream)) return Ret(e);
  if (cudaError_t e = cudaMalloc(ptr, size)) return e;
  if (*ptr == nullptr) return cudaSuccess;
  Pool& p = DefaultPool();
  std::lock_guard lock(p.mu);
  p.blocks[reinterpret_cast<uintptr_t>(*ptr)] = size;
  p.used += size;
  p.used_high = std::max(p.used_high, p.used);
  return cudaSuccess;
}

// The recorded attributes of each stream that has any: stream id -> attribute -> value.
struct StreamAttributes {
  std::mutex mu;
  std::map<uint64_t, std::map<int, cudaLaunchAttributeValue>> values;
};

StreamAttributes& Attributes() {
  static remora::client_stub::NoDestructor<StreamAttributes> a;
  return *a;
}

// The launch attributes a stream has (cudaStreamSetAttribute records them; priority is the
// stream's own, answered by cudaStreamGetPriority).
bool IsRecordedStreamAttr(cudaStreamAttrID attr) {
  return attr == cudaLaunchAttributeAccessPolicyWindow ||
         attr == cudaLaunchAttributeSynchronizationPolicy ||
         attr == cudaLaunchAttributeMemSyncDomainMap || attr == cudaLaunchAttributeMemSyncDomain;
}

cudaError_t CheckWindow(const cudaAccessPolicyWindow& w) {
  const auto prop_ok = [](cudaAccessProperty p) {
    return p == cudaAccessPropertyNormal || p == cudaAccessPropertyStreaming ||
           p == cudaAccessPropertyPersisting;
  };
  if (!(w.hitRatio >= 0.0f && w.hitRatio <= 1.0f) || !prop_ok(w.hitProp) ||
      (w.missProp != cudaAccessPropertyNormal && w.missProp != cudaAccessPropertyStreaming))
    return cudaErrorInvalidValue;
  if (w.num_bytes > static_cast<size_t>(St().prop.accessPolicyMaxWindowSize))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// While `s` captures: `add(graph, deps, ndeps, &node)` makes the node the call stands for, which
// then becomes the stream's dependency. nullopt when `s` does not capture.
template <class Add>
std::optional<cudaError_t> CaptureAs(cudaStream_t s, Add&& add) {
  cudaGraph_t g = nullptr;
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  if (remora::client_stub::CaptureInfo(s, &st, nullptr, &g, &deps, &n) != cudaSuccess ||
      st != cudaStreamCaptureStatusActive)
    return std::nullopt;
  cudaGraphNode_t node = nullptr;
  if (cudaError_t e = add(g, deps, n, &node)) return e;
  return Ret(remora::client_stub::UpdateCaptureDependencies(s, &node, 1, true));
}

}  // namespace

extern "C" {

// On a capturing stream the allocation becomes a graph's memory allocation node (made now,
// its address good for every launch) and the free a free node (api_graph_nodes.cc).
cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  if (remora::client_stub::AnyCapture() && devPtr) {
    auto r = CaptureAs(
        hStream, [&](cudaGraph_t g, const cudaGraphNode_t* deps, size_t n, cudaGraphNode_t* node) {
          cudaMemAllocNodeParams p{};
          p.bytesize = size;
          cudaError_t e = cudaGraphAddMemAllocNode(node, g, deps, n, &p);
          *devPtr = p.dptr;
          return e;
        });
    if (r) return *r;
  }
  return Allocate(devPtr, size, hStream);
}

cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  return Allocate(devPtr, size, cs::PerThread(hStream));
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream) {
  if (memPool != DefaultPoolHandle()) return Ret(cudaErrorInvalidValue);
  return Allocate(ptr, size, stream);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                         cudaStream_t stream) {
  return cudaMallocFromPoolAsync(ptr, size, memPool, cs::PerThread(stream));
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  if (cudaError_t e = CheckStream(hStream)) return Ret(e);
  if (devPtr == nullptr) return cudaSuccess;
  if (remora::client_stub::AnyCapture()) {
    auto r = CaptureAs(
        hStream, [&](cudaGraph_t g, const cudaGraphNode_t* deps, size_t n, cudaGraphNode_t* node) {
          return cudaGraphAddMemFreeNode(node, g, deps, n, devPtr);
        });
    if (r) return *r;
  }
  if (cudaError_t e = cudaStreamSynchronize(hStream)) return e;
  if (cudaError_t e = cudaFree(devPtr)) return e;
  Pool& p = DefaultPool();
  std::lock_guard lock(p.mu);
  if (auto it = p.blocks.find(reinterpret_cast<uintptr_t>(devPtr)); it != p.blocks.end()) {
    p.used -= it->second;
    p.blocks.erase(it);
  }
  return cudaSuccess;
}

cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  return cudaFreeAsync(devPtr, cs::PerThread(hStream));
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr) return Ret(cudaErrorInvalidValue);
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  *memPool = DefaultPoolHandle();
  return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  return cudaDeviceGetDefaultMemPool(memPool, device);
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  return memPool == DefaultPoolHandle() ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const struct cudaMemPoolProps* poolProps) {
  if (memPool == nullptr || poolProps == nullptr) return Ret(cudaErrorInvalidValue);
  return Ret(static_cast<cudaError_t>(remora::client_stub::Unsupported(
      "cudaMemPoolCreate",
      "only the device's default memory pool is available through Remora (the GPU is shared; "
      "its memory belongs to the server's one context)")));
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  // The default pool cannot be destroyed; no other exists.
  (void)memPool;
  return Ret(cudaErrorInvalidValue);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void* value) {
  if (memPool != DefaultPoolHandle() || value == nullptr) return Ret(cudaErrorInvalidValue);
  Pool& p = DefaultPool();
  std::lock_guard lock(p.mu);
  if (int* flag = ReuseFlag(p, attr)) {
    *flag = *static_cast<int*>(value);
    return cudaSuccess;
  }
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold:
      p.release_threshold = *static_cast<uint64_t*>(value);
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:  // only a reset to 0 is allowed
      if (*static_cast<uint64_t*>(value) != 0) return Ret(cudaErrorInvalidValue);
      p.used_high = p.used;
      return cudaSuccess;
    default:
      return Ret(cudaErrorInvalidValue);
  }
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void* value) {
  if (memPool != DefaultPoolHandle() || value == nullptr) return Ret(cudaErrorInvalidValue);
  Pool& p = DefaultPool();
  std::lock_guard lock(p.mu);
  if (const int* flag = ReuseFlag(p, attr)) {
    *static_cast<int*>(value) = *flag;
    return cudaSuccess;
  }
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold:
      *static_cast<uint64_t*>(value) = p.release_threshold;
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemCurrent:  // freed blocks go back at once: reserved = used
    case cudaMemPoolAttrUsedMemCurrent:
      *static_cast<uint64_t*>(value) = p.used;
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
      *static_cast<uint64_t*>(value) = p.used_high;
      return cudaSuccess;
    default:
      return Ret(cudaErrorInvalidValue);
  }
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  (void)minBytesToKeep;  // nothing is kept beyond what is in use
  return memPool == DefaultPoolHandle() ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc* descList,
                                 size_t count) {
  if (memPool != DefaultPoolHandle() || (count > 0 && descList == nullptr))
    return Ret(cudaErrorInvalidValue);
  for (size_t i = 0; i < count; ++i) {
    const cudaMemAccessDesc& d = descList[i];
    if (d.location.type != cudaMemLocationTypeDevice || d.location.id != 0)
      return Ret(cudaErrorInvalidDevice);
    if (d.flags != cudaMemAccessFlagsProtReadWrite)  // the owning device keeps read-write
      return Ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags* flags, cudaMemPool_t memPool,
                                 struct cudaMemLocation* location) {
  if (flags == nullptr || location == nullptr || memPool != DefaultPoolHandle())
    return Ret(cudaErrorInvalidValue);
  if (location->type != cudaMemLocationTypeDevice || location->id != 0)
    return Ret(cudaErrorInvalidDevice);
  *flags = cudaMemAccessFlagsProtReadWrite;
  return cudaSuccess;
}

cudaError_t cudaStreamSetAttribute(cudaStream_t hStream, cudaStreamAttrID attr,
                                   const cudaStreamAttrValue* value) {
  if (value == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckStream(hStream)) return Ret(e);
  if (!IsRecordedStreamAttr(attr)) return Ret(cudaErrorInvalidValue);
  if (attr == cudaLaunchAttributeAccessPolicyWindow) {
    if (cudaError_t e = CheckWindow(value->accessPolicyWindow)) return Ret(e);
  } else if (attr == cudaLaunchAttributeSynchronizationPolicy &&
             (value->syncPolicy < cudaSyncPolicyAuto ||
              value->syncPolicy > cudaSyncPolicyBlockingSync)) {
    return Ret(cudaErrorInvalidValue);
  }
  StreamAttributes& a = Attributes();
  std::lock_guard lock(a.mu);
  a.values[StreamId(hStream)][attr] = *value;
  return cudaSuccess;
}

cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t hStream, cudaStreamAttrID attr,
                                        const cudaStreamAttrValue* value) {
  return cudaStreamSetAttribute(cs::PerThread(hStream), attr, value);
}

cudaError_t cudaStreamGetAttribute(cudaStream_t hStream, cudaStreamAttrID attr,
                                   cudaStreamAttrValue* value_out) {
  if (value_out == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckStream(hStream)) return Ret(e);
  if (attr == cudaLaunchAttributePriority)
    return cudaStreamGetPriority(hStream, &value_out->priority);
  if (!IsRecordedStreamAttr(attr)) return Ret(cudaErrorInvalidValue);
  *value_out = cudaLaunchAttributeValue{};
  if (attr == cudaLaunchAttributeSynchronizationPolicy) value_out->syncPolicy = cudaSyncPolicyAuto;
  StreamAttributes& a = Attributes();
  std::lock_guard lock(a.mu);
  if (auto s = a.values.find(StreamId(hStream)); s != a.values.end())
    if (auto v = s->second.find(attr); v != s->second.end()) *value_out = v->second;
  return cudaSuccess;
}

cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t hStream, cudaStreamAttrID attr,
                                        cudaStreamAttrValue* value_out) {
  return cudaStreamGetAttribute(cs::PerThread(hStream), attr, value_out);
}

cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
  if (cudaError_t e = CheckStream(dst)) return Ret(e);
  if (cudaError_t e = CheckStream(src)) return Ret(e);
  StreamAttributes& a = Attributes();
  std::lock_guard lock(a.mu);
  auto s = a.values.find(StreamId(src));
  if (s == a.values.end())
    a.values.erase(StreamId(dst));
  else
    a.values[StreamId(dst)] = s->second;
  return cudaSuccess;
}

cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src) {
  return cudaStreamCopyAttributes(cs::PerThread(dst), cs::PerThread(src));
}

cudaError_t cudaCtxResetPersistingL2Cache(void) {
  return cudaSuccess;  // nothing is ever held persisting for a tenant
}

}  // extern "C"
