// emu/texture.cc - texture and surface objects of the emulated GPU (texture.h).
#include "emu/texture.h"

#include <cstring>

#include "emu/device.h"

namespace remora::emu {

namespace {

using View = ptx::TextureView;

// Limits of the emulated device (device_attrs.def).
constexpr uint64_t kMaxLinearElements = 1ull << 28;
constexpr uint64_t kMax2DWidth = 131072, kMax2DHeight = 65000, kMax2DPitch = 2097120;

bool SetFormat(CUarray_format f, unsigned channels, View* v) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_UNSIGNED_INT32:
      v->kind = View::Kind::kUnsigned;
      v->channel_bits = uint8_t(8u << (f - CU_AD_FORMAT_UNSIGNED_INT8));
      break;
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT32:
      v->kind = View::Kind::kSigned;
      v->channel_bits = uint8_t(8u << (f - CU_AD_FORMAT_SIGNED_INT8));
      break;
    case CU_AD_FORMAT_HALF:
      v->kind = View::Kind::kFloat;
      v->channel_bits = 16;
      break;
    case CU_AD_FORMAT_FLOAT:
      v->kind = View::Kind::kFloat;
      v->channel_bits = 32;
      break;
    default:
      return false;
  }
  if (channels != 1 && channels != 2 && channels != 4) return false;
  v->channels = uint8_t(channels);
  return true;
}

uint64_t ElementBytes(const View& v) {
  return uint64_t(v.channels) * v.channel_bits / 8;
}

CUresult ViewOfResource(const CUDA_RESOURCE_DESC& res, const DeviceMemory& memory, View* v) {
  if (res.flags != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t bytes = 0;
  switch (res.resType) {
    case CU_RESOURCE_TYPE_LINEAR: {
      const auto& l = res.res.linear;
      if (!SetFormat(l.format, l.numChannels, v)) return CUDA_ERROR_INVALID_VALUE;
      const uint64_t elem = ElementBytes(*v);
      if (l.sizeInBytes == 0 || l.sizeInBytes / elem > kMaxLinearElements)
        return CUDA_ERROR_INVALID_VALUE;
      v->base = l.devPtr;
      v->linear = true;
      v->width = l.sizeInBytes / elem;
      v->pitch = v->width * elem;
      bytes = l.sizeInBytes;
      break;
    }
    case CU_RESOURCE_TYPE_PITCH2D: {
      const auto& p = res.res.pitch2D;
      if (!SetFormat(p.format, p.numChannels, v)) return CUDA_ERROR_INVALID_VALUE;
      const uint64_t elem = ElementBytes(*v);
      if (p.width == 0 || p.height == 0 || p.width > kMax2DWidth || p.height > kMax2DHeight ||
          p.pitchInBytes > kMax2DPitch || p.pitchInBytes < p.width * elem ||
          p.pitchInBytes % elem != 0)
        return CUDA_ERROR_INVALID_VALUE;
      // As a GPU refuses it (cuTexObjectCreate: CUDA_ERROR_INVALID_VALUE on an H200): a base
      // off the texture alignment, a pitch off the texture pitch alignment.
      if (p.devPtr % kTextureAlignment != 0 || p.pitchInBytes % kTexturePitchAlignment != 0)
        return CUDA_ERROR_INVALID_VALUE;
      v->base = p.devPtr;
      v->dims = 2;
      v->width = p.width;
      v->height = p.height;
      v->pitch = p.pitchInBytes;
      bytes = (p.height - 1) * p.pitchInBytes + p.width * elem;
      break;
    }
    case CU_RESOURCE_TYPE_ARRAY:
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  v->slice_pitch = v->pitch * v->height;
  if (v->base % (v->channel_bits / 8) != 0 || !memory.Contains(v->base, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult ApplySampling(const CUDA_TEXTURE_DESC& tex, View* v) {
  constexpr unsigned kKnown = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                              CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                              CU_TRSF_SEAMLESS_CUBEMAP;
  if (tex.flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
  if (tex.flags & CU_TRSF_SRGB) return CUDA_ERROR_NOT_SUPPORTED;
  for (int d = 0; d < 3; ++d) {
    if (tex.addressMode[d] < CU_TR_ADDRESS_MODE_WRAP ||
        tex.addressMode[d] > CU_TR_ADDRESS_MODE_BORDER)
      return CUDA_ERROR_INVALID_VALUE;
    v->address[d] = View::Address(tex.addressMode[d]);
  }
  if (tex.filterMode != CU_TR_FILTER_MODE_POINT && tex.filterMode != CU_TR_FILTER_MODE_LINEAR)
    return CUDA_ERROR_INVALID_VALUE;
  v->filter_linear = tex.filterMode == CU_TR_FILTER_MODE_LINEAR;
  v->read_as_integer = tex.flags & CU_TRSF_READ_AS_INTEGER;
  v->normalized_coords = tex.flags & CU_TRSF_NORMALIZED_COORDINATES;
  std::memcpy(v->border, tex.borderColor, sizeof v->border);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult Textures::Create(const CUDA_RESOURCE_DESC* res, const CUDA_TEXTURE_DESC* tex,
                          const CUDA_RESOURCE_VIEW_DESC* view, bool surface, uint64_t* out) {
  if (out == nullptr || res == nullptr || (!surface && tex == nullptr))
    return CUDA_ERROR_INVALID_VALUE;
  if (view != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  Object o;
  if (CUresult r = Make(*res, surface ? nullptr : tex, &o); r != CUDA_SUCCESS) return r;
  if (!surface)
    if (CUresult r = ApplySampling(*tex, &o.view); r != CUDA_SUCCESS) return r;
  return Add(o, out);
}

CUresult Textures::Make(const CUDA_RESOURCE_DESC& res, const CUDA_TEXTURE_DESC* tex,
                        Object* o) const {
  *o = Object{};
  o->res = res;
  if (tex) o->tex = *tex;
  o->view.surface = tex == nullptr;
  return ViewOfResource(res, memory_, &o->view);
}

CUresult Textures::Add(Object o, uint64_t* out) {
  std::lock_guard lock(mu_);
  const uint64_t h = next_++;
  objects_.emplace(h, o);
  *out = h;
  return CUDA_SUCCESS;
}

CUresult Textures::CreateSliced(const CUDA_RESOURCE_DESC* res, uint64_t slices,
                                uint64_t slice_pitch, ptx::TextureView::Layout layout,
                                const CUDA_TEXTURE_DESC* tex, uint64_t* out) {
  constexpr uint64_t kMaxSlices = 16384;
  if (out == nullptr || res == nullptr || res->resType != CU_RESOURCE_TYPE_PITCH2D)
    return CUDA_ERROR_INVALID_VALUE;
  Object o;
  if (CUresult r = Make(*res, tex, &o); r != CUDA_SUCCESS) return r;
  View& v = o.view;
  const uint64_t image = v.pitch * v.height;
  if (slices == 0 || slices > kMaxSlices || slice_pitch < image || slice_pitch % v.pitch != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (layout == View::Layout::kCubemap && (v.width != v.height || slices % 6 != 0))
    return CUDA_ERROR_INVALID_VALUE;
  const uint64_t bytes = (slices - 1) * slice_pitch + image;
  if (!memory_.Contains(v.base, bytes)) return CUDA_ERROR_INVALID_VALUE;
  v.depth = slices;
  v.slice_pitch = slice_pitch;
  v.layout = layout;
  v.dims = layout == View::Layout::kPlain ? 3 : 2;
  if (tex)
    if (CUresult r = ApplySampling(*tex, &v); r != CUDA_SUCCESS) return r;
  return Add(o, out);
}

CUresult Textures::Destroy(uint64_t handle, bool surface) {
  std::lock_guard lock(mu_);
  auto it = objects_.find(handle);
  if (it == objects_.end() || it->second.view.surface != surface) return CUDA_ERROR_INVALID_VALUE;
  objects_.erase(it);
  return CUDA_SUCCESS;
}

CUresult Textures::Describe(uint64_t handle, bool surface, CUDA_RESOURCE_DESC* res,
                            CUDA_TEXTURE_DESC* tex) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(handle);
  if (it == objects_.end() || it->second.view.surface != surface) return CUDA_ERROR_INVALID_VALUE;
  if (res) *res = it->second.res;
  if (tex) *tex = it->second.tex;
  return CUDA_SUCCESS;
}

void Textures::Clear() {
  std::lock_guard lock(mu_);
  objects_.clear();
}

bool Textures::Find(uint64_t handle, ptx::TextureView* out) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(handle);
  if (it == objects_.end()) return false;
  *out = it->second.view;
  return true;
}

}  // namespace remora::emu
