// emu/dnn/tensor.cc - tensor arithmetic: AddTensor (bias broadcast), OpTensor,
// ScaleTensor, SetTensor, TransformTensor; plain loops over strided views,
// computing in double.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "emu/dnn/dnn.h"

namespace remora::emu::dnn {
namespace {

// Whether `b` broadcasts onto `c`: same rank, each dim equal or 1.
bool Broadcasts(const View& b, const View& c) {
  if (b.nd != c.nd) return false;
  for (int k = 0; k < 5; ++k) {
    if (b.dim[k] != c.dim[k] && b.dim[k] != 1) return false;
  }
  return true;
}

}  // namespace
}  // namespace remora::emu::dnn

using namespace remora::emu::dnn;  // NOLINT: entry points are global by ABI

// C = alpha * A + beta * C, A broadcast over C's dims where A's are 1.
REMORA_DNN_API cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                                            cudnnTensorDescriptor_t aDesc, const void* A,
                                            const void* beta, cudnnTensorDescriptor_t cDesc,
                                            void* C) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  View a, c;
  DNN_RETURN_IF_ERROR(MakeView(aDesc, A, &a));
  DNN_RETURN_IF_ERROR(MakeView(cDesc, C, &c));
  DNN_CHECK_ARG(Broadcasts(a, c));
  if (a.type != c.type) return CUDNN_STATUS_NOT_SUPPORTED;
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(c.type, alpha), be = ReadScale(c.type, beta);
  return call.Submit([=] {
    Each(c.dim, [&](const int64_t* i) { c.Blend(c.Off(i), a.Get(a.BroadcastOff(i)), al, be); });
  });
}

// C = op(alpha1 * A, alpha2 * B) + beta * C; B broadcasts onto C (A matches C);
// SQRT and NOT read A only (NOT: 1 - alpha1 * A).
REMORA_DNN_API cudnnStatus_t cudnnOpTensor(
    cudnnHandle_t handle, cudnnOpTensorDescriptor_t opTensorDesc, const void* alpha1,
    cudnnTensorDescriptor_t aDesc, const void* A, const void* alpha2, cudnnTensorDescriptor_t bDesc,
    const void* B, const void* beta, cudnnTensorDescriptor_t cDesc, void* C) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  cudnnOpTensorStruct op;
  DNN_RETURN_IF_ERROR(DnnCopy(opTensorDesc, &op));
  const bool unary = op.op == CUDNN_OP_TENSOR_SQRT || op.op == CUDNN_OP_TENSOR_NOT;
  View a, b, c;
  DNN_RETURN_IF_ERROR(MakeView(aDesc, A, &a));
  DNN_RETURN_IF_ERROR(MakeView(cDesc, C, &c));
  if (!unary) {
    DNN_RETURN_IF_ERROR(MakeView(bDesc, B, &b));
    DNN_CHECK_ARG(Broadcasts(b, c));
    if (b.type != c.type) return CUDNN_STATUS_NOT_SUPPORTED;
  }
  DNN_CHECK_ARG(a.SameDims(c));
  if (a.type != c.type || !Supported(op.compute)) return CUDNN_STATUS_NOT_SUPPORTED;
  DNN_CHECK_ARG(alpha1 != nullptr && alpha2 != nullptr && beta != nullptr);
  const double a1 = ReadScale(c.type, alpha1), a2 = ReadScale(c.type, alpha2);
  const double be = ReadScale(c.type, beta);
  const cudnnOpTensorOp_t kind = op.op;
  return call.Submit([=] {
    Each(c.dim, [&](const int64_t* i) {
      const double x = a1 * a.Get(a.Off(i));
      const double y = unary ? 0 : a2 * b.Get(b.BroadcastOff(i));
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
        case CUDNN_OP_TENSOR_NOT:
          r = 1 - x;
          break;
      }
      c.Blend(c.Off(i), r, 1, be);
    });
  });
}

// y *= alpha.
REMORA_DNN_API cudnnStatus_t cudnnScaleTensor(cudnnHandle_t handle, cudnnTensorDescriptor_t yDesc,
                                              void* y, const void* alpha) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  View v;
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &v));
  DNN_CHECK_ARG(alpha != nullptr);
  const double al = ReadScale(v.type, alpha);
  return call.Submit(
      [=] { Each(v.dim, [&](const int64_t* i) { v.Put(v.Off(i), al * v.Get(v.Off(i))); }); });
}

// Every element of y = *valuePtr, a host value of y's own data type.
REMORA_DNN_API cudnnStatus_t cudnnSetTensor(cudnnHandle_t handle, cudnnTensorDescriptor_t yDesc,
                                            void* y, const void* valuePtr) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  View v;
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &v));
  DNN_CHECK_ARG(valuePtr != nullptr);
  View src = v;  // reads the value with y's type
  src.base = static_cast<char*>(const_cast<void*>(valuePtr));
  const double value = src.Get(0);
  return call.Submit([=] { Each(v.dim, [&](const int64_t* i) { v.Put(v.Off(i), value); }); });
}

// y = alpha * x + beta * y between layouts (and data types) of the same dims.
REMORA_DNN_API cudnnStatus_t cudnnTransformTensor(cudnnHandle_t handle, const void* alpha,
                                                  cudnnTensorDescriptor_t xDesc, const void* x,
                                                  const void* beta, cudnnTensorDescriptor_t yDesc,
                                                  void* y) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  View xv, yv;
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_CHECK_ARG(xv.SameDims(yv));
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(yv.type, alpha), be = ReadScale(yv.type, beta);
  return call.Submit([=] {
    Each(yv.dim, [&](const int64_t* i) { yv.Blend(yv.Off(i), xv.Get(xv.Off(i)), al, be); });
  });
}
