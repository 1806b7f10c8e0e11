// tests/cuda/kernels/common.h - what every test program shares: checks, flags, data, verdict.
//
// CHECK(call) exits with FAIL on any CUDA error; Flags reads "-n 1000"-style
// integer flags; Rng gives reproducible data; Finish prints PASS or FAIL.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                         \
  do {                                                                      \
    cudaError_t err_ = (call);                                              \
    if (err_ != cudaSuccess) {                                              \
      std::printf("FAIL: %s:%d %s -> %s (%d)\n", __FILE__, __LINE__, #call, \
                  cudaGetErrorName(err_), static_cast<int>(err_));          \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

// Checks that `call` returns exactly `expected`.
#define EXPECT_CUDA(call, expected)                                                            \
  do {                                                                                         \
    cudaError_t err_ = (call);                                                                 \
    if (err_ != (expected)) {                                                                  \
      std::printf("FAIL: %s:%d %s -> %s (%d), expected %s\n", __FILE__, __LINE__, #call,       \
                  cudaGetErrorName(err_), static_cast<int>(err_), cudaGetErrorName(expected)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

// A library call's status: STATUS_OK exits with FAIL unless `call` returns `ok`; EXPECT_STATUS
// counts a mismatch in the program's `failures`. `name` turns a status into its name
// (cublasGetStatusName, cudnnGetErrorString, ...).
#define STATUS_OK(call, ok, name)                                                 \
  do {                                                                            \
    auto s_ = (call);                                                             \
    if (s_ != (ok)) {                                                             \
      std::printf("FAIL: %s:%d %s -> %s\n", __FILE__, __LINE__, #call, name(s_)); \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)
#define EXPECT_STATUS(call, expected, name)                                                   \
  do {                                                                                        \
    auto s_ = (call);                                                                         \
    if (s_ != (expected)) {                                                                   \
      std::printf("FAIL: %s:%d %s -> %s, expected %s\n", __FILE__, __LINE__, #call, name(s_), \
                  name(expected));                                                            \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

#define REQUIRE(cond)                                             \
  do {                                                            \
    if (!(cond)) {                                                \
      std::printf("FAIL: %s:%d %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                               \
    }                                                             \
  } while (0)

// Reads "-<name> <value>" from argv, else returns `fallback`.
inline long Flag(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i][0] == '-' && std::strcmp(argv[i] + 1, name) == 0) return std::atol(argv[i + 1]);
  return fallback;
}

// A small reproducible generator (xorshift64*), seeded with "-seed".
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) { return lo + (hi - lo) * (Next() >> 40) / 16777216.0f; }
  double UniformD(double lo, double hi) {
    return lo + (hi - lo) * (Next() >> 11) / 9007199254740992.0;
  }
  int Int(int lo, int hi) { return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo)); }
};

// A new device allocation holding `v` (cudaMalloc, then a synchronous copy).
template <class T>
T* ToDevice(const std::vector<T>& v) {
  T* d = nullptr;
  CHECK(cudaMalloc(&d, v.size() * sizeof(T)));
  CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// `n` elements of device memory `d`, copied to the host on the legacy default stream (which
// does not wait for non-blocking streams: synchronize those first).
template <class T>
std::vector<T> FromDevice(const T* d, size_t n) {
  std::vector<T> v(n);
  CHECK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// True if a and b agree to within rel * max(|a|, |b|, 1).
inline bool Near(double a, double b, double rel) {
  double scale = std::fmax(1.0, std::fmax(std::fabs(a), std::fabs(b)));
  return std::fabs(a - b) <= rel * scale;
}

// True when the program runs under `remora run` (which sets REMORA_STUB_DIR). Checks of what
// only Remora gives (a pointer outside the tenant's memory refused, a routine it does not
// forward refused by name) run only then: NVIDIA's libraries, the reference, give no such
// answers. Natively the program says it skipped them.
inline bool UnderRemora(const char* what) {
  const bool under = std::getenv("REMORA_STUB_DIR") != nullptr;
  if (!under) std::printf("skip %s: Remora-only checks (not under remora run)\n", what);
  return under;
}

// Prints the verdict; the exit code is the test result.
inline int Finish(int failures, const char* what) {
  if (failures == 0) {
    std::printf("PASS %s\n", what);
    return 0;
  }
  std::printf("FAIL %s: %d mismatches\n", what, failures);
  return 1;
}
