// tests/emu/dnn_harness.h - what dnn_test.cc and dnn_ops_test.cc share: the library dlopened as
// the server loads it, strided tensors in device memory with double-precision views, scale
// factors, the alpha/beta blend check, and the fixture (DnnTest: a context, a handle, a stream).
//
// Descriptors are built with the Nd setters as the server does; every op runs on a created stream
// on random data laid out by explicit strides, checked against a naive double-precision loop with
// alpha/beta blending (beta = 0 over NaN), plus status codes for bad parameters.
#pragma once
#include <cuda.h>
#include <cuda_fp16.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/emu/emu_api.h"

namespace remora::emu::test {

inline void* DnnLib() {
  static void* const handle = dlopen(REMORA_EMU_DNN_LIB, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

// The library's export `name` (as cudnn.h spells it), typed as declared.
#define DNN(name)                                                                               \
  ([] {                                                                                         \
    static const auto fn = reinterpret_cast<decltype(&::name)>(dlsym(DnnLib(), EMU_STR(name))); \
    return fn;                                                                                  \
  }())

using Dims = std::vector<int>;
using Vec = std::vector<double>;
using Idx = std::array<int, 5>;

// Packed strides of `dims` in NCHW order, or NHWC (channels innermost).
inline Dims Strides(const Dims& dims, bool nhwc) {
  Dims s(dims.size());
  std::vector<int> order;  // innermost first
  if (nhwc) {
    order.push_back(1);
    for (int k = static_cast<int>(dims.size()) - 1; k >= 2; --k) order.push_back(k);
    order.push_back(0);
  } else {
    for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) order.push_back(k);
  }
  int acc = 1;
  for (int k : order) {
    s[k] = acc;
    acc *= dims[k];
  }
  return s;
}

// `dims` as N, C, D, H, W (missing spatial dims leading 1s).
inline Idx Canon(const Dims& d) {
  Idx c{1, 1, 1, 1, 1};
  c[0] = d[0];
  c[1] = d[1];
  for (size_t k = 2; k < d.size(); ++k) c[5 - d.size() + k] = d[k];
  return c;
}

inline int Count(const Idx& c) {
  return c[0] * c[1] * c[2] * c[3] * c[4];
}
inline int Lin(const Idx& c, const Idx& i) {
  return (((i[0] * c[1] + i[1]) * c[2] + i[2]) * c[3] + i[3]) * c[4] + i[4];
}
inline void ForEach(const Idx& c, const std::function<void(const Idx&)>& f) {
  Idx i;
  for (i[0] = 0; i[0] < c[0]; ++i[0])
    for (i[1] = 0; i[1] < c[1]; ++i[1])
      for (i[2] = 0; i[2] < c[2]; ++i[2])
        for (i[3] = 0; i[3] < c[3]; ++i[3])
          for (i[4] = 0; i[4] < c[4]; ++i[4]) f(i);
}

inline size_t Size(cudnnDataType_t t) {
  return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_HALF ? 2 : 4;
}

inline Vec Random(size_t n, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// A strided tensor in device memory with its descriptor; values are read and
// written in logical (packed N, C, D, H, W) order. Fresh memory holds NaN.
class Tensor {
 public:
  Tensor(cudnnDataType_t type, const Dims& dims, const Dims& strides, bool filter = false,
         cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW)
      : type_(type), dims_(dims), strides_(strides), canon_(Canon(dims)) {
    size_t span = 1;
    for (size_t k = 0; k < dims.size(); ++k) span += static_cast<size_t>(dims[k] - 1) * strides[k];
    bytes_ = span * Size(type);
    EXPECT_EQ(Lib().cuMemAlloc(&p_, bytes_), CUDA_SUCCESS);
    for (size_t i = 0; i < span; ++i) Put(i, std::numeric_limits<double>::quiet_NaN());
    if (filter) {
      EXPECT_EQ(DNN(cudnnCreateFilterDescriptor)(&fd_), CUDNN_STATUS_SUCCESS);
      EXPECT_EQ(DNN(cudnnSetFilterNdDescriptor)(fd_, type, format, static_cast<int>(dims.size()),
                                                dims.data()),
                CUDNN_STATUS_SUCCESS);
    } else {
      EXPECT_EQ(DNN(cudnnCreateTensorDescriptor)(&td_), CUDNN_STATUS_SUCCESS);
      EXPECT_EQ(DNN(cudnnSetTensorNdDescriptor)(td_, type, static_cast<int>(dims.size()),
                                                dims.data(), strides.data()),
                CUDNN_STATUS_SUCCESS);
    }
  }
  // A filter KCRS in `format`.
  static Tensor Filter(cudnnDataType_t type, const Dims& dims, cudnnTensorFormat_t format) {
    return Tensor(type, dims, Strides(dims, format == CUDNN_TENSOR_NHWC), true, format);
  }
  Tensor(Tensor&& o) noexcept
      : type_(o.type_),
        dims_(o.dims_),
        strides_(o.strides_),
        canon_(o.canon_),
        bytes_(o.bytes_),
        p_(o.p_),
        td_(o.td_),
        fd_(o.fd_) {
    o.p_ = 0;
    o.td_ = nullptr;
    o.fd_ = nullptr;
  }
  ~Tensor() {
    if (p_ != 0) Lib().cuMemFree(p_);
    if (td_ != nullptr) DNN(cudnnDestroyTensorDescriptor)(td_);
    if (fd_ != nullptr) DNN(cudnnDestroyFilterDescriptor)(fd_);
  }

  // Writes logical values (waits for pending work first); returns what the
  // tensor now holds (rounded to its type).
  Vec Set(const Vec& v) {
    EXPECT_EQ(Lib().cuCtxSynchronize(), CUDA_SUCCESS);
    ForEach(canon_, [&](const Idx& i) { Put(Off(i), v[Lin(canon_, i)]); });
    return Get();
  }
  Vec Get() const {
    EXPECT_EQ(Lib().cuCtxSynchronize(), CUDA_SUCCESS);
    Vec v(Count(canon_));
    ForEach(canon_, [&](const Idx& i) { v[Lin(canon_, i)] = At(Off(i)); });
    return v;
  }
  void* ptr() const { return reinterpret_cast<void*>(p_); }
  cudnnTensorDescriptor_t desc() const { return td_; }
  cudnnFilterDescriptor_t fdesc() const { return fd_; }
  const Idx& canon() const { return canon_; }
  int count() const { return Count(canon_); }

 private:
  size_t Off(const Idx& i) const {
    // Canonical slots back to descriptor dims.
    size_t o = static_cast<size_t>(i[0]) * strides_[0] + static_cast<size_t>(i[1]) * strides_[1];
    for (size_t k = 2; k < dims_.size(); ++k) {
      o += static_cast<size_t>(i[5 - dims_.size() + k]) * strides_[k];
    }
    return o;
  }
  void Put(size_t off, double v) {
    char* b = reinterpret_cast<char*>(p_);
    if (type_ == CUDNN_DATA_DOUBLE) {
      reinterpret_cast<double*>(b)[off] = v;
    } else if (type_ == CUDNN_DATA_HALF) {
      reinterpret_cast<__half*>(b)[off] = __float2half(static_cast<float>(v));
    } else {
      reinterpret_cast<float*>(b)[off] = static_cast<float>(v);
    }
  }
  double At(size_t off) const {
    const char* b = reinterpret_cast<const char*>(p_);
    if (type_ == CUDNN_DATA_DOUBLE) return reinterpret_cast<const double*>(b)[off];
    if (type_ == CUDNN_DATA_HALF) return __half2float(reinterpret_cast<const __half*>(b)[off]);
    return reinterpret_cast<const float*>(b)[off];
  }

  cudnnDataType_t type_;
  Dims dims_, strides_;
  Idx canon_;
  size_t bytes_ = 0;
  CUdeviceptr p_ = 0;
  cudnnTensorDescriptor_t td_ = nullptr;
  cudnnFilterDescriptor_t fd_ = nullptr;
};

// Scaling parameters of the type cuDNN wants for `type` data.
class Scale {
 public:
  Scale(cudnnDataType_t type, double v) : type_(type), f_(static_cast<float>(v)), d_(v) {}
  const void* ptr() const {
    return type_ == CUDNN_DATA_DOUBLE ? static_cast<const void*>(&d_) : &f_;
  }
  double value() const { return type_ == CUDNN_DATA_DOUBLE ? d_ : f_; }

 private:
  cudnnDataType_t type_;
  float f_;
  double d_;
};

inline double Tol(cudnnDataType_t t) {
  return t == CUDNN_DATA_DOUBLE ? 1e-9 : t == CUDNN_DATA_HALF ? 2e-2 : 1e-4;
}

// got == alpha * want + beta * old, elementwise, within `tol` (relative).
inline void ExpectBlend(const Vec& got, const Vec& want, double alpha, double beta, const Vec& old,
                        double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = alpha * want[i] + (beta == 0 ? 0 : beta * old[i]);
    if (!(std::abs(got[i] - e) <= tol * (1 + std::abs(e)))) {
      if (++bad <= 5) ADD_FAILURE() << what << " [" << i << "] got " << got[i] << " want " << e;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

// The context, a created stream and a cuDNN handle on it.
class DnnTest : public EmuTest {
 protected:
  void SetUp() override {
    EmuTest::SetUp();
    ASSERT_NE(DnnLib(), nullptr) << dlerror();
    ASSERT_EQ(DNN(cudnnCreate)(&h), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(api.cuStreamCreate(&stream, 0), CUDA_SUCCESS);
    ASSERT_EQ(DNN(cudnnSetStream)(h, reinterpret_cast<cudaStream_t>(stream)), CUDNN_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (stream != nullptr) {
      EXPECT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
      EXPECT_EQ(api.cuStreamDestroy(stream), CUDA_SUCCESS);
    }
    if (h != nullptr) {
      EXPECT_EQ(DNN(cudnnDestroy)(h), CUDNN_STATUS_SUCCESS);
    }
    EmuTest::TearDown();
  }

  cudnnHandle_t h = nullptr;
  CUstream stream = nullptr;
};

// A convolution's shape, and its double-precision reference.
struct ConvCase {
  const char* name;
  cudnnDataType_t type;
  bool nhwc;
  cudnnConvolutionMode_t mode;
  Dims x;  // N, C, spatial...
  int k;   // output channels
  Dims r;  // filter spatial
  Dims pad, stride, dil;
  int groups;
};

// Reference convolution on logical (packed) arrays: the forward output and
// the two gradients of sum(y * dy).
struct ConvRef {
  Idx xc, wc, yc;
  Idx pad{0, 0, 0, 0, 0}, str{1, 1, 1, 1, 1}, dil{1, 1, 1, 1, 1};
  int groups = 1;
  bool flip = false;

  template <class F>
  void Taps(F f) const {
    const int cg = xc[1] / groups, kg = wc[0] / groups;
    ForEach(yc, [&](const Idx& o) {
      const int g = o[1] / kg;
      for (int c = 0; c < cg; ++c)
        for (int r0 = 0; r0 < wc[2]; ++r0)
          for (int r1 = 0; r1 < wc[3]; ++r1)
            for (int r2 = 0; r2 < wc[4]; ++r2) {
              const Idx i{o[0], g * cg + c, o[2] * str[2] - pad[2] + r0 * dil[2],
                          o[3] * str[3] - pad[3] + r1 * dil[3],
                          o[4] * str[4] - pad[4] + r2 * dil[4]};
              if (i[2] < 0 || i[2] >= xc[2] || i[3] < 0 || i[3] >= xc[3] || i[4] < 0 ||
                  i[4] >= xc[4]) {
                continue;
              }
              const Idx wi{o[1], c, flip ? wc[2] - 1 - r0 : r0, flip ? wc[3] - 1 - r1 : r1,
                           flip ? wc[4] - 1 - r2 : r2};
              f(Lin(xc, i), Lin(wc, wi), Lin(yc, o));
            }
    });
  }
};

}  // namespace remora::emu::test
