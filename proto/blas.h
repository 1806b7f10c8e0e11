// proto/blas.h - the forwarded cuBLAS routines (blas_ops.def) and their shapes.
//
// A forwarded routine travels as a BlasRequest: its integer arguments, device
// pointers and scalars in signature order. Its shape says how many of each it
// takes and, from the integers, how many bytes each pointer reaches, so the
// stub answers an obviously bad call at once and the server checks every
// pointer against the tenant's allocations before the library sees it.
//
//   const BlasOp* op = FindBlasOp(req.op());
//   Result<BlasPlan> plan = PlanBlas(*op, ints);   // CUBLAS_STATUS_INVALID_VALUE -> error
//   for (int i = 0; i < op->shape->ptrs; ++i) check(ptrs[i], plan->bytes[i]);
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "proto/status.h"

namespace remora {

enum class BlasShape : uint8_t {
  kAxpy,
  kDot,
  kNorm,
  kIndex,
  kScal,
  kCopy,
  kSwap,
  kRot,
  kGemv,
  kGer,
  kSymv,
  kTrsv,
  kGemm,
  kSymm,
  kSyrk,
  kTrsm,
  kTrmm,
  kGeam,
  kDgmm,
  kGemmEx,
  kGemmBatched,
  kGemmStrided,
  kGemmBatchedEx,
  kGemmStridedEx,
  kGetrf,
  kGetrs,
  kGetri,
  kMatinv,
  kTbsv,
  kTpsv,
  kGbmv,
  kSbmv,
  kSpmv,
  kSyr,
  kSyr2,
  kSpr,
  kSpr2,
  kSyr2k,
  kScalReal,
  kNormReal,
  kDotEx,
  kAxpyEx,
  kScalEx,
  kNormEx,
  kCopyEx,
  kTrsmBatched,
  kHer,
  kHpr,
  kHerk,
  kHer2k,
  kRotMixed,
  kRotReal,
  kRotm,
  kTpttr,
  kTrttp,
  kRotg,
  kRotmg,
};

// What a shape takes, in signature order after the handle.
struct BlasShapeInfo {
  uint8_t ints;     // integer arguments (dimensions, enums, strides, counts)
  uint8_t ptrs;     // device pointer arguments (arrays of pointers included)
  uint8_t scalars;  // alpha/beta-like scalars (host or device, per pointer mode)
  // The routine returns one value (dot, nrm2, iamax; getrs's host info): in
  // host pointer mode the call waits and the value comes back in the reply.
  bool result;
  // Its pointers are its scalars, read and written in place (rotg, rotmg): it runs in device
  // pointer mode only, the stub copying host scalars through device memory.
  bool pointers_are_scalars = false;
};

struct BlasOp {
  uint32_t op;
  std::string_view name;  // "Sgemm"
  BlasShape shape;
  uint32_t elem;  // bytes per element; 0: from the call's cudaDataType
  const BlasShapeInfo* info;
};

inline constexpr size_t kBlasMaxPtrs = 6;
inline constexpr size_t kBlasMaxScalars = 2;

// What one call reaches, from its integers.
struct BlasPlan {
  // Bytes reached through pointer argument i (0: not touched, may be null).
  std::array<uint64_t, kBlasMaxPtrs> bytes{};
  // Pointer argument i is a device array of `batch` device pointers, each
  // reaching bytes[i]; the stub sends their values (BlasRequest.arrays).
  std::array<bool, kBlasMaxPtrs> array{};
  // Pointer argument i may be null (getrf's pivots: no pivoting).
  std::array<bool, kBlasMaxPtrs> nullable{};
  // Each scalar's size, in signature order: the element's, or half of a complex one for a
  // real scalar (herk's alpha and beta, crot's c); rotm's is its 5-element parameter array.
  std::array<uint32_t, kBlasMaxScalars> scalar_bytes{};
  uint32_t result_bytes = 0;  // the result's size (0: none)
  int64_t batch = 0;          // matrices in a batched call (0 if not batched)

  // Where scalar i starts among the scalars sent by value.
  uint32_t ScalarOffset(size_t i) const {
    uint32_t at = 0;
    for (size_t j = 0; j < i && j < kBlasMaxScalars; ++j) at += scalar_bytes[j];
    return at;
  }
};

// The row for wire number `op`, or nullptr.
const BlasOp* FindBlasOp(uint32_t op);
// Every row of blas_ops.def, in file order.
std::span<const BlasOp> BlasOps();

// True if the routine's value lands in host memory, so the call waits and
// the value comes in the reply: a result in host pointer mode, or getrs's
// info (host memory in either mode).
bool BlasResultOnHost(const BlasOp& op, bool device_scalars);

// Checks `ints` as cuBLAS checks its arguments (counts, dimensions, leading
// dimensions, increments, enums, types) and says what the call reaches.
// Errors: kInvalidValue (CUBLAS_STATUS_INVALID_VALUE) naming the argument;
// kNotSupported (CUBLAS_STATUS_NOT_SUPPORTED) for a type combination.
Result<BlasPlan> PlanBlas(const BlasOp& op, std::span<const int64_t> ints);

// The level-1 Ex routines' types (cudaDataType values), shared by the stub's and the server's
// checks and the emulated library. Bytes of one element of 16F, 16BF, 32F, 64F, 32C or 64C;
// 0 for another type.
inline uint64_t BlasExElemBytes(int64_t t) {
  switch (t) {
    case 2:   // CUDA_R_16F
    case 14:  // CUDA_R_16BF
      return 2;
    case 0:  // CUDA_R_32F
      return 4;
    case 1:  // CUDA_R_64F
    case 4:  // CUDA_C_32F
      return 8;
    case 5:  // CUDA_C_64F
      return 16;
    default:
      return 0;
  }
}
// The execution type cuBLAS pairs with vectors of type t: FP32 for the 16-bit and FP32 ones,
// else the vectors' own.
inline int64_t BlasExExecution(int64_t t) {
  return t == 2 || t == 14 ? 0 : t;
}
// The type of nrm2's and asum's result for vectors of type t: the real one of a complex type.
inline int64_t BlasExNormResult(int64_t t) {
  return t == 4 ? 0 : t == 5 ? 1 : t;
}

// cuBLAS statuses on the wire: a reply's cudaError_t code for a cuBLAS call
// maps to the cublasStatus_t the caller gets, and back.
int32_t BlasStatusToCuda(int32_t cublas_status);
int32_t CudaToBlasStatus(int32_t cuda_error);

}  // namespace remora
