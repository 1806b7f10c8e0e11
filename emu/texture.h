// emu/texture.h - the context's texture and surface objects (cuTexObjectCreate,
// cuSurfObjectCreate): each a ptx::TextureView the interpreter reads at every fetch.
//
// Objects describe device memory: linear (CU_RESOURCE_TYPE_LINEAR), pitched 2-D
// (CU_RESOURCE_TYPE_PITCH2D), or slices of pitched 2-D images (CreateSliced). The emulated GPU
// has no CUDA arrays, so array and mipmapped resources are refused with
// CUDA_ERROR_NOT_SUPPORTED, as are sRGB reads, resource views, anisotropy and mipmap settings.
// A surface may be made over the same memory (NVIDIA's driver asks for an array). Handles are small
// integers, never reused while the context lives.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "emu/memory.h"
#include "emu/ptx/ptx.h"

namespace remora::emu {

class Textures : public ptx::TextureTable {
 public:
  explicit Textures(const DeviceMemory& memory) : memory_(memory) {}

  // cuTexObjectCreate / cuSurfObjectCreate (tex == nullptr). Errors: CUDA_ERROR_INVALID_VALUE
  // for a null descriptor, an unknown format or channel count, a zero or oversized extent, a
  // pitch below a row or not a multiple of the element, memory outside one live allocation, a
  // base not aligned to the element, a pitched 2-D base not aligned to the texture alignment
  // (512) or pitch not a multiple of the texture pitch alignment (32), as a GPU refuses them,
  // flags; CUDA_ERROR_NOT_SUPPORTED as the file comment says.
  CUresult Create(const CUDA_RESOURCE_DESC* res, const CUDA_TEXTURE_DESC* tex,
                  const CUDA_RESOURCE_VIEW_DESC* view, bool surface, uint64_t* out);
  // The same over `slices` images of `res` (pitched 2-D memory), `slice_pitch` bytes apart: a
  // 3-D image (kPlain), layers, or cube faces (square, six to a cube): what NVIDIA's driver takes
  // only as its CUDA arrays (remoraEmuTexObjectCreatePitched). Errors as Create, and
  // CUDA_ERROR_INVALID_VALUE for no slices, a slice pitch below an image, a cubemap that is not
  // square or not whole cubes.
  CUresult CreateSliced(const CUDA_RESOURCE_DESC* res, uint64_t slices, uint64_t slice_pitch,
                        ptx::TextureView::Layout layout, const CUDA_TEXTURE_DESC* tex,
                        uint64_t* out);
  // Errors: CUDA_ERROR_INVALID_VALUE for an unknown handle or one of the other kind.
  CUresult Destroy(uint64_t handle, bool surface);
  // The descriptors the object was made with. Errors as Destroy.
  CUresult Describe(uint64_t handle, bool surface, CUDA_RESOURCE_DESC* res,
                    CUDA_TEXTURE_DESC* tex) const;
  // Forgets every object (the context's reset).
  void Clear();

  bool Find(uint64_t handle, ptx::TextureView* out) const override;

 private:
  struct Object {
    ptx::TextureView view;
    CUDA_RESOURCE_DESC res;
    CUDA_TEXTURE_DESC tex;
  };
  // An object of `res` (a surface when tex is null): its descriptors and view, not sampled yet.
  CUresult Make(const CUDA_RESOURCE_DESC& res, const CUDA_TEXTURE_DESC* tex, Object* o) const;
  CUresult Add(Object o, uint64_t* out);

  const DeviceMemory& memory_;
  mutable std::mutex mu_;
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, Object> objects_;
};

}  // namespace remora::emu
