// emu/blas/level3.cc - level 3: gemm (S/D/C/Z; C/Z batched and strided batched too, and gemm3m),
// symm, hemm, syrk, herk, syr2k, her2k, syrkx, herkx, trsm, trmm (out of place, as cuBLAS v2),
// and the BLAS-like extensions geam and dgmm.
#include <cuComplex.h>

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "emu/blas/blas.h"
#include "emu/blas/complex.h"
#include "emu/blas/openblas.h"

namespace remora::emu::blas {
namespace {

// Rows of op(X) for a stored matrix X: op(X) is `rows` x `cols`.
inline int StoredRows(cublasOperation_t op, int rows, int cols) {
  return op == CUBLAS_OP_N ? rows : cols;
}

// C = alpha op(A) op(B) + beta C, or `batch` of them with the matrices sa, sb and sc elements
// apart (strided batched gemm).
template <class T>
cublasStatus_t Gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta,
                    T* C, int ldc, int batch = 1, long long sa = 0, long long sb = 0,
                    long long sc = 0) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidOp(ta) && ValidOp(tb) && m >= 0 && n >= 0 && k >= 0 && batch >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, StoredRows(ta, m, k)) && ValidLd(ldb, StoredRows(tb, k, n)) &&
                 ValidLd(ldc, m));
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    const T av = a.get();
    const T bv = b.get();
    for (int i = 0; i < batch; ++i) {
      const T* ai = A + i * sa;
      const T* bi = B + i * sb;
      T* ci = C + i * sc;
      Blas<T>::gemm(CblasColMajor, ToCblas(ta), ToCblas(tb), m, n, k, av, ai, lda, bi, ldb, bv, ci,
                    ldc);
    }
  });
}

// Gemm over `batch` matrices named by device arrays of pointers.
template <class T>
cublasStatus_t GemmBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const T* alpha, const T* const A[], int lda,
                           const T* const B[], int ldb, const T* beta, T* const C[], int ldc,
                           int batch) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidOp(ta) && ValidOp(tb) && m >= 0 && n >= 0 && k >= 0 && batch >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, StoredRows(ta, m, k)) && ValidLd(ldb, StoredRows(tb, k, n)) &&
                 ValidLd(ldc, m));
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  BLAS_CHECK_ARG(A != nullptr && B != nullptr && C != nullptr);
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    for (int i = 0; i < batch; ++i)
      Blas<T>::gemm(CblasColMajor, ToCblas(ta), ToCblas(tb), m, n, k, a.get(), A[i], lda, B[i], ldb,
                    b.get(), C[i], ldc);
  });
}

// C = alpha A B + beta C (left) or alpha B A + beta C (right), A symmetric, or Hermitian with
// `hermitian` (hemm, complex types).
template <class T>
cublasStatus_t Symm(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, int m, int n,
                    const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C,
                    int ldc, bool hermitian = false) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidSide(side) && ValidFill(uplo) && m >= 0 && n >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, side == CUBLAS_SIDE_LEFT ? m : n) && ValidLd(ldb, m) &&
                 ValidLd(ldc, m));
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    auto product = Blas<T>::symm;
    if constexpr (!std::is_floating_point_v<T>)
      if (hermitian) product = Blas<T>::hemm;
    product(CblasColMajor, ToCblas(side), ToCblas(uplo), m, n, a.get(), A, lda, B, ldb, b.get(), C,
            ldc);
  });
}

template <class T>
cublasStatus_t Syrk(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,
                    const T* alpha, const T* A, int lda, const T* beta, T* C, int ldc) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && ValidOp(trans) && n >= 0 && k >= 0);
  if constexpr (!std::is_floating_point_v<T>)  // a complex symmetric product: N or T only
    BLAS_CHECK_ARG(trans != CUBLAS_OP_C);
  BLAS_CHECK_ARG(ValidLd(lda, StoredRows(trans, n, k)) && ValidLd(ldc, n));
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    Blas<T>::syrk(CblasColMajor, ToCblas(uplo), ToCblas(trans), n, k, a.get(), A, lda, b.get(), C,
                  ldc);
  });
}

// The rank-k updates' transpose: a real one takes N, T or C; a complex symmetric one N or T; a
// Hermitian one N or C.
template <class T>
bool ValidRankKOp(cublasOperation_t trans, bool hermitian) {
  if (!ValidOp(trans)) return false;
  if (!kIsComplex<T>) return true;
  return trans != (hermitian ? CUBLAS_OP_T : CUBLAS_OP_C);
}

// C = alpha op(A) op(A)^H + beta C in C's `uplo` triangle, alpha and beta real.
template <class T, class R>
cublasStatus_t Herk(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,
                    const R* alpha, const T* A, int lda, const R* beta, T* C, int ldc) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && ValidRankKOp<T>(trans, true) && n >= 0 && k >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, StoredRows(trans, n, k)) && ValidLd(ldc, n));
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<R> a = call.Read(alpha);
  const Scalar<R> b = call.Read(beta);
  return call.Submit([=] {
    Blas<T>::herk(CblasColMajor, ToCblas(uplo), ToCblas(trans), n, k, a.get(), A, lda, b.get(), C,
                  ldc);
  });
}

// C = alpha (op(A) op(B)^T + op(B) op(A)^T) + beta C (syr2k), or, with `syrkx`,
// C = alpha op(A) op(B)^T + beta C; either in C's `uplo` triangle only. With a real beta type
// B (her2k, herkx), the Hermitian forms: ^H for ^T, conj(alpha) on the second product, and the
// diagonal's imaginary parts set to zero.
template <class T, class B = T>
cublasStatus_t Syr2k(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,
                     const T* alpha, const T* A, int lda, const T* Bm, int ldb, const B* beta, T* C,
                     int ldc, bool syrkx) {
  constexpr bool kHermitian = !std::is_same_v<T, B>;
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidFill(uplo) && ValidRankKOp<T>(trans, kHermitian) && n >= 0 && k >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, StoredRows(trans, n, k)) && ValidLd(ldb, StoredRows(trans, n, k)) &&
                 ValidLd(ldc, n));
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<B> b = call.Read(beta);
  return call.Submit([=] {
    if (!syrkx) {
      if constexpr (kHermitian)
        Blas<T>::her2k(CblasColMajor, ToCblas(uplo), ToCblas(trans), n, k, a.get(), A, lda, Bm, ldb,
                       b.get(), C, ldc);
      else
        Blas<T>::syr2k(CblasColMajor, ToCblas(uplo), ToCblas(trans), n, k, a.get(), A, lda, Bm, ldb,
                       b.get(), C, ldc);
      return;
    }
    const bool no_trans = trans == CUBLAS_OP_N;
    const CBLAS_TRANSPOSE other = kHermitian ? CblasConjTrans : CblasTrans;
    std::vector<T> product(static_cast<size_t>(n) * n);
    Blas<T>::gemm(CblasColMajor, no_trans ? CblasNoTrans : other, no_trans ? other : CblasNoTrans,
                  n, n, k, a.get(), A, lda, Bm, ldb, T{}, product.data(), n);
    T bv{};
    if constexpr (kHermitian)
      bv.x = b.get();
    else
      bv = b.get();
    for (int j = 0; j < n; ++j) {
      const int lo = uplo == CUBLAS_FILL_MODE_UPPER ? 0 : j;
      const int hi = uplo == CUBLAS_FILL_MODE_UPPER ? j : n - 1;
      for (int i = lo; i <= hi; ++i) {
        T& c = C[i + static_cast<size_t>(j) * ldc];
        const T p = product[i + static_cast<size_t>(j) * n];
        c = bv == T{} ? p : p + bv * c;  // beta 0: C is not read, as in cuBLAS
        if constexpr (kHermitian)
          if (i == j) c.y = 0;
      }
    }
  });
}

template <class T>
cublasStatus_t Trsm(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,
                    cublasOperation_t trans, cublasDiagType_t diag, int m, int n, const T* alpha,
                    const T* A, int lda, T* B, int ldb) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidSide(side) && ValidFill(uplo) && ValidOp(trans) && ValidDiag(diag) &&
                 m >= 0 && n >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, side == CUBLAS_SIDE_LEFT ? m : n) && ValidLd(ldb, m));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  return call.Submit([=] {
    Blas<T>::trsm(CblasColMajor, ToCblas(side), ToCblas(uplo), ToCblas(trans), ToCblas(diag), m, n,
                  a.get(), A, lda, B, ldb);
  });
}

// `batch` triangular solves, the matrices named by device arrays of pointers.
template <class T>
cublasStatus_t TrsmBatched(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,
                           cublasOperation_t trans, cublasDiagType_t diag, int m, int n,
                           const T* alpha, const T* const A[], int lda, T* const B[], int ldb,
                           int batch) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidSide(side) && ValidFill(uplo) && ValidOp(trans) && ValidDiag(diag) &&
                 m >= 0 && n >= 0 && batch >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, side == CUBLAS_SIDE_LEFT ? m : n) && ValidLd(ldb, m));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  return call.Submit([=] {
    for (int i = 0; i < batch; ++i)
      Blas<T>::trsm(CblasColMajor, ToCblas(side), ToCblas(uplo), ToCblas(trans), ToCblas(diag), m,
                    n, a.get(), A[i], lda, B[i], ldb);
  });
}

// Copies the m x n matrix `src` (leading dimension lds) to `dst` (ldd).
template <class T>
void CopyMatrix(int m, int n, const T* src, int lds, T* dst, int ldd) {
  if (src == dst) return;
  for (int j = 0; j < n; ++j) {
    std::memmove(dst + static_cast<ptrdiff_t>(j) * ldd, src + static_cast<ptrdiff_t>(j) * lds,
                 sizeof(T) * static_cast<size_t>(m));
  }
}

// C = alpha * op(A) * B (left) or alpha * B * op(A) (right); B may be C
// itself (in place) when ldb == ldc.
template <class T>
cublasStatus_t Trmm(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,
                    cublasOperation_t trans, cublasDiagType_t diag, int m, int n, const T* alpha,
                    const T* A, int lda, const T* B, int ldb, T* C, int ldc) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidSide(side) && ValidFill(uplo) && ValidOp(trans) && ValidDiag(diag) &&
                 m >= 0 && n >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, side == CUBLAS_SIDE_LEFT ? m : n) && ValidLd(ldb, m) &&
                 ValidLd(ldc, m));
  BLAS_CHECK_ARG(B != C || ldb == ldc);
  BLAS_CHECK_ARG(alpha != nullptr);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  return call.Submit([=] {
    CopyMatrix(m, n, B, ldb, C, ldc);
    Blas<T>::trmm(CblasColMajor, ToCblas(side), ToCblas(uplo), ToCblas(trans), ToCblas(diag), m, n,
                  a.get(), A, lda, C, ldc);
  });
}

// Element (i, j) of op(X) for a real matrix X stored with leading dimension ld.
template <class T>
T OpAt(const T* X, int ld, cublasOperation_t op, int i, int j) {
  if (op == CUBLAS_OP_N) return X[i + static_cast<ptrdiff_t>(j) * ld];
  const T v = X[j + static_cast<ptrdiff_t>(i) * ld];
  return op == CUBLAS_OP_C ? Conj(v) : v;
}

// C = alpha * op(A) + beta * op(B). A zero scale leaves its matrix unread. C
// may be A (op N, lda == ldc) or B (op N, ldb == ldc); other overlaps are
// refused as by cuBLAS.
template <class T>
cublasStatus_t Geam(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    const T* alpha, const T* A, int lda, const T* beta, const T* B, int ldb, T* C,
                    int ldc) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidOp(ta) && ValidOp(tb) && m >= 0 && n >= 0);
  BLAS_CHECK_ARG(ValidLd(lda, StoredRows(ta, m, n)) && ValidLd(ldb, StoredRows(tb, m, n)) &&
                 ValidLd(ldc, m));
  BLAS_CHECK_ARG(A != C || (ta == CUBLAS_OP_N && lda == ldc));
  BLAS_CHECK_ARG(B != C || (tb == CUBLAS_OP_N && ldb == ldc));
  BLAS_CHECK_ARG(alpha != nullptr && beta != nullptr);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  const Scalar<T> b = call.Read(beta);
  return call.Submit([=] {
    const T av = a.get();
    const T bv = b.get();
    for (int j = 0; j < n; ++j) {
      T* c = C + static_cast<ptrdiff_t>(j) * ldc;
      for (int i = 0; i < m; ++i) {
        T v{};
        if (av != T{}) v += av * OpAt(A, lda, ta, i, j);
        if (bv != T{}) v += bv * OpAt(B, ldb, tb, i, j);
        c[i] = v;
      }
    }
  });
}

// C = A * diag(x) (right) or diag(x) * A (left); |incx| is x's stride, its sign
// the direction, and incx == 0 repeats x[0]. C may be A when lda == ldc.
template <class T>
cublasStatus_t Dgmm(cublasHandle_t h, cublasSideMode_t side, int m, int n, const T* A, int lda,
                    const T* x, int incx, T* C, int ldc) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(ValidSide(side) && m >= 0 && n >= 0 && ValidLd(lda, m) && ValidLd(ldc, m));
  BLAS_CHECK_ARG(A != C || lda == ldc);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  return call.Submit([=] {
    const int len = side == CUBLAS_SIDE_LEFT ? m : n;
    auto xi = [&](int i) {
      const ptrdiff_t step = incx;
      return incx >= 0 ? x[i * step] : x[(len - 1 - i) * -step];
    };
    for (int j = 0; j < n; ++j) {
      const T* a = A + static_cast<ptrdiff_t>(j) * lda;
      T* c = C + static_cast<ptrdiff_t>(j) * ldc;
      if (side == CUBLAS_SIDE_RIGHT) {
        const T s = xi(j);
        for (int i = 0; i < m; ++i) c[i] = a[i] * s;
      } else {
        for (int i = 0; i < m; ++i) c[i] = a[i] * xi(i);
      }
    }
  });
}

}  // namespace
}  // namespace remora::emu::blas

using namespace remora::emu::blas;  // NOLINT: entry points are global by ABI

REMORA_BLAS_API cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta,
                                              cublasOperation_t tb, int m, int n, int k,
                                              const float* alpha, const float* A, int lda,
                                              const float* B, int ldb, const float* beta, float* C,
                                              int ldc) {
  return Gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
REMORA_BLAS_API cublasStatus_t cublasDgemm_v2(cublasHandle_t h, cublasOperation_t ta,
                                              cublasOperation_t tb, int m, int n, int k,
                                              const double* alpha, const double* A, int lda,
                                              const double* B, int ldb, const double* beta,
                                              double* C, int ldc) {
  return Gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
REMORA_BLAS_API cublasStatus_t cublasCgemm_v2(cublasHandle_t h, cublasOperation_t ta,
                                              cublasOperation_t tb, int m, int n, int k,
                                              const cuComplex* alpha, const cuComplex* A, int lda,
                                              const cuComplex* B, int ldb, const cuComplex* beta,
                                              cuComplex* C, int ldc) {
  return Gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
REMORA_BLAS_API cublasStatus_t cublasZgemm_v2(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const cuDoubleComplex* alpha, const cuDoubleComplex* A, int lda, const cuDoubleComplex* B,
    int ldb, const cuDoubleComplex* beta, cuDoubleComplex* C, int ldc) {
  return Gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
// Complex strided batches (the real ones are gemm_ex.cc's, through its typed description).
REMORA_BLAS_API cublasStatus_t cublasCgemmStridedBatched(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const cuComplex* alpha, const cuComplex* A, int lda, long long sa, const cuComplex* B, int ldb,
    long long sb, const cuComplex* beta, cuComplex* C, int ldc, long long sc, int batch) {
  return Gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, batch, sa, sb, sc);
}
REMORA_BLAS_API cublasStatus_t cublasZgemmStridedBatched(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const cuDoubleComplex* alpha, const cuDoubleComplex* A, int lda, long long sa,
    const cuDoubleComplex* B, int ldb, long long sb, const cuDoubleComplex* beta,
    cuDoubleComplex* C, int ldc, long long sc, int batch) {
  return Gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, batch, sa, sb, sc);
}
REMORA_BLAS_API cublasStatus_t cublasSgeam(cublasHandle_t h, cublasOperation_t ta,
                                           cublasOperation_t tb, int m, int n, const float* alpha,
                                           const float* A, int lda, const float* beta,
                                           const float* B, int ldb, float* C, int ldc) {
  return Geam(h, ta, tb, m, n, alpha, A, lda, beta, B, ldb, C, ldc);
}
REMORA_BLAS_API cublasStatus_t cublasDgeam(cublasHandle_t h, cublasOperation_t ta,
                                           cublasOperation_t tb, int m, int n, const double* alpha,
                                           const double* A, int lda, const double* beta,
                                           const double* B, int ldb, double* C, int ldc) {
  return Geam(h, ta, tb, m, n, alpha, A, lda, beta, B, ldb, C, ldc);
}
REMORA_BLAS_API cublasStatus_t cublasSdgmm(cublasHandle_t h, cublasSideMode_t mode, int m, int n,
                                           const float* A, int lda, const float* x, int incx,
                                           float* C, int ldc) {
  return Dgmm(h, mode, m, n, A, lda, x, incx, C, ldc);
}
REMORA_BLAS_API cublasStatus_t cublasDdgmm(cublasHandle_t h, cublasSideMode_t mode, int m, int n,
                                           const double* A, int lda, const double* x, int incx,
                                           double* C, int ldc) {
  return Dgmm(h, mode, m, n, A, lda, x, incx, C, ldc);
}

#define REAL_SYR2K(X, T)                                                                        \
  REMORA_BLAS_API cublasStatus_t cublas##X##syr2k_v2(                                           \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,           \
      const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) { \
    return Syr2k(h, uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc, false);             \
  }                                                                                             \
  REMORA_BLAS_API cublasStatus_t cublas##X##syrkx(                                              \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,           \
      const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) { \
    return Syr2k(h, uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc, true);              \
  }
REAL_SYR2K(S, float)
REAL_SYR2K(D, double)
#undef REAL_SYR2K

// symm, syrk, trsm and trmm in S, D, C and Z.
#define LEVEL3(X, T)                                                                             \
  REMORA_BLAS_API cublasStatus_t cublas##X##symm_v2(                                             \
      cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, int m, int n,              \
      const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {  \
    return Symm(h, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc);                       \
  }                                                                                              \
  REMORA_BLAS_API cublasStatus_t cublas##X##syrk_v2(                                             \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,            \
      const T* alpha, const T* A, int lda, const T* beta, T* C, int ldc) {                       \
    return Syrk(h, uplo, trans, n, k, alpha, A, lda, beta, C, ldc);                              \
  }                                                                                              \
  REMORA_BLAS_API cublasStatus_t cublas##X##trsm_v2(                                             \
      cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t trans,   \
      cublasDiagType_t diag, int m, int n, const T* alpha, const T* A, int lda, T* B, int ldb) { \
    return Trsm(h, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb);                        \
  }                                                                                              \
  REMORA_BLAS_API cublasStatus_t cublas##X##trmm_v2(                                             \
      cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t trans,   \
      cublasDiagType_t diag, int m, int n, const T* alpha, const T* A, int lda, const T* B,      \
      int ldb, T* C, int ldc) {                                                                  \
    return Trmm(h, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, C, ldc);                \
  }
LEVEL3(S, float)
LEVEL3(D, double)
LEVEL3(C, cuComplex)
LEVEL3(Z, cuDoubleComplex)
#undef LEVEL3

#define TRSM_BATCHED(X, T)                                                                     \
  REMORA_BLAS_API cublasStatus_t cublas##X##trsmBatched(                                       \
      cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t trans, \
      cublasDiagType_t diag, int m, int n, const T* alpha, const T* const A[], int lda,        \
      T* const B[], int ldb, int batchCount) {                                                 \
    return TrsmBatched(h, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, batchCount);   \
  }
TRSM_BATCHED(S, float)
TRSM_BATCHED(D, double)
TRSM_BATCHED(C, cuComplex)
TRSM_BATCHED(Z, cuDoubleComplex)
#undef TRSM_BATCHED

// The complex symmetric and Hermitian rank-k updates, geam, dgmm, batches and gemm3m.
#define COMPLEX_LEVEL3(X, T, R)                                                                    \
  REMORA_BLAS_API cublasStatus_t cublas##X##syr2k_v2(                                              \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,              \
      const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {    \
    return Syr2k(h, uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc, false);                \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##syrkx(                                                 \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,              \
      const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {    \
    return Syr2k(h, uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc, true);                 \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##her2k_v2(                                              \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,              \
      const T* alpha, const T* A, int lda, const T* B, int ldb, const R* beta, T* C, int ldc) {    \
    return Syr2k(h, uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc, false);                \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##herkx(                                                 \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,              \
      const T* alpha, const T* A, int lda, const T* B, int ldb, const R* beta, T* C, int ldc) {    \
    return Syr2k(h, uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc, true);                 \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##herk_v2(                                               \
      cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,              \
      const R* alpha, const T* A, int lda, const R* beta, T* C, int ldc) {                         \
    return Herk(h, uplo, trans, n, k, alpha, A, lda, beta, C, ldc);                                \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##geam(                                                  \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, const T* alpha,  \
      const T* A, int lda, const T* beta, const T* B, int ldb, T* C, int ldc) {                    \
    return Geam(h, ta, tb, m, n, alpha, A, lda, beta, B, ldb, C, ldc);                             \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##dgmm(cublasHandle_t h, cublasSideMode_t mode, int m,   \
                                                 int n, const T* A, int lda, const T* x, int incx, \
                                                 T* C, int ldc) {                                  \
    return Dgmm(h, mode, m, n, A, lda, x, incx, C, ldc);                                           \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##gemmBatched(                                           \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,           \
      const T* alpha, const T* const A[], int lda, const T* const B[], int ldb, const T* beta,     \
      T* const C[], int ldc, int batchCount) {                                                     \
    return GemmBatched(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, batchCount);       \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##gemm3m(                                                \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,           \
      const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {    \
    return Gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);                          \
  }
COMPLEX_LEVEL3(C, cuComplex, float)
COMPLEX_LEVEL3(Z, cuDoubleComplex, double)
#undef COMPLEX_LEVEL3

#define HEMM(X, T)                                                                              \
  REMORA_BLAS_API cublasStatus_t cublas##X##hemm_v2(                                            \
      cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, int m, int n,             \
      const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) { \
    return Symm(h, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc, true);                \
  }
HEMM(C, cuComplex)
HEMM(Z, cuDoubleComplex)
#undef HEMM
