// emu/blas/level2.cc - level 2: gemv; ger (geru, gerc); symv, syr, syr2 (complex symmetric
// too), hemv, her, her2 and their packed and band forms; gbmv; and the triangular products and
// solves trmv/trsv, tbmv/tbsv, tpmv/tpsv; and the storage conversions tpttr and trttp.
//
// Argument checks follow reference BLAS's xerbla conditions, each reported as
// CUBLAS_STATUS_INVALID_VALUE; empty problems return without queueing work.
#include <type_traits>

#include "emu/blas/blas.h"
#include "emu/blas/complex.h"
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

// A += alpha x y^T, or alpha x y^H for a complex A with `conj` (gerc; geru without).
template <class T>
cublasStatus_t Ger(cublasHandle_t h, int m, int n, const T* alpha, const T* x, int incx, const T* y,
                   int incy, T* A, int lda, bool conj = false) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(m >= 0 && n >= 0 && incx != 0 && incy != 0 && ValidLd(lda, m));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  return call.Submit([=] {
    if constexpr (kIsComplex<T>)
      (conj ? Blas<T>::gerc : Blas<T>::geru)(CblasColMajor, m, n, a.get(), x, incx, y, incy, A,
                                             lda);
    else
      Blas<T>::ger(CblasColMajor, m, n, a.get(), x, incx, y, incy, A, lda);
  });
}

// A(i, j) of a symmetric matrix stored in its `uplo` triangle.
template <class T>
T Sym(const T* A, int lda, cublasFillMode_t uplo, int i, int j) {
  const bool stored = uplo == CUBLAS_FILL_MODE_UPPER ? i <= j : i >= j;
  return stored ? A[i + static_cast<ptrdiff_t>(j) * lda] : A[j + static_cast<ptrdiff_t>(i) * lda];
}

// y = alpha A x + beta y for a complex symmetric (not Hermitian) A: no CBLAS routine has it.
template <class T>
void ComplexSymv(cublasFillMode_t uplo, int n, T alpha, const T* A, int lda, const T* x, int incx,
                 T beta, T* y, int incy) {
  for (int i = 0; i < n; ++i) {
    T sum{};
    for (int j = 0; j < n; ++j) sum += Sym(A, lda, uplo, i, j) * x[VecOffset(j, n, incx)];
    T& yi = y[VecOffset(i, n, incy)];
    yi = beta == T{} ? alpha * sum : alpha * sum + beta * yi;  // beta 0: y is not read
  }
}

// y = alpha A x + beta y, A symmetric; a complex A is Hermitian (hemv) with `hermitian`.
template <class T>
cublasStatus_t Symv(cublasHandle_t h, cublasFillMode_t uplo, int n, const T* alpha, const T* A,
                    int lda, const T* x, int incx, const T* beta, T* y, int incy,
                    bool hermitian = false) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && n >= 0 && ValidLd(lda, n) && incx != 0 && incy != 0);
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    if constexpr (kIsComplex<T>) {
      if (hermitian)
        Blas<T>::hemv(CblasColMajor, ToCblas(uplo), n, a.get(), A, lda, x, incx, b.get(), y, incy);
      else
        ComplexSymv(uplo, n, a.get(), A, lda, x, incx, b.get(), y, incy);
    } else {
      Blas<T>::symv(CblasColMajor, ToCblas(uplo), n, a.get(), A, lda, x, incx, b.get(), y, incy);
    }
  });
}

// Storage of a triangular matrix: full (lda), band (k diagonals beside the main one, lda >= k+1)
// or packed (n(n+1)/2 elements).
enum class Storage { kFull, kBand, kPacked };

// x = op(A) x (trmv, tbmv, tpmv) or x = op(A)^-1 x (trsv, tbsv, tpsv).
template <class T, Storage kStore, bool kSolve>
cublasStatus_t Triangular(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans,
                          cublasDiagType_t diag, int n, int k, const T* A, int lda, T* x,
                          int incx) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && ValidOp(trans) && ValidDiag(diag) && n >= 0 && incx != 0);
  if constexpr (kStore == Storage::kFull) BLAS_CHECK_ARG(ValidLd(lda, n));
  if constexpr (kStore == Storage::kBand) BLAS_CHECK_ARG(k >= 0 && lda >= k + 1);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  return call.Submit([=] {
    const auto u = ToCblas(uplo);
    const auto t = ToCblas(trans);
    const auto d = ToCblas(diag);
    if constexpr (kStore == Storage::kFull)
      (kSolve ? Blas<T>::trsv : Blas<T>::trmv)(CblasColMajor, u, t, d, n, A, lda, x, incx);
    else if constexpr (kStore == Storage::kBand)
      (kSolve ? Blas<T>::tbsv : Blas<T>::tbmv)(CblasColMajor, u, t, d, n, k, A, lda, x, incx);
    else
      (kSolve ? Blas<T>::tpsv : Blas<T>::tpmv)(CblasColMajor, u, t, d, n, A, x, incx);
  });
}

// y = alpha op(A) x + beta y for a band matrix of kl sub- and ku super-diagonals.
template <class T>
cublasStatus_t Gbmv(cublasHandle_t h, cublasOperation_t trans, int m, int n, int kl, int ku,
                    const T* alpha, const T* A, int lda, const T* x, int incx, const T* beta, T* y,
                    int incy) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidOp(trans) && m >= 0 && n >= 0 && kl >= 0 && ku >= 0 && lda >= kl + ku + 1 &&
                 incx != 0 && incy != 0);
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    Blas<T>::gbmv(CblasColMajor, ToCblas(trans), m, n, kl, ku, a.get(), A, lda, x, incx, b.get(), y,
                  incy);
  });
}

// y = alpha A x + beta y for a symmetric (Hermitian for complex types: hbmv, hpmv) band
// (sbmv, k diagonals) or packed (spmv) matrix.
template <class T, Storage kStore>
cublasStatus_t SymmetricMv(cublasHandle_t h, cublasFillMode_t uplo, int n, int k, const T* alpha,
                           const T* A, int lda, const T* x, int incx, const T* beta, T* y,
                           int incy) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && n >= 0 && incx != 0 && incy != 0);
  if constexpr (kStore == Storage::kBand) BLAS_CHECK_ARG(k >= 0 && lda >= k + 1);
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    const auto u = ToCblas(uplo);
    if constexpr (kIsComplex<T> && kStore == Storage::kBand)
      Blas<T>::hbmv(CblasColMajor, u, n, k, a.get(), A, lda, x, incx, b.get(), y, incy);
    else if constexpr (kIsComplex<T>)
      Blas<T>::hpmv(CblasColMajor, u, n, a.get(), A, x, incx, b.get(), y, incy);
    else if constexpr (kStore == Storage::kBand)
      Blas<T>::sbmv(CblasColMajor, u, n, k, a.get(), A, lda, x, incx, b.get(), y, incy);
    else
      Blas<T>::spmv(CblasColMajor, u, n, a.get(), A, x, incx, b.get(), y, incy);
  });
}

// A += alpha x x^T (syr, spr) or, with kRank2, A += alpha (x y^T + y x^T) (syr2, spr2), in A's
// `uplo` triangle, full (lda) or packed. Complex types: the Hermitian rank-2 updates her2 and
// hpr2 only.
template <class T, Storage kStore, bool kRank2>
cublasStatus_t SymmetricUpdate(cublasHandle_t h, cublasFillMode_t uplo, int n, const T* alpha,
                               const T* x, int incx, const T* y, int incy, T* A, int lda) {
  static_assert(kRank2 || !kIsComplex<T>);
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && n >= 0 && incx != 0);
  if constexpr (kRank2) BLAS_CHECK_ARG(y != nullptr && incy != 0);
  if constexpr (kStore == Storage::kFull) BLAS_CHECK_ARG(ValidLd(lda, n));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  return call.Submit([=] {
    const auto u = ToCblas(uplo);
    constexpr bool kFull = kStore == Storage::kFull;
    if constexpr (kIsComplex<T> && kFull)
      Blas<T>::her2(CblasColMajor, u, n, a.get(), x, incx, y, incy, A, lda);
    else if constexpr (kIsComplex<T>)
      Blas<T>::hpr2(CblasColMajor, u, n, a.get(), x, incx, y, incy, A);
    else if constexpr (kRank2 && kFull)
      Blas<T>::syr2(CblasColMajor, u, n, a.get(), x, incx, y, incy, A, lda);
    else if constexpr (kRank2)
      Blas<T>::spr2(CblasColMajor, u, n, a.get(), x, incx, y, incy, A);
    else if constexpr (kFull)
      Blas<T>::syr(CblasColMajor, u, n, a.get(), x, incx, A, lda);
    else
      Blas<T>::spr(CblasColMajor, u, n, a.get(), x, incx, A);
  });
}

// A += alpha x x^H (her, full; hpr, packed) with a real alpha, in A's `uplo` triangle.
template <class T, Storage kStore, class R>
cublasStatus_t HermitianUpdate(cublasHandle_t h, cublasFillMode_t uplo, int n, const R* alpha,
                               const T* x, int incx, T* A, int lda) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && n >= 0 && incx != 0);
  if constexpr (kStore == Storage::kFull) BLAS_CHECK_ARG(ValidLd(lda, n));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<R> a = call.Read(alpha);
  return call.Submit([=] {
    if constexpr (kStore == Storage::kFull)
      Blas<T>::her(CblasColMajor, ToCblas(uplo), n, a.get(), x, incx, A, lda);
    else
      Blas<T>::hpr(CblasColMajor, ToCblas(uplo), n, a.get(), x, incx, A);
  });
}

// A += alpha x x^T (csyr) or, with `y`, alpha (x y^T + y x^T) (csyr2), A complex symmetric, in
// its `uplo` triangle: no CBLAS routine has them.
template <class T>
cublasStatus_t ComplexSymmetricUpdate(cublasHandle_t h, cublasFillMode_t uplo, int n,
                                      const T* alpha, const T* x, int incx, const T* y, int incy,
                                      T* A, int lda, bool rank2) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && n >= 0 && incx != 0 && ValidLd(lda, n));
  if (rank2) BLAS_CHECK_ARG(y != nullptr && incy != 0);
  BLAS_CHECK_ARG(alpha != nullptr);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  return call.Submit([=] {
    const T av = a.get();
    for (int j = 0; j < n; ++j) {
      const int lo = uplo == CUBLAS_FILL_MODE_UPPER ? 0 : j;
      const int hi = uplo == CUBLAS_FILL_MODE_UPPER ? j : n - 1;
      for (int i = lo; i <= hi; ++i) {
        T term = x[VecOffset(i, n, incx)] *
                 (rank2 ? y[VecOffset(j, n, incy)] : x[VecOffset(j, n, incx)]);
        if (rank2) term += y[VecOffset(i, n, incy)] * x[VecOffset(j, n, incx)];
        A[i + static_cast<ptrdiff_t>(j) * lda] += av * term;
      }
    }
  });
}

// Copies the `uplo` triangle of an n x n matrix from packed storage to full storage with leading
// dimension lda (tpttr, `to_full`) or from full to packed (trttp). A full matrix's other triangle
// is left as it was.
template <class T>
cublasStatus_t ConvertTriangle(cublasHandle_t h, cublasFillMode_t uplo, int n, const T* src, T* dst,
                               int lda, bool to_full) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && n >= 0 && ValidLd(lda, n));
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  return call.Submit([=] {
    const bool upper = uplo == CUBLAS_FILL_MODE_UPPER;
    ptrdiff_t packed = 0;  // the triangle, column by column
    for (int j = 0; j < n; ++j)
      for (int i = upper ? 0 : j; i <= (upper ? j : n - 1); ++i, ++packed) {
        const ptrdiff_t full = i + static_cast<ptrdiff_t>(j) * lda;
        dst[to_full ? full : packed] = src[to_full ? packed : full];
      }
  });
}

}  // namespace
}  // namespace remora::emu::blas

using namespace remora::emu::blas;  // NOLINT: entry points are global by ABI

#define TRIANGLE_STORAGE(X, T)                                                                    \
  REMORA_BLAS_API cublasStatus_t cublas##X##tpttr(cublasHandle_t h, cublasFillMode_t uplo, int n, \
                                                  const T* AP, T* A, int lda) {                   \
    return ConvertTriangle(h, uplo, n, AP, A, lda, true);                                         \
  }                                                                                               \
  REMORA_BLAS_API cublasStatus_t cublas##X##trttp(cublasHandle_t h, cublasFillMode_t uplo, int n, \
                                                  const T* A, int lda, T* AP) {                   \
    return ConvertTriangle(h, uplo, n, A, AP, lda, false);                                        \
  }
TRIANGLE_STORAGE(S, float)
TRIANGLE_STORAGE(D, double)
TRIANGLE_STORAGE(C, cuComplex)
TRIANGLE_STORAGE(Z, cuDoubleComplex)
#undef TRIANGLE_STORAGE

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

#define REAL_LEVEL2(X, T)                                                                          \
  REMORA_BLAS_API cublasStatus_t cublas##X##sbmv_v2(                                               \
      cublasHandle_t h, cublasFillMode_t uplo, int n, int k, const T* alpha, const T* A, int lda,  \
      const T* x, int incx, const T* beta, T* y, int incy) {                                       \
    return SymmetricMv<T, Storage::kBand>(h, uplo, n, k, alpha, A, lda, x, incx, beta, y, incy);   \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##spmv_v2(                                               \
      cublasHandle_t h, cublasFillMode_t uplo, int n, const T* alpha, const T* AP, const T* x,     \
      int incx, const T* beta, T* y, int incy) {                                                   \
    return SymmetricMv<T, Storage::kPacked>(h, uplo, n, 0, alpha, AP, 1, x, incx, beta, y, incy);  \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##syr_v2(cublasHandle_t h, cublasFillMode_t uplo, int n, \
                                                   const T* alpha, const T* x, int incx, T* A,     \
                                                   int lda) {                                      \
    return SymmetricUpdate<T, Storage::kFull, false>(h, uplo, n, alpha, x, incx, nullptr, 0, A,    \
                                                     lda);                                         \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##spr_v2(cublasHandle_t h, cublasFillMode_t uplo, int n, \
                                                   const T* alpha, const T* x, int incx, T* AP) {  \
    return SymmetricUpdate<T, Storage::kPacked, false>(h, uplo, n, alpha, x, incx, nullptr, 0, AP, \
                                                       1);                                         \
  }
REAL_LEVEL2(S, float)
REAL_LEVEL2(D, double)
#undef REAL_LEVEL2

#define COMPLEX_LEVEL2(X, T, R)                                                                    \
  REMORA_BLAS_API cublasStatus_t cublas##X##geru_v2(cublasHandle_t h, int m, int n,                \
                                                    const T* alpha, const T* x, int incx,          \
                                                    const T* y, int incy, T* A, int lda) {         \
    return Ger(h, m, n, alpha, x, incx, y, incy, A, lda, false);                                   \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##gerc_v2(cublasHandle_t h, int m, int n,                \
                                                    const T* alpha, const T* x, int incx,          \
                                                    const T* y, int incy, T* A, int lda) {         \
    return Ger(h, m, n, alpha, x, incx, y, incy, A, lda, true);                                    \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##hemv_v2(                                               \
      cublasHandle_t h, cublasFillMode_t uplo, int n, const T* alpha, const T* A, int lda,         \
      const T* x, int incx, const T* beta, T* y, int incy) {                                       \
    return Symv(h, uplo, n, alpha, A, lda, x, incx, beta, y, incy, true);                          \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##symv_v2(                                               \
      cublasHandle_t h, cublasFillMode_t uplo, int n, const T* alpha, const T* A, int lda,         \
      const T* x, int incx, const T* beta, T* y, int incy) {                                       \
    return Symv(h, uplo, n, alpha, A, lda, x, incx, beta, y, incy);                                \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##syr_v2(cublasHandle_t h, cublasFillMode_t uplo, int n, \
                                                   const T* alpha, const T* x, int incx, T* A,     \
                                                   int lda) {                                      \
    return ComplexSymmetricUpdate<T>(h, uplo, n, alpha, x, incx, nullptr, 0, A, lda, false);       \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##syr2_v2(cublasHandle_t h, cublasFillMode_t uplo,       \
                                                    int n, const T* alpha, const T* x, int incx,   \
                                                    const T* y, int incy, T* A, int lda) {         \
    return ComplexSymmetricUpdate(h, uplo, n, alpha, x, incx, y, incy, A, lda, true);              \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##her_v2(cublasHandle_t h, cublasFillMode_t uplo, int n, \
                                                   const R* alpha, const T* x, int incx, T* A,     \
                                                   int lda) {                                      \
    return HermitianUpdate<T, Storage::kFull>(h, uplo, n, alpha, x, incx, A, lda);                 \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##hpr_v2(cublasHandle_t h, cublasFillMode_t uplo, int n, \
                                                   const R* alpha, const T* x, int incx, T* AP) {  \
    return HermitianUpdate<T, Storage::kPacked>(h, uplo, n, alpha, x, incx, AP, 1);                \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##hbmv_v2(                                               \
      cublasHandle_t h, cublasFillMode_t uplo, int n, int k, const T* alpha, const T* A, int lda,  \
      const T* x, int incx, const T* beta, T* y, int incy) {                                       \
    return SymmetricMv<T, Storage::kBand>(h, uplo, n, k, alpha, A, lda, x, incx, beta, y, incy);   \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##hpmv_v2(                                               \
      cublasHandle_t h, cublasFillMode_t uplo, int n, const T* alpha, const T* AP, const T* x,     \
      int incx, const T* beta, T* y, int incy) {                                                   \
    return SymmetricMv<T, Storage::kPacked>(h, uplo, n, 0, alpha, AP, 1, x, incx, beta, y, incy);  \
  }
COMPLEX_LEVEL2(C, cuComplex, float)
COMPLEX_LEVEL2(Z, cuDoubleComplex, double)
#undef COMPLEX_LEVEL2

// The triangular products and solves and gbmv, in S, D, C and Z.
#define TRIANGULAR_LEVEL2(X, T)                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##trmv_v2(                                           \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, \
      int n, const T* A, int lda, T* x, int incx) {                                            \
    return Triangular<T, Storage::kFull, false>(h, uplo, trans, diag, n, 0, A, lda, x, incx);  \
  }                                                                                            \
  REMORA_BLAS_API cublasStatus_t cublas##X##trsv_v2(                                           \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, \
      int n, const T* A, int lda, T* x, int incx) {                                            \
    return Triangular<T, Storage::kFull, true>(h, uplo, trans, diag, n, 0, A, lda, x, incx);   \
  }                                                                                            \
  REMORA_BLAS_API cublasStatus_t cublas##X##tbmv_v2(                                           \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, \
      int n, int k, const T* A, int lda, T* x, int incx) {                                     \
    return Triangular<T, Storage::kBand, false>(h, uplo, trans, diag, n, k, A, lda, x, incx);  \
  }                                                                                            \
  REMORA_BLAS_API cublasStatus_t cublas##X##tbsv_v2(                                           \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, \
      int n, int k, const T* A, int lda, T* x, int incx) {                                     \
    return Triangular<T, Storage::kBand, true>(h, uplo, trans, diag, n, k, A, lda, x, incx);   \
  }                                                                                            \
  REMORA_BLAS_API cublasStatus_t cublas##X##tpmv_v2(                                           \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, \
      int n, const T* AP, T* x, int incx) {                                                    \
    return Triangular<T, Storage::kPacked, false>(h, uplo, trans, diag, n, 0, AP, 1, x, incx); \
  }                                                                                            \
  REMORA_BLAS_API cublasStatus_t cublas##X##tpsv_v2(                                           \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, \
      int n, const T* AP, T* x, int incx) {                                                    \
    return Triangular<T, Storage::kPacked, true>(h, uplo, trans, diag, n, 0, AP, 1, x, incx);  \
  }                                                                                            \
  REMORA_BLAS_API cublasStatus_t cublas##X##gbmv_v2(                                           \
      cublasHandle_t h, cublasOperation_t trans, int m, int n, int kl, int ku, const T* alpha, \
      const T* A, int lda, const T* x, int incx, const T* beta, T* y, int incy) {              \
    return Gbmv(h, trans, m, n, kl, ku, alpha, A, lda, x, incx, beta, y, incy);                \
  }
TRIANGULAR_LEVEL2(S, float)
TRIANGULAR_LEVEL2(D, double)
TRIANGULAR_LEVEL2(C, cuComplex)
TRIANGULAR_LEVEL2(Z, cuDoubleComplex)
#undef TRIANGULAR_LEVEL2

// The rank-2 updates, full and packed: syr2 and spr2 in S and D, her2 and hpr2 in C and Z.
#define RANK2_LEVEL2(X, T, FULL, PACKED)                                                           \
  REMORA_BLAS_API cublasStatus_t cublas##X##FULL##_v2(cublasHandle_t h, cublasFillMode_t uplo,     \
                                                      int n, const T* alpha, const T* x, int incx, \
                                                      const T* y, int incy, T* A, int lda) {       \
    return SymmetricUpdate<T, Storage::kFull, true>(h, uplo, n, alpha, x, incx, y, incy, A, lda);  \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##PACKED##_v2(cublasHandle_t h, cublasFillMode_t uplo,   \
                                                        int n, const T* alpha, const T* x,         \
                                                        int incx, const T* y, int incy, T* AP) {   \
    return SymmetricUpdate<T, Storage::kPacked, true>(h, uplo, n, alpha, x, incx, y, incy, AP, 1); \
  }
RANK2_LEVEL2(S, float, syr2, spr2)
RANK2_LEVEL2(D, double, syr2, spr2)
RANK2_LEVEL2(C, cuComplex, her2, hpr2)
RANK2_LEVEL2(Z, cuDoubleComplex, her2, hpr2)
#undef RANK2_LEVEL2
