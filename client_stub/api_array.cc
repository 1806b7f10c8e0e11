// client_stub/api_array.cc - CUDA arrays (array.h): allocation, queries and copies to, from
// and between them. Offsets and widths are in bytes, as the runtime's array copies take them.
#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <memory>

#include <cuda.h>

#include "client_stub/api.h"
#include "client_stub/array.h"
#include "client_stub/errors.h"
#include "client_stub/memcpy.h"

namespace cs = remora::client_stub;
using cs::Ret;

namespace remora::client_stub {

unsigned DriverFormat(const cudaChannelFormatDesc& d) {
  if (d.f == cudaChannelFormatKindFloat) return d.x == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
  const unsigned shift = d.x == 8 ? 0 : d.x == 16 ? 1 : 2;
  return (d.f == cudaChannelFormatKindSigned ? CU_AD_FORMAT_SIGNED_INT8
                                             : CU_AD_FORMAT_UNSIGNED_INT8) +
         shift;
}

}  // namespace remora::client_stub

namespace {

// The array's byte at (w, h), if a `width` x `height` byte region from there fits.
cudaError_t At(const cudaArray* a, size_t w, size_t h, size_t width, size_t height, char** out) {
  if (a == nullptr) return cudaErrorInvalidResourceHandle;
  if (w > a->Row() || width > a->Row() - w || h > a->Rows() * a->Slices() ||
      height > a->Rows() * a->Slices() - h)
    return cudaErrorInvalidValue;
  *out = static_cast<char*>(a->dptr) + h * a->pitch + w;
  return cudaSuccess;
}

cudaError_t Copy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                   size_t height, cudaMemcpyKind kind, cudaStream_t s) {
  const bool async = s != cs::kSynchronous;
  return Ret(cs::Copy2D(dst, dpitch, src, spitch, width, height, kind, async ? s : nullptr, async));
}

// `height` rows of `width` bytes of an array from `at`, its pitch apart.
struct Block {
  char* at = nullptr;
  size_t width = 0, height = 0;
};

// What a 1-D copy of `count` bytes from byte `w` of row `h` covers as it runs on through the
// array's rows: the rest of the first row, whole rows, the start of the last (empty ones left
// out).
struct Blocks {
  std::array<Block, 3> b;
  int n = 0;
};

cudaError_t Through(const cudaArray* a, size_t w, size_t h, size_t count, Blocks* out) {
  if (a == nullptr) return cudaErrorInvalidResourceHandle;
  const size_t row = a->Row(), rows = a->Rows() * a->Slices();
  if (w > row || h > rows) return cudaErrorInvalidValue;
  const size_t start = h * row + w, total = row * rows;
  if (start > total || count > total - start) return cudaErrorInvalidValue;
  char* base = static_cast<char*>(a->dptr);
  auto add = [&](size_t x, size_t y, size_t width, size_t height) {
    if (width != 0 && height != 0) out->b[out->n++] = {base + y * a->pitch + x, width, height};
  };
  const size_t head = std::min(count, row - w);
  add(w, h, head, 1);
  count -= head;
  add(0, h + 1, row, count / row);
  add(0, h + 1 + count / row, count % row, 1);
  return cudaSuccess;
}

// A 1-D copy between an array's blocks (pitch `pitch`) and packed linear memory at `linear`.
cudaError_t CopyBlocks(const Blocks& blocks, size_t pitch, const void* linear, bool to_array,
                       cudaMemcpyKind kind, cudaStream_t s) {
  const char* at = static_cast<const char*>(linear);
  for (int i = 0; i < blocks.n; ++i) {
    const Block& b = blocks.b[i];
    char* lin = const_cast<char*>(at);
    cudaError_t e = to_array ? Copy2D(b.at, pitch, lin, b.width, b.width, b.height, kind, s)
                             : Copy2D(lin, b.width, b.at, pitch, b.width, b.height, kind, s);
    if (e != cudaSuccess) return e;
    at += b.width * b.height;
  }
  return cudaSuccess;
}

// A 1-D copy of `count` bytes from array to array, each from its (w, h) on through its rows.
cudaError_t CopyThrough(cudaArray_t dst, size_t wd, size_t hd, cudaArray_const_t src, size_t ws,
                        size_t hs, size_t count, cudaMemcpyKind kind) {
  Blocks to, from;
  if (cudaError_t e = Through(dst, wd, hd, count, &to)) return Ret(e);
  if (cudaError_t e = Through(src, ws, hs, count, &from)) return Ret(e);
  if (dst->Row() == src->Row() && wd == ws) {  // the rows line up: block for block
    for (int i = 0; i < to.n; ++i)
      if (cudaError_t e = Copy2D(to.b[i].at, dst->pitch, from.b[i].at, src->pitch, to.b[i].width,
                                 to.b[i].height, kind, cs::kSynchronous))
        return e;
    return cudaSuccess;
  }
  // Else in pieces that stay within a row on both sides.
  while (count > 0) {
    if (wd == dst->Row()) wd = 0, ++hd;
    if (ws == src->Row()) ws = 0, ++hs;
    const size_t n = std::min({count, dst->Row() - wd, src->Row() - ws});
    char* to_at = static_cast<char*>(dst->dptr) + hd * dst->pitch + wd;
    const char* from_at = static_cast<const char*>(src->dptr) + hs * src->pitch + ws;
    if (cudaError_t e = Copy2D(to_at, n, from_at, n, n, 1, kind, cs::kSynchronous)) return e;
    wd += n;
    ws += n;
    count -= n;
  }
  return cudaSuccess;
}

}  // namespace

// The 1-D array copies are deprecated in the runtime's API; they are still served.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

extern "C" {

cudaError_t cudaMalloc3DArray(cudaArray_t* array, const cudaChannelFormatDesc* desc,
                              cudaExtent extent, unsigned int flags) {
  if (array == nullptr || desc == nullptr || extent.width == 0) return Ret(cudaErrorInvalidValue);
  auto a = std::make_unique<cudaArray>();
  a->desc = *desc;
  a->extent = extent;
  a->flags = flags;
  a->elem = cs::ElementBytes(*desc);
  if (a->elem == 0) return Ret(cudaErrorInvalidChannelDescriptor);
  // Rows padded to the texture pitch alignment (array.h).
  int align = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&align, cudaDevAttrTexturePitchAlignment, 0)) return e;
  const size_t row = a->Row(), step = size_t(std::max(align, 1));
  if (row / a->elem != extent.width || row > SIZE_MAX - step) return Ret(cudaErrorMemoryAllocation);
  a->pitch = (row + step - 1) / step * step;
  if (a->Slice() / a->pitch != a->Rows() || a->Slice() > SIZE_MAX / a->Slices())
    return Ret(cudaErrorMemoryAllocation);
  if (cudaError_t e = cudaMalloc(&a->dptr, a->Slice() * a->Slices())) return e;
  *array = a.release();  // cudaFreeArray deletes it
  return cudaSuccess;
}

cudaError_t cudaMallocArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, size_t width,
                            size_t height, unsigned int flags) {
  return cudaMalloc3DArray(array, desc, cudaExtent{width, height, 0}, flags);
}

cudaError_t cudaFreeArray(cudaArray_t array) {
  if (array == nullptr) return cudaSuccess;
  std::unique_ptr<cudaArray> a(array);
  return cudaFree(a->dptr);
}

cudaError_t cudaArrayGetInfo(cudaChannelFormatDesc* desc, cudaExtent* extent, unsigned int* flags,
                             cudaArray_t array) {
  if (array == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  if (desc) *desc = array->desc;
  if (extent) *extent = array->extent;
  if (flags) *flags = array->flags;
  return cudaSuccess;
}

// What the array holds, and the allocation granularity of device memory.
cudaError_t cudaArrayGetMemoryRequirements(cudaArrayMemoryRequirements* req, cudaArray_t array,
                                           int device) {
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  if (req == nullptr) return Ret(cudaErrorInvalidValue);
  if (array == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  *req = {};
  req->size = array->Slice() * array->Slices();
  req->alignment = 512;
  return cudaSuccess;
}

cudaError_t cudaGetChannelDesc(cudaChannelFormatDesc* desc, cudaArray_const_t array) {
  if (desc == nullptr) return Ret(cudaErrorInvalidValue);
  if (array == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  *desc = array->desc;
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t w, size_t h, const void* src,
                                     size_t spitch, size_t width, size_t height,
                                     cudaMemcpyKind kind, cudaStream_t s) {
  char* to = nullptr;
  if (cudaError_t e = At(dst, w, h, width, height, &to)) return Ret(e);
  return Copy2D(to, dst->pitch, src, spitch, width, height, kind, s);
}

cudaError_t cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch, cudaArray_const_t src, size_t w,
                                       size_t h, size_t width, size_t height, cudaMemcpyKind kind,
                                       cudaStream_t s) {
  char* from = nullptr;
  if (cudaError_t e = At(src, w, h, width, height, &from)) return Ret(e);
  return Copy2D(dst, dpitch, from, src->pitch, width, height, kind, s);
}

cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wd, size_t hd, cudaArray_const_t src,
                                     size_t ws, size_t hs, size_t width, size_t height,
                                     cudaMemcpyKind kind) {
  char *to = nullptr, *from = nullptr;
  if (cudaError_t e = At(dst, wd, hd, width, height, &to)) return Ret(e);
  if (cudaError_t e = At(src, ws, hs, width, height, &from)) return Ret(e);
  return Copy2D(to, dst->pitch, from, src->pitch, width, height, kind, cs::kSynchronous);
}

cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t w, size_t h, const void* src, size_t spitch,
                                size_t width, size_t height, cudaMemcpyKind kind) {
  return cudaMemcpy2DToArrayAsync(dst, w, h, src, spitch, width, height, kind, cs::kSynchronous);
}

cudaError_t cudaMemcpy2DFromArray(void* dst, size_t dpitch, cudaArray_const_t src, size_t w,
                                  size_t h, size_t width, size_t height, cudaMemcpyKind kind) {
  return cudaMemcpy2DFromArrayAsync(dst, dpitch, src, w, h, width, height, kind, cs::kSynchronous);
}

cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t w, size_t h, const void* src,
                                   size_t count, cudaMemcpyKind kind, cudaStream_t s) {
  Blocks to;
  if (cudaError_t e = Through(dst, w, h, count, &to)) return Ret(e);
  return CopyBlocks(to, dst->pitch, src, true, kind, s);
}

cudaError_t cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src, size_t w, size_t h,
                                     size_t count, cudaMemcpyKind kind, cudaStream_t s) {
  Blocks from;
  if (cudaError_t e = Through(src, w, h, count, &from)) return Ret(e);
  return CopyBlocks(from, src->pitch, dst, false, kind, s);
}

cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t w, size_t h, const void* src, size_t count,
                              cudaMemcpyKind kind) {
  return cudaMemcpyToArrayAsync(dst, w, h, src, count, kind, cs::kSynchronous);
}

cudaError_t cudaMemcpyFromArray(void* dst, cudaArray_const_t src, size_t w, size_t h, size_t count,
                                cudaMemcpyKind kind) {
  return cudaMemcpyFromArrayAsync(dst, src, w, h, count, kind, cs::kSynchronous);
}

cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wd, size_t hd, cudaArray_const_t src,
                                   size_t ws, size_t hs, size_t count, cudaMemcpyKind kind) {
  return CopyThrough(dst, wd, hd, src, ws, hs, count, kind);
}

// The per-thread default stream twins: the null stream is the calling thread's own.
cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t w, size_t h, const void* src,
                                     size_t spitch, size_t width, size_t height,
                                     cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return cudaMemcpy2DToArray(dst, w, h, src, spitch, width, height, kind);
}
cudaError_t cudaMemcpy2DFromArray_ptds(void* dst, size_t dpitch, cudaArray_const_t src, size_t w,
                                       size_t h, size_t width, size_t height, cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return cudaMemcpy2DFromArray(dst, dpitch, src, w, h, width, height, kind);
}
cudaError_t cudaMemcpy2DArrayToArray_ptds(cudaArray_t dst, size_t wd, size_t hd,
                                          cudaArray_const_t src, size_t ws, size_t hs, size_t width,
                                          size_t height, cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return cudaMemcpy2DArrayToArray(dst, wd, hd, src, ws, hs, width, height, kind);
}
cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t w, size_t h, const void* src,
                                          size_t spitch, size_t width, size_t height,
                                          cudaMemcpyKind kind, cudaStream_t s) {
  return cudaMemcpy2DToArrayAsync(dst, w, h, src, spitch, width, height, kind, cs::PerThread(s));
}
cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void* dst, size_t dpitch, cudaArray_const_t src,
                                            size_t w, size_t h, size_t width, size_t height,
                                            cudaMemcpyKind kind, cudaStream_t s) {
  return cudaMemcpy2DFromArrayAsync(dst, dpitch, src, w, h, width, height, kind, cs::PerThread(s));
}
cudaError_t cudaMemcpyToArray_ptds(cudaArray_t dst, size_t w, size_t h, const void* src,
                                   size_t count, cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return cudaMemcpyToArray(dst, w, h, src, count, kind);
}
cudaError_t cudaMemcpyFromArray_ptds(void* dst, cudaArray_const_t src, size_t w, size_t h,
                                     size_t count, cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return cudaMemcpyFromArray(dst, src, w, h, count, kind);
}
cudaError_t cudaMemcpyArrayToArray_ptds(cudaArray_t dst, size_t wd, size_t hd,
                                        cudaArray_const_t src, size_t ws, size_t hs, size_t count,
                                        cudaMemcpyKind kind) {
  cs::NullIsPerThread scope;
  return cudaMemcpyArrayToArray(dst, wd, hd, src, ws, hs, count, kind);
}
cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t w, size_t h, const void* src,
                                        size_t count, cudaMemcpyKind kind, cudaStream_t s) {
  return cudaMemcpyToArrayAsync(dst, w, h, src, count, kind, cs::PerThread(s));
}
cudaError_t cudaMemcpyFromArrayAsync_ptsz(void* dst, cudaArray_const_t src, size_t w, size_t h,
                                          size_t count, cudaMemcpyKind kind, cudaStream_t s) {
  return cudaMemcpyFromArrayAsync(dst, src, w, h, count, kind, cs::PerThread(s));
}

}  // extern "C"
