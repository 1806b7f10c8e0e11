// proto/dnn.h - the forwarded cuDNN operations (dnn_ops.def) and what they reach.
//
// cuDNN's descriptors are plain data: the stub keeps them and sends their
// values with each operation (a DnnRequest), so the server holds no tenant
// descriptors at all. An operation's layout says which descriptors, integers,
// reals, pointers and scalars it takes, in signature order; from the tensor and
// filter descriptors, how many bytes each pointer reaches. The stub answers an
// obviously bad call at once and the server checks every pointer with it.
//
//   const DnnOp* op = FindDnnOp(req.op());
//   Result<DnnPlan> plan = PlanDnn(*op, tensors, &filter);   // CUDNN_STATUS_BAD_PARAM -> error
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "proto/status.h"

namespace remora {

enum class DnnLayout : uint8_t {
  kConvForward,
  kConvBackwardData,
  kConvBackwardFilter,
  kBackwardBias,
  kForwardWorkspace,
  kBackwardDataWorkspace,
  kBackwardFilterWorkspace,
  kForwardAlgorithms,
  kBackwardDataAlgorithms,
  kBackwardFilterAlgorithms,
  kTwoTensors,
  kOpTensor,
  kOneTensor,
  kActivationForward,
  kActivationBackward,
  kSoftmaxForward,
  kSoftmaxBackward,
  kPoolingForward,
  kPoolingBackward,
  kLrnForward,
  kLrnBackward,
  kBnInference,
  kBnTraining,
  kBnBackward,
};

inline constexpr size_t kDnnMaxPtrs = 8;
inline constexpr int8_t kDnnFilter = -1;  // a pointer measured by the filter descriptor

// What a layout takes besides the handle.
struct DnnLayoutInfo {
  uint8_t tensors;  // tensor descriptors, in signature order
  bool filter;      // a filter descriptor
  bool conv;        // a convolution descriptor
  bool activation, pooling, lrn, op_tensor;
  uint8_t ints;     // integers (algorithm, modes, requested count)
  uint8_t reals;    // doubles (epsilon, exponential average factor)
  uint8_t scalars;  // host scaling parameters (alpha, beta, ...)
  uint8_t ptrs;     // device pointers, in signature order
  // Pointer i is measured by tensor reach[i], or by the filter (kDnnFilter).
  std::array<int8_t, kDnnMaxPtrs> reach;
  // Pointer i may be null (batch normalization's running and saved statistics).
  std::array<bool, kDnnMaxPtrs> nullable;
  bool workspace;  // takes a workspace pointer and size
  enum Result : uint8_t { kNone, kSize, kAlgorithms } result;
};

struct DnnOp {
  uint32_t op;
  std::string_view name;  // "ConvolutionForward"
  DnnLayout layout;
  const DnnLayoutInfo* info;
};

// A tensor descriptor's values (cudnnSetTensorNdDescriptor).
struct DnnTensorShape {
  int32_t dtype = 0;
  std::vector<int32_t> dims, strides;
};
// A filter descriptor's values (cudnnSetFilterNdDescriptor).
struct DnnFilterShape {
  int32_t dtype = 0;
  int32_t format = 0;
  std::vector<int32_t> dims;
};

struct DnnPlan {
  std::array<uint64_t, kDnnMaxPtrs> bytes{};  // bytes pointer i reaches
  uint32_t scalar_bytes = 0;                  // each scaling parameter's size
};

// The row for wire number `op`, or nullptr.
const DnnOp* FindDnnOp(uint32_t op);
// Every row of dnn_ops.def, in file order.
std::span<const DnnOp> DnnOps();

// Bytes per element of cudnnDataType_t `dtype`; 0 for a type not forwarded.
uint32_t DnnElemBytes(int32_t dtype);
// Bytes a tensor reaches from its first element. Errors: kInvalidValue
// (CUDNN_STATUS_BAD_PARAM) for a bad rank, dimension or stride;
// kNotSupported for a data type not forwarded.
Result<uint64_t> DnnTensorReach(const DnnTensorShape& t);
// Bytes a (packed) filter occupies. Errors as DnnTensorReach.
Result<uint64_t> DnnFilterReach(const DnnFilterShape& f);

// Checks the descriptors an operation gets (count, rank, values) and says what
// each pointer reaches. Errors as DnnTensorReach.
Result<DnnPlan> PlanDnn(const DnnOp& op, std::span<const DnnTensorShape> tensors,
                        const DnnFilterShape* filter);

// cuDNN statuses on the wire: a reply's cudaError_t code for a cuDNN call maps
// to the cudnnStatus_t the caller gets, and back.
int32_t DnnStatusToCuda(int32_t cudnn_status);
int32_t CudaToDnnStatus(int32_t cuda_error);

}  // namespace remora
