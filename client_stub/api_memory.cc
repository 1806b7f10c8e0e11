// client_stub/api_memory.cc - device and host memory, copies, memsets, __device__ symbols.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>

#include "client_stub/api.h"
#include "client_stub/connection.h"
#include "client_stub/errors.h"
#include "client_stub/graph.h"
#include "client_stub/graph_memory.h"
#include "client_stub/kernels.h"
#include "client_stub/memcpy.h"
#include "client_stub/mirror.h"
#include "client_stub/state.h"

using remora::CallId;
using remora::client_stub::Connection;
using remora::client_stub::Copy;
using remora::client_stub::Fill;
using remora::client_stub::Ret;
using remora::client_stub::St;
namespace v1 = remora::v1;
namespace cs = remora::client_stub;

namespace {

constexpr unsigned kHostAllocFlags =
    cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
constexpr unsigned kHostRegisterFlags = cudaHostRegisterPortable | cudaHostRegisterMapped |
                                        cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;

cudaError_t AllocHost(void** ptr, size_t size, unsigned flags) {
  if (!ptr) return Ret(cudaErrorInvalidValue);
  *ptr = nullptr;
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return Ret(e);
  bool mapped = flags & cudaHostAllocMapped;
  // Without a device-mapped arena kernels reach page-locked memory through the mirror
  // (mirror.h): a remote session's at addresses the device reserves, mapped memory at once.
  if (!c.zero_copy() && size > 0) {
    if (c.arena() == nullptr) {
      cudaError_t e = cs::Mirrors::Get().AllocatePinned(size, flags, ptr);
      if (e != cudaErrorNotSupported) return Ret(e);
    }
    if (mapped) return Ret(cs::Mirrors::Get().Allocate(size, ptr, flags));
  }
  *ptr = St().host.Allocate(size, flags, mapped);
  return *ptr ? cudaSuccess : Ret(cudaErrorMemoryAllocation);
}

// Validates a managed range for cudaMemAdvise/cudaMemPrefetchAsync/cudaStreamAttachMemAsync.
cudaError_t CheckManaged(const void* p, size_t count) {
  return St().host.IsManagedRange(p, count) ? cudaSuccess : cudaErrorInvalidValue;
}

// The device address of [symbol + offset, +count), checked against the variable's size.
cudaError_t SymbolRange(const void* symbol, size_t count, size_t offset, uint64_t* dptr) {
  remora::Result<cs::Variable*> v = cs::ResolveSymbol(symbol);
  if (!v.ok()) return static_cast<cudaError_t>(v.status().code());
  if (offset > (*v)->size || count > (*v)->size - offset) return cudaErrorInvalidValue;
  *dptr = (*v)->dptr + offset;
  return cudaSuccess;
}

void* AsPtr(uint64_t a) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(a));
}

cudaError_t ToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                     cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault)
    return Ret(cudaErrorInvalidMemcpyDirection);
  uint64_t dptr = 0;
  if (cudaError_t e = SymbolRange(symbol, count, offset, &dptr)) return Ret(e);
  return Ret(Copy(AsPtr(dptr), src, count, kind, stream, async));
}

cudaError_t FromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                       cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault)
    return Ret(cudaErrorInvalidMemcpyDirection);
  uint64_t dptr = 0;
  if (cudaError_t e = SymbolRange(symbol, count, offset, &dptr)) return Ret(e);
  return Ret(Copy(dst, AsPtr(dptr), count, kind, stream, async));
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (!devPtr) return Ret(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (size == 0) return cudaSuccess;
  v1::MallocRequest req;
  req.set_size(size);
  v1::MallocReply rep;
  cudaError_t e = Connection::Get().Call(CallId::kMalloc, req, &rep);
  if (rep.dptr() != 0) {
    St().device_ranges.Add(rep.dptr(), size);
    *devPtr = AsPtr(rep.dptr());
  }
  return Ret(e);
}

// Managed memory lives in the arena heap, which the server maps at the same
// address and registers device-mapped: host and kernels use one pointer, and it
// is coherent at synchronisation points (no concurrentManagedAccess). Remote
// sessions, or an arena mapped elsewhere, get it mirrored (mirror.h): device
// memory and host pages at one address, made to agree at the same points.
cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (!devPtr) return Ret(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (size == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
    return Ret(cudaErrorInvalidValue);
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return Ret(e);
  if (!c.zero_copy()) return Ret(cs::Mirrors::Get().Allocate(size, devPtr));
  *devPtr = St().host.AllocateManaged(size);
  return *devPtr ? cudaSuccess : Ret(cudaErrorMemoryAllocation);
}

// The advice is recorded (cudaMemRangeGetAttribute reports it) and changes nothing else: the
// memory is device-mapped host memory that never migrates.
cudaError_t cudaMemAdvise(const void* devPtr, size_t count, enum cudaMemoryAdvise advice,
                          struct cudaMemLocation location) {
  if (advice < cudaMemAdviseSetReadMostly || advice > cudaMemAdviseUnsetAccessedBy)
    return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckManaged(devPtr, count)) return Ret(e);
  const bool read_mostly = advice == cudaMemAdviseSetReadMostly;
  if (advice == cudaMemAdviseSetReadMostly || advice == cudaMemAdviseUnsetReadMostly) {
    St().host.Advise(devPtr, count,
                     [&](cs::ManagedAdvice::Attrs& a) { a.read_mostly = read_mostly; });
    return cudaSuccess;
  }
  if (cudaError_t e = cs::ManagedAdvice::Check(location)) return Ret(e);
  const cs::ManagedAdvice::Location at = cs::ManagedAdvice::Of(location);
  St().host.Advise(devPtr, count, [&](cs::ManagedAdvice::Attrs& a) {
    auto& by = a.accessed_by;
    const auto found = std::find(by.begin(), by.end(), at);
    if (advice == cudaMemAdviseSetPreferredLocation) {
      a.preferred = at;
    } else if (advice == cudaMemAdviseUnsetPreferredLocation) {
      a.preferred = {};
    } else if (advice == cudaMemAdviseSetAccessedBy) {
      if (found == by.end()) by.push_back(at);
    } else if (found != by.end()) {
      by.erase(found);
    }
  });
  return cudaSuccess;
}

// Nothing moves (see cudaMemAdvise); the location is recorded as the range's last prefetch.
cudaError_t cudaMemPrefetchAsync(const void* devPtr, size_t count, struct cudaMemLocation location,
                                 unsigned int flags, cudaStream_t) {
  if (flags != 0) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckManaged(devPtr, count)) return Ret(e);
  if (cudaError_t e = cs::ManagedAdvice::Check(location)) return Ret(e);
  St().host.Advise(devPtr, count,
                   [at = cs::ManagedAdvice::Of(location)](cs::ManagedAdvice::Attrs& a) {
                     a.last_prefetch = at;
                   });
  return cudaSuccess;
}

cudaError_t cudaMemPrefetchAsync_ptsz(const void* devPtr, size_t count,
                                      struct cudaMemLocation location, unsigned int flags,
                                      cudaStream_t stream) {
  return cudaMemPrefetchAsync(devPtr, count, location, flags, cs::PerThread(stream));
}

cudaError_t cudaStreamAttachMemAsync(cudaStream_t, void* devPtr, size_t length,
                                     unsigned int flags) {
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
    return Ret(cudaErrorInvalidValue);
  return Ret(CheckManaged(devPtr, length));
}

cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void* devPtr, size_t length,
                                          unsigned int flags) {
  return cudaStreamAttachMemAsync(cs::PerThread(stream), devPtr, length, flags);
}

// One device: a peer copy is a device-to-device copy on device 0.
cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  if (dstDevice != 0 || srcDevice != 0) return Ret(cudaErrorInvalidDevice);
  return Ret(Copy(dst, src, count, cudaMemcpyDeviceToDevice, nullptr, false));
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                size_t count, cudaStream_t stream) {
  if (dstDevice != 0 || srcDevice != 0) return Ret(cudaErrorInvalidDevice);
  return Ret(Copy(dst, src, count, cudaMemcpyDeviceToDevice, stream, true));
}

// Rows are padded to kPitchAlign bytes.
cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  constexpr size_t kPitchAlign = 512;
  if (!devPtr || !pitch) return Ret(cudaErrorInvalidValue);
  if (width > SIZE_MAX - kPitchAlign) return Ret(cudaErrorMemoryAllocation);
  size_t p = (width + kPitchAlign - 1) / kPitchAlign * kPitchAlign;
  if (height != 0 && p > SIZE_MAX / height) return Ret(cudaErrorMemoryAllocation);
  *pitch = p;
  return cudaMalloc(devPtr, p * height);
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind) {
  return Ret(cs::Copy2D(dst, dpitch, src, spitch, width, height, kind, nullptr, false));
}

cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream) {
  return Ret(cs::Copy2D(dst, dpitch, src, spitch, width, height, kind, stream, true));
}

cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, cs::PerThread(stream));
}

cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return Ret(cs::Fill2D(devPtr, pitch, value, width, height, nullptr, false));
}

cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  cs::NullIsPerThread scope;
  return cudaMemset2D(devPtr, pitch, value, width, height);
}

cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream) {
  return Ret(cs::Fill2D(devPtr, pitch, value, width, height, stream, true));
}

cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width,
                                   size_t height, cudaStream_t stream) {
  return cudaMemset2DAsync(devPtr, pitch, value, width, height, cs::PerThread(stream));
}

// ---- 3-D: slices of 2-D over linear memory (pitched pointers); CUDA arrays are refused ----

using cs::kSynchronous;

cudaError_t cudaMalloc3D(struct cudaPitchedPtr* p, struct cudaExtent extent) {
  if (!p) return Ret(cudaErrorInvalidValue);
  const size_t depth = extent.depth ? extent.depth : 1;
  if (extent.height != 0 && depth > SIZE_MAX / extent.height) return Ret(cudaErrorMemoryAllocation);
  size_t pitch = 0;
  void* ptr = nullptr;
  if (cudaError_t e = cudaMallocPitch(&ptr, &pitch, extent.width, extent.height * depth)) return e;
  *p = cudaPitchedPtr{ptr, pitch, extent.width, extent.height};
  return cudaSuccess;
}

cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* p, cudaStream_t stream) {
  if (!p) return Ret(cudaErrorInvalidValue);
  cs::GraphOp op;
  if (cs::Linear3D(*p, &op) != cudaSuccess)
    return Ret(static_cast<cudaError_t>(
        cs::Unsupported("cudaMemcpy3D", "CUDA arrays are not supported through Remora")));
  const bool async = stream != kSynchronous;
  return Ret(cs::Copy3D(op.dst, op.dpitch, op.dslice, op.src, op.spitch, op.sslice, op.width,
                        op.height, op.depth, op.kind, async ? stream : nullptr, async));
}

cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms* p) {
  return cudaMemcpy3DAsync(p, kSynchronous);
}

cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms* p) {
  cs::NullIsPerThread scope;
  return cudaMemcpy3D(p);
}

cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms* p, cudaStream_t stream) {
  return cudaMemcpy3DAsync(p, cs::PerThread(stream));
}

// One device: both sides must be device 0.
cudaError_t cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms* p, cudaStream_t stream) {
  if (!p) return Ret(cudaErrorInvalidValue);
  if (p->srcDevice != 0 || p->dstDevice != 0) return Ret(cudaErrorInvalidDevice);
  cudaMemcpy3DParms q{};
  q.srcArray = p->srcArray;
  q.srcPos = p->srcPos;
  q.srcPtr = p->srcPtr;
  q.dstArray = p->dstArray;
  q.dstPos = p->dstPos;
  q.dstPtr = p->dstPtr;
  q.extent = p->extent;
  q.kind = cudaMemcpyDeviceToDevice;
  return cudaMemcpy3DAsync(&q, stream);
}

cudaError_t cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms* p) {
  return cudaMemcpy3DPeerAsync(p, kSynchronous);
}

cudaError_t cudaMemcpy3DPeer_ptds(const struct cudaMemcpy3DPeerParms* p) {
  cs::NullIsPerThread scope;
  return cudaMemcpy3DPeer(p);
}

cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct cudaMemcpy3DPeerParms* p, cudaStream_t stream) {
  return cudaMemcpy3DPeerAsync(p, cs::PerThread(stream));
}

cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr p, int value, struct cudaExtent extent,
                              cudaStream_t stream) {
  const size_t slice = p.pitch * p.ysize, depth = extent.depth ? extent.depth : 1;
  const bool sync = stream == kSynchronous;
  for (size_t z = 0; z < depth; ++z) {
    const bool wait = sync && z + 1 == depth;  // stream-ordered slices: only the last waits
    if (cudaError_t e =
            cs::Fill2D(static_cast<char*>(p.ptr) + z * slice, p.pitch, value, extent.width,
                       extent.height ? extent.height : 1, sync ? nullptr : stream, !wait))
      return Ret(e);
  }
  return cudaSuccess;
}

cudaError_t cudaMemset3D(struct cudaPitchedPtr p, int value, struct cudaExtent extent) {
  return cudaMemset3DAsync(p, value, extent, kSynchronous);
}

cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr p, int value, struct cudaExtent extent) {
  cs::NullIsPerThread scope;
  return cudaMemset3D(p, value, extent);
}

cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr p, int value, struct cudaExtent extent,
                                   cudaStream_t stream) {
  return cudaMemset3DAsync(p, value, extent, cs::PerThread(stream));
}

cudaError_t cudaFree(void* devPtr) {
  if (!devPtr) {
    remora::client_stub::NoteRuntimeUse();  // cudaFree(0): the idiom that sets the context up
    return cudaSuccess;
  }
  // A graph's allocation: its memory goes back to the graph memory pool (graph_memory.h).
  if (auto r = remora::client_stub::FreeGraphAllocation(devPtr)) return Ret(*r);
  if (St().host.IsMirrored(devPtr)) return Ret(cs::Mirrors::Get().Free(devPtr));
  if (St().host.IsManaged(devPtr)) {
    // cudaFree synchronizes: no kernel may still be using the block.
    if (cudaError_t e = Connection::Get().Call(CallId::kDeviceSynchronize, v1::Empty()))
      return Ret(e);
    return St().host.FreeManaged(devPtr) ? cudaSuccess : Ret(cudaErrorInvalidValue);
  }
  auto p = reinterpret_cast<uintptr_t>(devPtr);
  v1::FreeRequest req;
  req.set_dptr(p);
  cudaError_t e = Connection::Get().Call(CallId::kFree, req);
  if (e == cudaSuccess) St().device_ranges.Remove(p);
  return Ret(e);
}

// IPC between the tenant's own processes: the handle is the server's token for the allocation
// (server/ipc.h); another process of the same tenant opens it at the same device address.
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  if (handle == nullptr || devPtr == nullptr) return Ret(cudaErrorInvalidValue);
  v1::FreeRequest req;
  req.set_dptr(reinterpret_cast<uintptr_t>(devPtr));
  v1::IpcHandle rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kIpcGetMemHandle, req, &rep)) return Ret(e);
  return cs::PutIpcToken(handle->reserved, rep.handle()) ? cudaSuccess : Ret(cudaErrorUnknown);
}

cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  if (devPtr == nullptr || (flags & ~unsigned{cudaIpcMemLazyEnablePeerAccess}) != 0)
    return Ret(cudaErrorInvalidValue);
  *devPtr = nullptr;
  v1::IpcHandle req;
  req.set_handle(handle.reserved, sizeof handle.reserved);
  v1::IpcOpened rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kIpcOpenMemHandle, req, &rep)) return Ret(e);
  St().device_ranges.Add(rep.base(), rep.size());
  *devPtr = AsPtr(rep.base());
  return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  if (devPtr == nullptr) return Ret(cudaErrorInvalidValue);
  v1::FreeRequest req;
  req.set_dptr(reinterpret_cast<uintptr_t>(devPtr));
  if (cudaError_t e = Connection::Get().Call(CallId::kIpcCloseMemHandle, req)) return Ret(e);
  St().device_ranges.Remove(reinterpret_cast<uintptr_t>(devPtr));
  return cudaSuccess;
}

// A host-side constructor: no array or texture is made (those are refused), but programs call
// it to describe one before they ask.
struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                   enum cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return AllocHost(ptr, size, cudaHostAllocDefault);
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  if (flags & ~kHostAllocFlags) return Ret(cudaErrorInvalidValue);
  return AllocHost(pHost, size, flags);
}

// The flags cudaHostAlloc was given (0 for cudaMallocHost), for any pointer
// inside the allocation; cudaErrorInvalidValue for any other memory.
cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
  if (!pFlags || !pHost) return Ret(cudaErrorInvalidValue);
  std::optional<unsigned> f = St().host.Flags(pHost);
  if (!f) return Ret(cudaErrorInvalidValue);
  *pFlags = *f;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  if (St().host.IsMirrored(ptr)) return Ret(cs::Mirrors::Get().Free(ptr));
  if (cudaError_t e = cs::Mirrors::Get().Detach(ptr)) return Ret(e);
  return St().host.Free(ptr) ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  if (!ptr || size == 0 || (flags & ~kHostRegisterFlags)) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = Connection::Get().Ensure()) return Ret(e);
  return St().host.Register(ptr, size) ? cudaSuccess : Ret(cudaErrorHostMemoryAlreadyRegistered);
}

cudaError_t cudaHostUnregister(void* ptr) {
  if (!ptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = cs::Mirrors::Get().Detach(ptr)) return Ret(e);
  return St().host.Unregister(ptr) ? cudaSuccess : Ret(cudaErrorHostMemoryNotRegistered);
}

// Pinned arena memory is device-mapped at its host address (unified addressing,
// as every cudaHostAlloc/cudaMallocHost block is on a GPU with UVA); cudaHostRegister'ed
// memory at the arena block its pages were moved onto (HostMemory::Register), another address,
// as cudaDevAttrCanUseHostPointerForRegisteredMem 0 says. Pageable memory and pinned memory
// outside the arena (heap exhausted) are not mapped: cudaErrorInvalidValue, as a GPU answers
// for unmapped memory. Registered memory that could not move cannot be mapped:
// cudaErrorNotSupported. Without a device-mapped arena (gRPC) pinned memory is mirrored
// (mirror.h): cudaHostAllocMapped memory at its own address, any other allocation or
// registration at another, given a device copy when this is first asked.
cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (!pDevice || !pHost || flags != 0) return Ret(cudaErrorInvalidValue);
  *pDevice = nullptr;
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return Ret(e);
  cs::HostMemory& host = St().host;
  if (!host.IsPinned(pHost)) return Ret(cudaErrorInvalidValue);
  if (!c.zero_copy()) {
    if (host.IsMirrored(pHost)) {
      if (!cs::Mirrors::Get().Reach(pHost)) return Ret(cudaErrorMemoryAllocation);
      *pDevice = pHost;
      return cudaSuccess;
    }
    cs::Mirrors& mirrors = cs::Mirrors::Get();
    uint64_t dev = mirrors.DeviceOf(pHost);
    if (dev == 0) {
      std::optional<std::pair<void*, size_t>> block = host.OwnBlock(pHost);
      if (!block) return Ret(cudaErrorInvalidValue);
      uint64_t base = 0;
      if (cudaError_t e = mirrors.Attach(block->first, block->second, &base)) return Ret(e);
      dev = base + (static_cast<std::byte*>(pHost) - static_cast<std::byte*>(block->first));
    }
    *pDevice = AsPtr(dev);
    return cudaSuccess;
  }
  void* alias = host.DeviceAlias(pHost);
  if (alias == nullptr && host.IsRegistered(pHost))
    return Ret(static_cast<cudaError_t>(cs::Unsupported(
        "cudaHostGetDevicePointer",
        "memory registered with cudaHostRegister is mapped only when it is private anonymous "
        "memory (malloc's, an anonymous mmap) on pages of its own and the shared arena has "
        "room; allocate it with cudaHostAlloc to map it")));
  if (alias == nullptr) return Ret(cudaErrorInvalidValue);
  *pDevice = alias;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return Ret(Copy(dst, src, count, kind, nullptr, false));
}

cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return Ret(Copy(dst, src, count, kind, stream, true));
}

cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream) {
  return cudaMemcpyAsync(dst, src, count, kind, cs::PerThread(stream));
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return Ret(Fill(devPtr, value, count, nullptr, false));
}

cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  cs::NullIsPerThread scope;
  return cudaMemset(devPtr, value, count);
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return Ret(Fill(devPtr, value, count, stream, true));
}

cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return cudaMemsetAsync(devPtr, value, count, cs::PerThread(stream));
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind) {
  return ToSymbol(symbol, src, count, offset, kind, nullptr, false);
}

cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count,
                                    size_t offset, enum cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return ToSymbol(symbol, src, count, offset, kind, nullptr, false);
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind) {
  return FromSymbol(dst, symbol, count, offset, kind, nullptr, false);
}

cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return FromSymbol(dst, symbol, count, offset, kind, nullptr, false);
}

cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                    size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return ToSymbol(symbol, src, count, offset, kind, stream, true);
}

cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count,
                                         size_t offset, enum cudaMemcpyKind kind,
                                         cudaStream_t stream) {
  return ToSymbol(symbol, src, count, offset, kind, cs::PerThread(stream), true);
}

cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream) {
  return FromSymbol(dst, symbol, count, offset, kind, stream, true);
}

cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count,
                                           size_t offset, enum cudaMemcpyKind kind,
                                           cudaStream_t stream) {
  return FromSymbol(dst, symbol, count, offset, kind, cs::PerThread(stream), true);
}

cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (!devPtr) return Ret(cudaErrorInvalidValue);
  uint64_t dptr = 0;
  if (cudaError_t e = SymbolRange(symbol, 0, 0, &dptr)) return Ret(e);
  *devPtr = AsPtr(dptr);
  return cudaSuccess;
}

cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  if (!size) return Ret(cudaErrorInvalidValue);
  remora::Result<cs::Variable*> v = cs::ResolveSymbol(symbol);
  if (!v.ok()) return Ret(static_cast<cudaError_t>(v.status().code()));
  *size = (*v)->size;
  return cudaSuccess;
}

}  // extern "C"
