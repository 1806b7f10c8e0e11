// client_stub/fft_host.cc - see fft_host.h.
#include "client_stub/fft_host.h"

#include <bit>
#include <cmath>
#include <cstddef>
#include <map>
#include <numbers>
#include <vector>

namespace remora::client_stub::fft {
namespace {

// exp(sign * 2 pi i * k / n), with k reduced first so the angle stays small and exact.
Complex Root(long long k, long long n, int sign) {
  k %= n;
  const double angle = sign * 2.0 * std::numbers::pi * double(k) / double(n);
  return {std::cos(angle), std::sin(angle)};
}

// A radix-2 transform of length m (a power of two) with the forward sign; the inverse by
// conjugating before and after.
class Pow2 {
 public:
  explicit Pow2(size_t m) : m_(m), twiddle_(m / 2) {
    for (size_t k = 0; k < m / 2; ++k) twiddle_[k] = Root((long long)k, (long long)m, -1);
  }

  void Forward(Complex* x) const {
    for (size_t i = 1, j = 0; i < m_; ++i) {  // bit reversal
      size_t bit = m_ >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(x[i], x[j]);
    }
    for (size_t len = 2; len <= m_; len <<= 1) {
      const size_t half = len / 2, step = m_ / len;
      for (size_t i = 0; i < m_; i += len)
        for (size_t j = 0; j < half; ++j) {
          const Complex v = x[i + j + half] * twiddle_[j * step];
          x[i + j + half] = x[i + j] - v;
          x[i + j] += v;
        }
    }
  }

  void Run(Complex* x, int sign) const {
    if (sign < 0) return Forward(x);
    for (size_t i = 0; i < m_; ++i) x[i] = std::conj(x[i]);
    Forward(x);
    for (size_t i = 0; i < m_; ++i) x[i] = std::conj(x[i]);
  }

 private:
  size_t m_;
  std::vector<Complex> twiddle_;
};

// One length and sign, set up once for every line of that length.
class Line {
 public:
  Line(size_t m, int sign)
      : m_(m),
        sign_(sign),
        size_(std::has_single_bit(m) ? m : std::bit_ceil(2 * m - 1)),
        pow2_(size_) {
    if (size_ == m_) return;
    // Bluestein: jk = (j^2 + k^2 - (k-j)^2) / 2 makes the transform a convolution with the chirp
    // c_t = exp(sign * pi i * t^2 / m), evaluated by transforms of length size_.
    chirp_.resize(m_);
    for (size_t t = 0; t < m_; ++t)
      chirp_[t] = Root((long long)((t * t) % (2 * m_)), 2 * (long long)m_, sign_);
    kernel_.assign(size_, Complex());
    for (size_t t = 0; t < m_; ++t) {
      kernel_[t] = std::conj(chirp_[t]);
      if (t) kernel_[size_ - t] = std::conj(chirp_[t]);
    }
    pow2_.Run(kernel_.data(), -1);
  }

  // Transforms x[0], x[stride], ... x[(m-1)*stride] in place; `scratch` is reused.
  void Run(Complex* x, size_t stride, std::vector<Complex>& scratch) const {
    scratch.assign(size_, Complex());
    if (size_ == m_) {
      for (size_t t = 0; t < m_; ++t) scratch[t] = x[t * stride];
      pow2_.Run(scratch.data(), sign_);
      for (size_t t = 0; t < m_; ++t) x[t * stride] = scratch[t];
      return;
    }
    for (size_t t = 0; t < m_; ++t) scratch[t] = x[t * stride] * chirp_[t];
    pow2_.Run(scratch.data(), -1);
    for (size_t t = 0; t < size_; ++t) scratch[t] *= kernel_[t];
    pow2_.Run(scratch.data(), +1);
    const double scale = 1.0 / double(size_);
    for (size_t t = 0; t < m_; ++t) x[t * stride] = scratch[t] * chirp_[t] * scale;
  }

 private:
  size_t m_;
  int sign_;
  size_t size_;
  Pow2 pow2_;
  std::vector<Complex> chirp_, kernel_;
};

}  // namespace

void Transform(std::span<Complex> data, std::span<const long long> n, int sign) {
  std::map<long long, Line> lines;
  std::vector<Complex> scratch;
  size_t inner = data.size();
  for (const long long len : n) {
    const size_t m = size_t(len);
    inner /= m;  // elements between neighbours along this dimension
    if (m == 1) continue;
    const Line& line = lines.try_emplace(len, m, sign).first->second;
    for (size_t outer = 0; outer < data.size(); outer += m * inner)
      for (size_t i = 0; i < inner; ++i) line.Run(data.data() + outer + i, inner, scratch);
  }
}

}  // namespace remora::client_stub::fft
