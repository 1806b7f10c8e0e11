// emu/blas/complex.h - arithmetic on cuComplex and cuDoubleComplex, so a routine written once
// for the real types reads the same for the complex ones (geam, dgmm, syrkx, the complex
// symmetric level-2 forms). Conj is the identity on real types.
#pragma once

#include <cuComplex.h>

#include <type_traits>

namespace remora::emu::blas {

inline cuComplex operator+(cuComplex a, cuComplex b) {
  return cuCaddf(a, b);
}
inline cuComplex operator*(cuComplex a, cuComplex b) {
  return cuCmulf(a, b);
}
inline bool operator==(cuComplex a, cuComplex b) {
  return a.x == b.x && a.y == b.y;
}
inline bool operator!=(cuComplex a, cuComplex b) {
  return !(a == b);
}
inline cuComplex& operator+=(cuComplex& a, cuComplex b) {
  return a = a + b;
}
inline cuDoubleComplex operator+(cuDoubleComplex a, cuDoubleComplex b) {
  return cuCadd(a, b);
}
inline cuDoubleComplex operator*(cuDoubleComplex a, cuDoubleComplex b) {
  return cuCmul(a, b);
}
inline bool operator==(cuDoubleComplex a, cuDoubleComplex b) {
  return a.x == b.x && a.y == b.y;
}
inline bool operator!=(cuDoubleComplex a, cuDoubleComplex b) {
  return !(a == b);
}
inline cuDoubleComplex& operator+=(cuDoubleComplex& a, cuDoubleComplex b) {
  return a = a + b;
}

template <class T>
constexpr bool kIsComplex = !std::is_floating_point_v<T>;

template <class T>
T Conj(T v) {
  if constexpr (kIsComplex<T>) v.y = -v.y;
  return v;
}

}  // namespace remora::emu::blas
