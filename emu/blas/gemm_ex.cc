// emu/blas/gemm_ex.cc - Hgemm, GemmEx and the batched GEMMs (pointer arrays
// and strided), all through one typed GEMM description.
//
// Supported (A/B type, C type, compute -> scale type), as cuBLAS's GemmEx table:
//   CUBLAS_COMPUTE_16F[_PEDANTIC]: 16F/16F, scale __half
//   CUBLAS_COMPUTE_32F[_PEDANTIC, _FAST_16F, _FAST_16BF, _FAST_TF32, _EMULATED_16BFX9]:
//     32F/32F, 16F/16F, 16F/32F, 16BF/16BF, 16BF/32F, scale float
//   CUBLAS_COMPUTE_64F[_PEDANTIC, _EMULATED_FIXEDPOINT]: 64F/64F, scale double
// and the legacy cudaDataType computeType values CUDA_R_16F, CUDA_R_32F and
// CUDA_R_64F (as cublasMigrateComputeType maps them). Anything else is
// CUBLAS_STATUS_NOT_SUPPORTED. Half and bfloat16 operands are widened to float
// and multiplied by OpenBLAS's SGEMM (so 16F compute is more precise than on a
// GPU); the result is rounded to nearest on the way back. `algo` is ignored.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <vector>

#include "emu/blas/blas.h"
#include "emu/blas/convert.h"
#include "emu/blas/openblas.h"

namespace remora::emu::blas {
namespace {

enum class Compute { k16F, k32F, k64F };

// Maps `ct` (a cublasComputeType_t or a legacy cudaDataType) to the precision
// it computes in. Errors: CUBLAS_STATUS_NOT_SUPPORTED.
cublasStatus_t ClassifyCompute(int ct, Compute* out) {
  switch (ct) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
    case CUDA_R_16F:
      *out = Compute::k16F;
      return CUBLAS_STATUS_SUCCESS;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
    case CUDA_R_32F:
      *out = Compute::k32F;
      return CUBLAS_STATUS_SUCCESS;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
    case CUDA_R_64F:
      *out = Compute::k64F;
      return CUBLAS_STATUS_SUCCESS;
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

bool SupportedTypes(Compute c, cudaDataType ab, cudaDataType bt, cudaDataType ct) {
  if (ab != bt) return false;
  switch (c) {
    case Compute::k16F:
      return ab == CUDA_R_16F && ct == CUDA_R_16F;
    case Compute::k32F:
      return (ab == CUDA_R_32F && ct == CUDA_R_32F) ||
             ((ab == CUDA_R_16F || ab == CUDA_R_16BF) && (ct == ab || ct == CUDA_R_32F));
    case Compute::k64F:
      return ab == CUDA_R_64F && ct == CUDA_R_64F;
  }
  return false;
}

size_t ElemBytes(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_64F:
      return 8;
    default:
      return 4;
  }
}

// alpha/beta of a typed GEMM: the value (host pointer mode) or the device
// address, in the scale type of `kind`.
class AnyScalar {
 public:
  AnyScalar(cublasPointerMode_t mode, Compute kind, const void* p) : kind_(kind) {
    if (mode == CUBLAS_POINTER_MODE_DEVICE) {
      ptr_ = p;
    } else {
      value_ = Load(kind, p);
    }
  }
  double get() const { return ptr_ != nullptr ? Load(kind_, ptr_) : value_; }

 private:
  static double Load(Compute kind, const void* p) {
    switch (kind) {
      case Compute::k16F:
        return __half2float(*static_cast<const __half*>(p));
      case Compute::k32F:
        return *static_cast<const float*>(p);
      case Compute::k64F:
        return *static_cast<const double*>(p);
    }
    return 0;
  }

  Compute kind_;
  double value_ = 0;
  const void* ptr_ = nullptr;
};

// Everything of one GEMM but its matrices and scales.
struct GemmDesc {
  cublasOperation_t ta, tb;
  int m, n, k;
  cudaDataType at, bt, ct;
  int lda, ldb, ldc;
  Compute compute;
};

// C = alpha * op(A) * op(B) + beta * C for one matrix triple (on the stream).
void RunGemm(const GemmDesc& d, const void* A, const void* B, void* C, double alpha, double beta) {
  const CBLAS_TRANSPOSE ta = ToCblas(d.ta);
  const CBLAS_TRANSPOSE tb = ToCblas(d.tb);
  if (d.compute == Compute::k64F) {
    cblas_dgemm(CblasColMajor, ta, tb, d.m, d.n, d.k, alpha, static_cast<const double*>(A), d.lda,
                static_cast<const double*>(B), d.ldb, beta, static_cast<double*>(C), d.ldc);
    return;
  }
  const auto a32 = static_cast<float>(alpha);
  const auto b32 = static_cast<float>(beta);
  if (d.at == CUDA_R_32F && d.ct == CUDA_R_32F) {
    cblas_sgemm(CblasColMajor, ta, tb, d.m, d.n, d.k, a32, static_cast<const float*>(A), d.lda,
                static_cast<const float*>(B), d.ldb, b32, static_cast<float*>(C), d.ldc);
    return;
  }
  const int ar = d.ta == CUBLAS_OP_N ? d.m : d.k;
  const int ac = d.ta == CUBLAS_OP_N ? d.k : d.m;
  const int br = d.tb == CUBLAS_OP_N ? d.k : d.n;
  const int bc = d.tb == CUBLAS_OP_N ? d.n : d.k;
  const std::vector<float> a = Widen(d.at, A, ar, ac, d.lda);
  const std::vector<float> b = Widen(d.bt, B, br, bc, d.ldb);
  const int lda = std::max(1, ar);
  const int ldb = std::max(1, br);
  if (d.ct == CUDA_R_32F) {
    cblas_sgemm(CblasColMajor, ta, tb, d.m, d.n, d.k, a32, a.data(), lda, b.data(), ldb, b32,
                static_cast<float*>(C), d.ldc);
    return;
  }
  // beta == 0: C is not read (it may hold NaNs), as BLAS specifies.
  std::vector<float> c = beta != 0 ? Widen(d.ct, C, d.m, d.n, d.ldc)
                                   : std::vector<float>(static_cast<size_t>(d.m) * d.n, 0.0f);
  cblas_sgemm(CblasColMajor, ta, tb, d.m, d.n, d.k, a32, a.data(), lda, b.data(), ldb, b32,
              c.data(), d.m);
  Narrow(d.ct, c.data(), d.m, d.n, C, d.ldc);
}

// The checks every GEMM shares; fills *d.compute from `compute_type`.
cublasStatus_t CheckGemm(GemmDesc* d, int compute_type, int batch) {
  BLAS_CHECK_ARG(ValidOp(d->ta) && ValidOp(d->tb) && d->m >= 0 && d->n >= 0 && d->k >= 0);
  BLAS_CHECK_ARG(ValidLd(d->lda, d->ta == CUBLAS_OP_N ? d->m : d->k) &&
                 ValidLd(d->ldb, d->tb == CUBLAS_OP_N ? d->k : d->n) && ValidLd(d->ldc, d->m));
  BLAS_CHECK_ARG(batch >= 0);
  BLAS_RETURN_IF_ERROR(ClassifyCompute(compute_type, &d->compute));
  if (!SupportedTypes(d->compute, d->at, d->bt, d->ct)) return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

// Where the batch's matrices are: device arrays of device pointers (read when
// the work runs) or a base pointer plus a stride in elements.
struct Operands {
  const void* const* a_array = nullptr;
  const void* const* b_array = nullptr;
  void* const* c_array = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  long long stride_a = 0, stride_b = 0, stride_c = 0;
};

cublasStatus_t Gemm(cublasHandle_t h, GemmDesc d, int compute_type, const void* alpha,
                    const void* beta, const Operands& ops, int batch) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_RETURN_IF_ERROR(CheckGemm(&d, compute_type, batch));
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (d.m == 0 || d.n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const AnyScalar a(call.settings().pointer_mode, d.compute, alpha);
  const AnyScalar b(call.settings().pointer_mode, d.compute, beta);
  return call.Submit([=] {
    const double av = a.get();
    const double bv = b.get();
    const size_t ea = ElemBytes(d.at), eb = ElemBytes(d.bt), ec = ElemBytes(d.ct);
    for (int i = 0; i < batch; ++i) {
      if (ops.a_array != nullptr) {
        RunGemm(d, ops.a_array[i], ops.b_array[i], ops.c_array[i], av, bv);
      } else {
        RunGemm(d, static_cast<const std::byte*>(ops.a) + i * ops.stride_a * ea,
                static_cast<const std::byte*>(ops.b) + i * ops.stride_b * eb,
                static_cast<std::byte*>(ops.c) + i * ops.stride_c * ec, av, bv);
      }
    }
  });
}

GemmDesc Desc(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, cudaDataType at,
              int lda, cudaDataType bt, int ldb, cudaDataType ct, int ldc) {
  return GemmDesc{ta, tb, m, n, k, at, bt, ct, lda, ldb, ldc, Compute::k32F};
}

}  // namespace
}  // namespace remora::emu::blas

using namespace remora::emu::blas;  // NOLINT: entry points are global by ABI

REMORA_BLAS_API cublasStatus_t cublasHgemm(cublasHandle_t h, cublasOperation_t ta,
                                           cublasOperation_t tb, int m, int n, int k,
                                           const __half* alpha, const __half* A, int lda,
                                           const __half* B, int ldb, const __half* beta, __half* C,
                                           int ldc) {
  return Gemm(h, Desc(ta, tb, m, n, k, CUDA_R_16F, lda, CUDA_R_16F, ldb, CUDA_R_16F, ldc),
              CUBLAS_COMPUTE_16F, alpha, beta, Operands{.a = A, .b = B, .c = C}, 1);
}

REMORA_BLAS_API cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta,
                                            cublasOperation_t tb, int m, int n, int k,
                                            const void* alpha, const void* A, cudaDataType Atype,
                                            int lda, const void* B, cudaDataType Btype, int ldb,
                                            const void* beta, void* C, cudaDataType Ctype, int ldc,
                                            cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return Gemm(h, Desc(ta, tb, m, n, k, Atype, lda, Btype, ldb, Ctype, ldc), computeType, alpha,
              beta, Operands{.a = A, .b = B, .c = C}, 1);
}

REMORA_BLAS_API cublasStatus_t cublasSgemmBatched(cublasHandle_t h, cublasOperation_t ta,
                                                  cublasOperation_t tb, int m, int n, int k,
                                                  const float* alpha, const float* const Aarray[],
                                                  int lda, const float* const Barray[], int ldb,
                                                  const float* beta, float* const Carray[], int ldc,
                                                  int batchCount) {
  return Gemm(h, Desc(ta, tb, m, n, k, CUDA_R_32F, lda, CUDA_R_32F, ldb, CUDA_R_32F, ldc),
              CUBLAS_COMPUTE_32F, alpha, beta,
              Operands{.a_array = reinterpret_cast<const void* const*>(Aarray),
                       .b_array = reinterpret_cast<const void* const*>(Barray),
                       .c_array = reinterpret_cast<void* const*>(Carray)},
              batchCount);
}

REMORA_BLAS_API cublasStatus_t cublasDgemmBatched(cublasHandle_t h, cublasOperation_t ta,
                                                  cublasOperation_t tb, int m, int n, int k,
                                                  const double* alpha, const double* const Aarray[],
                                                  int lda, const double* const Barray[], int ldb,
                                                  const double* beta, double* const Carray[],
                                                  int ldc, int batchCount) {
  return Gemm(h, Desc(ta, tb, m, n, k, CUDA_R_64F, lda, CUDA_R_64F, ldb, CUDA_R_64F, ldc),
              CUBLAS_COMPUTE_64F, alpha, beta,
              Operands{.a_array = reinterpret_cast<const void* const*>(Aarray),
                       .b_array = reinterpret_cast<const void* const*>(Barray),
                       .c_array = reinterpret_cast<void* const*>(Carray)},
              batchCount);
}

REMORA_BLAS_API cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const float* alpha, const float* A, int lda, long long int strideA, const float* B, int ldb,
    long long int strideB, const float* beta, float* C, int ldc, long long int strideC,
    int batchCount) {
  return Gemm(
      h, Desc(ta, tb, m, n, k, CUDA_R_32F, lda, CUDA_R_32F, ldb, CUDA_R_32F, ldc),
      CUBLAS_COMPUTE_32F, alpha, beta,
      Operands{
          .a = A, .b = B, .c = C, .stride_a = strideA, .stride_b = strideB, .stride_c = strideC},
      batchCount);
}

REMORA_BLAS_API cublasStatus_t cublasDgemmStridedBatched(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const double* alpha, const double* A, int lda, long long int strideA, const double* B, int ldb,
    long long int strideB, const double* beta, double* C, int ldc, long long int strideC,
    int batchCount) {
  return Gemm(
      h, Desc(ta, tb, m, n, k, CUDA_R_64F, lda, CUDA_R_64F, ldb, CUDA_R_64F, ldc),
      CUBLAS_COMPUTE_64F, alpha, beta,
      Operands{
          .a = A, .b = B, .c = C, .stride_a = strideA, .stride_b = strideB, .stride_c = strideC},
      batchCount);
}

REMORA_BLAS_API cublasStatus_t
cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const void* alpha, const void* const Aarray[], cudaDataType Atype,
                    int lda, const void* const Barray[], cudaDataType Btype, int ldb,
                    const void* beta, void* const Carray[], cudaDataType Ctype, int ldc,
                    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return Gemm(h, Desc(ta, tb, m, n, k, Atype, lda, Btype, ldb, Ctype, ldc), computeType, alpha,
              beta, Operands{.a_array = Aarray, .b_array = Barray, .c_array = Carray}, batchCount);
}

REMORA_BLAS_API cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
    const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return Gemm(
      h, Desc(ta, tb, m, n, k, Atype, lda, Btype, ldb, Ctype, ldc), computeType, alpha, beta,
      Operands{
          .a = A, .b = B, .c = C, .stride_a = strideA, .stride_b = strideB, .stride_c = strideC},
      batchCount);
}
