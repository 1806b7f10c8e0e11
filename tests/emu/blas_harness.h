// tests/emu/blas_harness.h - what blas_test.cc and blas_api_test.cc share: the library dlopened as
// the server loads it, typed entry points, references in double precision, device buffers, and
// the fixtures (BlasTest: a context and a handle; BlasModes: in each pointer mode and stream).
#pragma once
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "tests/emu/emu_api.h"

namespace remora::emu::test {

inline void* BlasLib() {
  static void* const handle = dlopen(REMORA_EMU_BLAS_LIB, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

inline void* Sym(const char* name) {
  return dlsym(BlasLib(), name);
}

// The library's export `name` (as cublas_v2.h spells it), typed as declared.
#define BLAS(name)                                                                  \
  ([] {                                                                             \
    static const auto fn = reinterpret_cast<decltype(&::name)>(Sym(EMU_STR(name))); \
    return fn;                                                                      \
  }())

// cublas_api.h overloads the Ex GEMMs in C++ (legacy cudaDataType computeType),
// so their exported signatures are spelled out.
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
using GemmBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                           int, int, int, const void*, const void* const[],
                                           cudaDataType, int, const void* const[], cudaDataType,
                                           int, const void*, void* const[], cudaDataType, int, int,
                                           cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                  cublasOperation_t, int, int, int, const void*,
                                                  const void*, cudaDataType, int, long long,
                                                  const void*, cudaDataType, int, long long,
                                                  const void*, void*, cudaDataType, int, long long,
                                                  int, cublasComputeType_t, cublasGemmAlgo_t);
inline GemmExFn GemmEx() {
  return reinterpret_cast<GemmExFn>(Sym("cublasGemmEx"));
}
inline GemmBatchedExFn GemmBatchedEx() {
  return reinterpret_cast<GemmBatchedExFn>(Sym("cublasGemmBatchedEx"));
}
inline GemmStridedBatchedExFn GemmStridedBatchedEx() {
  return reinterpret_cast<GemmStridedBatchedExFn>(Sym("cublasGemmStridedBatchedEx"));
}

// The S or D variant of a routine, chosen by T.
template <class T>
struct Fn {
#define TYPED(name)                           \
  static auto name() {                        \
    if constexpr (std::is_same_v<T, float>) { \
      return BLAS(cublasS##name);             \
    } else {                                  \
      return BLAS(cublasD##name);             \
    }                                         \
  }
  TYPED(axpy)
  TYPED(dot)
  TYPED(nrm2)
  TYPED(scal)
  TYPED(asum)
  TYPED(copy)
  TYPED(swap)
  TYPED(rot)
  TYPED(gemv)
  TYPED(ger)
  TYPED(symv)
  TYPED(trsv)
  TYPED(gemm)
  TYPED(symm)
  TYPED(syrk)
  TYPED(trsm)
  TYPED(trmm)
  TYPED(geam)
  TYPED(dgmm)
  TYPED(gemmBatched)
  TYPED(gemmStridedBatched)
  TYPED(getrfBatched)
  TYPED(getrsBatched)
  TYPED(getriBatched)
  TYPED(matinvBatched)
#undef TYPED
  static auto iamax() {
    if constexpr (std::is_same_v<T, float>) {
      return BLAS(cublasIsamax);
    } else {
      return BLAS(cublasIdamax);
    }
  }
  static auto iamin() {
    if constexpr (std::is_same_v<T, float>) {
      return BLAS(cublasIsamin);
    } else {
      return BLAS(cublasIdamin);
    }
  }
  static constexpr double kTol = std::is_same_v<T, float> ? 1e-4 : 1e-10;
  static constexpr cudaDataType kType = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
};

// Element conversions for the reference (every type the tests store).
inline double ToD(float v) {
  return v;
}
inline double ToD(double v) {
  return v;
}
inline double ToD(__half v) {
  return __half2float(v);
}
inline double ToD(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <class T>
T FromD(double v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
std::vector<T> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = FromD<T>(dist(rng));
  return v;
}

template <class T>
std::vector<double> ToDouble(const std::vector<T>& v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = ToD(v[i]);
  return d;
}

// Normwise relative error: max |ref - got| / max |ref|.
template <class T>
double RelErr(const std::vector<double>& ref, const std::vector<T>& got) {
  EXPECT_EQ(ref.size(), got.size());
  double diff = 0, scale = 1e-300;
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    diff = std::max(diff, std::abs(ref[i] - ToD(got[i])));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return diff / scale;
}

// Element (i, j) of op(X), X column-major with leading dimension ld.
template <class V>
V OpAt(const std::vector<V>& X, int ld, cublasOperation_t op, int i, int j) {
  return op == CUBLAS_OP_N ? X[i + static_cast<size_t>(j) * ld]
                           : X[j + static_cast<size_t>(i) * ld];
}

// Reference GEMM in double: C = alpha op(A) op(B) + beta C (beta == 0: C unread).
inline std::vector<double> RefGemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   double alpha, const std::vector<double>& A, int lda,
                                   const std::vector<double>& B, int ldb, double beta,
                                   std::vector<double> C, int ldc) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double s = 0;
      for (int l = 0; l < k; ++l) s += OpAt(A, lda, ta, i, l) * OpAt(B, ldb, tb, l, j);
      double& c = C[i + static_cast<size_t>(j) * ldc];
      c = alpha * s + (beta == 0 ? 0.0 : beta * c);
    }
  }
  return C;
}

// The context, and a cuBLAS handle on it.
class BlasTest : public EmuTest {
 protected:
  void SetUp() override {
    EmuTest::SetUp();
    ASSERT_NE(BlasLib(), nullptr) << dlerror();
    ASSERT_EQ(BLAS(cublasCreate)(&h), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (stream != nullptr) {
      EXPECT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
      EXPECT_EQ(api.cuStreamDestroy(stream), CUDA_SUCCESS);
    }
    if (h != nullptr) {
      EXPECT_EQ(BLAS(cublasDestroy)(h), CUBLAS_STATUS_SUCCESS);
    }
    EmuTest::TearDown();
  }
  void UseStream(unsigned flags = 0) {
    ASSERT_EQ(api.cuStreamCreate(&stream, flags), CUDA_SUCCESS);
    ASSERT_EQ(BLAS(cublasSetStream)(h, reinterpret_cast<cudaStream_t>(stream)),
              CUBLAS_STATUS_SUCCESS);
  }

  cublasHandle_t h = nullptr;
  CUstream stream = nullptr;
};

// BlasTest in one pointer mode (true: device) on the legacy or a created stream.
class BlasModes : public BlasTest, public ::testing::WithParamInterface<std::tuple<bool, bool>> {
 protected:
  void SetUp() override {
    BlasTest::SetUp();
    if (std::get<1>(GetParam())) UseStream();
    if (device()) {
      ASSERT_EQ(BLAS(cublasSetPointerMode)(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
    }
  }
  void TearDown() override {
    scalars_.clear();
    BlasTest::TearDown();
  }
  bool device() const { return std::get<0>(GetParam()); }

  // `v` where the pointer mode wants scalars: host memory or device memory.
  template <class T>
  const T* S(T v) {
    auto buf = std::make_shared<std::vector<std::byte>>(sizeof(T));
    std::memcpy(buf->data(), &v, sizeof(T));
    if (!device()) {
      host_.push_back(buf);
      return reinterpret_cast<const T*>(buf->data());
    }
    auto d = std::make_shared<Dev<T>>(std::vector<T>{v});
    scalars_.push_back(d);
    return d->get();
  }

  // A result slot (dot, nrm2, ...) and its value once the work has run.
  template <class R>
  class Result {
   public:
    explicit Result(bool device) : dev_(device ? std::make_unique<Dev<R>>(1) : nullptr) {}
    R* ptr() { return dev_ ? dev_->get() : &host_; }
    R value() const { return dev_ ? dev_->Get()[0] : host_; }

   private:
    std::unique_ptr<Dev<R>> dev_;
    R host_{};
  };

  template <class T>
  void Level1();
  template <class T>
  void Level2();
  template <class T>
  void Level3();
  template <class T>
  void Batched();

  std::deque<std::shared_ptr<void>> scalars_;
  std::deque<std::shared_ptr<void>> host_;
};

}  // namespace remora::emu::test
