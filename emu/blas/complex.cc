// emu/blas/complex.cc - single and double complex routines beyond gemm (level3.cc) and gemv
// (level2.cc): dotu and dotc, and strided batched gemm, on OpenBLAS's complex CBLAS.
//
// Argument checks are level1/2/3.cc's; scalars are read per the handle's pointer mode.
#include <cuComplex.h>

#include <type_traits>

#include "emu/blas/blas.h"
#include "emu/blas/openblas.h"

namespace remora::emu::blas {
namespace {

template <class T>
constexpr bool kSingle = std::is_same_v<T, cuComplex>;

template <class T>
cublasStatus_t Dot(cublasHandle_t h, int n, const T* x, int incx, const T* y, int incy, T* result,
                   bool conjugate) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  return call.Reduce(result, [=]() -> T {
    T r{};
    if (n <= 0) return r;
    if constexpr (kSingle<T>) {
      (conjugate ? cblas_cdotc_sub : cblas_cdotu_sub)(n, x, incx, y, incy, &r);
    } else {
      (conjugate ? cblas_zdotc_sub : cblas_zdotu_sub)(n, x, incx, y, incy, &r);
    }
    return r;
  });
}

template <class T>
cublasStatus_t GemmStrided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const T* alpha, const T* A, int lda, long long sa,
                           const T* B, int ldb, long long sb, const T* beta, T* C, int ldc,
                           long long sc, int batch) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidOp(ta) && ValidOp(tb) && m >= 0 && n >= 0 && k >= 0 && batch >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, ta == CUBLAS_OP_N ? m : k) &&
                 ValidLd(ldb, tb == CUBLAS_OP_N ? k : n) && ValidLd(ldc, m));
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    const T av = a.get(), bv = b.get();
    for (int i = 0; i < batch; ++i) {
      const T* ai = A + i * sa;
      const T* bi = B + i * sb;
      T* ci = C + i * sc;
      if constexpr (kSingle<T>)
        cblas_cgemm(CblasColMajor, ToCblas(ta), ToCblas(tb), m, n, k, &av, ai, lda, bi, ldb, &bv,
                    ci, ldc);
      else
        cblas_zgemm(CblasColMajor, ToCblas(ta), ToCblas(tb), m, n, k, &av, ai, lda, bi, ldb, &bv,
                    ci, ldc);
    }
  });
}

}  // namespace
}  // namespace remora::emu::blas

using namespace remora::emu::blas;  // NOLINT: entry points are global by ABI

#define DOTS(X, T)                                                                                 \
  REMORA_BLAS_API cublasStatus_t cublas##X##dotu_v2(cublasHandle_t h, int n, const T* x, int incx, \
                                                    const T* y, int incy, T* result) {             \
    return Dot(h, n, x, incx, y, incy, result, false);                                             \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##dotc_v2(cublasHandle_t h, int n, const T* x, int incx, \
                                                    const T* y, int incy, T* result) {             \
    return Dot(h, n, x, incx, y, incy, result, true);                                              \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##gemmStridedBatched(                                    \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,           \
      const T* alpha, const T* A, int lda, long long sa, const T* B, int ldb, long long sb,        \
      const T* beta, T* C, int ldc, long long sc, int batch) {                                     \
    return GemmStrided(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,        \
                       batch);                                                                     \
  }
DOTS(C, cuComplex)
DOTS(Z, cuDoubleComplex)
#undef DOTS
