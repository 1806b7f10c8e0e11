// emu/blas/level1.cc - level 1: axpy, dot, nrm2, scal, asum, i*amax/i*amin,
// copy, swap, rot (float and double), and complex dotu and dotc.
//
// As reference BLAS: n <= 0 does nothing (a reduction yields 0); increments may
// be negative (the vector is walked from its far end), and nrm2, asum, scal and
// the index reductions treat incx <= 0 like n <= 0.
#include <cuComplex.h>

#include <cmath>
#include <type_traits>

#include "emu/blas/blas.h"
#include "emu/blas/openblas.h"

namespace remora::emu::blas {
namespace {

template <class T>
cublasStatus_t Axpy(cublasHandle_t h, int n, const T* alpha, const T* x, int incx, T* y, int incy) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  return call.Submit([=] { Blas<T>::axpy(n, a.get(), x, incx, y, incy); });
}

// x . y; of complex vectors with x conjugated when `conjugate` (dotc), else not (dotu).
template <class T>
cublasStatus_t Dot(cublasHandle_t h, int n, const T* x, int incx, const T* y, int incy, T* result,
                   bool conjugate = false) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  return call.Reduce(result, [=]() -> T {
    T r{};
    if (n <= 0) return r;
    if constexpr (std::is_same_v<T, cuComplex>)
      (conjugate ? cblas_cdotc_sub : cblas_cdotu_sub)(n, x, incx, y, incy, &r);
    else if constexpr (std::is_same_v<T, cuDoubleComplex>)
      (conjugate ? cblas_zdotc_sub : cblas_zdotu_sub)(n, x, incx, y, incy, &r);
    else
      r = Blas<T>::dot(n, x, incx, y, incy);
    return r;
  });
}

// R: the result's type, real for complex vectors.
template <class T, class R>
cublasStatus_t Nrm2(cublasHandle_t h, int n, const T* x, int incx, R* result) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  return call.Reduce(result,
                     [=]() -> R { return n <= 0 || incx <= 0 ? R{0} : Blas<T>::nrm2(n, x, incx); });
}

// The sum of |x_i| (of |Re| + |Im| for complex vectors, as BLAS defines it).
template <class T, class R>
cublasStatus_t Asum(cublasHandle_t h, int n, const T* x, int incx, R* result) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  return call.Reduce(result,
                     [=]() -> R { return n <= 0 || incx <= 0 ? R{0} : Blas<T>::asum(n, x, incx); });
}

// |x|, or |Re| + |Im| for a complex x: what BLAS's index reductions compare.
template <class T>
auto Magnitude(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::abs(v);
  else
    return std::abs(v.x) + std::abs(v.y);
}

template <class T>
cublasStatus_t Scal(cublasHandle_t h, int n, const T* alpha, T* x, int incx) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (n <= 0 || incx <= 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> a = call.Read(alpha);
  return call.Submit([=] { Blas<T>::scal(n, a.get(), x, incx); });
}

// A complex vector scaled by a real alpha (csscal, zdscal).
template <class T, class R>
cublasStatus_t ScalReal(cublasHandle_t h, int n, const R* alpha, T* x, int incx) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (n <= 0 || incx <= 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<R> a = call.Read(alpha);
  return call.Submit([=] { Blas<T>::scal_real(n, a.get(), x, incx); });
}

// The 1-based index of the first element of largest (`max`) or smallest
// magnitude; 0 when n <= 0 or incx <= 0.
template <class T>
cublasStatus_t Iamaxmin(cublasHandle_t h, int n, const T* x, int incx, int* result, bool max) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  return call.Reduce(result, [=]() -> int {
    if (n <= 0 || incx <= 0) return 0;
    if (max) return static_cast<int>(Blas<T>::iamax(n, x, incx)) + 1;
    int best = 0;
    auto best_abs = Magnitude(x[0]);
    for (int i = 1; i < n; ++i) {
      const auto v = Magnitude(x[static_cast<ptrdiff_t>(i) * incx]);
      if (v < best_abs) {
        best_abs = v;
        best = i;
      }
    }
    return best + 1;
  });
}

template <class T>
cublasStatus_t Copy(cublasHandle_t h, int n, const T* x, int incx, T* y, int incy) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  return call.Submit([=] { Blas<T>::copy(n, x, incx, y, incy); });
}

template <class T>
cublasStatus_t Swap(cublasHandle_t h, int n, T* x, int incx, T* y, int incy) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  return call.Submit([=] { Blas<T>::swap(n, x, incx, y, incy); });
}

template <class T>
cublasStatus_t Rot(cublasHandle_t h, int n, T* x, int incx, T* y, int incy, const T* c,
                   const T* s) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(c != nullptr && s != nullptr);
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<T> cv = call.Read(c);
  const Scalar<T> sv = call.Read(s);
  return call.Submit([=] { Blas<T>::rot(n, x, incx, y, incy, cv.get(), sv.get()); });
}

}  // namespace
}  // namespace remora::emu::blas

using namespace remora::emu::blas;  // NOLINT: entry points are global by ABI

REMORA_BLAS_API cublasStatus_t cublasSaxpy_v2(cublasHandle_t h, int n, const float* alpha,
                                              const float* x, int incx, float* y, int incy) {
  return Axpy(h, n, alpha, x, incx, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasDaxpy_v2(cublasHandle_t h, int n, const double* alpha,
                                              const double* x, int incx, double* y, int incy) {
  return Axpy(h, n, alpha, x, incx, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasSdot_v2(cublasHandle_t h, int n, const float* x, int incx,
                                             const float* y, int incy, float* result) {
  return Dot(h, n, x, incx, y, incy, result);
}
REMORA_BLAS_API cublasStatus_t cublasDdot_v2(cublasHandle_t h, int n, const double* x, int incx,
                                             const double* y, int incy, double* result) {
  return Dot(h, n, x, incx, y, incy, result);
}
#define COMPLEX_DOTS(X, T)                                                                         \
  REMORA_BLAS_API cublasStatus_t cublas##X##dotu_v2(cublasHandle_t h, int n, const T* x, int incx, \
                                                    const T* y, int incy, T* result) {             \
    return Dot(h, n, x, incx, y, incy, result, false);                                             \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##dotc_v2(cublasHandle_t h, int n, const T* x, int incx, \
                                                    const T* y, int incy, T* result) {             \
    return Dot(h, n, x, incx, y, incy, result, true);                                              \
  }
COMPLEX_DOTS(C, cuComplex)
COMPLEX_DOTS(Z, cuDoubleComplex)
#undef COMPLEX_DOTS
REMORA_BLAS_API cublasStatus_t cublasSnrm2_v2(cublasHandle_t h, int n, const float* x, int incx,
                                              float* result) {
  return Nrm2(h, n, x, incx, result);
}
REMORA_BLAS_API cublasStatus_t cublasDnrm2_v2(cublasHandle_t h, int n, const double* x, int incx,
                                              double* result) {
  return Nrm2(h, n, x, incx, result);
}
REMORA_BLAS_API cublasStatus_t cublasSscal_v2(cublasHandle_t h, int n, const float* alpha, float* x,
                                              int incx) {
  return Scal(h, n, alpha, x, incx);
}
REMORA_BLAS_API cublasStatus_t cublasDscal_v2(cublasHandle_t h, int n, const double* alpha,
                                              double* x, int incx) {
  return Scal(h, n, alpha, x, incx);
}
REMORA_BLAS_API cublasStatus_t cublasSasum_v2(cublasHandle_t h, int n, const float* x, int incx,
                                              float* result) {
  return Asum(h, n, x, incx, result);
}
REMORA_BLAS_API cublasStatus_t cublasDasum_v2(cublasHandle_t h, int n, const double* x, int incx,
                                              double* result) {
  return Asum(h, n, x, incx, result);
}
REMORA_BLAS_API cublasStatus_t cublasIsamax_v2(cublasHandle_t h, int n, const float* x, int incx,
                                               int* result) {
  return Iamaxmin(h, n, x, incx, result, true);
}
REMORA_BLAS_API cublasStatus_t cublasIdamax_v2(cublasHandle_t h, int n, const double* x, int incx,
                                               int* result) {
  return Iamaxmin(h, n, x, incx, result, true);
}
REMORA_BLAS_API cublasStatus_t cublasIsamin_v2(cublasHandle_t h, int n, const float* x, int incx,
                                               int* result) {
  return Iamaxmin(h, n, x, incx, result, false);
}
REMORA_BLAS_API cublasStatus_t cublasIdamin_v2(cublasHandle_t h, int n, const double* x, int incx,
                                               int* result) {
  return Iamaxmin(h, n, x, incx, result, false);
}
REMORA_BLAS_API cublasStatus_t cublasScopy_v2(cublasHandle_t h, int n, const float* x, int incx,
                                              float* y, int incy) {
  return Copy(h, n, x, incx, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasDcopy_v2(cublasHandle_t h, int n, const double* x, int incx,
                                              double* y, int incy) {
  return Copy(h, n, x, incx, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasSswap_v2(cublasHandle_t h, int n, float* x, int incx, float* y,
                                              int incy) {
  return Swap(h, n, x, incx, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasDswap_v2(cublasHandle_t h, int n, double* x, int incx,
                                              double* y, int incy) {
  return Swap(h, n, x, incx, y, incy);
}
REMORA_BLAS_API cublasStatus_t cublasSrot_v2(cublasHandle_t h, int n, float* x, int incx, float* y,
                                             int incy, const float* c, const float* s) {
  return Rot(h, n, x, incx, y, incy, c, s);
}
REMORA_BLAS_API cublasStatus_t cublasDrot_v2(cublasHandle_t h, int n, double* x, int incx,
                                             double* y, int incy, const double* c,
                                             const double* s) {
  return Rot(h, n, x, incx, y, incy, c, s);
}

#define COMPLEX_LEVEL1(X, LX, T, R, RX, LRX)                                                       \
  REMORA_BLAS_API cublasStatus_t cublas##X##axpy_v2(cublasHandle_t h, int n, const T* alpha,       \
                                                    const T* x, int incx, T* y, int incy) {        \
    return Axpy(h, n, alpha, x, incx, y, incy);                                                    \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##scal_v2(cublasHandle_t h, int n, const T* alpha, T* x, \
                                                    int incx) {                                    \
    return Scal(h, n, alpha, x, incx);                                                             \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##LRX##scal_v2(cublasHandle_t h, int n, const R* alpha,  \
                                                         T* x, int incx) {                         \
    return ScalReal(h, n, alpha, x, incx);                                                         \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##copy_v2(cublasHandle_t h, int n, const T* x, int incx, \
                                                    T* y, int incy) {                              \
    return Copy(h, n, x, incx, y, incy);                                                           \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##X##swap_v2(cublasHandle_t h, int n, T* x, int incx, T* y, \
                                                    int incy) {                                    \
    return Swap(h, n, x, incx, y, incy);                                                           \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublasI##LX##amax_v2(cublasHandle_t h, int n, const T* x,         \
                                                      int incx, int* result) {                     \
    return Iamaxmin(h, n, x, incx, result, true);                                                  \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublasI##LX##amin_v2(cublasHandle_t h, int n, const T* x,         \
                                                      int incx, int* result) {                     \
    return Iamaxmin(h, n, x, incx, result, false);                                                 \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##RX##LX##asum_v2(cublasHandle_t h, int n, const T* x,      \
                                                         int incx, R* result) {                    \
    return Asum(h, n, x, incx, result);                                                            \
  }                                                                                                \
  REMORA_BLAS_API cublasStatus_t cublas##RX##LX##nrm2_v2(cublasHandle_t h, int n, const T* x,      \
                                                         int incx, R* result) {                    \
    return Nrm2(h, n, x, incx, result);                                                            \
  }
COMPLEX_LEVEL1(C, c, cuComplex, float, S, s)
COMPLEX_LEVEL1(Z, z, cuDoubleComplex, double, D, d)
#undef COMPLEX_LEVEL1
