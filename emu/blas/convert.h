// emu/blas/convert.h - half and bfloat16 matrices to float and back, for the
// GEMMs that run on OpenBLAS's SGEMM (cublasGemmEx's family, cublasLtMatmul).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace remora::emu::blas {

// Widens the rows x cols column-major matrix `src` (type t: CUDA_R_16F,
// CUDA_R_16BF, else float; leading dimension ld) into a dense float matrix.
// Throws std::bad_alloc (the caller's work is then abandoned).
inline std::vector<float> Widen(cudaDataType t, const void* src, int64_t rows, int64_t cols,
                                int64_t ld) {
  std::vector<float> out(static_cast<size_t>(rows) * static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) {
    float* o = out.data() + static_cast<size_t>(j) * static_cast<size_t>(rows);
    const ptrdiff_t col = static_cast<ptrdiff_t>(j) * ld;
    switch (t) {
      case CUDA_R_16F: {
        const __half* s = static_cast<const __half*>(src) + col;
        for (int64_t i = 0; i < rows; ++i) o[i] = __half2float(s[i]);
        break;
      }
      case CUDA_R_16BF: {
        const __nv_bfloat16* s = static_cast<const __nv_bfloat16*>(src) + col;
        for (int64_t i = 0; i < rows; ++i) o[i] = __bfloat162float(s[i]);
        break;
      }
      default: {
        const float* s = static_cast<const float*>(src) + col;
        for (int64_t i = 0; i < rows; ++i) o[i] = s[i];
        break;
      }
    }
  }
  return out;
}

// Rounds (to nearest) the dense rows x cols float matrix `src` into `dst`
// (type t: CUDA_R_16F, CUDA_R_16BF, else float; leading dimension ld).
inline void Narrow(cudaDataType t, const float* src, int64_t rows, int64_t cols, void* dst,
                   int64_t ld) {
  for (int64_t j = 0; j < cols; ++j) {
    const float* s = src + static_cast<size_t>(j) * static_cast<size_t>(rows);
    const ptrdiff_t col = static_cast<ptrdiff_t>(j) * ld;
    if (t == CUDA_R_16F) {
      __half* o = static_cast<__half*>(dst) + col;
      for (int64_t i = 0; i < rows; ++i) o[i] = __float2half(s[i]);
    } else if (t == CUDA_R_16BF) {
      __nv_bfloat16* o = static_cast<__nv_bfloat16*>(dst) + col;
      for (int64_t i = 0; i < rows; ++i) o[i] = __float2bfloat16(s[i]);
    } else {
      float* o = static_cast<float*>(dst) + col;
      for (int64_t i = 0; i < rows; ++i) o[i] = s[i];
    }
  }
}

}  // namespace remora::emu::blas
