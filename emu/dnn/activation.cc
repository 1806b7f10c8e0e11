// emu/dnn/activation.cc - activation and softmax, forward and backward: plain
// loops over strided views computing in double (elementwise and memory-bound;
// a oneDNN primitive would still need the alpha/beta blend pass).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "emu/dnn/dnn.h"

namespace remora::emu::dnn {
namespace {

double Sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

double Forward(const cudnnActivationStruct& a, double x) {
  switch (a.mode) {
    case CUDNN_ACTIVATION_SIGMOID:
      return Sigmoid(x);
    case CUDNN_ACTIVATION_RELU:
      return x > 0 ? x : 0;
    case CUDNN_ACTIVATION_TANH:
      return std::tanh(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
      return x <= 0 ? 0 : x < a.coef ? x : a.coef;
    case CUDNN_ACTIVATION_ELU:
      return x > 0 ? x : a.coef * (std::exp(x) - 1);
    case CUDNN_ACTIVATION_SWISH:
      return x * Sigmoid(a.swish_beta * x);
    default:  // CUDNN_ACTIVATION_IDENTITY
      return x;
  }
}

// d f / d x at x (whose image is y), times dy.
double Backward(const cudnnActivationStruct& a, double y, double dy, double x) {
  switch (a.mode) {
    case CUDNN_ACTIVATION_SIGMOID:
      return dy * y * (1 - y);
    case CUDNN_ACTIVATION_RELU:
      return x > 0 ? dy : 0;
    case CUDNN_ACTIVATION_TANH:
      return dy * (1 - y * y);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
      return x > 0 && x < a.coef ? dy : 0;
    case CUDNN_ACTIVATION_ELU:
      return x > 0 ? dy : dy * (y + a.coef);
    case CUDNN_ACTIVATION_SWISH: {
      const double s = Sigmoid(a.swish_beta * x);
      return dy * (s + a.swish_beta * x * s * (1 - s));
    }
    default:
      return dy;
  }
}

// The dims softmax reduces over (inner) and the ones it keeps (outer).
void SoftmaxSplit(cudnnSoftmaxMode_t mode, const View& v, int64_t outer[5], int64_t inner[5]) {
  for (int k = 0; k < 5; ++k) {
    const bool reduced = mode == CUDNN_SOFTMAX_MODE_INSTANCE ? k >= 1 : k == 1;
    outer[k] = reduced ? 1 : v.dim[k];
    inner[k] = reduced ? v.dim[k] : 1;
  }
}

// Calls f(o, inner) for every outer index o; `inner` lists the reduced dims.
template <class F>
void Groups(cudnnSoftmaxMode_t mode, const View& v, F f) {
  int64_t outer[5], inner[5];
  SoftmaxSplit(mode, v, outer, inner);
  Each(outer, [&](const int64_t* o) { f(o, static_cast<const int64_t*>(inner)); });
}

// Index o + i (exactly one of each pair is 0).
struct Sum5 {
  int64_t v[5];
  Sum5(const int64_t* o, const int64_t* i) {
    for (int k = 0; k < 5; ++k) v[k] = o[k] + i[k];
  }
};

bool ValidSoftmax(cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode) {
  return algo >= CUDNN_SOFTMAX_FAST && algo <= CUDNN_SOFTMAX_LOG &&
         (mode == CUDNN_SOFTMAX_MODE_INSTANCE || mode == CUDNN_SOFTMAX_MODE_CHANNEL);
}

}  // namespace
}  // namespace remora::emu::dnn

using namespace remora::emu::dnn;  // NOLINT: entry points are global by ABI

// y = alpha * f(x) + beta * y.
REMORA_DNN_API cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle,
                                                    cudnnActivationDescriptor_t activationDesc,
                                                    const void* alpha,
                                                    cudnnTensorDescriptor_t xDesc, const void* x,
                                                    const void* beta, cudnnTensorDescriptor_t yDesc,
                                                    void* y) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  cudnnActivationStruct act;
  DNN_RETURN_IF_ERROR(DnnCopy(activationDesc, &act));
  View xv, yv;
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_CHECK_ARG(xv.SameDims(yv) && xv.type == yv.type);
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(yv.type, alpha), be = ReadScale(yv.type, beta);
  return call.Submit([=] {
    Each(yv.dim,
         [&](const int64_t* i) { yv.Blend(yv.Off(i), Forward(act, xv.Get(xv.Off(i))), al, be); });
  });
}

// dx = alpha * f'(x) * dy + beta * dx. IDENTITY has no backward in cuDNN:
// CUDNN_STATUS_BAD_PARAM.
REMORA_DNN_API cudnnStatus_t cudnnActivationBackward(
    cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc, const void* alpha,
    cudnnTensorDescriptor_t yDesc, const void* y, cudnnTensorDescriptor_t dyDesc, const void* dy,
    cudnnTensorDescriptor_t xDesc, const void* x, const void* beta, cudnnTensorDescriptor_t dxDesc,
    void* dx) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  cudnnActivationStruct act;
  DNN_RETURN_IF_ERROR(DnnCopy(activationDesc, &act));
  DNN_CHECK_ARG(act.mode != CUDNN_ACTIVATION_IDENTITY);
  View yv, dyv, xv, dxv;
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_RETURN_IF_ERROR(MakeView(dyDesc, dy, &dyv));
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(dxDesc, dx, &dxv));
  DNN_CHECK_ARG(yv.SameDims(dyv) && yv.SameDims(xv) && yv.SameDims(dxv));
  DNN_CHECK_ARG(yv.type == dyv.type && yv.type == xv.type && yv.type == dxv.type);
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(dxv.type, alpha), be = ReadScale(dxv.type, beta);
  return call.Submit([=] {
    Each(dxv.dim, [&](const int64_t* i) {
      const double r = Backward(act, yv.Get(yv.Off(i)), dyv.Get(dyv.Off(i)), xv.Get(xv.Off(i)));
      dxv.Blend(dxv.Off(i), r, al, be);
    });
  });
}

// y = alpha * softmax(x) + beta * y over C*D*H*W per image (INSTANCE) or over
// C per position (CHANNEL); LOG gives log-softmax. FAST and ACCURATE both
// subtract the maximum (FAST's result is the same up to rounding).
REMORA_DNN_API cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                                 cudnnSoftmaxMode_t mode, const void* alpha,
                                                 cudnnTensorDescriptor_t xDesc, const void* x,
                                                 const void* beta, cudnnTensorDescriptor_t yDesc,
                                                 void* y) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  DNN_CHECK_ARG(ValidSoftmax(algo, mode));
  View xv, yv;
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_CHECK_ARG(xv.SameDims(yv) && xv.type == yv.type);
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(yv.type, alpha), be = ReadScale(yv.type, beta);
  return call.Submit([=] {
    Groups(mode, xv, [&](const int64_t* o, const int64_t* inner) {
      double mx = -INFINITY;
      Each(inner, [&](const int64_t* i) { mx = std::max(mx, xv.Get(xv.Off(Sum5(o, i).v))); });
      double sum = 0;
      Each(inner, [&](const int64_t* i) { sum += std::exp(xv.Get(xv.Off(Sum5(o, i).v)) - mx); });
      const double log_sum = std::log(sum);
      Each(inner, [&](const int64_t* i) {
        const Sum5 k(o, i);
        const double z = xv.Get(xv.Off(k.v)) - mx;
        const double r = algo == CUDNN_SOFTMAX_LOG ? z - log_sum : std::exp(z) / sum;
        yv.Blend(yv.Off(k.v), r, al, be);
      });
    });
  });
}

// dx = alpha * (y * (dy - sum(dy * y))) + beta * dx; LOG: dy - exp(y) * sum(dy).
REMORA_DNN_API cudnnStatus_t cudnnSoftmaxBackward(
    cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode, const void* alpha,
    cudnnTensorDescriptor_t yDesc, const void* y, cudnnTensorDescriptor_t dyDesc, const void* dy,
    const void* beta, cudnnTensorDescriptor_t dxDesc, void* dx) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  DNN_CHECK_ARG(ValidSoftmax(algo, mode));
  View yv, dyv, dxv;
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_RETURN_IF_ERROR(MakeView(dyDesc, dy, &dyv));
  DNN_RETURN_IF_ERROR(MakeView(dxDesc, dx, &dxv));
  DNN_CHECK_ARG(yv.SameDims(dyv) && yv.SameDims(dxv));
  DNN_CHECK_ARG(yv.type == dyv.type && yv.type == dxv.type);
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(dxv.type, alpha), be = ReadScale(dxv.type, beta);
  return call.Submit([=] {
    Groups(mode, yv, [&](const int64_t* o, const int64_t* inner) {
      double sum = 0;
      Each(inner, [&](const int64_t* i) {
        const Sum5 k(o, i);
        const double g = dyv.Get(dyv.Off(k.v));
        sum += algo == CUDNN_SOFTMAX_LOG ? g : g * yv.Get(yv.Off(k.v));
      });
      Each(inner, [&](const int64_t* i) {
        const Sum5 k(o, i);
        const double yk = yv.Get(yv.Off(k.v)), g = dyv.Get(dyv.Off(k.v));
        const double r = algo == CUDNN_SOFTMAX_LOG ? g - std::exp(yk) * sum : yk * (g - sum);
        dxv.Blend(dxv.Off(k.v), r, al, be);
      });
    });
  });
}
