// emu/driver_memory.cc - entry points: allocation, copies, memsets, host registration.
//
// Copies are range-checked against live allocations when called and run in
// stream order. As on a GPU: copies from pageable host memory snapshot the
// source at the call, copies to pageable host memory return only when done,
// registered (pinned) host memory is read or written when the stream gets there;
// device-to-device copies and memsets never block the host.
#include <cstring>
#include <vector>

#include "emu/driver.h"

namespace {

using remora::emu::Context;
using remora::emu::Marker;
using remora::emu::Work;

constexpr unsigned kHostRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;

CUresult CheckRange(Context* ctx, CUdeviceptr p, size_t bytes) {
  return ctx->memory().Contains(p, bytes) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Queues `run` on `stream` as device work; with `wait`, returns once it ran.
CUresult Submit(Context* ctx, CUstream stream, std::function<void()> run, bool wait) {
  Work w;
  w.run = std::move(run);
  w.device_time = true;
  std::shared_ptr<Marker> done;
  EMU_RETURN_IF_ERROR(ctx->Enqueue(stream, std::move(w), &done));
  return wait ? ctx->WaitFor(done) : CUDA_SUCCESS;
}

CUresult CopyHtoD(CUdeviceptr dst, const void* src, size_t n, CUstream stream, bool sync) {
  EMU_CURRENT_CONTEXT(ctx);
  if (n == 0) return CUDA_SUCCESS;
  if (src == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(CheckRange(ctx, dst, n));
  auto* d = reinterpret_cast<void*>(dst);
  if (ctx->IsPinned(src, n)) {
    return Submit(
        ctx, stream, [d, src, n] { std::memcpy(d, src, n); }, sync);
  }
  auto staged = std::make_shared<std::vector<std::byte>>(n);
  std::memcpy(staged->data(), src, n);
  return Submit(
      ctx, stream, [d, staged] { std::memcpy(d, staged->data(), staged->size()); }, sync);
}

CUresult CopyDtoH(void* dst, CUdeviceptr src, size_t n, CUstream stream, bool sync) {
  EMU_CURRENT_CONTEXT(ctx);
  if (n == 0) return CUDA_SUCCESS;
  if (dst == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(CheckRange(ctx, src, n));
  const auto* s = reinterpret_cast<const void*>(src);
  const bool wait = sync || !ctx->IsPinned(dst, n);
  return Submit(
      ctx, stream, [dst, s, n] { std::memcpy(dst, s, n); }, wait);
}

CUresult CopyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
  EMU_CURRENT_CONTEXT(ctx);
  if (n == 0) return CUDA_SUCCESS;
  EMU_RETURN_IF_ERROR(CheckRange(ctx, dst, n));
  EMU_RETURN_IF_ERROR(CheckRange(ctx, src, n));
  auto* d = reinterpret_cast<void*>(dst);
  const auto* s = reinterpret_cast<const void*>(src);
  return Submit(
      ctx, stream, [d, s, n] { std::memmove(d, s, n); }, false);
}

CUresult Set8(CUdeviceptr dst, unsigned char v, size_t n, CUstream stream) {
  EMU_CURRENT_CONTEXT(ctx);
  if (n == 0) return CUDA_SUCCESS;
  EMU_RETURN_IF_ERROR(CheckRange(ctx, dst, n));
  auto* d = reinterpret_cast<void*>(dst);
  return Submit(
      ctx, stream, [d, v, n] { std::memset(d, v, n); }, false);
}

CUresult Set32(CUdeviceptr dst, unsigned int v, size_t n, CUstream stream) {
  EMU_CURRENT_CONTEXT(ctx);
  if (n == 0) return CUDA_SUCCESS;
  if (dst % sizeof(uint32_t) != 0 || n > SIZE_MAX / sizeof(uint32_t)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  EMU_RETURN_IF_ERROR(CheckRange(ctx, dst, n * sizeof(uint32_t)));
  auto* d = reinterpret_cast<uint32_t*>(dst);
  return Submit(
      ctx, stream, [d, v, n] { std::fill(d, d + n, v); }, false);
}

}  // namespace

using namespace remora::emu;  // NOLINT: entry points are global by ABI

REMORA_EMU_API CUresult CUDAAPI cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  EMU_CURRENT_CONTEXT(ctx);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->memory().Allocate(bytesize, dptr);
}

REMORA_EMU_API CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->FreeMemory(dptr);
}

// Stream-ordered allocation: memory comes from the device at once (usable by
// any stream after the caller orders its work after `hStream`); a free takes
// effect when `hStream` reaches it and waits for nothing else. As in CUDA's
// pools, memory freed earlier on `hStream` serves a later allocation on it:
// when the device is short, the allocation waits for the stream's frees.
REMORA_EMU_API CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize,
                                                CUstream hStream) {
  EMU_CURRENT_CONTEXT(ctx);
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(Submit(
      ctx, hStream, [] {}, false));  // checks the stream
  CUresult r = ctx->memory().Allocate(bytesize, dptr, /*pooled=*/true);
  if (r != CUDA_ERROR_OUT_OF_MEMORY) return r;
  EMU_RETURN_IF_ERROR(ctx->SyncStream(hStream));
  return ctx->memory().Allocate(bytesize, dptr, /*pooled=*/true);
}

REMORA_EMU_API CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  EMU_CURRENT_CONTEXT(ctx);
  uint64_t base = 0, size = 0;
  if (!ctx->memory().LookupAllocation(dptr, &base, &size) || base != dptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  DeviceMemory* mem = &ctx->memory();
  return Submit(
      ctx, hStream, [mem, dptr] { (void)mem->Free(dptr); }, false);
}

REMORA_EMU_API CUresult CUDAAPI cuMemGetInfo(size_t* free, size_t* total) {
  EMU_CURRENT_CONTEXT(ctx);
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const DeviceMemory& mem = ctx->memory();
  *total = mem.total();
  *free = mem.total() - mem.used();
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize,
                                                     CUdeviceptr dptr) {
  EMU_CURRENT_CONTEXT(ctx);
  uint64_t base = 0, size = 0;
  if (!ctx->memory().LookupAllocation(dptr, &base, &size)) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = base;
  if (psize != nullptr) *psize = size;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void* srcHost,
                                             size_t ByteCount) {
  return CopyHtoD(dstDevice, srcHost, ByteCount, nullptr, true);
}

REMORA_EMU_API CUresult CUDAAPI cuMemcpyDtoH(void* dstHost, CUdeviceptr srcDevice,
                                             size_t ByteCount) {
  return CopyDtoH(dstHost, srcDevice, ByteCount, nullptr, true);
}

REMORA_EMU_API CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                             size_t ByteCount) {
  return CopyDtoD(dstDevice, srcDevice, ByteCount, nullptr);
}

REMORA_EMU_API CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void* srcHost,
                                                  size_t ByteCount, CUstream hStream) {
  return CopyHtoD(dstDevice, srcHost, ByteCount, hStream, false);
}

REMORA_EMU_API CUresult CUDAAPI cuMemcpyDtoHAsync(void* dstHost, CUdeviceptr srcDevice,
                                                  size_t ByteCount, CUstream hStream) {
  return CopyDtoH(dstHost, srcDevice, ByteCount, hStream, false);
}

REMORA_EMU_API CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                                  size_t ByteCount, CUstream hStream) {
  return CopyDtoD(dstDevice, srcDevice, ByteCount, hStream);
}

REMORA_EMU_API CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return Set8(dstDevice, uc, N, nullptr);
}

REMORA_EMU_API CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                                CUstream hStream) {
  return Set8(dstDevice, uc, N, hStream);
}

REMORA_EMU_API CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return Set32(dstDevice, ui, N, nullptr);
}

REMORA_EMU_API CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                                 CUstream hStream) {
  return Set32(dstDevice, ui, N, hStream);
}

REMORA_EMU_API CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  EMU_CURRENT_CONTEXT(ctx);
  if (p == nullptr || bytesize == 0 || (Flags & ~kHostRegisterFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return ctx->RegisterHost(p, bytesize, Flags);
}

// Unified addressing: the device pointer of mapped host memory is its host address.
REMORA_EMU_API CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p,
                                                          unsigned int Flags) {
  EMU_CURRENT_CONTEXT(ctx);
  if (pdptr == nullptr || p == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return ctx->HostDevicePointer(p, pdptr);
}

REMORA_EMU_API CUresult CUDAAPI cuMemHostUnregister(void* p) {
  EMU_CURRENT_CONTEXT(ctx);
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->UnregisterHost(p);
}
