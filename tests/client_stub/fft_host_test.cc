// tests/client_stub/fft_host_test.cc - the host transforms the stub libcufft.so.12 computes on
// the emulated GPU, against a direct DFT in long double on random data: every length from 1 to
// 70 (powers of two by radix 2, the rest by Bluestein), larger powers and composites, both
// signs, and 2-D and 3-D arrays.
#include "client_stub/fft_host.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

namespace remora::client_stub::fft {
namespace {

using LZ = std::complex<long double>;

// The direct DFT along each dimension in turn.
std::vector<LZ> Direct(std::vector<LZ> x, const std::vector<long long>& n, int sign) {
  size_t inner = x.size();
  for (long long len : n) {
    inner /= size_t(len);
    std::vector<LZ> line(len);
    for (size_t outer = 0; outer < x.size(); outer += size_t(len) * inner)
      for (size_t i = 0; i < inner; ++i) {
        for (long long k = 0; k < len; ++k) {
          LZ acc = 0;
          for (long long t = 0; t < len; ++t) {
            const long double a =
                sign * 2 * std::numbers::pi_v<long double> * ((t * k) % len) / len;
            acc += x[outer + i + t * inner] * LZ(std::cos(a), std::sin(a));
          }
          line[k] = acc;
        }
        for (long long k = 0; k < len; ++k) x[outer + i + k * inner] = line[k];
      }
  }
  return x;
}

// Transform against Direct; the error bound grows with the data's size as a transform's does.
void Check(const std::vector<long long>& n, int sign, std::mt19937& rng) {
  size_t total = 1;
  for (long long d : n) total *= size_t(d);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Complex> x(total);
  std::vector<LZ> ref(total);
  for (size_t i = 0; i < total; ++i) {
    x[i] = {u(rng), u(rng)};
    ref[i] = LZ(x[i].real(), x[i].imag());
  }
  Transform(x, n, sign);
  const std::vector<LZ> want = Direct(ref, n, sign);
  const double tol = 1e-12 * std::sqrt(double(total)) * std::log2(double(total) + 2) * 8;
  for (size_t i = 0; i < total; ++i) {
    ASSERT_NEAR(x[i].real(), double(want[i].real()), tol) << "dims " << n.size() << " at " << i;
    ASSERT_NEAR(x[i].imag(), double(want[i].imag()), tol) << "dims " << n.size() << " at " << i;
  }
}

TEST(FftHost, EveryLengthTo70BothSigns) {
  std::mt19937 rng(7);
  for (long long len = 1; len <= 70; ++len)
    for (int sign : {-1, +1}) Check({len}, sign, rng);
}

TEST(FftHost, LargerPowersAndComposites) {
  std::mt19937 rng(8);
  for (long long len : {256LL, 1024LL, 243LL, 1000LL, 997LL, 2048LL}) Check({len}, -1, rng);
}

TEST(FftHost, MultiDimensional) {
  std::mt19937 rng(9);
  Check({8, 6}, -1, rng);
  Check({5, 1, 7}, +1, rng);
  Check({16, 12, 10}, -1, rng);
}

TEST(FftHost, ForwardThenInverseScalesByTheSize) {
  std::mt19937 rng(10);
  std::uniform_real_distribution<double> u(-1, 1);
  const std::vector<long long> n = {30, 17};
  std::vector<Complex> x(30 * 17), y;
  for (Complex& v : x) v = {u(rng), u(rng)};
  y = x;
  Transform(y, n, -1);
  Transform(y, n, +1);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_LT(std::abs(y[i] - x[i] * 510.0), 1e-9);
}

}  // namespace
}  // namespace remora::client_stub::fft
