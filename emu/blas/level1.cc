// emu/blas/level1.cc - level 1: axpy, dot, nrm2, scal, asum, i*amax/i*amin,
// copy, swap, rot, rotm, rotg, rotmg (float and double); their complex forms, dotu and dotc, and
// the complex rotations crot and csrot; and the mixed-precision Ex routines (dot, dotc, axpy, scal,
// nrm2, asum, copy, swap).
//
// As reference BLAS: n <= 0 does nothing (a reduction yields 0); increments may
// be negative (the vector is walked from its far end), and nrm2, asum, scal and
// the index reductions treat incx <= 0 like n <= 0.
#include <cuComplex.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>

#include "emu/blas/blas.h"
#include "emu/blas/complex.h"
#include "emu/blas/openblas.h"
#include "proto/blas.h"

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
    if (n <= 0) return T{};
    if constexpr (std::is_floating_point_v<T>)
      return Blas<T>::dot(n, x, incx, y, incy);
    else
      return (conjugate ? Blas<T>::dotc : Blas<T>::dotu)(n, x, incx, y, incy);
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

// x = alpha x; alpha of x's type, or real for a complex x (csscal, zdscal).
template <class T, class A>
cublasStatus_t Scal(cublasHandle_t h, int n, const A* alpha, T* x, int incx) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(alpha != nullptr);
  if (n <= 0 || incx <= 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<A> a = call.Read(alpha);
  return call.Submit([=] {
    if constexpr (std::is_same_v<T, A>)
      Blas<T>::scal(n, a.get(), x, incx);
    else
      Blas<T>::scal_real(n, a.get(), x, incx);
  });
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

// The plane rotation x = c x + s y, y = c y - conj(s) x, c real: s real too (srot, drot, csrot,
// zdrot) or complex (crot, zrot; no CBLAS routine).
template <class T, class R, class S>
cublasStatus_t Rot(cublasHandle_t h, int n, T* x, int incx, T* y, int incy, const R* c,
                   const S* s) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(c != nullptr && s != nullptr);
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  const Scalar<R> cv = call.Read(c);
  const Scalar<S> sv = call.Read(s);
  return call.Submit([=] {
    if constexpr (std::is_same_v<R, S>) {
      Blas<T>::rot(n, x, incx, y, incy, cv.get(), sv.get());
    } else {
      const T cc{cv.get(), 0};
      const T ss = sv.get();
      T minus_conj_s = Conj(ss);
      minus_conj_s.x = -minus_conj_s.x;
      minus_conj_s.y = -minus_conj_s.y;
      for (int i = 0; i < n; ++i) {
        T& xi = x[VecOffset(i, n, incx)];
        T& yi = y[VecOffset(i, n, incy)];
        const T xv = xi;
        xi = cc * xv + ss * yi;
        yi = cc * yi + minus_conj_s * xv;
      }
    }
  });
}

// Runs `generate` on the generators' in-place scalars: on the stream in device pointer mode, at
// once in host mode (the scalars are the caller's memory, written before returning).
template <class F>
cublasStatus_t Generate(cublasHandle_t h, bool args_present, F generate) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(args_present);
  if (call.device_mode()) return call.Submit(generate);
  generate();
  return CUBLAS_STATUS_SUCCESS;
}

// The modified Givens rotation of x and y by param[5] (flag, h11, h21, h12, h22): host
// memory read at the call, or device memory when the work runs.
template <class T>
cublasStatus_t Rotm(cublasHandle_t h, int n, T* x, int incx, T* y, int incy, const T* param) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  BLAS_CHECK_ARG(param != nullptr);
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  std::array<T, 5> host{};
  if (!call.device_mode()) std::copy(param, param + 5, host.begin());
  const T* device = call.device_mode() ? param : nullptr;
  return call.Submit(
      [=] { Blas<T>::rotm(n, x, incx, y, incy, device != nullptr ? device : host.data()); });
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
    return Scal(h, n, alpha, x, incx);                                                             \
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

// The rotation generators rotg (S, D, C, Z) and rotmg (S, D).
REMORA_BLAS_API cublasStatus_t cublasSrotg_v2(cublasHandle_t h, float* a, float* b, float* c,
                                              float* s) {
  return Generate(h, a && b && c && s, [=] { cblas_srotg(a, b, c, s); });
}
REMORA_BLAS_API cublasStatus_t cublasDrotg_v2(cublasHandle_t h, double* a, double* b, double* c,
                                              double* s) {
  return Generate(h, a && b && c && s, [=] { cblas_drotg(a, b, c, s); });
}
REMORA_BLAS_API cublasStatus_t cublasCrotg_v2(cublasHandle_t h, cuComplex* a, cuComplex* b,
                                              float* c, cuComplex* s) {
  return Generate(h, a && b && c && s, [=] { cblas_crotg(a, b, c, s); });
}
REMORA_BLAS_API cublasStatus_t cublasZrotg_v2(cublasHandle_t h, cuDoubleComplex* a,
                                              cuDoubleComplex* b, double* c, cuDoubleComplex* s) {
  return Generate(h, a && b && c && s, [=] { cblas_zrotg(a, b, c, s); });
}
REMORA_BLAS_API cublasStatus_t cublasSrotmg_v2(cublasHandle_t h, float* d1, float* d2, float* x1,
                                               const float* y1, float* param) {
  return Generate(h, d1 && d2 && x1 && y1 && param, [=] { cblas_srotmg(d1, d2, x1, *y1, param); });
}
REMORA_BLAS_API cublasStatus_t cublasDrotmg_v2(cublasHandle_t h, double* d1, double* d2, double* x1,
                                               const double* y1, double* param) {
  return Generate(h, d1 && d2 && x1 && y1 && param, [=] { cblas_drotmg(d1, d2, x1, *y1, param); });
}

// rotm in S and D; crot and csrot (zrot, zdrot), c real and s complex or real.
#define ROTATIONS(X, T, RX, R, LRX)                                                               \
  REMORA_BLAS_API cublasStatus_t cublas##RX##rotm_v2(cublasHandle_t h, int n, R* x, int incx,     \
                                                     R* y, int incy, const R* param) {            \
    return Rotm(h, n, x, incx, y, incy, param);                                                   \
  }                                                                                               \
  REMORA_BLAS_API cublasStatus_t cublas##X##rot_v2(cublasHandle_t h, int n, T* x, int incx, T* y, \
                                                   int incy, const R* c, const T* s) {            \
    return Rot(h, n, x, incx, y, incy, c, s);                                                     \
  }                                                                                               \
  REMORA_BLAS_API cublasStatus_t cublas##X##LRX##rot_v2(cublasHandle_t h, int n, T* x, int incx,  \
                                                        T* y, int incy, const R* c, const R* s) { \
    return Rot(h, n, x, incx, y, incy, c, s);                                                     \
  }
ROTATIONS(C, cuComplex, S, float, s)
ROTATIONS(Z, cuDoubleComplex, D, double, d)
#undef ROTATIONS

// ---- Mixed precision: the level-1 Ex routines ---------------------------------------------

namespace remora::emu::blas {
namespace {

using C32 = std::complex<float>;
using C64 = std::complex<double>;

// Element i of a vector of type t, widened to E (float, double, C32 or C64).
template <class E>
E Load(cudaDataType t, const void* p, ptrdiff_t i) {
  switch (t) {
    case CUDA_R_16F:
      return E(__half2float(static_cast<const __half*>(p)[i]));
    case CUDA_R_16BF:
      return E(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
    case CUDA_R_32F:
      return E(static_cast<const float*>(p)[i]);
    case CUDA_R_64F:
      return E(static_cast<const double*>(p)[i]);
    case CUDA_C_32F:
      if constexpr (std::is_floating_point_v<E>)
        return E{};  // not reached: types are checked
      else
        return E(static_cast<const C32*>(p)[i]);
    default:
      if constexpr (std::is_floating_point_v<E>)
        return E{};
      else
        return E(static_cast<const C64*>(p)[i]);
  }
}

// Stores v, rounded to nearest, as element i of a vector of type t.
template <class E>
void Store(cudaDataType t, void* p, ptrdiff_t i, E v) {
  auto real = [&] {
    if constexpr (std::is_floating_point_v<E>)
      return static_cast<double>(v);
    else
      return static_cast<double>(v.real());
  };
  switch (t) {
    case CUDA_R_16F:
      static_cast<__half*>(p)[i] = __float2half(static_cast<float>(real()));
      break;
    case CUDA_R_16BF:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(static_cast<float>(real()));
      break;
    case CUDA_R_32F:
      static_cast<float*>(p)[i] = static_cast<float>(real());
      break;
    case CUDA_R_64F:
      static_cast<double*>(p)[i] = real();
      break;
    case CUDA_C_32F:
      static_cast<C32*>(p)[i] = C32(v);
      break;
    default:
      static_cast<C64*>(p)[i] = C64(v);
      break;
  }
}

// Calls f with a value of the C++ type of execution type `exec` (float, double, C32, C64).
template <class F>
cublasStatus_t WithExecution(cudaDataType exec, F f) {
  switch (exec) {
    case CUDA_R_32F:
      return f(float{});
    case CUDA_R_64F:
      return f(double{});
    case CUDA_C_32F:
      return f(C32{});
    case CUDA_C_64F:
      return f(C64{});
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

// Runs `compute` (returning E) on the stream and stores its value as type `rtype` at `result`:
// when the work runs in device pointer mode, before returning (after a wait) in host mode.
template <class E, class F>
cublasStatus_t ReduceAs(const Call& call, cudaDataType rtype, void* result, F compute) {
  BLAS_CHECK_ARG(result != nullptr);
  if (call.device_mode()) return call.Submit([=] { Store(rtype, result, 0, compute()); });
  auto cell = std::make_shared<E>();
  BLAS_RETURN_IF_ERROR(call.Submit([cell, compute] { *cell = compute(); }));
  BLAS_RETURN_IF_ERROR(call.Wait());
  Store(rtype, result, 0, *cell);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t DotEx(cublasHandle_t h, int n, const void* x, cudaDataType xt, int incx,
                     const void* y, cudaDataType yt, int incy, void* result, cudaDataType rt,
                     cudaDataType exec, bool conjugate) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  const bool complex = xt == CUDA_C_32F || xt == CUDA_C_64F;
  if (BlasExElemBytes(xt) == 0 || yt != xt || rt != xt || exec != BlasExExecution(xt) ||
      (conjugate && !complex))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  BLAS_CHECK_ARG(incx != 0 && incy != 0);
  return WithExecution(exec, [&](auto zero) {
    using E = decltype(zero);
    return ReduceAs<E>(call, rt, result, [=]() -> E {
      E acc{};
      for (int i = 0; i < n; ++i) {
        E a = Load<E>(xt, x, VecOffset(i, n, incx));
        if constexpr (!std::is_floating_point_v<E>)
          if (conjugate) a = std::conj(a);
        acc += a * Load<E>(yt, y, VecOffset(i, n, incy));
      }
      return acc;
    });
  });
}

cublasStatus_t AxpyEx(cublasHandle_t h, int n, const void* alpha, cudaDataType at, const void* x,
                      cudaDataType xt, int incx, void* y, cudaDataType yt, int incy,
                      cudaDataType exec) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  if (BlasExElemBytes(xt) == 0 || yt != xt || exec != BlasExExecution(xt) || at != exec)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  BLAS_CHECK_ARG(alpha != nullptr && incx != 0 && incy != 0);
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  return WithExecution(exec, [&](auto zero) {
    using E = decltype(zero);
    const Scalar<E> a = call.Read(static_cast<const E*>(alpha));
    return call.Submit([=] {
      const E av = a.get();
      for (int i = 0; i < n; ++i) {
        const ptrdiff_t iy = VecOffset(i, n, incy);
        Store(yt, y, iy, Load<E>(yt, y, iy) + av * Load<E>(xt, x, VecOffset(i, n, incx)));
      }
    });
  });
}

cublasStatus_t ScalEx(cublasHandle_t h, int n, const void* alpha, cudaDataType at, void* x,
                      cudaDataType xt, int incx, cudaDataType exec) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  if (BlasExElemBytes(xt) == 0 || exec != BlasExExecution(xt) || at != exec)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  BLAS_CHECK_ARG(alpha != nullptr);
  if (n <= 0 || incx <= 0) return CUBLAS_STATUS_SUCCESS;
  return WithExecution(exec, [&](auto zero) {
    using E = decltype(zero);
    const Scalar<E> a = call.Read(static_cast<const E*>(alpha));
    return call.Submit([=] {
      const E av = a.get();
      for (int i = 0; i < n; ++i) {
        const ptrdiff_t ix = static_cast<ptrdiff_t>(i) * incx;
        Store(xt, x, ix, av * Load<E>(xt, x, ix));
      }
    });
  });
}

// The 2-norm (sum of squares, scaled as BLAS's nrm2 is against overflow) or the sum of
// |Re| + |Im| of x, computed in double and rounded to the result type.
cublasStatus_t NormEx(cublasHandle_t h, int n, const void* x, cudaDataType xt, int incx,
                      void* result, cudaDataType rt, cudaDataType exec, bool two_norm) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  const cudaDataType real = static_cast<cudaDataType>(BlasExNormResult(xt));
  if (BlasExElemBytes(xt) == 0 || rt != real || exec != BlasExExecution(real))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return ReduceAs<double>(call, rt, result, [=]() -> double {
    if (n <= 0 || incx <= 0) return 0;
    double scale = 0, ssq = 1, sum = 0;
    for (int i = 0; i < n; ++i) {
      const C64 v = Load<C64>(xt, x, static_cast<ptrdiff_t>(i) * incx);
      for (double part : {v.real(), v.imag()}) {
        const double a = std::abs(part);
        sum += a;
        if (a == 0) continue;
        if (scale < a) {
          ssq = 1 + ssq * (scale / a) * (scale / a);
          scale = a;
        } else {
          ssq += (a / scale) * (a / scale);
        }
      }
    }
    return two_norm ? scale * std::sqrt(ssq) : sum;
  });
}

cublasStatus_t CopySwapEx(cublasHandle_t h, int n, void* x, cudaDataType xt, int incx, void* y,
                          cudaDataType yt, int incy, bool swap) {
  Call call;
  BLAS_RETURN_IF_ERROR(call.Begin(h));
  if (BlasExElemBytes(xt) == 0 || yt != xt) return CUBLAS_STATUS_NOT_SUPPORTED;
  BLAS_CHECK_ARG(incx != 0 && incy != 0);
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  const size_t e = BlasExElemBytes(xt);
  return call.Submit([=] {
    auto* xb = static_cast<std::byte*>(x);
    auto* yb = static_cast<std::byte*>(y);
    for (int i = 0; i < n; ++i) {
      std::byte* xe = xb + VecOffset(i, n, incx) * static_cast<ptrdiff_t>(e);
      std::byte* ye = yb + VecOffset(i, n, incy) * static_cast<ptrdiff_t>(e);
      if (swap)
        std::swap_ranges(xe, xe + e, ye);
      else
        std::memcpy(ye, xe, e);
    }
  });
}

}  // namespace
}  // namespace remora::emu::blas

REMORA_BLAS_API cublasStatus_t cublasDotEx(cublasHandle_t h, int n, const void* x,
                                           cudaDataType xType, int incx, const void* y,
                                           cudaDataType yType, int incy, void* result,
                                           cudaDataType resultType, cudaDataType executionType) {
  return DotEx(h, n, x, xType, incx, y, yType, incy, result, resultType, executionType, false);
}
REMORA_BLAS_API cublasStatus_t cublasDotcEx(cublasHandle_t h, int n, const void* x,
                                            cudaDataType xType, int incx, const void* y,
                                            cudaDataType yType, int incy, void* result,
                                            cudaDataType resultType, cudaDataType executionType) {
  return DotEx(h, n, x, xType, incx, y, yType, incy, result, resultType, executionType, true);
}
REMORA_BLAS_API cublasStatus_t cublasAxpyEx(cublasHandle_t h, int n, const void* alpha,
                                            cudaDataType alphaType, const void* x,
                                            cudaDataType xType, int incx, void* y,
                                            cudaDataType yType, int incy,
                                            cudaDataType executiontype) {
  return AxpyEx(h, n, alpha, alphaType, x, xType, incx, y, yType, incy, executiontype);
}
REMORA_BLAS_API cublasStatus_t cublasScalEx(cublasHandle_t h, int n, const void* alpha,
                                            cudaDataType alphaType, void* x, cudaDataType xType,
                                            int incx, cudaDataType executionType) {
  return ScalEx(h, n, alpha, alphaType, x, xType, incx, executionType);
}
REMORA_BLAS_API cublasStatus_t cublasNrm2Ex(cublasHandle_t h, int n, const void* x,
                                            cudaDataType xType, int incx, void* result,
                                            cudaDataType resultType, cudaDataType executionType) {
  return NormEx(h, n, x, xType, incx, result, resultType, executionType, true);
}
REMORA_BLAS_API cublasStatus_t cublasAsumEx(cublasHandle_t h, int n, const void* x,
                                            cudaDataType xType, int incx, void* result,
                                            cudaDataType resultType, cudaDataType executiontype) {
  return NormEx(h, n, x, xType, incx, result, resultType, executiontype, false);
}
REMORA_BLAS_API cublasStatus_t cublasCopyEx(cublasHandle_t h, int n, const void* x,
                                            cudaDataType xType, int incx, void* y,
                                            cudaDataType yType, int incy) {
  return CopySwapEx(h, n, const_cast<void*>(x), xType, incx, y, yType, incy, false);
}
REMORA_BLAS_API cublasStatus_t cublasSwapEx(cublasHandle_t h, int n, void* x, cudaDataType xType,
                                            int incx, void* y, cudaDataType yType, int incy) {
  return CopySwapEx(h, n, x, xType, incx, y, yType, incy, true);
}
