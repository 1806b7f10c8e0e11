// emu/blas/level2.cc - level 2: gemv (real and complex), ger, symv, trsv (float and double).
//
// Argument checks follow reference BLAS's xerbla conditions, each reported as
// CUBLAS_STATUS_INVALID_VALUE; empty problems return without queueing work.
#include "emu/blas/blas.h"
#include "emu/blas/openblas.h"

namespace remora::emu::blas {
namespace {

template <class T>
cublasStatus_t Gemv(cublasHandle_t h, cublasOperation_t trans, int m, int n, const T* alpha,
                    const T* A, int lda, const T* x, int incx, const T* beta, T* y, int incy) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidOp(trans) && m >= 0 && n >= 0 && ValidLd(lda, m) && incx != 0 && incy != 0);
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    Blas<T>::gemv(CblasColMajor, ToCblas(trans), m, n, a.get(), A, lda, x, incx, b.get(), y, incy);
  });
}

template <class T>
cublasStatus_t Ger(cublasHandle_t h, int m, int n, const T* alpha, const T* x, int incx, const T* y,
                   int incy, T* A, int lda) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(m >= 0 && n >= 0 && incx != 0 && incy != 0 && ValidLd(lda, m));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  return call.Submit([=] { Blas<T>::ger(CblasColMajor, m, n, a.get(), x, incx, y, incy, A, lda); });
}

template <class T>
cublasStatus_t Symv(cublasHandle_t h, cublasFillMode_t uplo, int n, const T* alpha, const T* A,
                    int lda, const T* x, int incx, const T* beta, T* y, int incy) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && n >= 0 && ValidLd(lda, n) && incx != 0 && incy != 0);
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    Blas<T>::symv(CblasColMajor, ToCblas(uplo), n, a.get(), A, lda, x, incx, b.get(), y, incy);
  });
}

template <class T>
cublasStatus_t Trsv(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans,
                    cublasDiagType_t diag, int n, const T* A, int lda, T* x, int incx) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && ValidOp(trans) && ValidDiag(diag) && n >= 0 &&
                 ValidLd(lda, n) && incx != 0);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  return call.Submit([=] {
    Blas<T>::trsv(CblasColMajor, ToCblas(uplo), ToCblas(trans), ToCblas(diag), n, A, lda, x, incx);
  });
}

}  // namespace
}  // namespace remora::emu::blas

using namespace remora::emu::blas;  // NOLINT: entry points are global by ABI

REMORA_BLAS_API cublasStatus_t cublasSgemv_v2(cublasHandle_t h, cublasOperation_t trans, int m,
                                              int n, const float* alpha, const float* A, int lda,
                                              const float* x, int incx, const float* beta, float* y,
                                              int incy) {
  return Gemv(h, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasCgemv_v2(cublasHandle_t h, cublasOperation_t trans, int m,
                                              int n, const cuComplex* alpha, const cuComplex* A,
                                              int lda, const cuComplex* x, int incx,
                                              const cuComplex* beta, cuComplex* y, int incy) {
  return Gemv(h, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasZgemv_v2(cublasHandle_t h, cublasOperation_t trans, int m,
                                              int n, const cuDoubleComplex* alpha,
                                              const cuDoubleComplex* A, int lda,
                                              const cuDoubleComplex* x, int incx,
                                              const cuDoubleComplex* beta, cuDoubleComplex* y,
                                              int incy) {
  return Gemv(h, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasDgemv_v2(cublasHandle_t h, cublasOperation_t trans, int m,
                                              int n, const double* alpha, const double* A, int lda,
                                              const double* x, int incx, const double* beta,
                                              double* y, int incy) {
  return Gemv(h, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasSger_v2(cublasHandle_t h, int m, int n, const float* alpha,
                                             const float* x, int incx, const float* y, int incy,
                                             float* A, int lda) {
  return Ger(h, m, n, alpha, x, incx, y, incy, A, lda);
}
REMORA_BLAS_API cublasStatus_t cublasDger_v2(cublasHandle_t h, int m, int n, const double* alpha,
                                             const double* x, int incx, const double* y, int incy,
                                             double* A, int lda) {
  return Ger(h, m, n, alpha, x, incx, y, incy, A, lda);
}
REMORA_BLAS_API cublasStatus_t cublasSsymv_v2(cublasHandle_t h, cublasFillMode_t uplo, int n,
                                              const float* alpha, const float* A, int lda,
                                              const float* x, int incx, const float* beta, float* y,
                                              int incy) {
  return Symv(h, uplo, n, alpha, A, lda, x, incx, beta, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasDsymv_v2(cublasHandle_t h, cublasFillMode_t uplo, int n,
                                              const double* alpha, const double* A, int lda,
                                              const double* x, int incx, const double* beta,
                                              double* y, int incy) {
  return Symv(h, uplo, n, alpha, A, lda, x, incx, beta, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasStrsv_v2(cublasHandle_t h, cublasFillMode_t uplo,
                                              cublasOperation_t trans, cublasDiagType_t diag, int n,
                                              const float* A, int lda, float* x, int incx) {
  return Trsv(h, uplo, trans, diag, n, A, lda, x, incx);
}
REMORA_BLAS_API cublasStatus_t cublasDtrsv_v2(cublasHandle_t h, cublasFillMode_t uplo,
                                              cublasOperation_t trans, cublasDiagType_t diag, int n,
                                              const double* A, int lda, double* x, int incx) {
  return Trsv(h, uplo, trans, diag, n, A, lda, x, incx);
}
