// tests/emu/dnn_test.cc - emu/dnn's libcudnn.so.9, dlopened as the server loads it.
//
// The library pulls in the emulated libcuda.so.1 (the same instance the
// fixture drives). Descriptors are built with the Nd setters as the server
// does; every op runs on a created stream on random data in device memory
// (host-addressable in the emulator) laid out by explicit strides, and is
// checked against a naive double-precision loop here, with alpha/beta blending
// (beta = 0 over NaN), plus status codes for bad parameters.
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
namespace {

void* DnnLib() {
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
Dims Strides(const Dims& dims, bool nhwc) {
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
Idx Canon(const Dims& d) {
  Idx c{1, 1, 1, 1, 1};
  c[0] = d[0];
  c[1] = d[1];
  for (size_t k = 2; k < d.size(); ++k) c[5 - d.size() + k] = d[k];
  return c;
}

int Count(const Idx& c) {
  return c[0] * c[1] * c[2] * c[3] * c[4];
}
int Lin(const Idx& c, const Idx& i) {
  return (((i[0] * c[1] + i[1]) * c[2] + i[2]) * c[3] + i[3]) * c[4] + i[4];
}
void ForEach(const Idx& c, const std::function<void(const Idx&)>& f) {
  Idx i;
  for (i[0] = 0; i[0] < c[0]; ++i[0])
    for (i[1] = 0; i[1] < c[1]; ++i[1])
      for (i[2] = 0; i[2] < c[2]; ++i[2])
        for (i[3] = 0; i[3] < c[3]; ++i[3])
          for (i[4] = 0; i[4] < c[4]; ++i[4]) f(i);
}

size_t Size(cudnnDataType_t t) {
  return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_HALF ? 2 : 4;
}

Vec Random(size_t n, unsigned seed, double lo = -1, double hi = 1) {
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

double Tol(cudnnDataType_t t) {
  return t == CUDNN_DATA_DOUBLE ? 1e-9 : t == CUDNN_DATA_HALF ? 2e-2 : 1e-4;
}

// got == alpha * want + beta * old, elementwise, within `tol` (relative).
void ExpectBlend(const Vec& got, const Vec& want, double alpha, double beta, const Vec& old,
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

TEST_F(DnnTest, ExportsEveryDefRow) {
  std::string missing;
#define DNN_FN(name)                       \
  if (dlsym(DnnLib(), #name) == nullptr) { \
    missing += #name " ";                  \
  }
#include "server/dnn.def"
  EXPECT_EQ(missing, "");
}

TEST_F(DnnTest, HandleVersionAndErrors) {
  EXPECT_EQ(DNN(cudnnGetVersion)(), static_cast<size_t>(CUDNN_VERSION));
  EXPECT_EQ(DNN(cudnnGetCudartVersion)(), 13000u);
  EXPECT_STREQ(DNN(cudnnGetErrorString)(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");
  EXPECT_STREQ(DNN(cudnnGetErrorString)(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS");
  EXPECT_STREQ(DNN(cudnnGetErrorString)(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED");
  cudaStream_t s = nullptr;
  EXPECT_EQ(DNN(cudnnGetStream)(h, &s), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(s, reinterpret_cast<cudaStream_t>(stream));
  EXPECT_EQ(DNN(cudnnCreate)(nullptr), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnSetStream)(nullptr, nullptr), CUDNN_STATUS_BAD_PARAM);
  cudnnHandle_t other = nullptr;
  ASSERT_EQ(DNN(cudnnCreate)(&other), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(DNN(cudnnDestroy)(other), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(DNN(cudnnDestroy)(other), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnGetStream)(other, &s), CUDNN_STATUS_BAD_PARAM);
  // No current context: cuDNN cannot initialise.
  ASSERT_EQ(api.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(DNN(cudnnCreate)(&other), CUDNN_STATUS_NOT_INITIALIZED);
  ASSERT_EQ(api.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
}

TEST_F(DnnTest, DescriptorChecks) {
  cudnnTensorDescriptor_t t = nullptr;
  ASSERT_EQ(DNN(cudnnCreateTensorDescriptor)(&t), CUDNN_STATUS_SUCCESS);
  const int dims[4] = {2, 3, 4, 4}, bad_dims[4] = {2, -3, 4, 4}, strides[4] = {48, 16, 4, 1};
  EXPECT_EQ(DNN(cudnnSetTensorNdDescriptor)(t, CUDNN_DATA_FLOAT, 4, bad_dims, strides),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnSetTensorNdDescriptor)(t, static_cast<cudnnDataType_t>(99), 4, dims, strides),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnSetTensorNdDescriptor)(t, CUDNN_DATA_FLOAT, 2, dims, strides),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(DNN(cudnnSetTensorNdDescriptor)(t, CUDNN_DATA_FLOAT, 4, dims, strides),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(DNN(cudnnDestroyTensorDescriptor)(t), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(DNN(cudnnSetTensorNdDescriptor)(t, CUDNN_DATA_FLOAT, 4, dims, strides),
            CUDNN_STATUS_BAD_PARAM);

  cudnnConvolutionDescriptor_t c = nullptr;
  ASSERT_EQ(DNN(cudnnCreateConvolutionDescriptor)(&c), CUDNN_STATUS_SUCCESS);
  const int pad[2] = {-1, 0}, one[2] = {1, 1}, zero[2] = {0, 0};
  EXPECT_EQ(DNN(cudnnSetConvolutionNdDescriptor)(c, 2, pad, one, one, CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnSetConvolutionGroupCount)(c, 0), CUDNN_STATUS_BAD_PARAM);
  ASSERT_EQ(DNN(cudnnSetConvolutionNdDescriptor)(c, 2, zero, one, one, CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(DNN(cudnnSetConvolutionMathType)(c, CUDNN_TENSOR_OP_MATH), CUDNN_STATUS_SUCCESS);

  cudnnLRNDescriptor_t l = nullptr;
  ASSERT_EQ(DNN(cudnnCreateLRNDescriptor)(&l), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(DNN(cudnnSetLRNDescriptor)(l, 0, 1e-4, 0.75, 2), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnSetLRNDescriptor)(l, 17, 1e-4, 0.75, 2), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnDestroyLRNDescriptor)(l), CUDNN_STATUS_SUCCESS);

  // A 3x3 filter on 2x3x5x5 gives 2x4x3x3: other output shapes are refused.
  Tensor x(CUDNN_DATA_FLOAT, {2, 3, 5, 5}, Strides({2, 3, 5, 5}, false));
  Tensor w = Tensor::Filter(CUDNN_DATA_FLOAT, {4, 3, 3, 3}, CUDNN_TENSOR_NCHW);
  Tensor y(CUDNN_DATA_FLOAT, {2, 4, 3, 3}, Strides({2, 4, 3, 3}, false));
  Tensor y_bad(CUDNN_DATA_FLOAT, {2, 4, 5, 5}, Strides({2, 4, 5, 5}, false));
  x.Set(Random(x.count(), 1));
  w.Set(Random(w.count(), 2));
  const float a = 1, b = 0;
  EXPECT_EQ(DNN(cudnnConvolutionForward)(h, &a, x.desc(), x.ptr(), w.fdesc(), w.ptr(), c,
                                         CUDNN_CONVOLUTION_FWD_ALGO_GEMM, nullptr, 0, &b,
                                         y_bad.desc(), y_bad.ptr()),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnConvolutionForward)(h, &a, x.desc(), x.ptr(), w.fdesc(), w.ptr(), c,
                                         static_cast<cudnnConvolutionFwdAlgo_t>(8), nullptr, 0, &b,
                                         y.desc(), y.ptr()),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnConvolutionForward)(nullptr, &a, x.desc(), x.ptr(), w.fdesc(), w.ptr(), c,
                                         CUDNN_CONVOLUTION_FWD_ALGO_GEMM, nullptr, 0, &b, y.desc(),
                                         y.ptr()),
            CUDNN_STATUS_BAD_PARAM);
  size_t ws = 1;
  EXPECT_EQ(DNN(cudnnGetConvolutionForwardWorkspaceSize)(h, x.desc(), w.fdesc(), c, y.desc(),
                                                         CUDNN_CONVOLUTION_FWD_ALGO_FFT, &ws),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(ws, 0u);
  EXPECT_EQ(
      DNN(cudnnGetConvolutionForwardWorkspaceSize)(h, x.desc(), w.fdesc(), c, y.desc(),
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(-1), &ws),
      CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnGetConvolutionBackwardDataWorkspaceSize)(
                h, w.fdesc(), y.desc(), c, x.desc(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &ws),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(DNN(cudnnGetConvolutionBackwardFilterWorkspaceSize)(
                h, x.desc(), y.desc(), c, w.fdesc(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, &ws),
            CUDNN_STATUS_SUCCESS);
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int n = 0;
  ASSERT_EQ(DNN(cudnnGetConvolutionForwardAlgorithm_v7)(h, x.desc(), w.fdesc(), c, y.desc(),
                                                        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, fwd),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(n, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(fwd[i].status, CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(fwd[i].memory, 0u);
    EXPECT_EQ(fwd[i].mathType, CUDNN_TENSOR_OP_MATH);
  }
  cudnnConvolutionBwdDataAlgoPerf_t bd[2];
  ASSERT_EQ(DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7)(h, w.fdesc(), y.desc(), c, x.desc(), 2,
                                                             &n, bd),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(n, 2);
  cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  ASSERT_EQ(
      DNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7)(
          h, x.desc(), y.desc(), c, w.fdesc(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, bf),
      CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(n, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
  EXPECT_EQ(DNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7)(h, x.desc(), y_bad.desc(), c,
                                                               w.fdesc(), 1, &n, bf),
            CUDNN_STATUS_BAD_PARAM);
  // A destroyed descriptor is refused.
  EXPECT_EQ(DNN(cudnnDestroyConvolutionDescriptor)(c), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(DNN(cudnnConvolutionForward)(h, &a, x.desc(), x.ptr(), w.fdesc(), w.ptr(), c,
                                         CUDNN_CONVOLUTION_FWD_ALGO_GEMM, nullptr, 0, &b, y.desc(),
                                         y.ptr()),
            CUDNN_STATUS_BAD_PARAM);
}

// ---- Convolution ----

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

class ConvTest : public DnnTest, public ::testing::WithParamInterface<ConvCase> {};

TEST_P(ConvTest, FourPasses) {
  const ConvCase& p = GetParam();
  const int nd = static_cast<int>(p.x.size());
  Dims wd{p.k, p.x[1] / p.groups};
  wd.insert(wd.end(), p.r.begin(), p.r.end());
  Dims yd{p.x[0], p.k};
  for (int s = 0; s < nd - 2; ++s) {
    yd.push_back((p.x[2 + s] + 2 * p.pad[s] - ((p.r[s] - 1) * p.dil[s] + 1)) / p.stride[s] + 1);
  }
  Tensor x(p.type, p.x, Strides(p.x, p.nhwc));
  Tensor w = Tensor::Filter(p.type, wd, p.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW);
  Tensor y(p.type, yd, Strides(yd, p.nhwc));
  Dims bd(nd, 1);
  bd[1] = p.k;
  Tensor bias(p.type, bd, Strides(bd, false));
  cudnnConvolutionDescriptor_t c = nullptr;
  ASSERT_EQ(DNN(cudnnCreateConvolutionDescriptor)(&c), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(DNN(cudnnSetConvolutionNdDescriptor)(c, nd - 2, p.pad.data(), p.stride.data(),
                                                 p.dil.data(), p.mode, p.type),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(DNN(cudnnSetConvolutionGroupCount)(c, p.groups), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(DNN(cudnnSetConvolutionMathType)(c, CUDNN_DEFAULT_MATH), CUDNN_STATUS_SUCCESS);

  ConvRef ref;
  ref.xc = x.canon();
  ref.wc = w.canon();
  ref.yc = y.canon();
  for (int s = 0; s < nd - 2; ++s) {
    const int slot = 5 - (nd - 2) + s;
    ref.pad[slot] = p.pad[s];
    ref.str[slot] = p.stride[s];
    ref.dil[slot] = p.dil[s];
  }
  ref.groups = p.groups;
  ref.flip = p.mode == CUDNN_CONVOLUTION;
  const double tol = Tol(p.type);

  const Vec xv = x.Set(Random(x.count(), 11));
  const Vec wv = w.Set(Random(w.count(), 12));
  // Forward, beta = 0 over NaN.
  {
    Vec want(y.count());
    ref.Taps([&](int xi, int wi, int yi) { want[yi] += xv[xi] * wv[wi]; });
    const Scale a(p.type, 1.5), b(p.type, 0);
    ASSERT_EQ(DNN(cudnnConvolutionForward)(h, a.ptr(), x.desc(), x.ptr(), w.fdesc(), w.ptr(), c,
                                           CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0,
                                           b.ptr(), y.desc(), y.ptr()),
              CUDNN_STATUS_SUCCESS);
    ExpectBlend(y.Get(), want, a.value(), 0, want, tol, "forward");
    // Forward again with beta != 0 (a workspace larger than needed).
    const Vec old = y.Set(Random(y.count(), 13));
    const Scale a2(p.type, 0.5), b2(p.type, -0.75);
    std::vector<char> ws(256);
    ASSERT_EQ(DNN(cudnnConvolutionForward)(h, a2.ptr(), x.desc(), x.ptr(), w.fdesc(), w.ptr(), c,
                                           CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws.data(), ws.size(),
                                           b2.ptr(), y.desc(), y.ptr()),
              CUDNN_STATUS_SUCCESS);
    ExpectBlend(y.Get(), want, a2.value(), b2.value(), old, tol, "forward beta");
  }
  const Vec dy = y.Set(Random(y.count(), 14));
  // Backward data: dx = alpha * W^T dy + beta * dx.
  {
    Vec want(x.count());
    ref.Taps([&](int xi, int wi, int yi) { want[xi] += dy[yi] * wv[wi]; });
    Tensor dx(p.type, p.x, Strides(p.x, p.nhwc));
    const Vec old = dx.Set(Random(dx.count(), 15));
    const Scale a(p.type, 0.75), b(p.type, 0.25);
    ASSERT_EQ(DNN(cudnnConvolutionBackwardData)(h, a.ptr(), w.fdesc(), w.ptr(), y.desc(), y.ptr(),
                                                c, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0,
                                                b.ptr(), dx.desc(), dx.ptr()),
              CUDNN_STATUS_SUCCESS);
    ExpectBlend(dx.Get(), want, a.value(), b.value(), old, tol, "backward data");
    Tensor dx0(p.type, p.x, Strides(p.x, p.nhwc));
    const Scale one(p.type, 1), zero(p.type, 0);
    ASSERT_EQ(DNN(cudnnConvolutionBackwardData)(h, one.ptr(), w.fdesc(), w.ptr(), y.desc(), y.ptr(),
                                                c, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, nullptr, 0,
                                                zero.ptr(), dx0.desc(), dx0.ptr()),
              CUDNN_STATUS_SUCCESS);
    ExpectBlend(dx0.Get(), want, 1, 0, want, tol, "backward data beta 0");
  }
  // Backward filter.
  {
    Vec want(w.count());
    ref.Taps([&](int xi, int wi, int yi) { want[wi] += dy[yi] * xv[xi]; });
    Tensor dw = Tensor::Filter(p.type, wd, p.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW);
    const Vec old = dw.Set(Random(dw.count(), 16));
    const Scale a(p.type, 1.25), b(p.type, 0.5);
    ASSERT_EQ(DNN(cudnnConvolutionBackwardFilter)(h, a.ptr(), x.desc(), x.ptr(), y.desc(), y.ptr(),
                                                  c, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr,
                                                  0, b.ptr(), dw.fdesc(), dw.ptr()),
              CUDNN_STATUS_SUCCESS);
    ExpectBlend(dw.Get(), want, a.value(), b.value(), old, tol * 4, "backward filter");
    Tensor dw0 = Tensor::Filter(p.type, wd, p.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW);
    const Scale one(p.type, 1), zero(p.type, 0);
    ASSERT_EQ(DNN(cudnnConvolutionBackwardFilter)(h, one.ptr(), x.desc(), x.ptr(), y.desc(),
                                                  y.ptr(), c, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                                                  nullptr, 0, zero.ptr(), dw0.fdesc(), dw0.ptr()),
              CUDNN_STATUS_SUCCESS);
    ExpectBlend(dw0.Get(), want, 1, 0, want, tol * 4, "backward filter beta 0");
  }
  // Backward bias: sum of dy over N and the spatial dims.
  {
    Vec want(p.k);
    ForEach(y.canon(), [&](const Idx& i) { want[i[1]] += dy[Lin(y.canon(), i)]; });
    const Vec old = bias.Set(Random(bias.count(), 17));
    const Scale a(p.type, 2), b(p.type, 1);
    ASSERT_EQ(DNN(cudnnConvolutionBackwardBias)(h, a.ptr(), y.desc(), y.ptr(), b.ptr(), bias.desc(),
                                                bias.ptr()),
              CUDNN_STATUS_SUCCESS);
    ExpectBlend(bias.Get(), want, a.value(), b.value(), old, tol * 4, "backward bias");
  }
  EXPECT_EQ(DNN(cudnnDestroyConvolutionDescriptor)(c), CUDNN_STATUS_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvTest,
                         ::testing::Values(ConvCase{"nchw_plain",
                                                    CUDNN_DATA_FLOAT,
                                                    false,
                                                    CUDNN_CROSS_CORRELATION,
                                                    {2, 3, 7, 6},
                                                    4,
                                                    {3, 3},
                                                    {1, 1},
                                                    {1, 1},
                                                    {1, 1},
                                                    1},
                                           ConvCase{"nhwc_stride_pad",
                                                    CUDNN_DATA_FLOAT,
                                                    true,
                                                    CUDNN_CROSS_CORRELATION,
                                                    {2, 4, 9, 8},
                                                    6,
                                                    {3, 2},
                                                    {1, 2},
                                                    {2, 2},
                                                    {1, 1},
                                                    1},
                                           ConvCase{"nchw_dilation_groups_flip",
                                                    CUDNN_DATA_FLOAT,
                                                    false,
                                                    CUDNN_CONVOLUTION,
                                                    {2, 6, 9, 9},
                                                    4,
                                                    {3, 3},
                                                    {2, 1},
                                                    {1, 2},
                                                    {2, 1},
                                                    2},
                                           ConvCase{"nhwc_groups_flip",
                                                    CUDNN_DATA_FLOAT,
                                                    true,
                                                    CUDNN_CONVOLUTION,
                                                    {2, 4, 6, 7},
                                                    8,
                                                    {2, 3},
                                                    {0, 1},
                                                    {1, 1},
                                                    {1, 2},
                                                    4},
                                           ConvCase{"double_flip_groups",
                                                    CUDNN_DATA_DOUBLE,
                                                    false,
                                                    CUDNN_CONVOLUTION,
                                                    {2, 4, 7, 7},
                                                    6,
                                                    {3, 3},
                                                    {1, 1},
                                                    {2, 1},
                                                    {1, 1},
                                                    2},
                                           ConvCase{"half_nhwc",
                                                    CUDNN_DATA_HALF,
                                                    true,
                                                    CUDNN_CROSS_CORRELATION,
                                                    {2, 3, 6, 6},
                                                    4,
                                                    {3, 3},
                                                    {1, 1},
                                                    {1, 1},
                                                    {1, 1},
                                                    1},
                                           ConvCase{"conv3d",
                                                    CUDNN_DATA_FLOAT,
                                                    false,
                                                    CUDNN_CROSS_CORRELATION,
                                                    {2, 3, 5, 6, 5},
                                                    4,
                                                    {3, 3, 2},
                                                    {1, 0, 1},
                                                    {1, 2, 1},
                                                    {1, 1, 2},
                                                    1}),
                         [](const ::testing::TestParamInfo<ConvCase>& i) {
                           return std::string(i.param.name);
                         });

// ---- Tensor arithmetic ----

TEST_F(DnnTest, AddTensorBroadcastsBias) {
  const Dims cd{2, 5, 4, 6}, ad{1, 5, 1, 1};
  Tensor cT(CUDNN_DATA_FLOAT, cd, Strides(cd, true));
  Tensor aT(CUDNN_DATA_FLOAT, ad, Strides(ad, false));
  const Vec av = aT.Set(Random(aT.count(), 21));
  const Vec old = cT.Set(Random(cT.count(), 22));
  const float a = 2, b = 0.5;
  ASSERT_EQ(DNN(cudnnAddTensor)(h, &a, aT.desc(), aT.ptr(), &b, cT.desc(), cT.ptr()),
            CUDNN_STATUS_SUCCESS);
  Vec want(cT.count());
  ForEach(cT.canon(), [&](const Idx& i) { want[Lin(cT.canon(), i)] = av[i[1]]; });
  ExpectBlend(cT.Get(), want, a, b, old, 1e-5, "add tensor");
  const Dims bad{1, 4, 1, 1};
  Tensor badT(CUDNN_DATA_FLOAT, bad, Strides(bad, false));
  EXPECT_EQ(DNN(cudnnAddTensor)(h, &a, badT.desc(), badT.ptr(), &b, cT.desc(), cT.ptr()),
            CUDNN_STATUS_BAD_PARAM);
}

TEST_F(DnnTest, OpTensorScaleSetTransform) {
  const Dims d{2, 3, 5, 4}, bd{1, 3, 1, 4};
  Tensor A(CUDNN_DATA_FLOAT, d, Strides(d, false));
  Tensor B(CUDNN_DATA_FLOAT, bd, Strides(bd, true));
  Tensor C(CUDNN_DATA_FLOAT, d, Strides(d, true));
  const Vec av = A.Set(Random(A.count(), 31, 0.1, 2));
  const Vec bv = B.Set(Random(B.count(), 32));
  cudnnOpTensorDescriptor_t op = nullptr;
  ASSERT_EQ(DNN(cudnnCreateOpTensorDescriptor)(&op), CUDNN_STATUS_SUCCESS);
  const float a1 = 0.5, a2 = -2;
  for (int kind = CUDNN_OP_TENSOR_ADD; kind <= CUDNN_OP_TENSOR_NOT; ++kind) {
    ASSERT_EQ(DNN(cudnnSetOpTensorDescriptor)(op, static_cast<cudnnOpTensorOp_t>(kind),
                                              CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN),
              CUDNN_STATUS_SUCCESS);
    const float beta = kind % 2 == 0 ? 0.f : 0.25f;
    const Vec old = beta == 0 ? Vec(C.count()) : C.Set(Random(C.count(), 33 + kind));
    ASSERT_EQ(DNN(cudnnOpTensor)(h, op, &a1, A.desc(), A.ptr(), &a2, B.desc(), B.ptr(), &beta,
                                 C.desc(), C.ptr()),
              CUDNN_STATUS_SUCCESS);
    Vec want(C.count());
    ForEach(C.canon(), [&](const Idx& i) {
      const double x = a1 * av[Lin(A.canon(), i)];
      const double y = a2 * bv[Lin(B.canon(), Idx{0, i[1], 0, 0, i[4]})];
      double r = 0;
      switch (kind) {
        case CUDNN_OP_TENSOR_ADD:
          r = x + y;
          break;
        case CUDNN_OP_TENSOR_MUL:
          r = x * y;
          break;
        case CUDNN_OP_TENSOR_MIN:
          r = std::min(x, y);
          break;
        case CUDNN_OP_TENSOR_MAX:
          r = std::max(x, y);
          break;
        case CUDNN_OP_TENSOR_SQRT:
          r = std::sqrt(x);
          break;
        default:
          r = 1 - x;
          break;
      }
      want[Lin(C.canon(), i)] = r;
    });
    ExpectBlend(C.Get(), want, 1, beta, old, 1e-5, "op tensor " + std::to_string(kind));
  }
  EXPECT_EQ(DNN(cudnnDestroyOpTensorDescriptor)(op), CUDNN_STATUS_SUCCESS);

  // Scale, set.
  const Vec cv = C.Set(Random(C.count(), 40));
  const float s = -3;
  ASSERT_EQ(DNN(cudnnScaleTensor)(h, C.desc(), C.ptr(), &s), CUDNN_STATUS_SUCCESS);
  ExpectBlend(C.Get(), cv, s, 0, cv, 1e-6, "scale");
  const float v = 7.5;
  ASSERT_EQ(DNN(cudnnSetTensor)(h, C.desc(), C.ptr(), &v), CUDNN_STATUS_SUCCESS);
  ExpectBlend(C.Get(), Vec(C.count(), 7.5), 1, 0, cv, 0, "set");

  // Transform NCHW -> NHWC, and NHWC -> NCHW with beta.
  const float ta = 2, tb = 0, tb2 = -1;
  ASSERT_EQ(DNN(cudnnTransformTensor)(h, &ta, A.desc(), A.ptr(), &tb, C.desc(), C.ptr()),
            CUDNN_STATUS_SUCCESS);
  ExpectBlend(C.Get(), av, ta, 0, av, 1e-6, "transform");
  Tensor back(CUDNN_DATA_DOUBLE, d, Strides(d, false));
  const Vec bold = back.Set(Random(back.count(), 41));
  const double da = 1, db = -1;
  (void)tb2;
  ASSERT_EQ(DNN(cudnnTransformTensor)(h, &da, C.desc(), C.ptr(), &db, back.desc(), back.ptr()),
            CUDNN_STATUS_SUCCESS);
  Vec twice(av.size());
  for (size_t i = 0; i < av.size(); ++i) twice[i] = 2 * av[i];
  ExpectBlend(back.Get(), twice, 1, -1, bold, 1e-6, "transform back");
}

// ---- Activation and softmax ----

double Sig(double x) {
  return 1 / (1 + std::exp(-x));
}

TEST_F(DnnTest, ActivationForwardBackward) {
  for (cudnnDataType_t type : {CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF}) {
    const Dims d{2, 4, 5, 6};
    Tensor x(type, d, Strides(d, true)), y(type, d, Strides(d, false));
    Tensor dy(type, d, Strides(d, false)), dx(type, d, Strides(d, true));
    const Vec xv = x.Set(Random(x.count(), 51, -2, 2));
    const Vec dyv = dy.Set(Random(dy.count(), 52));
    cudnnActivationDescriptor_t act = nullptr;
    ASSERT_EQ(DNN(cudnnCreateActivationDescriptor)(&act), CUDNN_STATUS_SUCCESS);
    const double coef = 0.8;
    for (int mode = CUDNN_ACTIVATION_SIGMOID; mode <= CUDNN_ACTIVATION_SWISH; ++mode) {
      ASSERT_EQ(DNN(cudnnSetActivationDescriptor)(act, static_cast<cudnnActivationMode_t>(mode),
                                                  CUDNN_NOT_PROPAGATE_NAN, coef),
                CUDNN_STATUS_SUCCESS);
      Vec f(x.count()), df(x.count());
      for (size_t i = 0; i < xv.size(); ++i) {
        const double v = xv[i];
        switch (mode) {
          case CUDNN_ACTIVATION_SIGMOID:
            f[i] = Sig(v);
            df[i] = Sig(v) * (1 - Sig(v));
            break;
          case CUDNN_ACTIVATION_RELU:
            f[i] = std::max(v, 0.0);
            df[i] = v > 0;
            break;
          case CUDNN_ACTIVATION_TANH:
            f[i] = std::tanh(v);
            df[i] = 1 - f[i] * f[i];
            break;
          case CUDNN_ACTIVATION_CLIPPED_RELU:
            f[i] = std::min(std::max(v, 0.0), coef);
            df[i] = v > 0 && v < coef;
            break;
          case CUDNN_ACTIVATION_ELU:
            f[i] = v > 0 ? v : coef * (std::exp(v) - 1);
            df[i] = v > 0 ? 1 : coef * std::exp(v);
            break;
          case CUDNN_ACTIVATION_IDENTITY:
            f[i] = v;
            df[i] = 1;
            break;
          default:
            f[i] = v * Sig(v);
            df[i] = Sig(v) + v * Sig(v) * (1 - Sig(v));
            break;
        }
      }
      const std::string what =
          "activation " + std::to_string(mode) + " type " + std::to_string(type);
      const Scale a(type, 1.5), zero(type, 0), b(type, 0.5);
      ASSERT_EQ(DNN(cudnnActivationForward)(h, act, a.ptr(), x.desc(), x.ptr(), zero.ptr(),
                                            y.desc(), y.ptr()),
                CUDNN_STATUS_SUCCESS);
      const double tol = Tol(type) * 2;
      ExpectBlend(y.Get(), f, a.value(), 0, f, tol, what);
      // y itself (not alpha * y) feeds backward.
      const Vec yv = y.Set(f);
      const Vec old = dx.Set(Random(dx.count(), 53));
      const cudnnStatus_t st =
          DNN(cudnnActivationBackward)(h, act, a.ptr(), y.desc(), y.ptr(), dy.desc(), dy.ptr(),
                                       x.desc(), x.ptr(), b.ptr(), dx.desc(), dx.ptr());
      if (mode == CUDNN_ACTIVATION_IDENTITY) {
        EXPECT_EQ(st, CUDNN_STATUS_BAD_PARAM);
        continue;
      }
      ASSERT_EQ(st, CUDNN_STATUS_SUCCESS) << what;
      Vec want(x.count());
      for (size_t i = 0; i < want.size(); ++i) want[i] = df[i] * dyv[i];
      if (type == CUDNN_DATA_HALF &&
          (mode == CUDNN_ACTIVATION_SIGMOID || mode == CUDNN_ACTIVATION_TANH)) {
        // The derivative is taken from the (rounded) stored y.
        for (size_t i = 0; i < want.size(); ++i) {
          want[i] =
              dyv[i] * (mode == CUDNN_ACTIVATION_SIGMOID ? yv[i] * (1 - yv[i]) : 1 - yv[i] * yv[i]);
        }
      }
      ExpectBlend(dx.Get(), want, a.value(), b.value(), old, tol, what + " backward");
    }
    EXPECT_EQ(DNN(cudnnDestroyActivationDescriptor)(act), CUDNN_STATUS_SUCCESS);
  }
}

TEST_F(DnnTest, SoftmaxForwardBackward) {
  const Dims d{2, 5, 3, 4};
  Tensor x(CUDNN_DATA_FLOAT, d, Strides(d, true)), y(CUDNN_DATA_FLOAT, d, Strides(d, false));
  Tensor dy(CUDNN_DATA_FLOAT, d, Strides(d, false)), dx(CUDNN_DATA_FLOAT, d, Strides(d, true));
  const Vec xv = x.Set(Random(x.count(), 61, -3, 3));
  const Vec dyv = dy.Set(Random(dy.count(), 62));
  const Idx c = x.canon();
  for (int mode : {CUDNN_SOFTMAX_MODE_INSTANCE, CUDNN_SOFTMAX_MODE_CHANNEL}) {
    for (int algo : {CUDNN_SOFTMAX_FAST, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_LOG}) {
      // Groups: key = n (instance) or (n, h, w) (channel).
      auto key = [&](const Idx& i) {
        return mode == CUDNN_SOFTMAX_MODE_INSTANCE ? i[0] : (i[0] * c[3] + i[3]) * c[4] + i[4];
      };
      Vec mx(c[0] * c[3] * c[4], -1e300), sum(mx.size());
      ForEach(c, [&](const Idx& i) { mx[key(i)] = std::max(mx[key(i)], xv[Lin(c, i)]); });
      ForEach(c, [&](const Idx& i) { sum[key(i)] += std::exp(xv[Lin(c, i)] - mx[key(i)]); });
      Vec want(x.count());
      ForEach(c, [&](const Idx& i) {
        const double z = xv[Lin(c, i)] - mx[key(i)];
        want[Lin(c, i)] =
            algo == CUDNN_SOFTMAX_LOG ? z - std::log(sum[key(i)]) : std::exp(z) / sum[key(i)];
      });
      const std::string what =
          "softmax mode " + std::to_string(mode) + " algo " + std::to_string(algo);
      const float a = 1, zero = 0, b = 0.5;
      ASSERT_EQ(DNN(cudnnSoftmaxForward)(h, static_cast<cudnnSoftmaxAlgorithm_t>(algo),
                                         static_cast<cudnnSoftmaxMode_t>(mode), &a, x.desc(),
                                         x.ptr(), &zero, y.desc(), y.ptr()),
                CUDNN_STATUS_SUCCESS);
      const Vec yv = y.Get();
      ExpectBlend(yv, want, 1, 0, want, 1e-5, what);
      Vec s2(mx.size());
      ForEach(c, [&](const Idx& i) {
        const int k = Lin(c, i);
        s2[key(i)] += algo == CUDNN_SOFTMAX_LOG ? dyv[k] : dyv[k] * yv[k];
      });
      Vec grad(x.count());
      ForEach(c, [&](const Idx& i) {
        const int k = Lin(c, i);
        grad[k] = algo == CUDNN_SOFTMAX_LOG ? dyv[k] - std::exp(yv[k]) * s2[key(i)]
                                            : yv[k] * (dyv[k] - s2[key(i)]);
      });
      const Vec old = dx.Set(Random(dx.count(), 63));
      const float a2 = 2;
      ASSERT_EQ(DNN(cudnnSoftmaxBackward)(h, static_cast<cudnnSoftmaxAlgorithm_t>(algo),
                                          static_cast<cudnnSoftmaxMode_t>(mode), &a2, y.desc(),
                                          y.ptr(), dy.desc(), dy.ptr(), &b, dx.desc(), dx.ptr()),
                CUDNN_STATUS_SUCCESS);
      ExpectBlend(dx.Get(), grad, a2, b, old, 1e-5, what + " backward");
    }
  }
  const float a = 1, zero = 0;
  EXPECT_EQ(DNN(cudnnSoftmaxForward)(h, static_cast<cudnnSoftmaxAlgorithm_t>(7),
                                     CUDNN_SOFTMAX_MODE_CHANNEL, &a, x.desc(), x.ptr(), &zero,
                                     y.desc(), y.ptr()),
            CUDNN_STATUS_BAD_PARAM);
}

// ---- Pooling and LRN ----

struct PoolCase {
  Dims x, win, pad, stride;
};

TEST_F(DnnTest, PoolingForwardBackward) {
  const PoolCase cases[] = {{{2, 3, 7, 6}, {3, 2}, {1, 0}, {2, 2}},
                            {{2, 3, 6, 6}, {2, 2}, {0, 0}, {2, 2}},
                            {{2, 2, 5, 6, 5}, {2, 3, 2}, {1, 1, 0}, {2, 1, 2}}};
  for (const PoolCase& pc : cases) {
    const int nd = static_cast<int>(pc.x.size());
    Dims yd{pc.x[0], pc.x[1]};
    for (int s = 0; s < nd - 2; ++s) {
      yd.push_back((pc.x[2 + s] + 2 * pc.pad[s] - pc.win[s]) / pc.stride[s] + 1);
    }
    Tensor x(CUDNN_DATA_FLOAT, pc.x, Strides(pc.x, true)),
        y(CUDNN_DATA_FLOAT, yd, Strides(yd, false));
    Tensor dy(CUDNN_DATA_FLOAT, yd, Strides(yd, true)),
        dx(CUDNN_DATA_FLOAT, pc.x, Strides(pc.x, false));
    const Vec xv = x.Set(Random(x.count(), 71));
    const Vec dyv = dy.Set(Random(dy.count(), 72));
    const Idx xc = x.canon(), yc = y.canon();
    Idx win{1, 1, 1, 1, 1}, pad{0, 0, 0, 0, 0}, str{1, 1, 1, 1, 1};
    for (int s = 0; s < nd - 2; ++s) {
      win[5 - (nd - 2) + s] = pc.win[s];
      pad[5 - (nd - 2) + s] = pc.pad[s];
      str[5 - (nd - 2) + s] = pc.stride[s];
    }
    auto window = [&](const Idx& o, const std::function<void(int)>& f) {
      for (int a = 0; a < win[2]; ++a)
        for (int b = 0; b < win[3]; ++b)
          for (int e = 0; e < win[4]; ++e) {
            const Idx i{o[0], o[1], o[2] * str[2] - pad[2] + a, o[3] * str[3] - pad[3] + b,
                        o[4] * str[4] - pad[4] + e};
            if (i[2] < 0 || i[2] >= xc[2] || i[3] < 0 || i[3] >= xc[3] || i[4] < 0 || i[4] >= xc[4])
              continue;
            f(Lin(xc, i));
          }
    };
    cudnnPoolingDescriptor_t pd = nullptr;
    ASSERT_EQ(DNN(cudnnCreatePoolingDescriptor)(&pd), CUDNN_STATUS_SUCCESS);
    for (int mode :
         {CUDNN_POOLING_MAX, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
          CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_POOLING_MAX_DETERMINISTIC}) {
      ASSERT_EQ(DNN(cudnnSetPoolingNdDescriptor)(pd, static_cast<cudnnPoolingMode_t>(mode),
                                                 CUDNN_NOT_PROPAGATE_NAN, nd - 2, pc.win.data(),
                                                 pc.pad.data(), pc.stride.data()),
                CUDNN_STATUS_SUCCESS);
      const bool is_max = mode == CUDNN_POOLING_MAX || mode == CUDNN_POOLING_MAX_DETERMINISTIC;
      Vec want(y.count()), grad(x.count());
      ForEach(yc, [&](const Idx& o) {
        double best = -1e300, sum = 0;
        int arg = -1, n = 0;
        window(o, [&](int k) {
          if (xv[k] > best) {
            best = xv[k];
            arg = k;
          }
          sum += xv[k];
          ++n;
        });
        const double div =
            mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? win[2] * win[3] * win[4] : n;
        const double g = dyv[Lin(yc, o)];
        want[Lin(yc, o)] = is_max ? best : sum / div;
        if (is_max) {
          grad[arg] += g;
        } else {
          window(o, [&](int k) { grad[k] += g / div; });
        }
      });
      const std::string what = "pooling " + std::to_string(nd) + "d mode " + std::to_string(mode);
      const float a = 1, zero = 0, b = -0.5;
      ASSERT_EQ(DNN(cudnnPoolingForward)(h, pd, &a, x.desc(), x.ptr(), &zero, y.desc(), y.ptr()),
                CUDNN_STATUS_SUCCESS);
      ExpectBlend(y.Get(), want, 1, 0, want, 1e-5, what);
      const Vec old = dx.Set(Random(dx.count(), 73));
      ASSERT_EQ(DNN(cudnnPoolingBackward)(h, pd, &a, y.desc(), y.ptr(), dy.desc(), dy.ptr(),
                                          x.desc(), x.ptr(), &b, dx.desc(), dx.ptr()),
                CUDNN_STATUS_SUCCESS);
      ExpectBlend(dx.Get(), grad, 1, b, old, 1e-5, what + " backward");
    }
    // A y of the wrong shape is refused.
    const float a = 1, zero = 0;
    EXPECT_EQ(DNN(cudnnPoolingForward)(h, pd, &a, x.desc(), x.ptr(), &zero, x.desc(), x.ptr()),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(DNN(cudnnDestroyPoolingDescriptor)(pd), CUDNN_STATUS_SUCCESS);
  }
}

TEST_F(DnnTest, LrnForwardBackward) {
  const Dims d{2, 7, 4, 5};
  Tensor x(CUDNN_DATA_FLOAT, d, Strides(d, true)), y(CUDNN_DATA_FLOAT, d, Strides(d, false));
  Tensor dy(CUDNN_DATA_FLOAT, d, Strides(d, false)), dx(CUDNN_DATA_FLOAT, d, Strides(d, true));
  const Vec xv = x.Set(Random(x.count(), 81, -2, 2));
  const Vec dyv = dy.Set(Random(dy.count(), 82));
  const unsigned n = 4;
  const double la = 0.3, lb = 0.75, lk = 1.5;
  cudnnLRNDescriptor_t l = nullptr;
  ASSERT_EQ(DNN(cudnnCreateLRNDescriptor)(&l), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(DNN(cudnnSetLRNDescriptor)(l, n, la, lb, lk), CUDNN_STATUS_SUCCESS);
  const Idx c = x.canon();
  const int behind = (n - 1) / 2, ahead = n - 1 - behind;
  // Reference by the formula; the backward by finite differences of the
  // double-precision forward of sum(y * dy).
  auto forward = [&](const Vec& in) {
    Vec out(in.size());
    ForEach(c, [&](const Idx& i) {
      double s = 0;
      for (int j = std::max(0, i[1] - behind); j <= std::min(c[1] - 1, i[1] + ahead); ++j) {
        const double v = in[Lin(c, Idx{i[0], j, i[2], i[3], i[4]})];
        s += v * v;
      }
      out[Lin(c, i)] = in[Lin(c, i)] * std::pow(lk + la / n * s, -lb);
    });
    return out;
  };
  const Vec want = forward(xv);
  const float a = 1, zero = 0, b = 0.5;
  ASSERT_EQ(DNN(cudnnLRNCrossChannelForward)(h, l, CUDNN_LRN_CROSS_CHANNEL_DIM1, &a, x.desc(),
                                             x.ptr(), &zero, y.desc(), y.ptr()),
            CUDNN_STATUS_SUCCESS);
  ExpectBlend(y.Get(), want, 1, 0, want, 1e-5, "lrn");
  Vec grad(x.count());
  const double eps = 1e-6;
  for (size_t k = 0; k < grad.size(); ++k) {
    Vec p = xv, m = xv;
    p[k] += eps;
    m[k] -= eps;
    const Vec fp = forward(p), fm = forward(m);
    double s = 0;
    for (size_t j = 0; j < fp.size(); ++j) s += (fp[j] - fm[j]) * dyv[j];
    grad[k] = s / (2 * eps);
  }
  const Vec old = dx.Set(Random(dx.count(), 83));
  ASSERT_EQ(DNN(cudnnLRNCrossChannelBackward)(h, l, CUDNN_LRN_CROSS_CHANNEL_DIM1, &a, y.desc(),
                                              y.ptr(), dy.desc(), dy.ptr(), x.desc(), x.ptr(), &b,
                                              dx.desc(), dx.ptr()),
            CUDNN_STATUS_SUCCESS);
  ExpectBlend(dx.Get(), grad, 1, b, old, 1e-4, "lrn backward");
  EXPECT_EQ(DNN(cudnnLRNCrossChannelForward)(h, l, static_cast<cudnnLRNMode_t>(3), &a, x.desc(),
                                             x.ptr(), &zero, y.desc(), y.ptr()),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnDestroyLRNDescriptor)(l), CUDNN_STATUS_SUCCESS);
}

// ---- Batch normalization ----

TEST_F(DnnTest, BatchNormBothModes) {
  for (cudnnBatchNormMode_t mode : {CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_PER_ACTIVATION,
                                    CUDNN_BATCHNORM_SPATIAL_PERSISTENT}) {
    const bool spatial = mode != CUDNN_BATCHNORM_PER_ACTIVATION;
    const Dims d{3, 4, 3, 5};
    const Dims pd = spatial ? Dims{1, 4, 1, 1} : Dims{1, 4, 3, 5};
    Tensor x(CUDNN_DATA_FLOAT, d, Strides(d, true)), y(CUDNN_DATA_FLOAT, d, Strides(d, false));
    Tensor dy(CUDNN_DATA_FLOAT, d, Strides(d, false)), dx(CUDNN_DATA_FLOAT, d, Strides(d, true));
    auto param = [&] { return Tensor(CUDNN_DATA_FLOAT, pd, Strides(pd, false)); };
    Tensor scale = param(), bias = param(), rmean = param(), rvar = param(), smean = param(),
           sinv = param(), dscale = param(), dbias = param();
    const Vec xv = x.Set(Random(x.count(), 91, -2, 3));
    const Vec dyv = dy.Set(Random(dy.count(), 92));
    const Vec sc = scale.Set(Random(scale.count(), 93, 0.5, 1.5));
    const Vec bi = bias.Set(Random(bias.count(), 94));
    const Vec rm0 = rmean.Set(Random(rmean.count(), 95));
    const Vec rv0 = rvar.Set(Random(rvar.count(), 96, 0.5, 1.5));
    const Idx c = x.canon(), pc = scale.canon();
    auto pk = [&](const Idx& i) {
      return spatial ? i[1] : Lin(pc, Idx{0, i[1], i[2], i[3], i[4]});
    };
    const int np = scale.count();
    const double m = static_cast<double>(x.count()) / np;
    Vec mean(np), var(np);
    ForEach(c, [&](const Idx& i) { mean[pk(i)] += xv[Lin(c, i)] / m; });
    ForEach(c, [&](const Idx& i) {
      const double e = xv[Lin(c, i)] - mean[pk(i)];
      var[pk(i)] += e * e / m;
    });
    const double eps = 1e-3, f = 0.3;
    const std::string what = "batchnorm mode " + std::to_string(mode);

    // Inference with the running statistics.
    const float a = 1.5, zero = 0;
    ASSERT_EQ(DNN(cudnnBatchNormalizationForwardInference)(
                  h, mode, &a, &zero, x.desc(), x.ptr(), y.desc(), y.ptr(), scale.desc(),
                  scale.ptr(), bias.ptr(), rmean.ptr(), rvar.ptr(), eps),
              CUDNN_STATUS_SUCCESS);
    Vec inf(x.count());
    ForEach(c, [&](const Idx& i) {
      const int k = pk(i);
      inf[Lin(c, i)] = sc[k] * (xv[Lin(c, i)] - rm0[k]) / std::sqrt(rv0[k] + eps) + bi[k];
    });
    ExpectBlend(y.Get(), inf, a, 0, inf, 1e-5, what + " inference");

    // Training.
    const Vec yold = y.Set(Random(y.count(), 97));
    const float one = 1, half = 0.5;
    ASSERT_EQ(DNN(cudnnBatchNormalizationForwardTraining)(h, mode, &one, &half, x.desc(), x.ptr(),
                                                          y.desc(), y.ptr(), scale.desc(),
                                                          scale.ptr(), bias.ptr(), f, rmean.ptr(),
                                                          rvar.ptr(), eps, smean.ptr(), sinv.ptr()),
              CUDNN_STATUS_SUCCESS);
    Vec tr(x.count()), rm(np), rv(np), inv(np);
    for (int k = 0; k < np; ++k) {
      rm[k] = (1 - f) * rm0[k] + f * mean[k];
      rv[k] = (1 - f) * rv0[k] + f * var[k] * m / (m - 1);
      inv[k] = 1 / std::sqrt(var[k] + eps);
    }
    ForEach(c, [&](const Idx& i) {
      const int k = pk(i);
      tr[Lin(c, i)] = sc[k] * (xv[Lin(c, i)] - mean[k]) * inv[k] + bi[k];
    });
    ExpectBlend(y.Get(), tr, 1, 0.5, yold, 1e-5, what + " training y");
    ExpectBlend(rmean.Get(), rm, 1, 0, rm, 1e-5, what + " running mean");
    ExpectBlend(rvar.Get(), rv, 1, 0, rv, 1e-5, what + " running var");
    ExpectBlend(smean.Get(), mean, 1, 0, mean, 1e-5, what + " saved mean");
    ExpectBlend(sinv.Get(), inv, 1, 0, inv, 1e-5, what + " saved inv var");

    // Backward, with saved statistics and then recomputing them.
    Vec sdy(np), sdyx(np);
    ForEach(c, [&](const Idx& i) {
      const int k = pk(i);
      const double xhat = (xv[Lin(c, i)] - mean[k]) * inv[k];
      sdy[k] += dyv[Lin(c, i)];
      sdyx[k] += dyv[Lin(c, i)] * xhat;
    });
    Vec gx(x.count());
    ForEach(c, [&](const Idx& i) {
      const int k = pk(i);
      const double xhat = (xv[Lin(c, i)] - mean[k]) * inv[k];
      gx[Lin(c, i)] = sc[k] * inv[k] / m * (m * dyv[Lin(c, i)] - sdy[k] - xhat * sdyx[k]);
    });
    for (bool use_saved : {true, false}) {
      const Vec dxo = dx.Set(Random(dx.count(), 98));
      const Vec dso = dscale.Set(Random(np, 99));
      const Vec dbo = dbias.Set(Random(np, 100));
      const float ad = 2, bd = 0.5, ap = 1, bp = use_saved ? 0.f : 1.f;
      ASSERT_EQ(DNN(cudnnBatchNormalizationBackward)(
                    h, mode, &ad, &bd, &ap, &bp, x.desc(), x.ptr(), dy.desc(), dy.ptr(), dx.desc(),
                    dx.ptr(), scale.desc(), scale.ptr(), dscale.ptr(), dbias.ptr(), eps,
                    use_saved ? smean.ptr() : nullptr, use_saved ? sinv.ptr() : nullptr),
                CUDNN_STATUS_SUCCESS);
      ExpectBlend(dx.Get(), gx, ad, bd, dxo, 1e-4, what + " backward dx");
      ExpectBlend(dscale.Get(), sdyx, ap, bp, dso, 1e-4, what + " backward dscale");
      ExpectBlend(dbias.Get(), sdy, ap, bp, dbo, 1e-4, what + " backward dbias");
    }
    // Epsilon below CUDNN_BN_MIN_EPSILON, a parameter tensor of the wrong shape.
    EXPECT_EQ(DNN(cudnnBatchNormalizationForwardInference)(
                  h, mode, &a, &zero, x.desc(), x.ptr(), y.desc(), y.ptr(), scale.desc(),
                  scale.ptr(), bias.ptr(), rmean.ptr(), rvar.ptr(), -1),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(DNN(cudnnBatchNormalizationForwardInference)(
                  h, mode, &a, &zero, x.desc(), x.ptr(), y.desc(), y.ptr(), x.desc(), scale.ptr(),
                  bias.ptr(), rmean.ptr(), rvar.ptr(), eps),
              CUDNN_STATUS_BAD_PARAM);
  }
}

// Work runs in stream order: a set, then a scale, queued back to back.
TEST_F(DnnTest, StreamOrder) {
  const Dims d{2, 3, 4, 4};
  Tensor t(CUDNN_DATA_FLOAT, d, Strides(d, false));
  const float v = 2, s = 3;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(DNN(cudnnSetTensor)(h, t.desc(), t.ptr(), &v), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(DNN(cudnnScaleTensor)(h, t.desc(), t.ptr(), &s), CUDNN_STATUS_SUCCESS);
  }
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  ExpectBlend(t.Get(), Vec(t.count(), 6), 1, 0, Vec(t.count()), 0, "stream order");
}

// The ids of this process's threads named `name` (new threads inherit their
// creator's name: OpenMP's helpers carry the name of the thread that made them).
std::set<std::string> ThreadsNamed(const std::string& name) {
  std::set<std::string> ids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string got;
    if (std::getline(comm, got) && got == name) ids.insert(task.path().filename());
  }
  return ids;
}

// cuDNN work from streams that come and go runs on the library's one compute
// thread, so one oneDNN helper team serves every stream: none is built per
// stream, and none is left exiting (unjoined) when a stream's worker exits.
TEST_F(DnnTest, OneComputeTeamServesStreamsThatComeAndGo) {
  const Dims xd{2, 4, 9, 9}, wd{6, 4, 3, 3}, yd{2, 6, 7, 7};
  Tensor x(CUDNN_DATA_FLOAT, xd, Strides(xd, false));
  Tensor w = Tensor::Filter(CUDNN_DATA_FLOAT, wd, CUDNN_TENSOR_NCHW);
  Tensor y(CUDNN_DATA_FLOAT, yd, Strides(yd, false));
  const Vec xv = x.Set(Random(x.count(), 21));
  const Vec wv = w.Set(Random(w.count(), 22));
  cudnnConvolutionDescriptor_t c = nullptr;
  ASSERT_EQ(DNN(cudnnCreateConvolutionDescriptor)(&c), CUDNN_STATUS_SUCCESS);
  const int pad[2] = {0, 0}, one[2] = {1, 1};
  ASSERT_EQ(DNN(cudnnSetConvolutionNdDescriptor)(c, 2, pad, one, one, CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  ConvRef ref;
  ref.xc = x.canon();
  ref.wc = w.canon();
  ref.yc = y.canon();
  Vec want(y.count());
  ref.Taps([&](int xi, int wi, int yi) { want[yi] += xv[xi] * wv[wi]; });

  std::set<std::string> team;
  for (int round = 0; round < 3; ++round) {
    CUstream s = nullptr;
    ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
    ASSERT_EQ(DNN(cudnnSetStream)(h, reinterpret_cast<cudaStream_t>(s)), CUDNN_STATUS_SUCCESS);
    const float a = 1, b = 0;
    ASSERT_EQ(DNN(cudnnConvolutionForward)(h, &a, x.desc(), x.ptr(), w.fdesc(), w.ptr(), c,
                                           CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &b,
                                           y.desc(), y.ptr()),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
    ExpectBlend(y.Get(), want, 1, 0, want, Tol(CUDNN_DATA_FLOAT), "round " + std::to_string(round));
    ASSERT_EQ(DNN(cudnnSetStream)(h, reinterpret_cast<cudaStream_t>(stream)), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
    // Past the stream worker's exit: a team tied to it would be going now.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::set<std::string> now = ThreadsNamed("remora-dnn");
    ASSERT_FALSE(now.empty()) << "round " << round;
    if (round == 0) team = now;
    EXPECT_EQ(now, team) << "round " << round;
  }
  EXPECT_EQ(DNN(cudnnDestroyConvolutionDescriptor)(c), CUDNN_STATUS_SUCCESS);
}

}  // namespace
}  // namespace remora::emu::test
