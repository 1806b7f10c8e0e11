// emu/blas/openblas.h - OpenBLAS's CBLAS and LAPACK routines, per element type.
//
// Blas<float> / Blas<double> name the CBLAS routine of each precision so the
// entry points are written once as templates; the To*() helpers map cuBLAS
// enums to CBLAS ones (REQUIRES: already validated).
#pragma once

#include <cblas.h>
#include <cuComplex.h>
#include <cublas_v2.h>

// OpenBLAS's LAPACK (Fortran ABI; the trailing size_t is the hidden length of
// the character argument).
extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda,
             const int* ipiv, float* b, const int* ldb, int* info, size_t trans_len);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda,
             const int* ipiv, double* b, const int* ldb, int* info, size_t trans_len);
}

namespace remora::emu::blas {

template <class T>
struct Blas;

template <>
struct Blas<float> {
  static constexpr auto axpy = &cblas_saxpy;
  static constexpr auto dot = &cblas_sdot;
  static constexpr auto nrm2 = &cblas_snrm2;
  static constexpr auto scal = &cblas_sscal;
  static constexpr auto asum = &cblas_sasum;
  static constexpr auto iamax = &cblas_isamax;
  static constexpr auto copy = &cblas_scopy;
  static constexpr auto swap = &cblas_sswap;
  static constexpr auto rot = &cblas_srot;
  static constexpr auto gemv = &cblas_sgemv;
  static constexpr auto ger = &cblas_sger;
  static constexpr auto symv = &cblas_ssymv;
  static constexpr auto trsv = &cblas_strsv;
  static constexpr auto gemm = &cblas_sgemm;
  static constexpr auto symm = &cblas_ssymm;
  static constexpr auto syrk = &cblas_ssyrk;
  static constexpr auto trsm = &cblas_strsm;
  static constexpr auto trmm = &cblas_strmm;
  static constexpr auto getrf = &sgetrf_;
  static constexpr auto getrs = &sgetrs_;
};

template <>
struct Blas<double> {
  static constexpr auto axpy = &cblas_daxpy;
  static constexpr auto dot = &cblas_ddot;
  static constexpr auto nrm2 = &cblas_dnrm2;
  static constexpr auto scal = &cblas_dscal;
  static constexpr auto asum = &cblas_dasum;
  static constexpr auto iamax = &cblas_idamax;
  static constexpr auto copy = &cblas_dcopy;
  static constexpr auto swap = &cblas_dswap;
  static constexpr auto rot = &cblas_drot;
  static constexpr auto gemv = &cblas_dgemv;
  static constexpr auto ger = &cblas_dger;
  static constexpr auto symv = &cblas_dsymv;
  static constexpr auto trsv = &cblas_dtrsv;
  static constexpr auto gemm = &cblas_dgemm;
  static constexpr auto symm = &cblas_dsymm;
  static constexpr auto syrk = &cblas_dsyrk;
  static constexpr auto trsm = &cblas_dtrsm;
  static constexpr auto trmm = &cblas_dtrmm;
  static constexpr auto getrf = &dgetrf_;
  static constexpr auto getrs = &dgetrs_;
};

// The complex types take their scalars by pointer; these wrappers take them by value, as the
// real routines do, so one template serves all four types.
template <>
struct Blas<cuComplex> {
  static void gemv(CBLAS_ORDER o, CBLAS_TRANSPOSE t, int m, int n, cuComplex alpha,
                   const cuComplex* a, int lda, const cuComplex* x, int incx, cuComplex beta,
                   cuComplex* y, int incy) {
    cblas_cgemv(o, t, m, n, &alpha, a, lda, x, incx, &beta, y, incy);
  }
};
template <>
struct Blas<cuDoubleComplex> {
  static void gemv(CBLAS_ORDER o, CBLAS_TRANSPOSE t, int m, int n, cuDoubleComplex alpha,
                   const cuDoubleComplex* a, int lda, const cuDoubleComplex* x, int incx,
                   cuDoubleComplex beta, cuDoubleComplex* y, int incy) {
    cblas_zgemv(o, t, m, n, &alpha, a, lda, x, incx, &beta, y, incy);
  }
};

inline CBLAS_TRANSPOSE ToCblas(cublasOperation_t op) {
  switch (op) {
    case CUBLAS_OP_T:
      return CblasTrans;
    case CUBLAS_OP_C:
      return CblasConjTrans;
    default:
      return CblasNoTrans;
  }
}
inline CBLAS_UPLO ToCblas(cublasFillMode_t f) {
  return f == CUBLAS_FILL_MODE_UPPER ? CblasUpper : CblasLower;
}
inline CBLAS_DIAG ToCblas(cublasDiagType_t d) {
  return d == CUBLAS_DIAG_UNIT ? CblasUnit : CblasNonUnit;
}
inline CBLAS_SIDE ToCblas(cublasSideMode_t s) {
  return s == CUBLAS_SIDE_RIGHT ? CblasRight : CblasLeft;
}

}  // namespace remora::emu::blas
