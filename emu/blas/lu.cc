// emu/blas/lu.cc - batched LU factorisation, solve and inverse (S, D, C and Z), on OpenBLAS's
// LAPACK.
//
// Matrix arrays are device arrays of device pointers, read when the work runs.
// getrf's pivots (P, n per matrix, 1-based as LAPACK's) may be NULL: the
// factorisation then pivots not at all. info arrays are device memory, one
// LAPACK info per matrix, except getrsBatched's, a host int: its argument check.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <vector>

#include "emu/blas/blas.h"
#include "emu/blas/complex.h"
#include "emu/blas/openblas.h"

namespace remora::emu::blas {
namespace {

// LU without pivoting, in place, as LAPACK's getf2 (a zero pivot sets info to
// its 1-based column once and skips that column's scaling).
template <class T>
int LuNoPivot(int n, T* A, int lda) {
  int info = 0;
  auto at = [&](int i, int j) -> T& { return A[i + static_cast<ptrdiff_t>(j) * lda]; };
  for (int j = 0; j < n; ++j) {
    const T pivot = at(j, j);
    if (pivot != T{}) {
      for (int i = j + 1; i < n; ++i) at(i, j) /= pivot;
    } else if (info == 0) {
      info = j + 1;
    }
    for (int c = j + 1; c < n; ++c) {
      const T u = at(j, c);
      if (u == T{}) continue;
      for (int i = j + 1; i < n; ++i) at(i, c) -= at(i, j) * u;
    }
  }
  return info;
}

// The pivots of a matrix factored without pivoting: 1, 2, ..., n.
std::vector<int> IdentityPivots(int n) {
  std::vector<int> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 1);
  return p;
}

// Solves op(LU) X = B in place with LAPACK's getrs.
template <class T>
int Getrs(char trans, int n, int nrhs, const T* A, int lda, const int* piv, T* B, int ldb) {
  int info = 0;
  Blas<T>::getrs(&trans, &n, &nrhs, A, &lda, piv, B, &ldb, &info, 1);
  return info;
}

// The first zero on U's diagonal (1-based), or 0.
template <class T>
int ZeroPivot(int n, const T* A, int lda) {
  for (int i = 0; i < n; ++i) {
    if (A[i + static_cast<ptrdiff_t>(i) * lda] == T{}) return i + 1;
  }
  return 0;
}

// Writes the n x n identity into C (ldc).
template <class T>
void Identity(int n, T* C, int ldc) {
  for (int j = 0; j < n; ++j) {
    T* c = C + static_cast<ptrdiff_t>(j) * ldc;
    std::fill(c, c + n, T{});
    c[j] = One<T>();
  }
}

template <class T>
cublasStatus_t Getrf(cublasHandle_t h, int n, T* const A[], int lda, int* P, int* info, int batch) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(n >= 0 && ValidLd(lda, n) && batch >= 0);
  if (batch == 0) return CUBLAS_STATUS_SUCCESS;
  return call.Submit([=] {
    for (int b = 0; b < batch; ++b) {
      int st = 0;
      if (n > 0) {
        if (P != nullptr) {
          Blas<T>::getrf(&n, &n, A[b], &lda, P + static_cast<ptrdiff_t>(b) * n, &st);
        } else {
          st = LuNoPivot(n, A[b], lda);
        }
      }
      if (info != nullptr) info[b] = st;
    }
  });
}

template <class T>
cublasStatus_t Getrs(cublasHandle_t h, cublasOperation_t trans, int n, int nrhs, const T* const A[],
                     int lda, const int* piv, T* const B[], int ldb, int* info, int batch) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(info != nullptr);
  // info = -j: the j-th argument (after the handle) is illegal.
  int bad = 0;
  if (!ValidOp(trans)) {
    bad = -1;
  } else if (n < 0) {
    bad = -2;
  } else if (nrhs < 0) {
    bad = -3;
  } else if (!ValidLd(lda, n)) {
    bad = -5;
  } else if (!ValidLd(ldb, n)) {
    bad = -8;
  } else if (batch < 0) {
    bad = -10;
  }
  *info = bad;
  if (bad != 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (n == 0 || nrhs == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const char t = trans == CUBLAS_OP_N ? 'N' : trans == CUBLAS_OP_T ? 'T' : 'C';
  return call.Submit([=] {
    const std::vector<int> identity = piv == nullptr ? IdentityPivots(n) : std::vector<int>();
    for (int b = 0; b < batch; ++b) {
      const int* p = piv != nullptr ? piv + static_cast<ptrdiff_t>(b) * n : identity.data();
      Getrs(t, n, nrhs, A[b], lda, p, B[b], ldb);
    }
  });
}

// C[b] = inverse of the matrix whose LU (and pivots) is A[b]; info[b] is the
// first zero pivot (C[b] then undefined).
template <class T>
cublasStatus_t Getri(cublasHandle_t h, int n, const T* const A[], int lda, const int* piv,
                     T* const C[], int ldc, int* info, int batch) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(n >= 0 && ValidLd(lda, n) && ValidLd(ldc, n) && batch >= 0);
  if (batch == 0) return CUBLAS_STATUS_SUCCESS;
  return call.Submit([=] {
    const std::vector<int> identity = piv == nullptr ? IdentityPivots(n) : std::vector<int>();
    for (int b = 0; b < batch; ++b) {
      int st = 0;
      if (n > 0) {
        st = ZeroPivot(n, A[b], lda);
        if (st == 0) {
          const int* p = piv != nullptr ? piv + static_cast<ptrdiff_t>(b) * n : identity.data();
          Identity(n, C[b], ldc);
          Getrs('N', n, n, A[b], lda, p, C[b], ldc);
        }
      }
      if (info != nullptr) info[b] = st;
    }
  });
}

// Ainv[b] = inverse(A[b]) for n <= 32, A left unchanged; info[b] as getrf's.
template <class T>
cublasStatus_t Matinv(cublasHandle_t h, int n, const T* const A[], int lda, T* const Ainv[],
                      int lda_inv, int* info, int batch) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(n >= 0 && n <= 32 && ValidLd(lda, n) && ValidLd(lda_inv, n) && batch >= 0);
  if (batch == 0) return CUBLAS_STATUS_SUCCESS;
  return call.Submit([=] {
    std::vector<T> lu(static_cast<size_t>(n) * n);
    std::vector<int> p(static_cast<size_t>(n));
    for (int b = 0; b < batch; ++b) {
      int st = 0;
      if (n > 0) {
        for (int j = 0; j < n; ++j) {
          std::copy_n(A[b] + static_cast<ptrdiff_t>(j) * lda, n, lu.data() + j * n);
        }
        Blas<T>::getrf(&n, &n, lu.data(), &n, p.data(), &st);
        if (st == 0) {
          Identity(n, Ainv[b], lda_inv);
          Getrs('N', n, n, lu.data(), n, p.data(), Ainv[b], lda_inv);
        }
      }
      if (info != nullptr) info[b] = st;
    }
  });
}

}  // namespace
}  // namespace remora::emu::blas

using namespace remora::emu::blas;  // NOLINT: entry points are global by ABI

// The entry points, in S, D, C and Z.
#define LU(X, T)                                                                                   \
  REMORA_BLAS_API cublasStatus_t cublas##X##getrfBatched(cublasHandle_t h, int n, T* const A[],    \
                                                         int lda, int* P, int* info, int batch) {  \
    return Getrf(h, n, A, lda, P, info, batch);                                                    \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##getrsBatched(                                          \
      cublasHandle_t h, cublasOperation_t trans, int n, int nrhs, const T* const A[], int lda,     \
      const int* piv, T* const B[], int ldb, int* info, int batch) {                               \
    return Getrs(h, trans, n, nrhs, A, lda, piv, B, ldb, info, batch);                             \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##getriBatched(                                          \
      cublasHandle_t h, int n, const T* const A[], int lda, const int* piv, T* const C[], int ldc, \
      int* info, int batch) {                                                                      \
    return Getri(h, n, A, lda, piv, C, ldc, info, batch);                                          \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##matinvBatched(                                         \
      cublasHandle_t h, int n, const T* const A[], int lda, T* const Ainv[], int lda_inv,          \
      int* info, int batch) {                                                                      \
    return Matinv(h, n, A, lda, Ainv, lda_inv, info, batch);                                       \
  }
LU(S, float)
LU(D, double)
LU(C, cuComplex)
LU(Z, cuDoubleComplex)
#undef LU
