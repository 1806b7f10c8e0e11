// proto/blaslt.h - the forwarded cuBLASLt matmul: its description and what it reaches.
//
// cublasLtMatmul travels as one BlasLtMatmulRequest: the matmul descriptor's
// attributes and the four matrix layouts by value (the stub keeps descriptors
// as plain data; the server makes its own from these). PlanBlasLt checks them
// as cuBLASLt does and says, from each layout's rows, columns, leading
// dimension, batch count and stride, how many bytes each pointer reaches, so
// the stub and the server check a call with the same code.
//
//   BlasLtMatmul m = ...;                      // from descriptors or the request
//   Result<BlasLtPlan> plan = PlanBlasLt(m);   // kInvalidValue / kNotSupported
//   for (int i = 0; i < 4; ++i) check(ptr[i], plan->bytes[i]);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "proto/status.h"

namespace remora {

// One matrix layout (cublasLtMatrixLayout_t's attributes). Plain data: the
// stub's and the emulator's cublasLtMatrixLayout_t hold one.
struct BlasLtLayout {
  int32_t type = 0;  // cudaDataType: CUDA_R_32F, CUDA_R_16F or CUDA_R_16BF
  uint64_t rows = 0;
  uint64_t cols = 0;
  int64_t ld = 0;      // elements between columns (column-major)
  int32_t order = 0;   // cublasLtOrder_t; only CUBLASLT_ORDER_COL (0) is supported
  int32_t batch = 1;   // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
  int64_t stride = 0;  // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, in elements
  // The first attribute set to a value not forwarded (planar complex, pointer-array
  // batches), or -1: a matmul using the layout is CUBLAS_STATUS_NOT_SUPPORTED, naming it.
  int32_t unsupported = -1;
};

// A matmul descriptor's attributes (cublasLtMatmulDesc_t). Plain data: the
// stub's and the emulator's cublasLtMatmulDesc_t hold one.
struct BlasLtDesc {
  int32_t compute_type = 68;  // cublasComputeType_t (CUBLAS_COMPUTE_32F)
  int32_t scale_type = 0;     // cudaDataType of alpha and beta (CUDA_R_32F)
  int32_t pointer_mode = 0;   // cublasLtPointerMode_t: HOST (0) or DEVICE (1)
  int32_t transa = 0;         // cublasOperation_t
  int32_t transb = 0;
  uint32_t epilogue = 1;          // cublasLtEpilogue_t (CUBLASLT_EPILOGUE_DEFAULT)
  int32_t bias_type = -1;         // CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE; -1: D's type
  int64_t bias_batch_stride = 0;  // in elements
  uint64_t bias = 0;              // CUBLASLT_MATMUL_DESC_BIAS_POINTER
  // The first attribute set to a value the forwarding cannot express (TRANSC,
  // FILL_MODE, scale or aux pointers, ...), or -1: the matmul is NOT_SUPPORTED, naming it.
  int32_t unsupported = -1;
};

// The matrices of a matmul, in cublasLtMatmul's order.
enum BlasLtMatrix : int { kLtA = 0, kLtB = 1, kLtC = 2, kLtD = 3 };

// A matmul: its descriptor and the layouts of A, B, C and D.
struct BlasLtMatmul {
  BlasLtDesc desc;
  std::array<BlasLtLayout, 4> layouts{};
};

// What one matmul reaches.
struct BlasLtPlan {
  std::array<uint64_t, 4> bytes{};  // through A, B, C, D (0: not touched, may be null)
  uint64_t bias_bytes = 0;          // through the bias pointer (0: no bias epilogue)
  int32_t bias_type = 0;            // the bias's cudaDataType, resolved
  int64_t m = 0, n = 0, k = 0;
  int32_t batch = 1;
  uint32_t scalar_bytes = 4;  // alpha and beta: one scale-type value each
};

// True if `epilogue` adds a bias vector (BIAS, RELU_BIAS, GELU_BIAS).
bool BlasLtHasBias(uint32_t epilogue);

// Checks `m` as cuBLASLt checks a matmul and says what it reaches. Supported:
// FP32 compute (CUBLAS_COMPUTE_32F and its _PEDANTIC and _FAST_* forms) with
// FP32 scale, A and B of one type among FP32, FP16 and BF16, C and D of A's
// type or FP32 (FP32 only for FP32 A), column-major layouts, transposes N, T
// (C is T for real data), epilogues DEFAULT, RELU, BIAS, RELU_BIAS, GELU and
// GELU_BIAS with a bias of D's type, host or device scalars.
// Errors: kInvalidValue (CUBLAS_STATUS_INVALID_VALUE) for dimensions that do
// not match, leading dimensions below the rows, negative strides, batch counts
// that differ, a bias of another type than D's; kNotSupported (CUBLAS_STATUS_NOT_SUPPORTED) for a
// type, compute type, order, pointer mode or epilogue outside that list.
Result<BlasLtPlan> PlanBlasLt(const BlasLtMatmul& m);

// Bytes per element of a supported cudaDataType (0 for any other).
uint32_t BlasLtElemBytes(int32_t type);

// cublasLt{MatmulDesc,MatrixLayout}{Set,Get}Attribute over the plain data, as
// NVIDIA's library answers them; they return a cublasStatus_t value.
// Set: CUBLAS_STATUS_INVALID_VALUE (7) for a null buffer, a size that is not
// the attribute's or an unknown attribute. A known attribute set to a value
// not forwarded is stored as `unsupported` (the matmul refuses it later with
// CUBLAS_STATUS_NOT_SUPPORTED), as cuBLASLt refuses at the matmul.
// Get: with size 0 and `written`, the size needed goes to *written; else
// INVALID_VALUE unless `buf` is non-null and `size` is the attribute's.
int32_t BlasLtSetDescAttribute(BlasLtDesc& d, int32_t attr, const void* buf, size_t size);
int32_t BlasLtGetDescAttribute(const BlasLtDesc& d, int32_t attr, void* buf, size_t size,
                               size_t* written);
int32_t BlasLtSetLayoutAttribute(BlasLtLayout& l, int32_t attr, const void* buf, size_t size);
int32_t BlasLtGetLayoutAttribute(const BlasLtLayout& l, int32_t attr, void* buf, size_t size,
                                 size_t* written);

}  // namespace remora
