// proto/dnn.cc - layouts of the forwarded cuDNN operations: checks and reach.
#include "proto/dnn.h"

#include <string>

namespace remora {
namespace {

constexpr uint64_t kMaxBytes = 1ull << 56;  // beyond any device
constexpr int8_t F = kDnnFilter;
constexpr bool N = true;  // nullable
using R = DnnLayoutInfo::Result;

// tensors filter conv act pool lrn opt ints reals scalars ptrs reach nullable workspace result
constexpr DnnLayoutInfo kInfo[] = {
    // ConvForward: x y | w | conv | algo | x w y | alpha beta | workspace
    {2, true, true, false, false, false, false, 1, 0, 2, 3, {0, F, 1}, {}, true, R::kNone},
    // ConvBackwardData: dy dx | w | conv | algo | w dy dx
    {2, true, true, false, false, false, false, 1, 0, 2, 3, {F, 0, 1}, {}, true, R::kNone},
    // ConvBackwardFilter: x dy | dw | conv | algo | x dy dw
    {2, true, true, false, false, false, false, 1, 0, 2, 3, {0, 1, F}, {}, true, R::kNone},
    // BackwardBias: dy db | dy db
    {2, false, false, false, false, false, false, 0, 0, 2, 2, {0, 1}, {}, false, R::kNone},
    // Workspace sizes: x y | w | conv | algo -> size_t  (and dy dx, x dy)
    {2, true, true, false, false, false, false, 1, 0, 0, 0, {}, {}, false, R::kSize},
    {2, true, true, false, false, false, false, 1, 0, 0, 0, {}, {}, false, R::kSize},
    {2, true, true, false, false, false, false, 1, 0, 0, 0, {}, {}, false, R::kSize},
    // Algorithm heuristics: the same descriptors | requested count -> perf results
    {2, true, true, false, false, false, false, 1, 0, 0, 0, {}, {}, false, R::kAlgorithms},
    {2, true, true, false, false, false, false, 1, 0, 0, 0, {}, {}, false, R::kAlgorithms},
    {2, true, true, false, false, false, false, 1, 0, 0, 0, {}, {}, false, R::kAlgorithms},
    // TwoTensors (AddTensor a c, TransformTensor x y): alpha beta
    {2, false, false, false, false, false, false, 0, 0, 2, 2, {0, 1}, {}, false, R::kNone},
    // OpTensor: a b c | op | alpha1 alpha2 beta
    {3, false, false, false, false, false, true, 0, 0, 3, 3, {0, 1, 2}, {}, false, R::kNone},
    // OneTensor (ScaleTensor alpha, SetTensor value): y
    {1, false, false, false, false, false, false, 0, 0, 1, 1, {0}, {}, false, R::kNone},
    // ActivationForward: act | x y | alpha beta
    {2, false, false, true, false, false, false, 0, 0, 2, 2, {0, 1}, {}, false, R::kNone},
    // ActivationBackward: act | y dy x dx
    {4, false, false, true, false, false, false, 0, 0, 2, 4, {0, 1, 2, 3}, {}, false, R::kNone},
    // SoftmaxForward: algo mode | x y
    {2, false, false, false, false, false, false, 2, 0, 2, 2, {0, 1}, {}, false, R::kNone},
    // SoftmaxBackward: algo mode | y dy dx
    {3, false, false, false, false, false, false, 2, 0, 2, 3, {0, 1, 2}, {}, false, R::kNone},
    // PoolingForward: pool | x y
    {2, false, false, false, true, false, false, 0, 0, 2, 2, {0, 1}, {}, false, R::kNone},
    // PoolingBackward: pool | y dy x dx
    {4, false, false, false, true, false, false, 0, 0, 2, 4, {0, 1, 2, 3}, {}, false, R::kNone},
    // LrnForward: lrn | mode | x y
    {2, false, false, false, false, true, false, 1, 0, 2, 2, {0, 1}, {}, false, R::kNone},
    // LrnBackward: lrn | mode | y dy x dx
    {4, false, false, false, false, true, false, 1, 0, 2, 4, {0, 1, 2, 3}, {}, false, R::kNone},
    // BnInference: mode | x y bn | epsilon | x y scale bias mean var
    {3,
     false,
     false,
     false,
     false,
     false,
     false,
     1,
     1,
     2,
     6,
     {0, 1, 2, 2, 2, 2},
     {},
     false,
     R::kNone},
    // BnTraining: mode | x y bn | factor epsilon | x y scale bias runMean runVar saveMean saveInv
    {3,
     false,
     false,
     false,
     false,
     false,
     false,
     1,
     2,
     2,
     8,
     {0, 1, 2, 2, 2, 2, 2, 2},
     {false, false, false, false, N, N, N, N},
     false,
     R::kNone},
    // BnBackward: mode | x dy dx bn | epsilon | x dy dx scale dscale dbias savedMean savedInv |
    //             alphaData betaData alphaParam betaParam
    {4,
     false,
     false,
     false,
     false,
     false,
     false,
     1,
     1,
     4,
     8,
     {0, 1, 2, 3, 3, 3, 3, 3},
     {false, false, false, false, false, false, N, N},
     false,
     R::kNone},
};

constexpr DnnOp kOps[] = {
#define DNN_OP(op, Name, Layout) \
  {op, #Name, DnnLayout::k##Layout, &kInfo[static_cast<int>(DnnLayout::k##Layout)]},
#include "proto/dnn_ops.def"
};

Status Bad(const std::string& what) {
  return Error(err::kInvalidValue, what);
}

Result<uint32_t> Elem(int32_t dtype) {
  const uint32_t e = DnnElemBytes(dtype);
  if (e == 0)
    return Error(err::kNotSupported,
                 "cudnnDataType_t " + std::to_string(dtype) + " is not forwarded");
  return e;
}

}  // namespace

const DnnOp* FindDnnOp(uint32_t op) {
  for (const DnnOp& o : kOps)
    if (o.op == op) return &o;
  return nullptr;
}

std::span<const DnnOp> DnnOps() {
  return kOps;
}

uint32_t DnnElemBytes(int32_t dtype) {
  switch (dtype) {
    case 0:
      return 4;  // CUDNN_DATA_FLOAT
    case 1:
      return 8;  // CUDNN_DATA_DOUBLE
    case 2:
      return 2;  // CUDNN_DATA_HALF
    default:
      return 0;
  }
}

Result<uint64_t> DnnTensorReach(const DnnTensorShape& t) {
  const size_t n = t.dims.size();
  if (n < 3 || n > 8 || t.strides.size() != n)
    return Bad("a tensor needs 3 to 8 dimensions and one stride each (got " + std::to_string(n) +
               " and " + std::to_string(t.strides.size()) + ")");
  ASSIGN_OR_RETURN(uint32_t e, Elem(t.dtype));
  unsigned __int128 last = 0;
  for (size_t i = 0; i < n; ++i) {
    if (t.dims[i] <= 0 || t.strides[i] <= 0)
      return Bad("tensor dimension " + std::to_string(i) + " is " + std::to_string(t.dims[i]) +
                 " with stride " + std::to_string(t.strides[i]));
    last += static_cast<unsigned __int128>(t.dims[i] - 1) * static_cast<uint32_t>(t.strides[i]);
  }
  const unsigned __int128 bytes = (last + 1) * e;
  if (bytes > kMaxBytes) return Bad("a tensor reaches more bytes than any device holds");
  return static_cast<uint64_t>(bytes);
}

Result<uint64_t> DnnFilterReach(const DnnFilterShape& f) {
  if (f.dims.size() < 3 || f.dims.size() > 8)
    return Bad("a filter needs 3 to 8 dimensions, not " + std::to_string(f.dims.size()));
  if (f.format != 0 && f.format != 1)  // CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NHWC
    return Error(err::kNotSupported,
                 "filter format " + std::to_string(f.format) + " is not forwarded");
  ASSIGN_OR_RETURN(uint32_t e, Elem(f.dtype));
  unsigned __int128 bytes = e;
  for (int32_t d : f.dims) {
    if (d <= 0) return Bad("filter dimension " + std::to_string(d) + " is not positive");
    bytes *= static_cast<uint32_t>(d);
    if (bytes > kMaxBytes) return Bad("a filter reaches more bytes than any device holds");
  }
  return static_cast<uint64_t>(bytes);
}

Result<DnnPlan> PlanDnn(const DnnOp& op, std::span<const DnnTensorShape> tensors,
                        const DnnFilterShape* filter) {
  const DnnLayoutInfo& info = *op.info;
  const std::string what = "cudnn" + std::string(op.name) + ": ";
  if (tensors.size() != info.tensors)
    return Bad(what + "takes " + std::to_string(info.tensors) + " tensor descriptors");
  if (info.filter != (filter != nullptr))
    return Bad(what + (info.filter ? "needs a filter descriptor" : "takes no filter"));
  std::vector<uint64_t> reach(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    Result<uint64_t> r = DnnTensorReach(tensors[i]);
    if (!r.ok()) return Status(r.status().code(), what + r.status().message());
    reach[i] = *r;
  }
  uint64_t filter_reach = 0;
  if (filter) {
    Result<uint64_t> r = DnnFilterReach(*filter);
    if (!r.ok()) return Status(r.status().code(), what + r.status().message());
    filter_reach = *r;
  }
  DnnPlan plan;
  for (size_t i = 0; i < info.ptrs; ++i)
    plan.bytes[i] = info.reach[i] == kDnnFilter ? filter_reach : reach[info.reach[i]];
  // Scaling parameters are double for double data, float otherwise; SetTensor's
  // value has the tensor's own type.
  const int32_t data = tensors.empty() ? (filter ? filter->dtype : 0) : tensors[0].dtype;
  plan.scalar_bytes = data == 1 ? 8 : 4;
  if (op.name == "SetTensor") plan.scalar_bytes = DnnElemBytes(data);
  return plan;
}

namespace {
struct StatusPair {
  int32_t dnn;
  int32_t cuda;
};
// cudnnStatus_t <-> cudaError_t. The first row for a code wins each way.
constexpr StatusPair kStatusMap[] = {
    {0, 0},                               // SUCCESS
    {2000, err::kInvalidValue},           // BAD_PARAM
    {2000, err::kInvalidResourceHandle},  //   a bad or destroyed handle
    {1001, err::kInitializationError},  // NOT_INITIALIZED: no server, no library
    {3000, err::kNotSupported},         // NOT_SUPPORTED
    {3000, err::kNotPermitted},
    {4004, err::kMemoryAllocation},  // INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
    {4003, err::kMemoryAllocation},  // (ALLOC_FAILED)
    {5000, err::kLaunchFailure},     // EXECUTION_FAILED
    {4000, err::kUnknown},           // INTERNAL_ERROR
};
}  // namespace

int32_t DnnStatusToCuda(int32_t s) {
  for (const StatusPair& p : kStatusMap)
    if (p.dnn == s) return p.cuda;
  // A status of a category we do not list: by its category.
  switch (s / 1000 * 1000) {
    case 2000:
      return err::kInvalidValue;
    case 3000:
      return err::kNotSupported;
    case 5000:
      return err::kLaunchFailure;
    default:
      return err::kUnknown;
  }
}

int32_t CudaToDnnStatus(int32_t e) {
  for (const StatusPair& p : kStatusMap)
    if (p.cuda == e) return p.dnn;
  return 5000;  // a device fault or a lost server: the operation did not run
}

}  // namespace remora
