// tests/proto/dnn_descriptors_test.cc - cuDNN's descriptor entry points (proto/dnn_descriptors.cc),
// as both libcudnn.so.9 of Remora take them: values, statuses, registries.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "proto/dnn_descriptors.h"

namespace {

constexpr cudnnStatus_t kOk = CUDNN_STATUS_SUCCESS;
constexpr cudnnStatus_t kBad = CUDNN_STATUS_BAD_PARAM;
constexpr cudnnStatus_t kUnsupported = CUDNN_STATUS_NOT_SUPPORTED;

TEST(DnnDescriptors, TensorSettersPackAndGettersReadBack) {
  cudnnTensorDescriptor_t t = nullptr;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&t), kOk);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 2, 3, 4, 5), kOk);
  cudnnDataType_t type;
  int n, c, h, w, ns, cs, hs, ws;
  ASSERT_EQ(cudnnGetTensor4dDescriptor(t, &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws), kOk);
  EXPECT_EQ(type, CUDNN_DATA_HALF);
  EXPECT_EQ((std::vector<int>{n, c, h, w}), (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ((std::vector<int>{ns, cs, hs, ws}), (std::vector<int>{60, 1, 15, 3}));
  size_t bytes = 0;
  ASSERT_EQ(cudnnGetTensorSizeInBytes(t, &bytes), kOk);
  EXPECT_EQ(bytes, 2u * 3 * 4 * 5 * 2);

  const int dims[5] = {1, 2, 3, 4, 5};
  ASSERT_EQ(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 5, dims), kOk);
  int nb = 0, got_dims[2] = {}, got_strides[2] = {};
  ASSERT_EQ(cudnnGetTensorNdDescriptor(t, 2, &type, &nb, got_dims, got_strides), kOk);
  EXPECT_EQ(nb, 5);
  EXPECT_EQ(got_dims[1], 2);
  EXPECT_EQ(got_strides[0], 120);
  EXPECT_EQ(got_strides[1], 60);
  EXPECT_EQ(cudnnGetTensor4dDescriptor(t, &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws), kBad);
  EXPECT_EQ(cudnnDestroyTensorDescriptor(t), kOk);
}

// cuDNN 9's documented statuses: an invalid enumerant or a size below 1 is
// BAD_PARAM; a rank outside [3, CUDNN_DIM_MAX] or more than 2^31 - 1 elements
// is NOT_SUPPORTED.
TEST(DnnDescriptors, TensorSettersRefuseWithCudnnStatuses) {
  cudnnTensorDescriptor_t t = nullptr;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&t), kOk);
  const int dims[4] = {2, 3, 4, 4}, strides[4] = {48, 16, 4, 1};
  const int bad_dims[4] = {2, 0, 4, 4}, bad_strides[4] = {48, 16, 0, 1};
  EXPECT_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, bad_dims, strides), kBad);
  EXPECT_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, dims, bad_strides), kBad);
  EXPECT_EQ(cudnnSetTensorNdDescriptor(t, static_cast<cudnnDataType_t>(99), 4, dims, strides),
            kBad);
  EXPECT_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 2, dims, strides), kUnsupported);
  EXPECT_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, CUDNN_DIM_MAX + 1, dims, strides),
            kUnsupported);
  EXPECT_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, nullptr, strides), kBad);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW_VECT_C, CUDNN_DATA_FLOAT, 1, 4, 2, 2),
            kUnsupported);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(t, static_cast<cudnnTensorFormat_t>(7), CUDNN_DATA_FLOAT, 1,
                                       4, 2, 2),
            kBad);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, -2, 4, 4), kBad);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 1024, 1024, 1024),
            kUnsupported);
  // Never set: nothing to read.
  size_t bytes = 0;
  EXPECT_EQ(cudnnGetTensorSizeInBytes(t, &bytes), kBad);
  // A valid type neither library computes with is kept; its size is not known here.
  ASSERT_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_INT8, 4, dims, strides), kOk);
  EXPECT_EQ(cudnnGetTensorSizeInBytes(t, &bytes), kUnsupported);
  EXPECT_EQ(cudnnDestroyTensorDescriptor(t), kOk);
}

TEST(DnnDescriptors, RegistriesRefuseForeignAndDestroyedDescriptors) {
  EXPECT_EQ(cudnnCreateTensorDescriptor(nullptr), kBad);
  EXPECT_EQ(cudnnDestroyTensorDescriptor(nullptr), kOk);
  cudnnTensorDescriptor_t t = nullptr;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&t), kOk);
  ASSERT_EQ(cudnnDestroyTensorDescriptor(t), kOk);
  const int dims[4] = {1, 1, 1, 1}, strides[4] = {1, 1, 1, 1};
  EXPECT_EQ(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, dims, strides), kBad);
  EXPECT_EQ(cudnnDestroyTensorDescriptor(t), kBad);

  cudnnConvolutionStruct foreign;
  EXPECT_EQ(cudnnSetConvolutionGroupCount(&foreign, 2), kBad);
  EXPECT_EQ(cudnnDestroyConvolutionDescriptor(&foreign), kBad);
  cudnnConvolutionStruct copy;
  EXPECT_EQ(remora::DnnCopy(&foreign, &copy), kBad);
}

TEST(DnnDescriptors, Filters) {
  cudnnFilterDescriptor_t f = nullptr;
  ASSERT_EQ(cudnnCreateFilterDescriptor(&f), kOk);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_DOUBLE, CUDNN_TENSOR_NHWC, 8, 3, 5, 5), kOk);
  cudnnDataType_t type;
  cudnnTensorFormat_t format;
  int k, c, h, w;
  ASSERT_EQ(cudnnGetFilter4dDescriptor(f, &type, &format, &k, &c, &h, &w), kOk);
  EXPECT_EQ(type, CUDNN_DATA_DOUBLE);
  EXPECT_EQ(format, CUDNN_TENSOR_NHWC);
  EXPECT_EQ(k * c * h * w, 8 * 3 * 5 * 5);
  size_t bytes = 0;
  ASSERT_EQ(cudnnGetFilterSizeInBytes(f, &bytes), kOk);
  EXPECT_EQ(bytes, 8u * 3 * 5 * 5 * 8);
  int nb = 0, dims[1] = {};
  ASSERT_EQ(cudnnGetFilterNdDescriptor(f, 1, &type, &format, &nb, dims), kOk);
  EXPECT_EQ(nb, 4);
  EXPECT_EQ(dims[0], 8);
  EXPECT_EQ(cudnnGetFilterNdDescriptor(f, -1, &type, &format, &nb, dims), kBad);

  const int three[3] = {4, 2, 3};
  EXPECT_EQ(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW_VECT_C, 3, three),
            kUnsupported);
  EXPECT_EQ(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, static_cast<cudnnTensorFormat_t>(5), 3,
                                       three),
            kBad);
  EXPECT_EQ(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 2, three),
            kUnsupported);
  EXPECT_EQ(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 0, 3, 3), kBad);
  EXPECT_EQ(cudnnDestroyFilterDescriptor(f), kOk);
}

TEST(DnnDescriptors, ConvolutionsAndTheirOutputDims) {
  cudnnConvolutionDescriptor_t conv = nullptr;
  ASSERT_EQ(cudnnCreateConvolutionDescriptor(&conv), kOk);
  int groups = 0;
  cudnnMathType_t math;
  ASSERT_EQ(cudnnGetConvolutionGroupCount(conv, &groups), kOk);
  EXPECT_EQ(groups, 1);
  ASSERT_EQ(cudnnGetConvolutionMathType(conv, &math), kOk);
  EXPECT_EQ(math, CUDNN_DEFAULT_MATH);
  ASSERT_EQ(
      cudnnSetConvolution2dDescriptor(conv, 1, 2, 1, 2, 2, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
      kOk);
  ASSERT_EQ(cudnnSetConvolutionGroupCount(conv, 2), kOk);
  ASSERT_EQ(cudnnSetConvolutionMathType(conv, CUDNN_TENSOR_OP_MATH), kOk);
  int ph, pw, u, v, dh, dw;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  ASSERT_EQ(cudnnGetConvolution2dDescriptor(conv, &ph, &pw, &u, &v, &dh, &dw, &mode, &compute),
            kOk);
  EXPECT_EQ((std::vector<int>{ph, pw, u, v, dh, dw}), (std::vector<int>{1, 2, 1, 2, 2, 1}));
  EXPECT_EQ(mode, CUDNN_CONVOLUTION);

  // x 2x4x9x9, w 6x2x3x3 in 2 groups: H = 1 + (9 + 2 - 5) / 1, W = 1 + (9 + 4 - 3) / 2.
  cudnnTensorDescriptor_t x = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&x), kOk);
  ASSERT_EQ(cudnnCreateFilterDescriptor(&w), kOk);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, 9, 9), kOk);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 6, 2, 3, 3), kOk);
  int n, c, h, wd;
  ASSERT_EQ(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &wd), kOk);
  EXPECT_EQ((std::vector<int>{n, c, h, wd}), (std::vector<int>{2, 6, 7, 6}));
  ASSERT_EQ(cudnnSetConvolutionGroupCount(conv, 1), kOk);
  EXPECT_EQ(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &wd), kBad);

  const int one[CUDNN_DIM_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(
      cudnnSetConvolutionNdDescriptor(conv, 0, one, one, one, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
      kBad);
  EXPECT_EQ(cudnnSetConvolutionNdDescriptor(conv, CUDNN_DIM_MAX - 1, one, one, one,
                                            CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
            kUnsupported);
  EXPECT_EQ(cudnnSetConvolutionNdDescriptor(conv, 2, one, one, one, CUDNN_CONVOLUTION,
                                            static_cast<cudnnDataType_t>(-1)),
            kBad);
  EXPECT_EQ(cudnnSetConvolutionMathType(conv, static_cast<cudnnMathType_t>(9)), kBad);
  int nb = 0, pads[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX], dil[CUDNN_DIM_MAX];
  EXPECT_EQ(cudnnGetConvolutionNdDescriptor(conv, CUDNN_DIM_MAX - 1, &nb, pads, strides, dil, &mode,
                                            &compute),
            kUnsupported);
  ASSERT_EQ(cudnnGetConvolutionNdDescriptor(conv, 2, &nb, pads, strides, dil, &mode, &compute),
            kOk);
  EXPECT_EQ(nb, 2);
  EXPECT_EQ(pads[1], 2);
  EXPECT_EQ(cudnnDestroyConvolutionDescriptor(conv), kOk);
  EXPECT_EQ(cudnnDestroyFilterDescriptor(w), kOk);
  EXPECT_EQ(cudnnDestroyTensorDescriptor(x), kOk);
}

TEST(DnnDescriptors, PoolingAndItsOutputDims) {
  cudnnPoolingDescriptor_t p = nullptr;
  cudnnTensorDescriptor_t x = nullptr;
  ASSERT_EQ(cudnnCreatePoolingDescriptor(&p), kOk);
  ASSERT_EQ(cudnnCreateTensorDescriptor(&x), kOk);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 8, 7), kOk);
  int n, c, h, w;
  EXPECT_EQ(cudnnGetPooling2dForwardOutputDim(p, x, &n, &c, &h, &w), kBad);  // not set
  ASSERT_EQ(cudnnSetPooling2dDescriptor(p, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                        CUDNN_PROPAGATE_NAN, 3, 2, 1, 0, 2, 2),
            kOk);
  ASSERT_EQ(cudnnGetPooling2dForwardOutputDim(p, x, &n, &c, &h, &w), kOk);
  EXPECT_EQ((std::vector<int>{n, c, h, w}), (std::vector<int>{1, 3, 4, 3}));
  cudnnPoolingMode_t mode;
  cudnnNanPropagation_t nan;
  int wh, ww, ph, pw, sh, sw;
  ASSERT_EQ(cudnnGetPooling2dDescriptor(p, &mode, &nan, &wh, &ww, &ph, &pw, &sh, &sw), kOk);
  EXPECT_EQ(mode, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING);
  EXPECT_EQ(nan, CUDNN_PROPAGATE_NAN);
  EXPECT_EQ((std::vector<int>{wh, ww, ph, pw, sh, sw}), (std::vector<int>{3, 2, 1, 0, 2, 2}));

  const int one[CUDNN_DIM_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(cudnnSetPoolingNdDescriptor(p, CUDNN_POOLING_MAX, static_cast<cudnnNanPropagation_t>(2),
                                        2, one, one, one),
            kBad);
  EXPECT_EQ(
      cudnnSetPoolingNdDescriptor(p, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 0, one, one, one),
      kBad);
  EXPECT_EQ(cudnnSetPoolingNdDescriptor(p, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN,
                                        CUDNN_DIM_MAX - 1, one, one, one),
            kUnsupported);
  EXPECT_EQ(
      cudnnSetPooling2dDescriptor(p, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 0, 2, 0, 0, 1, 1),
      kBad);
  EXPECT_EQ(cudnnDestroyPoolingDescriptor(p), kOk);
  EXPECT_EQ(cudnnDestroyTensorDescriptor(x), kOk);
}

TEST(DnnDescriptors, ActivationLrnAndOpTensor) {
  cudnnActivationDescriptor_t a = nullptr;
  ASSERT_EQ(cudnnCreateActivationDescriptor(&a), kOk);
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef = 0, beta = 0;
  EXPECT_EQ(cudnnGetActivationDescriptor(a, &mode, &nan, &coef), kBad);  // not set
  ASSERT_EQ(cudnnGetActivationDescriptorSwishBeta(a, &beta), kOk);
  EXPECT_EQ(beta, 1.0);
  ASSERT_EQ(cudnnSetActivationDescriptor(a, CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_PROPAGATE_NAN, 6),
            kOk);
  ASSERT_EQ(cudnnGetActivationDescriptor(a, &mode, &nan, &coef), kOk);
  EXPECT_EQ(mode, CUDNN_ACTIVATION_CLIPPED_RELU);
  EXPECT_EQ(coef, 6.0);
  EXPECT_EQ(cudnnSetActivationDescriptor(a, CUDNN_ACTIVATION_RELU,
                                         static_cast<cudnnNanPropagation_t>(3), 0),
            kBad);
  EXPECT_EQ(cudnnSetActivationDescriptor(a, static_cast<cudnnActivationMode_t>(7),
                                         CUDNN_PROPAGATE_NAN, 0),
            kBad);
  EXPECT_EQ(cudnnDestroyActivationDescriptor(a), kOk);

  cudnnLRNDescriptor_t l = nullptr;
  ASSERT_EQ(cudnnCreateLRNDescriptor(&l), kOk);
  unsigned n = 0;
  double alpha = 0, lb = 0, k = 0;
  ASSERT_EQ(cudnnGetLRNDescriptor(l, &n, &alpha, &lb, &k), kOk);  // cuDNN's defaults
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(alpha, 1e-4);
  EXPECT_EQ(lb, 0.75);
  EXPECT_EQ(k, 2.0);
  EXPECT_EQ(cudnnSetLRNDescriptor(l, CUDNN_LRN_MAX_N + 1, 1e-4, 0.75, 2), kBad);
  EXPECT_EQ(cudnnSetLRNDescriptor(l, 5, 1e-4, 0.001, 2), kBad);
  EXPECT_EQ(cudnnDestroyLRNDescriptor(l), kOk);

  cudnnOpTensorDescriptor_t o = nullptr;
  ASSERT_EQ(cudnnCreateOpTensorDescriptor(&o), kOk);
  EXPECT_EQ(cudnnSetOpTensorDescriptor(o, static_cast<cudnnOpTensorOp_t>(6), CUDNN_DATA_FLOAT,
                                       CUDNN_PROPAGATE_NAN),
            kBad);
  ASSERT_EQ(cudnnSetOpTensorDescriptor(o, CUDNN_OP_TENSOR_MAX, CUDNN_DATA_DOUBLE,
                                       CUDNN_NOT_PROPAGATE_NAN),
            kOk);
  cudnnOpTensorOp_t op;
  cudnnDataType_t compute;
  ASSERT_EQ(cudnnGetOpTensorDescriptor(o, &op, &compute, &nan), kOk);
  EXPECT_EQ(op, CUDNN_OP_TENSOR_MAX);
  EXPECT_EQ(compute, CUDNN_DATA_DOUBLE);
  EXPECT_EQ(cudnnDestroyOpTensorDescriptor(o), kOk);
}

TEST(DnnDescriptors, DeriveBatchNormShapes) {
  cudnnTensorDescriptor_t x = nullptr, bn = nullptr;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&x), kOk);
  ASSERT_EQ(cudnnCreateTensorDescriptor(&bn), kOk);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 4, 3, 5, 6), kOk);
  cudnnDataType_t type;
  int n, c, h, w, ns, cs, hs, ws;
  ASSERT_EQ(cudnnDeriveBNTensorDescriptor(bn, x, CUDNN_BATCHNORM_SPATIAL), kOk);
  ASSERT_EQ(cudnnGetTensor4dDescriptor(bn, &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws), kOk);
  EXPECT_EQ(type, CUDNN_DATA_FLOAT);
  EXPECT_EQ((std::vector<int>{n, c, h, w}), (std::vector<int>{1, 3, 1, 1}));
  ASSERT_EQ(cudnnDeriveBNTensorDescriptor(bn, x, CUDNN_BATCHNORM_PER_ACTIVATION), kOk);
  ASSERT_EQ(cudnnGetTensor4dDescriptor(bn, &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws), kOk);
  EXPECT_EQ((std::vector<int>{n, c, h, w, ns}), (std::vector<int>{1, 3, 5, 6, 90}));
  EXPECT_EQ(cudnnDeriveBNTensorDescriptor(bn, x, static_cast<cudnnBatchNormMode_t>(9)), kBad);
  EXPECT_EQ(cudnnDestroyTensorDescriptor(bn), kOk);
  EXPECT_EQ(cudnnDestroyTensorDescriptor(x), kOk);
}

}  // namespace
