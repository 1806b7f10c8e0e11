// client_stub/driver_array.cc - the driver API's CUDA arrays: the same objects as the stub
// runtime's (array.h), described by a format and a channel count instead of a channel
// descriptor.
#include "client_stub/array.h"
#include "client_stub/driver_internal.h"

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below
using remora::client_stub::DriverCallScope;
using remora::client_stub::DriverFormat;

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

// The channel descriptor of `n` channels of `f`; false for what cuArray3DCreate refuses.
bool Desc(CUarray_format f, unsigned n, cudaChannelFormatDesc* desc) {
  int bits = 0;
  cudaChannelFormatKind kind;
  if (n == 0 || n > 4 || !Channel(f, &bits, &kind)) return false;
  *desc = {bits, n > 1 ? bits : 0, n > 2 ? bits : 0, n > 3 ? bits : 0, kind};
  return true;
}

}  // namespace

extern "C" {

CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* width, CUarray_format f, unsigned n,
                                            CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  cudaChannelFormatDesc desc;
  if (!Desc(f, n, &desc)) return CUDA_ERROR_INVALID_VALUE;
  return ToCu(cudaDeviceGetTexture1DLinearMaxWidth(width, &desc, dev));
}

CUresult cuArray3DCreate(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (out == nullptr || d == nullptr || d->NumChannels == 0 || d->NumChannels > 4)
    return CUDA_ERROR_INVALID_VALUE;
  cudaChannelFormatDesc desc;
  if (!Desc(d->Format, d->NumChannels, &desc)) return CUDA_ERROR_NOT_SUPPORTED;
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
  *d = {a.extent.width, a.extent.height, a.extent.depth, CUarray_format(DriverFormat(a.desc)),
        channels,       a.flags};
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

// ---- Texture and surface objects: the stub runtime's, in the driver's descriptors ----------

namespace {

cudaChannelFormatDesc DescOf(CUarray_format f, unsigned channels) {
  int bits = 0;
  cudaChannelFormatKind kind = cudaChannelFormatKindNone;
  if (!Channel(f, &bits, &kind) || channels == 0 || channels > 4) return {0, 0, 0, 0, kind};
  return {bits, channels > 1 ? bits : 0, channels > 2 ? bits : 0, channels > 3 ? bits : 0, kind};
}

unsigned ChannelCount(const cudaChannelFormatDesc& d) {
  return unsigned(d.x != 0) + unsigned(d.y != 0) + unsigned(d.z != 0) + unsigned(d.w != 0);
}

CUresult ToRuntime(const CUDA_RESOURCE_DESC* in, cudaResourceDesc* out) {
  if (in == nullptr || in->flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *out = {};
  switch (in->resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      out->resType = cudaResourceTypeArray;
      out->res.array.array = reinterpret_cast<cudaArray_t>(in->res.array.hArray);
      return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      out->resType = cudaResourceTypeMipmappedArray;
      return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_LINEAR: {
      const auto& l = in->res.linear;
      out->resType = cudaResourceTypeLinear;
      out->res.linear = {reinterpret_cast<void*>(l.devPtr), DescOf(l.format, l.numChannels),
                         l.sizeInBytes};
      return CUDA_SUCCESS;
    }
    case CU_RESOURCE_TYPE_PITCH2D: {
      const auto& p = in->res.pitch2D;
      out->resType = cudaResourceTypePitch2D;
      out->res.pitch2D = {reinterpret_cast<void*>(p.devPtr), DescOf(p.format, p.numChannels),
                          p.width, p.height, p.pitchInBytes};
      return CUDA_SUCCESS;
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

void ToDriver(const cudaResourceDesc& in, CUDA_RESOURCE_DESC* out) {
  *out = {};
  switch (in.resType) {
    case cudaResourceTypeArray:
      out->resType = CU_RESOURCE_TYPE_ARRAY;
      out->res.array.hArray = reinterpret_cast<CUarray>(in.res.array.array);
      break;
    case cudaResourceTypeLinear: {
      const auto& l = in.res.linear;
      out->resType = CU_RESOURCE_TYPE_LINEAR;
      out->res.linear = {reinterpret_cast<CUdeviceptr>(l.devPtr),
                         CUarray_format(DriverFormat(l.desc)), ChannelCount(l.desc), l.sizeInBytes};
      break;
    }
    case cudaResourceTypePitch2D: {
      const auto& p = in.res.pitch2D;
      out->resType = CU_RESOURCE_TYPE_PITCH2D;
      out->res.pitch2D = {reinterpret_cast<CUdeviceptr>(p.devPtr),
                          CUarray_format(DriverFormat(p.desc)),
                          ChannelCount(p.desc),
                          p.width,
                          p.height,
                          p.pitchInBytes};
      break;
    }
    default:
      out->resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
      break;
  }
}

cudaTextureDesc ToRuntime(const CUDA_TEXTURE_DESC& in) {
  cudaTextureDesc t{};
  for (int d = 0; d < 3; ++d) t.addressMode[d] = cudaTextureAddressMode(in.addressMode[d]);
  t.filterMode = cudaTextureFilterMode(in.filterMode);
  t.readMode =
      (in.flags & CU_TRSF_READ_AS_INTEGER) ? cudaReadModeElementType : cudaReadModeNormalizedFloat;
  t.sRGB = (in.flags & CU_TRSF_SRGB) != 0;
  for (int c = 0; c < 4; ++c) t.borderColor[c] = in.borderColor[c];
  t.normalizedCoords = (in.flags & CU_TRSF_NORMALIZED_COORDINATES) != 0;
  t.maxAnisotropy = in.maxAnisotropy;
  t.mipmapFilterMode = cudaTextureFilterMode(in.mipmapFilterMode);
  t.mipmapLevelBias = in.mipmapLevelBias;
  t.minMipmapLevelClamp = in.minMipmapLevelClamp;
  t.maxMipmapLevelClamp = in.maxMipmapLevelClamp;
  t.disableTrilinearOptimization = (in.flags & CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION) != 0;
  t.seamlessCubemap = (in.flags & CU_TRSF_SEAMLESS_CUBEMAP) != 0;
  return t;
}

CUDA_TEXTURE_DESC ToDriver(const cudaTextureDesc& in) {
  CUDA_TEXTURE_DESC t{};
  for (int d = 0; d < 3; ++d) t.addressMode[d] = CUaddress_mode(in.addressMode[d]);
  t.filterMode = CUfilter_mode(in.filterMode);
  if (in.readMode == cudaReadModeElementType) t.flags |= CU_TRSF_READ_AS_INTEGER;
  if (in.sRGB) t.flags |= CU_TRSF_SRGB;
  if (in.normalizedCoords) t.flags |= CU_TRSF_NORMALIZED_COORDINATES;
  if (in.disableTrilinearOptimization) t.flags |= CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
  if (in.seamlessCubemap) t.flags |= CU_TRSF_SEAMLESS_CUBEMAP;
  t.maxAnisotropy = in.maxAnisotropy;
  t.mipmapFilterMode = CUfilter_mode(in.mipmapFilterMode);
  t.mipmapLevelBias = in.mipmapLevelBias;
  t.minMipmapLevelClamp = in.minMipmapLevelClamp;
  t.maxMipmapLevelClamp = in.maxMipmapLevelClamp;
  for (int c = 0; c < 4; ++c) t.borderColor[c] = in.borderColor[c];
  return t;
}

}  // namespace

extern "C" {

CUresult cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                           const CUDA_TEXTURE_DESC* pTexDesc,
                           const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  return ForwardInContext([&] {
    cudaResourceDesc res;
    if (pTexDesc == nullptr || ToRuntime(pResDesc, &res) != CUDA_SUCCESS)
      return cudaErrorInvalidValue;
    const cudaTextureDesc tex = ToRuntime(*pTexDesc);
    return cudaCreateTextureObject(pTexObject, &res, &tex,
                                   reinterpret_cast<const cudaResourceViewDesc*>(pResViewDesc));
  });
}

CUresult cuTexObjectDestroy(CUtexObject texObject) {
  return ForwardInContext([&] { return cudaDestroyTextureObject(texObject); });
}

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject) {
  return ForwardInContext([&] {
    cudaResourceDesc res;
    if (pResDesc == nullptr) return cudaErrorInvalidValue;
    if (cudaError_t e = cudaGetTextureObjectResourceDesc(&res, texObject)) return e;
    ToDriver(res, pResDesc);
    return cudaSuccess;
  });
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc, CUtexObject texObject) {
  return ForwardInContext([&] {
    cudaTextureDesc tex;
    if (pTexDesc == nullptr) return cudaErrorInvalidValue;
    if (cudaError_t e = cudaGetTextureObjectTextureDesc(&tex, texObject)) return e;
    *pTexDesc = ToDriver(tex);
    return cudaSuccess;
  });
}

CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC* pResViewDesc,
                                        CUtexObject texObject) {
  return ForwardInContext([&] {
    return cudaGetTextureObjectResourceViewDesc(
        reinterpret_cast<cudaResourceViewDesc*>(pResViewDesc), texObject);
  });
}

CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc) {
  return ForwardInContext([&] {
    cudaResourceDesc res;
    if (ToRuntime(pResDesc, &res) != CUDA_SUCCESS) return cudaErrorInvalidValue;
    return cudaCreateSurfaceObject(pSurfObject, &res);
  });
}

CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  return ForwardInContext([&] { return cudaDestroySurfaceObject(surfObject); });
}

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUsurfObject surfObject) {
  return ForwardInContext([&] {
    cudaResourceDesc res;
    if (pResDesc == nullptr) return cudaErrorInvalidValue;
    if (cudaError_t e = cudaGetSurfaceObjectResourceDesc(&res, surfObject)) return e;
    ToDriver(res, pResDesc);
    return cudaSuccess;
  });
}

}  // extern "C"
