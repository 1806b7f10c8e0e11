// bench/e2e/conv_problem.h - the convolution both sides of BM_RemoteConv run.
//
// A 3x3 convolution forward, pad 1, stride 1, on a 32x64x56x56 float NCHW tensor with 64
// filters, set up through whichever cuDNN the caller hands in (the stub linked in, or the
// emulated library dlopened): the same calls, in the same order, on both sides.
#pragma once

#include <cudnn.h>

#include <cstddef>

namespace remora::bench::e2e {

struct ConvShape {
  int n = 32, c = 64, h = 56, w = 56, k = 64, r = 3, s = 3;
  size_t XBytes() const { return size_t(n) * c * h * w * 4; }
  size_t WBytes() const { return size_t(k) * c * r * s * 4; }
  size_t YBytes() const { return size_t(n) * k * h * w * 4; }
  double Flops() const { return 2.0 * n * k * h * w * c * r * s; }
};

// The cuDNN entry points the problem uses.
struct ConvApi {
  decltype(&cudnnCreate) create = &cudnnCreate;
  decltype(&cudnnCreateTensorDescriptor) tensor = &cudnnCreateTensorDescriptor;
  decltype(&cudnnSetTensorNdDescriptor) set_tensor = &cudnnSetTensorNdDescriptor;
  decltype(&cudnnCreateFilterDescriptor) filter = &cudnnCreateFilterDescriptor;
  decltype(&cudnnSetFilterNdDescriptor) set_filter = &cudnnSetFilterNdDescriptor;
  decltype(&cudnnCreateConvolutionDescriptor) conv = &cudnnCreateConvolutionDescriptor;
  decltype(&cudnnSetConvolutionNdDescriptor) set_conv = &cudnnSetConvolutionNdDescriptor;
  decltype(&cudnnConvolutionForward) forward = &cudnnConvolutionForward;
};

class ConvProblem {
 public:
  // Creates the handle and descriptors over device buffers x, w, y. False on any failure.
  bool Setup(const ConvApi& api, void* x, void* w, void* y) {
    api_ = api, x_ = x, w_ = w, y_ = y;
    const ConvShape s;
    const int xd[] = {s.n, s.c, s.h, s.w}, xs[] = {s.c * s.h * s.w, s.h * s.w, s.w, 1};
    const int yd[] = {s.n, s.k, s.h, s.w}, ys[] = {s.k * s.h * s.w, s.h * s.w, s.w, 1};
    const int wd[] = {s.k, s.c, s.r, s.s}, pad[] = {1, 1}, one[] = {1, 1};
    return api.create(&h_) == CUDNN_STATUS_SUCCESS && api.tensor(&xd_) == CUDNN_STATUS_SUCCESS &&
           api.tensor(&yd_) == CUDNN_STATUS_SUCCESS && api.filter(&wd_) == CUDNN_STATUS_SUCCESS &&
           api.conv(&cd_) == CUDNN_STATUS_SUCCESS &&
           api.set_tensor(xd_, CUDNN_DATA_FLOAT, 4, xd, xs) == CUDNN_STATUS_SUCCESS &&
           api.set_tensor(yd_, CUDNN_DATA_FLOAT, 4, yd, ys) == CUDNN_STATUS_SUCCESS &&
           api.set_filter(wd_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wd) ==
               CUDNN_STATUS_SUCCESS &&
           api.set_conv(cd_, 2, pad, one, one, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
               CUDNN_STATUS_SUCCESS;
  }
  // One forward pass (asynchronous: the caller synchronizes).
  bool Run() {
    const float alpha = 1, beta = 0;
    return api_.forward(h_, &alpha, xd_, x_, wd_, w_, cd_, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                        nullptr, 0, &beta, yd_, y_) == CUDNN_STATUS_SUCCESS;
  }
  cudnnHandle_t handle() const { return h_; }

 private:
  ConvApi api_;
  void *x_ = nullptr, *w_ = nullptr, *y_ = nullptr;
  cudnnHandle_t h_ = nullptr;
  cudnnTensorDescriptor_t xd_ = nullptr, yd_ = nullptr;
  cudnnFilterDescriptor_t wd_ = nullptr;
  cudnnConvolutionDescriptor_t cd_ = nullptr;
};

}  // namespace remora::bench::e2e
