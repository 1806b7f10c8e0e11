// emu/driver_texture.cc - entry points: texture and surface objects over device memory
// (emu/texture.h), read by the interpreter's tex, tld4, txq, suld and sust; and tensor maps,
// which this device has no tensor memory accelerator to read.
#include "emu/driver.h"

REMORA_EMU_API CUresult cuTexObjectCreate(CUtexObject* pTexObject,
                                          const CUDA_RESOURCE_DESC* pResDesc,
                                          const CUDA_TEXTURE_DESC* pTexDesc,
                                          const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  EMU_CURRENT_CONTEXT(ctx);
  if (pTexDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (pTexObject == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t h = 0;
  EMU_RETURN_IF_ERROR(ctx->textures().Create(pResDesc, pTexDesc, pResViewDesc, false, &h));
  *pTexObject = h;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult cuTexObjectDestroy(CUtexObject texObject) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->textures().Destroy(texObject, false);
}

REMORA_EMU_API CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc,
                                                   CUtexObject texObject) {
  EMU_CURRENT_CONTEXT(ctx);
  if (pResDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->textures().Describe(texObject, false, pResDesc, nullptr);
}

REMORA_EMU_API CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc,
                                                  CUtexObject texObject) {
  EMU_CURRENT_CONTEXT(ctx);
  if (pTexDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->textures().Describe(texObject, false, nullptr, pTexDesc);
}

REMORA_EMU_API CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject,
                                           const CUDA_RESOURCE_DESC* pResDesc) {
  EMU_CURRENT_CONTEXT(ctx);
  if (pSurfObject == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t h = 0;
  EMU_RETURN_IF_ERROR(ctx->textures().Create(pResDesc, nullptr, nullptr, true, &h));
  *pSurfObject = h;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->textures().Destroy(surfObject, true);
}

REMORA_EMU_API CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc,
                                                    CUsurfObject surfObject) {
  EMU_CURRENT_CONTEXT(ctx);
  if (pResDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->textures().Describe(surfObject, true, pResDesc, nullptr);
}

// Remora's own: a texture (tex != nullptr) or surface object over `slices` pitched 2-D images
// `slice_pitch` bytes apart: a 3-D image (layout 0), layers (1) or cube faces (2). NVIDIA's driver
// takes these only as its CUDA arrays, which the emulated GPU has none of; the server makes
// tenants' 3-D, layered and cubemap arrays' objects so (server/handlers/texture.cc).
REMORA_EMU_API CUresult remoraEmuTexObjectCreatePitched(unsigned long long* out,
                                                        const CUDA_RESOURCE_DESC* res,
                                                        size_t slices, size_t slice_pitch,
                                                        unsigned layout,
                                                        const CUDA_TEXTURE_DESC* tex) {
  EMU_CURRENT_CONTEXT(ctx);
  if (out == nullptr || layout > 2) return CUDA_ERROR_INVALID_VALUE;
  uint64_t h = 0;
  EMU_RETURN_IF_ERROR(ctx->textures().CreateSliced(
      res, slices, slice_pitch, remora::emu::ptx::TextureView::Layout(layout), tex, &h));
  *out = h;
  return CUDA_SUCCESS;
}

// Tensor maps describe tensors to the tensor memory accelerator of sm_90 and later, which this
// device does not have (it runs no cp.async.bulk.tensor): every encoding is refused.
REMORA_EMU_API CUresult cuTensorMapEncodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType,
                                               cuuint32_t, void*, const cuuint64_t*,
                                               const cuuint64_t*, const cuuint32_t*,
                                               const cuuint32_t*, CUtensorMapInterleave,
                                               CUtensorMapSwizzle, CUtensorMapL2promotion,
                                               CUtensorMapFloatOOBfill) {
  return tensorMap == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

REMORA_EMU_API CUresult cuTensorMapEncodeIm2col(CUtensorMap* tensorMap, CUtensorMapDataType,
                                                cuuint32_t, void*, const cuuint64_t*,
                                                const cuuint64_t*, const int*, const int*,
                                                cuuint32_t, cuuint32_t, const cuuint32_t*,
                                                CUtensorMapInterleave, CUtensorMapSwizzle,
                                                CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  return tensorMap == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

REMORA_EMU_API CUresult
cuTensorMapEncodeIm2colWide(CUtensorMap* tensorMap, CUtensorMapDataType, cuuint32_t, void*,
                            const cuuint64_t*, const cuuint64_t*, int, int, cuuint32_t, cuuint32_t,
                            const cuuint32_t*, CUtensorMapInterleave, CUtensorMapIm2ColWideMode,
                            CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  return tensorMap == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

REMORA_EMU_API CUresult cuTensorMapReplaceAddress(CUtensorMap* tensorMap, void*) {
  return tensorMap == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}
