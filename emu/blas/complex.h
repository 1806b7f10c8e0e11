// emu/blas/complex.h - arithmetic on cuComplex and cuDoubleComplex, so a routine written once
// for the real types reads the same for the complex ones (geam, dgmm, syrkx, the complex
// symmetric level-2 forms, LU without pivoting). Conj is the identity on real types.
#pragma once

#include <cuComplex.h>

#include <cmath>
#include <type_traits>

namespace remora::emu::blas {

// cuComplex and cuDoubleComplex (float2 and double2).
template <class T>
concept CudaComplex = std::is_same_v<T, cuComplex> || std::is_same_v<T, cuDoubleComplex>;

template <CudaComplex T>
T operator+(T a, T b) {
  return {a.x + b.x, a.y + b.y};
}
template <CudaComplex T>
T operator*(T a, T b) {
  return {a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}
template <CudaComplex T>
T operator-(T a, T b) {
  return {a.x - b.x, a.y - b.y};
}
template <CudaComplex T>
T operator/(T a, T b) {  // Smith's division: no overflow for large |b|
  if (std::abs(b.x) >= std::abs(b.y)) {
    const auto r = b.y / b.x, d = b.x + r * b.y;
    return {(a.x + r * a.y) / d, (a.y - r * a.x) / d};
  }
  const auto r = b.x / b.y, d = b.y + r * b.x;
  return {(r * a.x + a.y) / d, (r * a.y - a.x) / d};
}
template <CudaComplex T>
T& operator+=(T& a, T b) {
  return a = a + b;
}
template <CudaComplex T>
T& operator-=(T& a, T b) {
  return a = a - b;
}
template <CudaComplex T>
T& operator/=(T& a, T b) {
  return a = a / b;
}
template <CudaComplex T>
bool operator==(T a, T b) {
  return a.x == b.x && a.y == b.y;
}

template <class T>
constexpr bool kIsComplex = !std::is_floating_point_v<T>;

// The multiplicative identity.
template <class T>
T One() {
  if constexpr (kIsComplex<T>)
    return {1, 0};
  else
    return T{1};
}

template <class T>
T Conj(T v) {
  if constexpr (kIsComplex<T>) v.y = -v.y;
  return v;
}

}  // namespace remora::emu::blas
