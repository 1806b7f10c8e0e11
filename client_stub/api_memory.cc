// client_stub/api_memory.cc - device and host memory, copies, memsets, __device__ symbols.
#include <atomic>
#include <cstdint>
#include <cstdio>

#include "client_stub/api.h"
#include "client_stub/connection.h"
#include "client_stub/kernels.h"
#include "client_stub/memcpy.h"
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

cudaError_t AllocHost(void** ptr, size_t size) {
  if (!ptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = Connection::Get().Ensure()) return Ret(e);
  *ptr = St().host.Allocate(size);
  return *ptr ? cudaSuccess : Ret(cudaErrorMemoryAllocation);
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
  uint64_t dptr;
  if (cudaError_t e = SymbolRange(symbol, count, offset, &dptr)) return Ret(e);
  return Ret(Copy(AsPtr(dptr), src, count, kind, stream, async));
}

cudaError_t FromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                       cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault)
    return Ret(cudaErrorInvalidMemcpyDirection);
  uint64_t dptr;
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

// Managed (unified) memory cannot be shared with a remote GPU process: refused.
cudaError_t cudaMallocManaged(void** devPtr, size_t, unsigned int) {
  static std::atomic<bool> printed{false};
  if (!printed.exchange(true))
    std::fprintf(stderr, "remora: cudaMallocManaged is not supported (cudaErrorNotSupported)\n");
  if (devPtr) *devPtr = nullptr;
  return Ret(cudaErrorNotSupported);
}

// Rows are padded to kPitchAlign bytes.
cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  constexpr size_t kPitchAlign = 512;
  if (!devPtr || !pitch) return Ret(cudaErrorInvalidValue);
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
  return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream);
}

cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return Ret(cs::Fill2D(devPtr, pitch, value, width, height, nullptr, false));
}

cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return cudaMemset2D(devPtr, pitch, value, width, height);
}

cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream) {
  return Ret(cs::Fill2D(devPtr, pitch, value, width, height, stream, true));
}

cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width,
                                   size_t height, cudaStream_t stream) {
  return cudaMemset2DAsync(devPtr, pitch, value, width, height, stream);
}

cudaError_t cudaFree(void* devPtr) {
  if (!devPtr) return cudaSuccess;
  auto p = reinterpret_cast<uintptr_t>(devPtr);
  v1::FreeRequest req;
  req.set_dptr(p);
  cudaError_t e = Connection::Get().Call(CallId::kFree, req);
  if (e == cudaSuccess) St().device_ranges.Remove(p);
  return Ret(e);
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return AllocHost(ptr, size);
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  if (flags & ~kHostAllocFlags) return Ret(cudaErrorInvalidValue);
  return AllocHost(pHost, size);
}

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  return St().host.Free(ptr) ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  if (!ptr || size == 0 || (flags & ~kHostRegisterFlags)) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = Connection::Get().Ensure()) return Ret(e);
  return St().host.Register(ptr, size) ? cudaSuccess : Ret(cudaErrorHostMemoryAlreadyRegistered);
}

cudaError_t cudaHostUnregister(void* ptr) {
  if (!ptr) return Ret(cudaErrorInvalidValue);
  return St().host.Unregister(ptr) ? cudaSuccess : Ret(cudaErrorHostMemoryNotRegistered);
}

cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (!pDevice || !pHost || flags != 0) return Ret(cudaErrorInvalidValue);
  if (!St().host.IsPinned(pHost)) return Ret(cudaErrorInvalidValue);
  *pDevice = pHost;  // unified addressing
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return Ret(Copy(dst, src, count, kind, nullptr, false));
}

cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return Ret(Copy(dst, src, count, kind, stream, true));
}

cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream) {
  return cudaMemcpyAsync(dst, src, count, kind, stream);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return Ret(Fill(devPtr, value, count, nullptr, false));
}

cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return cudaMemset(devPtr, value, count);
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return Ret(Fill(devPtr, value, count, stream, true));
}

cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return cudaMemsetAsync(devPtr, value, count, stream);
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind) {
  return ToSymbol(symbol, src, count, offset, kind, nullptr, false);
}

cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count,
                                    size_t offset, enum cudaMemcpyKind kind) {
  return ToSymbol(symbol, src, count, offset, kind, nullptr, false);
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind) {
  return FromSymbol(dst, symbol, count, offset, kind, nullptr, false);
}

cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind) {
  return FromSymbol(dst, symbol, count, offset, kind, nullptr, false);
}

cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                    size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return ToSymbol(symbol, src, count, offset, kind, stream, true);
}

cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count,
                                         size_t offset, enum cudaMemcpyKind kind,
                                         cudaStream_t stream) {
  return ToSymbol(symbol, src, count, offset, kind, stream, true);
}

cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream) {
  return FromSymbol(dst, symbol, count, offset, kind, stream, true);
}

cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count,
                                           size_t offset, enum cudaMemcpyKind kind,
                                           cudaStream_t stream) {
  return FromSymbol(dst, symbol, count, offset, kind, stream, true);
}

cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (!devPtr) return Ret(cudaErrorInvalidValue);
  uint64_t dptr;
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
