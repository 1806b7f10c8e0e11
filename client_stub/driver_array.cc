// client_stub/driver_array.cc - the driver API's CUDA arrays: the same objects as the stub
// runtime's (array.h), described by a format and a channel count instead of a channel
// descriptor.
#include "client_stub/array.h"
#include "client_stub/driver_internal.h"

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below
using remora::client_stub::DriverCallScope;

namespace {

// Bits and kind of one channel of `f`; false for formats that are not plain channels.
bool Channel(CUarray_format f, int* bits, cudaChannelFormatKind* kind) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_UNSIGNED_INT32:
      *kind = cudaChannelFormatKindUnsigned;
      *bits = 8 << (f - CU_AD_FORMAT_UNSIGNED_INT8);
      return true;
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT32:
      *kind = cudaChannelFormatKindSigned;
      *bits = 8 << (f - CU_AD_FORMAT_SIGNED_INT8);
      return true;
    case CU_AD_FORMAT_HALF:
      *kind = cudaChannelFormatKindFloat;
      *bits = 16;
      return true;
    case CU_AD_FORMAT_FLOAT:
      *kind = cudaChannelFormatKindFloat;
      *bits = 32;
      return true;
    default:
      return false;
  }
}

CUarray_format Format(const cudaChannelFormatDesc& d) {
  if (d.f == cudaChannelFormatKindFloat) return d.x == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
  const int shift = d.x == 8 ? 0 : d.x == 16 ? 1 : 2;
  return CUarray_format(
      (d.f == cudaChannelFormatKindSigned ? CU_AD_FORMAT_SIGNED_INT8 : CU_AD_FORMAT_UNSIGNED_INT8) +
      shift);
}

}  // namespace

extern "C" {

CUresult cuArray3DCreate(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (out == nullptr || d == nullptr || d->NumChannels == 0 || d->NumChannels > 4)
    return CUDA_ERROR_INVALID_VALUE;
  int bits = 0;
  cudaChannelFormatKind kind;
  if (!Channel(d->Format, &bits, &kind)) return CUDA_ERROR_NOT_SUPPORTED;
  cudaChannelFormatDesc desc{bits, d->NumChannels > 1 ? bits : 0, d->NumChannels > 2 ? bits : 0,
                             d->NumChannels > 3 ? bits : 0, kind};
  cudaArray_t a = nullptr;
  CUresult r =
      ToCu(cudaMalloc3DArray(&a, &desc, cudaExtent{d->Width, d->Height, d->Depth}, d->Flags));
  if (r == CUDA_SUCCESS) *out = reinterpret_cast<CUarray>(a);
  return r;
}

CUresult cuArrayCreate(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* d) {
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d3{d->Width, d->Height, 0, d->Format, d->NumChannels, 0};
  return cuArray3DCreate(out, &d3);
}

CUresult cuArrayDestroy(CUarray a) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return ToCu(cudaFreeArray(reinterpret_cast<cudaArray_t>(a)));
}

CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR* d, CUarray array) {
  DriverCallScope scope;
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const auto& a = *reinterpret_cast<const cudaArray*>(array);
  const unsigned channels = 1 + (a.desc.y > 0) + (a.desc.z > 0) + (a.desc.w > 0);
  *d = {a.extent.width, a.extent.height, a.extent.depth, Format(a.desc), channels, a.flags};
  return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR* d, CUarray array) {
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d3;
  if (CUresult r = cuArray3DGetDescriptor(&d3, array)) return r;
  *d = {d3.Width, d3.Height, d3.Format, d3.NumChannels};
  return CUDA_SUCCESS;
}

}  // extern "C"
