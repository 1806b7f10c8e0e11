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
void cgetrf_(const int* m, const int* n, cuComplex* a, const int* lda, int* ipiv, int* info);
void zgetrf_(const int* m, const int* n, cuDoubleComplex* a, const int* lda, int* ipiv, int* info);
void cgetrs_(const char* trans, const int* n, const int* nrhs, const cuComplex* a, const int* lda,
             const int* ipiv, cuComplex* b, const int* ldb, int* info, size_t trans_len);
void zgetrs_(const char* trans, const int* n, const int* nrhs, const cuDoubleComplex* a,
             const int* lda, const int* ipiv, cuDoubleComplex* b, const int* ldb, int* info,
             size_t trans_len);
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
  static constexpr auto rotm = &cblas_srotm;
  static constexpr auto gemv = &cblas_sgemv;
  static constexpr auto ger = &cblas_sger;
  static constexpr auto symv = &cblas_ssymv;
  static constexpr auto trsv = &cblas_strsv;
  static constexpr auto gemm = &cblas_sgemm;
  static constexpr auto symm = &cblas_ssymm;
  static constexpr auto syrk = &cblas_ssyrk;
  static constexpr auto trsm = &cblas_strsm;
  static constexpr auto trmm = &cblas_strmm;
  static constexpr auto trmv = &cblas_strmv;
  static constexpr auto tbmv = &cblas_stbmv;
  static constexpr auto tbsv = &cblas_stbsv;
  static constexpr auto tpmv = &cblas_stpmv;
  static constexpr auto tpsv = &cblas_stpsv;
  static constexpr auto gbmv = &cblas_sgbmv;
  static constexpr auto sbmv = &cblas_ssbmv;
  static constexpr auto spmv = &cblas_sspmv;
  static constexpr auto syr = &cblas_ssyr;
  static constexpr auto syr2 = &cblas_ssyr2;
  static constexpr auto spr = &cblas_sspr;
  static constexpr auto spr2 = &cblas_sspr2;
  static constexpr auto syr2k = &cblas_ssyr2k;
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
  static constexpr auto rotm = &cblas_drotm;
  static constexpr auto gemv = &cblas_dgemv;
  static constexpr auto ger = &cblas_dger;
  static constexpr auto symv = &cblas_dsymv;
  static constexpr auto trsv = &cblas_dtrsv;
  static constexpr auto gemm = &cblas_dgemm;
  static constexpr auto symm = &cblas_dsymm;
  static constexpr auto syrk = &cblas_dsyrk;
  static constexpr auto trsm = &cblas_dtrsm;
  static constexpr auto trmm = &cblas_dtrmm;
  static constexpr auto trmv = &cblas_dtrmv;
  static constexpr auto tbmv = &cblas_dtbmv;
  static constexpr auto tbsv = &cblas_dtbsv;
  static constexpr auto tpmv = &cblas_dtpmv;
  static constexpr auto tpsv = &cblas_dtpsv;
  static constexpr auto gbmv = &cblas_dgbmv;
  static constexpr auto sbmv = &cblas_dsbmv;
  static constexpr auto spmv = &cblas_dspmv;
  static constexpr auto syr = &cblas_dsyr;
  static constexpr auto syr2 = &cblas_dsyr2;
  static constexpr auto spr = &cblas_dspr;
  static constexpr auto spr2 = &cblas_dspr2;
  static constexpr auto syr2k = &cblas_dsyr2k;
  static constexpr auto getrf = &dgetrf_;
  static constexpr auto getrs = &dgetrs_;
};

// The complex types take their scalars by pointer; these wrappers take them by value, as the
// real routines do, so one template serves all four types.
#define REMORA_COMPLEX_BLAS(T, R, p, rp)                                                           \
  template <>                                                                                      \
  struct Blas<T> {                                                                                 \
    using Real = R;                                                                                \
    static void gemv(CBLAS_ORDER o, CBLAS_TRANSPOSE t, int m, int n, T alpha, const T* a, int lda, \
                     const T* x, int incx, T beta, T* y, int incy) {                               \
      cblas_##p##gemv(o, t, m, n, &alpha, a, lda, x, incx, &beta, y, incy);                        \
    }                                                                                              \
    static void axpy(int n, T alpha, const T* x, int incx, T* y, int incy) {                       \
      cblas_##p##axpy(n, &alpha, x, incx, y, incy);                                                \
    }                                                                                              \
    static void scal(int n, T alpha, T* x, int incx) { cblas_##p##scal(n, &alpha, x, incx); }      \
    static void scal_real(int n, R alpha, T* x, int incx) {                                        \
      cblas_##p##rp##scal(n, alpha, x, incx);                                                      \
    }                                                                                              \
    static T dotu(int n, const T* x, int incx, const T* y, int incy) {                             \
      T r;                                                                                         \
      cblas_##p##dotu_sub(n, x, incx, y, incy, &r);                                                \
      return r;                                                                                    \
    }                                                                                              \
    static T dotc(int n, const T* x, int incx, const T* y, int incy) {                             \
      T r;                                                                                         \
      cblas_##p##dotc_sub(n, x, incx, y, incy, &r);                                                \
      return r;                                                                                    \
    }                                                                                              \
    static void gemm(CBLAS_ORDER o, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,   \
                     T alpha, const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc) {   \
      cblas_##p##gemm(o, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);                  \
    }                                                                                              \
    static void trsm(CBLAS_ORDER o, CBLAS_SIDE sd, CBLAS_UPLO u, CBLAS_TRANSPOSE t, CBLAS_DIAG d,  \
                     int m, int n, T alpha, const T* a, int lda, T* b, int ldb) {                  \
      cblas_##p##trsm(o, sd, u, t, d, m, n, &alpha, a, lda, b, ldb);                               \
    }                                                                                              \
    static void trmm(CBLAS_ORDER o, CBLAS_SIDE sd, CBLAS_UPLO u, CBLAS_TRANSPOSE t, CBLAS_DIAG d,  \
                     int m, int n, T alpha, const T* a, int lda, T* b, int ldb) {                  \
      cblas_##p##trmm(o, sd, u, t, d, m, n, &alpha, a, lda, b, ldb);                               \
    }                                                                                              \
    static void symm(CBLAS_ORDER o, CBLAS_SIDE sd, CBLAS_UPLO u, int m, int n, T alpha,            \
                     const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc) {            \
      cblas_##p##symm(o, sd, u, m, n, &alpha, a, lda, b, ldb, &beta, c, ldc);                      \
    }                                                                                              \
    static void syrk(CBLAS_ORDER o, CBLAS_UPLO u, CBLAS_TRANSPOSE t, int n, int k, T alpha,        \
                     const T* a, int lda, T beta, T* c, int ldc) {                                 \
      cblas_##p##syrk(o, u, t, n, k, &alpha, a, lda, &beta, c, ldc);                               \
    }                                                                                              \
    static void geru(CBLAS_ORDER o, int m, int n, T alpha, const T* x, int incx, const T* y,       \
                     int incy, T* a, int lda) {                                                    \
      cblas_##p##geru(o, m, n, &alpha, x, incx, y, incy, a, lda);                                  \
    }                                                                                              \
    static void gerc(CBLAS_ORDER o, int m, int n, T alpha, const T* x, int incx, const T* y,       \
                     int incy, T* a, int lda) {                                                    \
      cblas_##p##gerc(o, m, n, &alpha, x, incx, y, incy, a, lda);                                  \
    }                                                                                              \
    static void hemv(CBLAS_ORDER o, CBLAS_UPLO u, int n, T alpha, const T* a, int lda, const T* x, \
                     int incx, T beta, T* y, int incy) {                                           \
      cblas_##p##hemv(o, u, n, &alpha, a, lda, x, incx, &beta, y, incy);                           \
    }                                                                                              \
    static void hbmv(CBLAS_ORDER o, CBLAS_UPLO u, int n, int k, T alpha, const T* a, int lda,      \
                     const T* x, int incx, T beta, T* y, int incy) {                               \
      cblas_##p##hbmv(o, u, n, k, &alpha, a, lda, x, incx, &beta, y, incy);                        \
    }                                                                                              \
    static void hpmv(CBLAS_ORDER o, CBLAS_UPLO u, int n, T alpha, const T* ap, const T* x,         \
                     int incx, T beta, T* y, int incy) {                                           \
      cblas_##p##hpmv(o, u, n, &alpha, ap, x, incx, &beta, y, incy);                               \
    }                                                                                              \
    static void her2(CBLAS_ORDER o, CBLAS_UPLO u, int n, T alpha, const T* x, int incx,            \
                     const T* y, int incy, T* a, int lda) {                                        \
      cblas_##p##her2(o, u, n, &alpha, x, incx, y, incy, a, lda);                                  \
    }                                                                                              \
    static void hpr2(CBLAS_ORDER o, CBLAS_UPLO u, int n, T alpha, const T* x, int incx,            \
                     const T* y, int incy, T* ap) {                                                \
      cblas_##p##hpr2(o, u, n, &alpha, x, incx, y, incy, ap);                                      \
    }                                                                                              \
    static void gbmv(CBLAS_ORDER o, CBLAS_TRANSPOSE t, int m, int n, int kl, int ku, T alpha,      \
                     const T* a, int lda, const T* x, int incx, T beta, T* y, int incy) {          \
      cblas_##p##gbmv(o, t, m, n, kl, ku, &alpha, a, lda, x, incx, &beta, y, incy);                \
    }                                                                                              \
    static void hemm(CBLAS_ORDER o, CBLAS_SIDE sd, CBLAS_UPLO u, int m, int n, T alpha,            \
                     const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc) {            \
      cblas_##p##hemm(o, sd, u, m, n, &alpha, a, lda, b, ldb, &beta, c, ldc);                      \
    }                                                                                              \
    static void syr2k(CBLAS_ORDER o, CBLAS_UPLO u, CBLAS_TRANSPOSE t, int n, int k, T alpha,       \
                      const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc) {           \
      cblas_##p##syr2k(o, u, t, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);                      \
    }                                                                                              \
    static void her2k(CBLAS_ORDER o, CBLAS_UPLO u, CBLAS_TRANSPOSE t, int n, int k, T alpha,       \
                      const T* a, int lda, const T* b, int ldb, R beta, T* c, int ldc) {           \
      cblas_##p##her2k(o, u, t, n, k, &alpha, a, lda, b, ldb, beta, c, ldc);                       \
    }                                                                                              \
    static constexpr auto getrf = &p##getrf_;                                                      \
    static constexpr auto getrs = &p##getrs_;                                                      \
    static constexpr auto her = &cblas_##p##her;                                                   \
    static constexpr auto hpr = &cblas_##p##hpr;                                                   \
    static constexpr auto herk = &cblas_##p##herk;                                                 \
    static constexpr auto rot = &cblas_##p##rp##rot; /* c and s real */                            \
    static constexpr auto trmv = &cblas_##p##trmv;                                                 \
    static constexpr auto trsv = &cblas_##p##trsv;                                                 \
    static constexpr auto tbmv = &cblas_##p##tbmv;                                                 \
    static constexpr auto tbsv = &cblas_##p##tbsv;                                                 \
    static constexpr auto tpmv = &cblas_##p##tpmv;                                                 \
    static constexpr auto tpsv = &cblas_##p##tpsv;                                                 \
    static constexpr auto copy = &cblas_##p##copy;                                                 \
    static constexpr auto swap = &cblas_##p##swap;                                                 \
    static constexpr auto iamax = &cblas_i##p##amax;                                               \
    static constexpr auto asum = &cblas_##rp##p##asum;                                             \
    static constexpr auto nrm2 = &cblas_##rp##p##nrm2;                                             \
  };
REMORA_COMPLEX_BLAS(cuComplex, float, c, s)
REMORA_COMPLEX_BLAS(cuDoubleComplex, double, z, d)
#undef REMORA_COMPLEX_BLAS

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
