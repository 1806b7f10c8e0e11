// client_stub/api_texture.cc - texture and surface objects: described here, made by the server
// over the tenant's device memory (calls.def TextureCreate), kept here for the queries of their
// descriptors. A CUDA array (array.h) is device memory in rows padded to the texture pitch
// alignment, so an object over an array is a pitched 2-D object over that memory, which a GPU
// accepts; one over a 3-D, layered or cubemap array is those images' slices, which only the
// emulated GPU takes (a GPU's driver wants its own arrays: the server refuses them there by
// name); mipmapped arrays, resource views and sRGB reads are refused by name.
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <cuda.h>

#include "client_stub/api.h"
#include "client_stub/array.h"
#include "client_stub/connection.h"
#include "client_stub/errors.h"

namespace cs = remora::client_stub;
using cs::Ret;

namespace remora::client_stub {

namespace {

using remora::CallId;
namespace v1 = remora::v1;

struct Described {
  cudaResourceDesc res;
  cudaTextureDesc tex;  // zero for a surface
  bool surface;
};

struct Objects {
  std::mutex mu;
  std::unordered_map<uint64_t, Described> by_handle;
};
Objects& TheObjects() {
  static auto* o = new Objects;  // never destroyed: calls may come during exit
  return *o;
}

// The driver's format of `d`'s channels and their count; false if the channels differ in width,
// are not 1, 2 or 4 of them, or are not plain integers or floats.
bool Channels(const cudaChannelFormatDesc& d, uint32_t* format, uint32_t* count) {
  const int bits[4] = {d.x, d.y, d.z, d.w};
  int n = 0;
  while (n < 4 && bits[n] != 0) ++n;
  for (int i = n; i < 4; ++i)
    if (bits[i] != 0) return false;
  for (int i = 1; i < n; ++i)
    if (bits[i] != bits[0]) return false;
  if (n == 0 || n == 3) return false;
  const int b = bits[0];
  if (d.f == cudaChannelFormatKindFloat) {
    if (b != 16 && b != 32) return false;
  } else if (d.f == cudaChannelFormatKindSigned || d.f == cudaChannelFormatKindUnsigned) {
    if (b != 8 && b != 16 && b != 32) return false;
  } else {
    return false;
  }
  *format = DriverFormat(d);
  *count = uint32_t(n);
  return true;
}

// The resource of `res` in `req`'s resource fields.
cudaError_t PutResource(const char* call, const cudaResourceDesc& res,
                        v1::TextureCreateRequest& req) {
  const cudaChannelFormatDesc* desc = nullptr;
  switch (res.resType) {
    case cudaResourceTypeArray: {
      const cudaArray* a = res.res.array.array;
      if (a == nullptr) return cudaErrorInvalidResourceHandle;
      desc = &a->desc;
      req.set_resource_type(CU_RESOURCE_TYPE_PITCH2D);
      req.set_ptr(reinterpret_cast<uintptr_t>(a->dptr));
      req.set_width(a->extent.width);
      req.set_height(a->Rows());
      req.set_pitch(a->pitch);
      if (a->extent.depth != 0 || (a->flags & (cudaArrayLayered | cudaArrayCubemap))) {
        // Slices of that image: the server's device makes the object (the emulated GPU's only).
        req.set_slices(a->Slices());
        req.set_slice_pitch(a->Slice());
        req.set_layout((a->flags & cudaArrayCubemap) ? 2 : (a->flags & cudaArrayLayered) ? 1 : 0);
      }
      break;
    }
    case cudaResourceTypeLinear:
      desc = &res.res.linear.desc;
      req.set_resource_type(CU_RESOURCE_TYPE_LINEAR);
      req.set_ptr(reinterpret_cast<uintptr_t>(res.res.linear.devPtr));
      req.set_size(res.res.linear.sizeInBytes);
      break;
    case cudaResourceTypePitch2D:
      desc = &res.res.pitch2D.desc;
      req.set_resource_type(CU_RESOURCE_TYPE_PITCH2D);
      req.set_ptr(reinterpret_cast<uintptr_t>(res.res.pitch2D.devPtr));
      req.set_width(res.res.pitch2D.width);
      req.set_height(res.res.pitch2D.height);
      req.set_pitch(res.res.pitch2D.pitchInBytes);
      break;
    case cudaResourceTypeMipmappedArray:
      return cudaError_t(Unsupported(call, "mipmapped arrays are not served by Remora"));
    default:
      return cudaErrorInvalidValue;
  }
  uint32_t format = 0, count = 0;
  if (!Channels(*desc, &format, &count)) return cudaErrorInvalidChannelDescriptor;
  req.set_format(format);
  req.set_channels(count);
  return cudaSuccess;
}

cudaError_t PutSampling(const char* call, const cudaTextureDesc& tex,
                        v1::TextureCreateRequest& req) {
  if (tex.sRGB) return cudaError_t(Unsupported(call, "sRGB textures are not served by Remora"));
  for (int d = 0; d < 3; ++d) req.add_address_mode(uint32_t(tex.addressMode[d]));
  req.set_filter_mode(uint32_t(tex.filterMode));
  uint32_t flags = 0;
  if (tex.readMode == cudaReadModeElementType) flags |= CU_TRSF_READ_AS_INTEGER;
  if (tex.normalizedCoords) flags |= CU_TRSF_NORMALIZED_COORDINATES;
  if (tex.disableTrilinearOptimization) flags |= CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
  if (tex.seamlessCubemap) flags |= CU_TRSF_SEAMLESS_CUBEMAP;
  req.set_flags(flags);
  req.set_max_anisotropy(tex.maxAnisotropy);
  for (float c : tex.borderColor) req.add_border_color(c);
  return cudaSuccess;
}

cudaError_t Create(const char* call, uint64_t* out, const cudaResourceDesc* res,
                   const cudaTextureDesc* tex, const cudaResourceViewDesc* view) {
  const bool surface = tex == nullptr;
  if (out == nullptr || res == nullptr) return cudaErrorInvalidValue;
  if (view != nullptr)
    return cudaError_t(Unsupported(call, "resource views are not served by Remora"));
  v1::TextureCreateRequest req;
  req.set_surface(surface);
  if (cudaError_t e = PutResource(call, *res, req)) return e;
  if (!surface)
    if (cudaError_t e = PutSampling(call, *tex, req)) return e;
  v1::HandleReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kTextureCreate, req, &rep)) return e;
  Objects& o = TheObjects();
  std::lock_guard lock(o.mu);
  o.by_handle[rep.handle()] = {*res, tex ? *tex : cudaTextureDesc{}, surface};
  *out = rep.handle();
  return cudaSuccess;
}

cudaError_t Destroy(uint64_t handle, bool surface) {
  v1::TextureRequest req;
  req.set_handle(handle);
  req.set_surface(surface);
  if (cudaError_t e = Connection::Get().Call(CallId::kTextureDestroy, req)) return e;
  Objects& o = TheObjects();
  std::lock_guard lock(o.mu);
  o.by_handle.erase(handle);
  return cudaSuccess;
}

cudaError_t Describe(uint64_t handle, bool surface, cudaResourceDesc* res, cudaTextureDesc* tex) {
  Objects& o = TheObjects();
  std::lock_guard lock(o.mu);
  auto it = o.by_handle.find(handle);
  if (it == o.by_handle.end() || it->second.surface != surface) return cudaErrorInvalidValue;
  if (res) *res = it->second.res;
  if (tex) *tex = it->second.tex;
  return cudaSuccess;
}

}  // namespace
}  // namespace remora::client_stub

extern "C" {

cudaError_t cudaCreateTextureObject(cudaTextureObject_t* pTexObject,
                                    const cudaResourceDesc* pResDesc,
                                    const cudaTextureDesc* pTexDesc,
                                    const cudaResourceViewDesc* pResViewDesc) {
  if (pTexDesc == nullptr) return Ret(cudaErrorInvalidValue);
  uint64_t h = 0;
  if (cudaError_t e = cs::Create("cudaCreateTextureObject", &h, pResDesc, pTexDesc, pResViewDesc))
    return Ret(e);
  *pTexObject = h;
  return cudaSuccess;
}

cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) {
  return Ret(cs::Destroy(texObject, false));
}

cudaError_t cudaGetTextureObjectResourceDesc(cudaResourceDesc* pResDesc,
                                             cudaTextureObject_t texObject) {
  if (pResDesc == nullptr) return Ret(cudaErrorInvalidValue);
  return Ret(cs::Describe(texObject, false, pResDesc, nullptr));
}

cudaError_t cudaGetTextureObjectTextureDesc(cudaTextureDesc* pTexDesc,
                                            cudaTextureObject_t texObject) {
  if (pTexDesc == nullptr) return Ret(cudaErrorInvalidValue);
  return Ret(cs::Describe(texObject, false, nullptr, pTexDesc));
}

// Resource views are refused at creation, so no object has one. NVIDIA's runtime answers the
// query of an object made without a view with success (seen on an H200, CUDA 13.0); here the
// descriptor says there is none: zeroed, format cudaResViewFormatNone.
cudaError_t cudaGetTextureObjectResourceViewDesc(cudaResourceViewDesc* pResViewDesc,
                                                 cudaTextureObject_t texObject) {
  if (pResViewDesc == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = cs::Describe(texObject, false, nullptr, nullptr)) return Ret(e);
  *pResViewDesc = cudaResourceViewDesc{};
  pResViewDesc->format = cudaResViewFormatNone;
  return cudaSuccess;
}

cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* pSurfObject,
                                    const cudaResourceDesc* pResDesc) {
  uint64_t h = 0;
  if (cudaError_t e = cs::Create("cudaCreateSurfaceObject", &h, pResDesc, nullptr, nullptr))
    return Ret(e);
  *pSurfObject = h;
  return cudaSuccess;
}

cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) {
  return Ret(cs::Destroy(surfObject, true));
}

cudaError_t cudaGetSurfaceObjectResourceDesc(cudaResourceDesc* pResDesc,
                                             cudaSurfaceObject_t surfObject) {
  if (pResDesc == nullptr) return Ret(cudaErrorInvalidValue);
  return Ret(cs::Describe(surfObject, true, pResDesc, nullptr));
}

}  // extern "C"
