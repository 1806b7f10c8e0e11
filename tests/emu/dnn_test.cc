// tests/emu/dnn_test.cc - emu/dnn's libcudnn.so.9, dlopened as the server loads it: its exports,
// handles and descriptor checks, and convolution's four passes on random data against a
// double-precision reference.
#include "tests/emu/dnn_harness.h"

namespace remora::emu::test {
namespace {

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

}  // namespace
}  // namespace remora::emu::test
