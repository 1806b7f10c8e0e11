// emu/blas/complex.h - arithmetic on cuComplex and cuDoubleComplex, so a routine written once
// for the real types reads the same for the complex ones (geam, dgmm, syrkx, the complex
// symmetric level-2 forms). Conj is the identity on real types.
#pragma once

#include <cuComplex.h>

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
T& operator+=(T& a, T b) {
  return a = a + b;
}
template <CudaComplex T>
bool operator==(T a, T b) {
  return a.x == b.x && a.y == b.y;
}

template <class T>
constexpr bool kIsComplex = !std::is_floating_point_v<T>;

template <class T>
T Conj(T v) {
  if constexpr (kIsComplex<T>) v.y = -v.y;
  return v;
}

}  // namespace remora::emu::blas
