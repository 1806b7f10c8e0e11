// server/handlers/texture.cc - texture and surface objects over a tenant's device memory.
//
// The memory an object describes is checked to be the tenant's before the driver sees it, and
// the object goes back with the tenant. Its handle is the device's own, which kernels take as
// an argument: as with a pointer, a kernel given another tenant's handle is not stopped (one
// context serves every tenant), but no call of this tenant's names another's object.
#include "server/session.h"

#include "server/handlers/util.h"

namespace remora::server {

namespace {

// Bytes of one element of `format` x `channels`, or 0 for a format Remora does not serve.
uint64_t ElementBytes(uint32_t format, uint32_t channels) {
  if (channels != 1 && channels != 2 && channels != 4) return 0;
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2ull * channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4ull * channels;
    default:
      return 0;
  }
}

// The resource `req` describes and the bytes of device memory it spans.
Result<std::pair<CUDA_RESOURCE_DESC, uint64_t>> Resource(const v1::TextureCreateRequest& req) {
  const uint64_t elem = ElementBytes(req.format(), req.channels());
  if (elem == 0)
    return Error(err::kInvalidValue, "texture format " + Hex(req.format()) + " with " +
                                         std::to_string(req.channels()) +
                                         " channels is not one Remora serves");
  CUDA_RESOURCE_DESC res{};
  res.resType = CUresourcetype(req.resource_type());
  if (req.resource_type() == CU_RESOURCE_TYPE_LINEAR) {
    if (req.size() == 0 || req.size() % elem != 0)
      return Error(err::kInvalidValue, "a linear texture of " + std::to_string(req.size()) +
                                           " bytes is not a whole number of elements");
    res.res.linear = {req.ptr(), CUarray_format(req.format()), req.channels(), req.size()};
    return std::pair{res, req.size()};
  }
  if (req.resource_type() == CU_RESOURCE_TYPE_PITCH2D) {
    // Sizes past these are refused by every device; they keep the product below from wrapping.
    constexpr uint64_t kMaxSide = 1u << 20, kMaxPitch = 1u << 24;
    if (req.width() == 0 || req.height() == 0 || req.width() > kMaxSide ||
        req.height() > kMaxSide || req.pitch() > kMaxPitch || req.pitch() < req.width() * elem)
      return Error(err::kInvalidValue, "a pitched texture of " + std::to_string(req.width()) +
                                           " x " + std::to_string(req.height()) +
                                           " elements with pitch " + std::to_string(req.pitch()) +
                                           " is out of range");
    res.res.pitch2D = {req.ptr(),      CUarray_format(req.format()),
                       req.channels(), req.width(),
                       req.height(),   req.pitch()};
    uint64_t bytes = (req.height() - 1) * req.pitch() + req.width() * elem;
    if (req.slices() > 0) {  // a 3-D, layered or cubemap array: slices of that image
      constexpr uint64_t kMaxSlices = 16384;
      if (req.slices() > kMaxSlices || req.layout() > 2 ||
          req.slice_pitch() < req.height() * req.pitch() ||
          req.slice_pitch() > kMaxSide * kMaxPitch)
        return Error(err::kInvalidValue, std::to_string(req.slices()) + " slices " +
                                             std::to_string(req.slice_pitch()) +
                                             " bytes apart, layout " +
                                             std::to_string(req.layout()) + ", are out of range");
      bytes += (req.slices() - 1) * req.slice_pitch();
    }
    return std::pair{res, bytes};
  }
  return Error(err::kNotSupported, "texture resource type " + std::to_string(req.resource_type()) +
                                       " (only linear and pitched 2-D memory are served)");
}

}  // namespace

std::function<void()> Session::DestroyTexture(uint64_t handle, TexKind kind) const {
  const DriverTable* drv = &dev().drv();
  return [drv, handle, kind] {
    (void)(kind == TexKind::kSurface ? drv->cuSurfObjectDestroy(handle)
                                     : drv->cuTexObjectDestroy(handle));
  };
}

Status Session::OnTextureCreate(const v1::TextureCreateRequest& req, v1::HandleReply& rep) {
  ASSIGN_OR_RETURN(auto resource, Resource(req));
  const auto& [res, bytes] = resource;
  RETURN_IF_ERROR(CheckDeviceRange(req.ptr(), bytes, req.surface() ? "surface" : "texture"));
  const char* what = req.surface() ? "surface" : "texture";
  if (req.slices() > 0 && !dev().drv().remoraEmuTexObjectCreatePitched)
    return Error(err::kNotSupported,
                 std::string("3-D, layered and cubemap ") + what +
                     " objects on a GPU need the driver's own CUDA arrays, and Remora's arrays "
                     "are pitched device memory: not served yet");
  // NVIDIA's driver takes a surface over its own CUDA arrays only (an H200 refused the pitched
  // memory Remora's arrays are with CUDA_ERROR_INVALID_VALUE); said by name, not as a bad value.
  if (req.surface() && !dev().drv().emulated)
    return Error(err::kNotSupported,
                 "surface objects on a GPU need the driver's own CUDA arrays, and Remora's "
                 "arrays are pitched device memory: not served yet");
  CUDA_TEXTURE_DESC tex{};
  if (!req.surface()) {
    if (req.address_mode_size() != 3 || req.border_color_size() != 4)
      return Error(err::kInvalidValue,
                   "a texture needs three address modes and four border "
                   "color components");
    for (int d = 0; d < 3; ++d) tex.addressMode[d] = CUaddress_mode(req.address_mode(d));
    tex.filterMode = CUfilter_mode(req.filter_mode());
    tex.flags = req.flags();
    tex.maxAnisotropy = req.max_anisotropy();
    for (int c = 0; c < 4; ++c) tex.borderColor[c] = req.border_color(c);
  }
  const DriverTable& drv = dev().drv();
  unsigned long long handle = 0;
  if (req.slices() > 0) {
    RETURN_IF_ERROR(dev().Check(
        drv.remoraEmuTexObjectCreatePitched(&handle, &res, req.slices(), req.slice_pitch(),
                                            req.layout(), req.surface() ? nullptr : &tex),
        "remoraEmuTexObjectCreatePitched"));
  } else if (req.surface()) {
    RETURN_IF_ERROR(dev().Check(drv.cuSurfObjectCreate(&handle, &res), "cuSurfObjectCreate"));
  } else {
    RETURN_IF_ERROR(
        dev().Check(drv.cuTexObjectCreate(&handle, &res, &tex, nullptr), "cuTexObjectCreate"));
  }
  textures_.Put(handle, req.surface() ? TexKind::kSurface : TexKind::kTexture);
  rep.set_handle(handle);
  return OkStatus();
}

Status Session::OnTextureDestroy(const v1::TextureRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(TexKind kind, textures_.Get(req.handle()));
  if ((kind == TexKind::kSurface) != req.surface())
    return Error(err::kInvalidValue,
                 Hex(req.handle()) + " is a " + (req.surface() ? "texture" : "surface") +
                     " object, not a " + (req.surface() ? "surface" : "texture") + " object");
  textures_.Erase(req.handle());
  // Work of the tenant's still queued may fetch through it: it goes once that is done.
  Held held;
  held.epoch = epoch_;
  held.destroy.push_back(DestroyTexture(req.handle(), kind));
  return GiveBackWhenDone(std::move(held), /*reply=*/false);
}

}  // namespace remora::server
