// client_stub/cudnn.cc - libcudnn.so.9: cuDNN over the tenant's one session.
//
// Descriptors are plain data (proto/dnn_descriptors.cc, shared with the
// emulated GPU's library: setters and getters never leave the process); a
// handle is a server-side cudnnHandle_t whose stream is kept here. Every
// operation of proto/dnn_ops.def travels as one DnnRequest with its
// descriptors by value; obvious mistakes (bad descriptors, shapes, null
// scaling parameters, pointers outside the tenant's allocations) are answered
// here at once with NVIDIA's status. Operations are stream-ordered and do not
// wait; queries (workspace sizes, algorithm choices) ask the server's library.
#pragma GCC visibility push(default)
#include <cudnn.h>
#pragma GCC visibility pop

#include <cuda_runtime_api.h>

#include <cstring>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "client_stub/connection.h"
#include "client_stub/state.h"
#include "proto/dnn.h"
#include "proto/dnn_descriptors.h"

// The object behind a cudnnHandle_t (declared by cudnn_graph_v9.h).
struct cudnnContext {
  uint64_t id = 0;  // the server's
  cudaStream_t stream = nullptr;
};

namespace remora::client_stub {
namespace {

enum class Op : uint32_t {
#define DNN_OP(op, Name, Layout) k##Name = op,
#include "proto/dnn_ops.def"
};

// A copy of live handle `h`, or nullopt.
std::optional<cudnnContext> FindHandle(cudnnHandle_t h) {
  cudnnContext c;
  if (DnnLive<cudnnContext>().With(h, [&c](cudnnContext& live) {
        c = live;
        return CUDNN_STATUS_SUCCESS;
      }) != CUDNN_STATUS_SUCCESS)
    return std::nullopt;
  return c;
}

cudnnStatus_t ToStatus(cudaError_t e) {
  return static_cast<cudnnStatus_t>(CudaToDnnStatus(e));
}

bool OnDevice(const void* ptr, uint64_t bytes) {
  return ::remora::client_stub::OnDevice(reinterpret_cast<uint64_t>(ptr), bytes);
}

void Put(const DnnTensorShape& s, v1::DnnRequest::Tensor* m) {
  m->set_dtype(s.dtype);
  m->mutable_dims()->Add(s.dims.begin(), s.dims.end());
  m->mutable_strides()->Add(s.strides.begin(), s.strides.end());
}

// Everything one operation takes, gathered by kind in signature order.
struct Call {
  std::initializer_list<cudnnTensorDescriptor_t> tensors = {};
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnLRNDescriptor_t lrn = nullptr;
  cudnnOpTensorDescriptor_t op = nullptr;
  std::initializer_list<int64_t> ints = {};
  std::initializer_list<double> reals = {};
  std::initializer_list<const void*> ptrs = {};
  std::initializer_list<const void*> scalars = {};
  void* workspace = nullptr;
  size_t workspace_size = 0;
};

// Builds and checks the request for `id`; nullopt with `*status` set on a mistake.
std::optional<v1::DnnRequest> Build(cudnnHandle_t handle, Op id, const Call& c,
                                    cudnnStatus_t* status) {
  *status = CUDNN_STATUS_BAD_PARAM;
  std::optional<cudnnContext> h = FindHandle(handle);
  if (!h) return std::nullopt;
  const DnnOp* op = FindDnnOp(static_cast<uint32_t>(id));
  const DnnLayoutInfo& info = *op->info;
  v1::DnnRequest req;
  req.set_op(op->op);
  req.set_handle(h->id);
  req.set_stream(StreamId(h->stream));
  std::vector<DnnTensorShape> shapes;
  for (cudnnTensorDescriptor_t t : c.tensors) {
    cudnnTensorStruct d;
    if (DnnCopy(t, &d)) return std::nullopt;
    Put(d.shape, req.add_tensors());
    shapes.push_back(std::move(d.shape));
  }
  cudnnFilterStruct f;
  if (info.filter) {
    if (DnnCopy(c.filter, &f)) return std::nullopt;
    req.mutable_filter()->set_dtype(f.shape.dtype);
    req.mutable_filter()->set_format(f.shape.format);
    req.mutable_filter()->mutable_dims()->Add(f.shape.dims.begin(), f.shape.dims.end());
  }
  Result<DnnPlan> plan = PlanDnn(*op, shapes, info.filter ? &f.shape : nullptr);
  if (!plan.ok()) {
    *status = static_cast<cudnnStatus_t>(CudaToDnnStatus(plan.status().code()));
    return std::nullopt;
  }
  if (info.conv) {
    cudnnConvolutionStruct d;
    if (DnnCopy(c.conv, &d)) return std::nullopt;
    v1::DnnRequest::Convolution* m = req.mutable_conv();
    m->mutable_pads()->Add(d.pads.begin(), d.pads.end());
    m->mutable_strides()->Add(d.strides.begin(), d.strides.end());
    m->mutable_dilations()->Add(d.dilations.begin(), d.dilations.end());
    m->set_mode(d.mode);
    m->set_compute_type(d.compute);
    m->set_groups(d.groups);
    m->set_math_type(d.math);
  }
  if (info.activation) {
    cudnnActivationStruct d;
    if (DnnCopy(c.act, &d)) return std::nullopt;
    req.mutable_activation()->set_mode(d.mode);
    req.mutable_activation()->set_nan_opt(d.nan);
    req.mutable_activation()->set_coef(d.mode == CUDNN_ACTIVATION_SWISH ? d.swish_beta : d.coef);
  }
  if (info.pooling) {
    cudnnPoolingStruct d;
    if (DnnCopy(c.pool, &d)) return std::nullopt;
    v1::DnnRequest::Pooling* m = req.mutable_pooling();
    m->set_mode(d.mode);
    m->set_nan_opt(d.nan);
    m->mutable_window()->Add(d.window.begin(), d.window.end());
    m->mutable_pads()->Add(d.pads.begin(), d.pads.end());
    m->mutable_strides()->Add(d.strides.begin(), d.strides.end());
  }
  if (info.lrn) {
    cudnnLRNStruct d;
    if (DnnCopy(c.lrn, &d)) return std::nullopt;
    req.mutable_lrn()->set_n(d.n);
    req.mutable_lrn()->set_alpha(d.alpha);
    req.mutable_lrn()->set_beta(d.beta);
    req.mutable_lrn()->set_k(d.k);
  }
  if (info.op_tensor) {
    cudnnOpTensorStruct d;
    if (DnnCopy(c.op, &d)) return std::nullopt;
    req.mutable_op_tensor()->set_op(d.op);
    req.mutable_op_tensor()->set_compute_type(d.compute);
    req.mutable_op_tensor()->set_nan_opt(d.nan);
  }
  req.mutable_ints()->Add(c.ints.begin(), c.ints.end());
  req.mutable_reals()->Add(c.reals.begin(), c.reals.end());
  for (const void* s : c.scalars) {
    if (!s) return std::nullopt;
    req.mutable_scalars()->append(static_cast<const char*>(s), plan->scalar_bytes);
  }
  size_t i = 0;
  for (const void* p : c.ptrs) {
    req.add_ptrs(reinterpret_cast<uint64_t>(p));
    if (!(p == nullptr && info.nullable[i]) && !OnDevice(p, plan->bytes[i])) return std::nullopt;
    ++i;
  }
  if (info.workspace) {
    if (c.workspace_size && !OnDevice(c.workspace, c.workspace_size)) return std::nullopt;
    req.set_workspace(reinterpret_cast<uint64_t>(c.workspace));
    req.set_workspace_size(c.workspace_size);
  }
  *status = CUDNN_STATUS_SUCCESS;
  return req;
}

// Sends a stream-ordered operation Build made.
cudnnStatus_t PostBuilt(const v1::DnnRequest& req) {
  return ToStatus(Connection::Get().Post(CallId::kDnn, req));
}

// A stream-ordered operation.
cudnnStatus_t Post(cudnnHandle_t handle, Op id, const Call& c) {
  cudnnStatus_t st;
  std::optional<v1::DnnRequest> req = Build(handle, id, c, &st);
  if (!req) return st;
  return PostBuilt(*req);
}

// A query answered by the server's library.
cudnnStatus_t Ask(cudnnHandle_t handle, Op id, const Call& c, v1::DnnReply* rep) {
  cudnnStatus_t st;
  std::optional<v1::DnnRequest> req = Build(handle, id, c, &st);
  if (!req) return st;
  return ToStatus(Connection::Get().Call(CallId::kDnnSync, *req, rep));
}

cudnnStatus_t AskSize(cudnnHandle_t handle, Op id, const Call& c, size_t* size) {
  if (!size) return CUDNN_STATUS_BAD_PARAM;
  v1::DnnReply rep;
  if (cudnnStatus_t s = Ask(handle, id, c, &rep)) return s;
  uint64_t v = 0;
  if (rep.result().size() != sizeof v) return CUDNN_STATUS_INTERNAL_ERROR;
  std::memcpy(&v, rep.result().data(), sizeof v);
  *size = v;
  return CUDNN_STATUS_SUCCESS;
}

template <typename Perf>
cudnnStatus_t AskAlgorithms(cudnnHandle_t handle, Op id, const Call& c, int requested,
                            int* returned, Perf* out) {
  if (!returned || !out || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  v1::DnnReply rep;
  if (cudnnStatus_t s = Ask(handle, id, c, &rep)) return s;
  if (rep.count() < 0 || rep.count() > requested ||
      rep.result().size() != sizeof(Perf) * static_cast<size_t>(rep.count()))
    return CUDNN_STATUS_INTERNAL_ERROR;
  std::memcpy(out, rep.result().data(), rep.result().size());
  *returned = rep.count();
  return CUDNN_STATUS_SUCCESS;
}

// The buffers a convolution pass would read and write: each tensor's and the filter's bytes
// within the tenant's device allocations, and the workspace's if it has a size; BAD_PARAM if not.
cudnnStatus_t CheckConvBuffers(
    std::initializer_list<std::pair<cudnnTensorDescriptor_t, const void*>> tensors,
    cudnnFilterDescriptor_t wd, const void* w, const void* ws, size_t ws_bytes) {
  for (const auto& [d, p] : tensors) {
    size_t bytes = 0;
    if (cudnnStatus_t s = cudnnGetTensorSizeInBytes(d, &bytes)) return s;
    if (!OnDevice(p, bytes)) return CUDNN_STATUS_BAD_PARAM;
  }
  size_t bytes = 0;
  if (cudnnStatus_t s = cudnnGetFilterSizeInBytes(wd, &bytes)) return s;
  if (!OnDevice(w, bytes)) return CUDNN_STATUS_BAD_PARAM;
  if (ws_bytes && !OnDevice(ws, ws_bytes)) return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace remora::client_stub

using remora::DnnLive;
using remora::client_stub::Call;
using remora::client_stub::FindHandle;
using Op = remora::client_stub::Op;
namespace cs = remora::client_stub;

extern "C" {

// ---- Handles, versions, errors ----------------------------------------------------

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  using namespace remora;
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  *handle = nullptr;
  v1::HandleReply rep;
  const cudaError_t e = client_stub::Connection::Get().Call(CallId::kDnnCreate, v1::Empty(), &rep);
  if (e == cudaErrorMemoryAllocation) return CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
  if (e != cudaSuccess) return CUDNN_STATUS_NOT_INITIALIZED;
  cudnnContext* h = DnnLive<cudnnContext>().Add();
  h->id = rep.handle();
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  using namespace remora;
  std::optional<cudnnContext> h = FindHandle(handle);
  if (!h || !DnnLive<cudnnContext>().Remove(handle)) return CUDNN_STATUS_BAD_PARAM;
  v1::DnnHandleRequest req;
  req.set_handle(h->id);
  return cs::ToStatus(client_stub::Connection::Get().Call(CallId::kDnnDestroy, req));
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  return DnnLive<cudnnContext>().With(handle, [&](cudnnContext& h) {
    h.stream = stream;
    return CUDNN_STATUS_SUCCESS;
  });
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  if (!stream) return CUDNN_STATUS_BAD_PARAM;
  std::optional<cudnnContext> h = FindHandle(handle);
  if (!h) return CUDNN_STATUS_BAD_PARAM;
  *stream = h->stream;
  return CUDNN_STATUS_SUCCESS;
}

size_t cudnnGetVersion(void) {
  return CUDNN_VERSION;
}

size_t cudnnGetCudartVersion(void) {
  return CUDART_VERSION;
}

size_t cudnnGetMaxDeviceVersion(void) {
  return 1200;
}

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUDNN_STATUS_BAD_PARAM;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUDNN_MAJOR;
      return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUDNN_MINOR;
      return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUDNN_PATCHLEVEL;
      return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_BAD_PARAM;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
#define NAME(s) \
  case s:       \
    return #s;
    NAME(CUDNN_STATUS_SUCCESS)
    NAME(CUDNN_STATUS_NOT_INITIALIZED)
    NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM)
    NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    NAME(CUDNN_STATUS_NOT_SUPPORTED)
    NAME(CUDNN_STATUS_INTERNAL_ERROR)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    NAME(CUDNN_STATUS_EXECUTION_FAILED)
#undef NAME
    default:
      break;
  }
  return "CUDNN_UNKNOWN_STATUS";
}

void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (message && max_size) message[0] = '\0';
}

cudnnStatus_t cudnnQueryRuntimeError(cudnnHandle_t handle, cudnnStatus_t* rstatus,
                                     cudnnErrQueryMode_t, cudnnRuntimeTag_t*) {
  if (!rstatus || !FindHandle(handle)) return CUDNN_STATUS_BAD_PARAM;
  *rstatus = CUDNN_STATUS_SUCCESS;  // errors of stream work come back through the runtime
  return CUDNN_STATUS_SUCCESS;
}

// ---- Convolutions ---------------------------------------------------------------------

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t h, int* count) {
  if (!count || !FindHandle(h)) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t h, int* count) {
  if (!count || !FindHandle(h)) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t h, int* count) {
  if (!count || !FindHandle(h)) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y, int requested,
    int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
  return cs::AskAlgorithms(h, Op::kGetConvolutionForwardAlgorithm_v7,
                           Call{.tensors = {x, y}, .filter = w, .conv = conv, .ints = {requested}},
                           requested, returned, perf);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
  return cs::AskAlgorithms(
      h, Op::kGetConvolutionBackwardDataAlgorithm_v7,
      Call{.tensors = {dy, dx}, .filter = w, .conv = conv, .ints = {requested}}, requested,
      returned, perf);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
  return cs::AskAlgorithms(
      h, Op::kGetConvolutionBackwardFilterAlgorithm_v7,
      Call{.tensors = {x, dy}, .filter = dw, .conv = conv, .ints = {requested}}, requested,
      returned, perf);
}
// Find* would time each algorithm on the device; Remora answers with the
// library's own ranking (the same results as Get*_v7).
cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                   const cudnnFilterDescriptor_t w,
                                                   const cudnnConvolutionDescriptor_t conv,
                                                   const cudnnTensorDescriptor_t y, int requested,
                                                   int* returned,
                                                   cudnnConvolutionFwdAlgoPerf_t* perf) {
  return cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, conv, y, requested, returned, perf);
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
  return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, dy, conv, dx, requested, returned, perf);
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
  return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x, dy, conv, dw, requested, returned,
                                                       perf);
}
// Find*Ex would time each algorithm on the caller's own buffers: Remora checks those buffers as
// the pass would, then answers as Find* does.
cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const void* x,
    const cudnnFilterDescriptor_t wd, const void* w, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t yd, void* y, int requested, int* returned,
    cudnnConvolutionFwdAlgoPerf_t* perf, void* ws, size_t ws_bytes) {
  if (cudnnStatus_t s = cs::CheckConvBuffers({{xd, x}, {yd, y}}, wd, w, ws, ws_bytes)) return s;
  return cudnnFindConvolutionForwardAlgorithm(h, xd, wd, conv, yd, requested, returned, perf);
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t h, const cudnnFilterDescriptor_t wd, const void* w,
    const cudnnTensorDescriptor_t dyd, const void* dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t dxd, void* dx, int requested, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* perf, void* ws, size_t ws_bytes) {
  if (cudnnStatus_t s = cs::CheckConvBuffers({{dyd, dy}, {dxd, dx}}, wd, w, ws, ws_bytes)) return s;
  return cudnnFindConvolutionBackwardDataAlgorithm(h, wd, dyd, conv, dxd, requested, returned,
                                                   perf);
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const void* x,
    const cudnnTensorDescriptor_t dyd, const void* dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnFilterDescriptor_t dwd, void* dw, int requested, int* returned,
    cudnnConvolutionBwdFilterAlgoPerf_t* perf, void* ws, size_t ws_bytes) {
  if (cudnnStatus_t s = cs::CheckConvBuffers({{xd, x}, {dyd, dy}}, dwd, dw, ws, ws_bytes)) return s;
  return cudnnFindConvolutionBackwardFilterAlgorithm(h, xd, dyd, conv, dwd, requested, returned,
                                                     perf);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y,
    cudnnConvolutionFwdAlgo_t algo, size_t* size) {
  return cs::AskSize(h, Op::kGetConvolutionForwardWorkspaceSize,
                     Call{.tensors = {x, y}, .filter = w, .conv = conv, .ints = {algo}}, size);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx,
    cudnnConvolutionBwdDataAlgo_t algo, size_t* size) {
  return cs::AskSize(h, Op::kGetConvolutionBackwardDataWorkspaceSize,
                     Call{.tensors = {dy, dx}, .filter = w, .conv = conv, .ints = {algo}}, size);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t* size) {
  return cs::AskSize(h, Op::kGetConvolutionBackwardFilterWorkspaceSize,
                     Call{.tensors = {x, dy}, .filter = dw, .conv = conv, .ints = {algo}}, size);
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void* alpha,
                                      const cudnnTensorDescriptor_t xd, const void* x,
                                      const cudnnFilterDescriptor_t wd, const void* w,
                                      const cudnnConvolutionDescriptor_t conv,
                                      cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_size,
                                      const void* beta, const cudnnTensorDescriptor_t yd, void* y) {
  return cs::Post(h, Op::kConvolutionForward,
                  Call{.tensors = {xd, yd},
                       .filter = wd,
                       .conv = conv,
                       .ints = {algo},
                       .ptrs = {x, w, y},
                       .scalars = {alpha, beta},
                       .workspace = ws,
                       .workspace_size = ws_size});
}
// y = act(alpha1 * conv(x, w) + alpha2 * z + bias), as the library's passes that make it up, one
// after another on the handle's stream: z copied to y (unless it is y), the convolution with
// beta alpha2, the bias added, the activation in place. Every pass is checked before any is
// sent, so a mistake leaves y as it was. As NVIDIA's: RELU, or IDENTITY with
// IMPLICIT_PRECOMP_GEMM; any other activation is not supported.
cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t h, const void* alpha1, const cudnnTensorDescriptor_t xd, const void* x,
    const cudnnFilterDescriptor_t wd, const void* w, const cudnnConvolutionDescriptor_t conv,
    cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_size, const void* alpha2,
    const cudnnTensorDescriptor_t zd, const void* z, const cudnnTensorDescriptor_t bd,
    const void* bias, const cudnnActivationDescriptor_t act, const cudnnTensorDescriptor_t yd,
    void* y) {
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef;
  if (cudnnStatus_t s = cudnnGetActivationDescriptor(act, &mode, &nan, &coef)) return s;
  if (mode != CUDNN_ACTIVATION_RELU && mode != CUDNN_ACTIVATION_IDENTITY)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_NOT_SUPPORTED;
  cudnnDataType_t dtype;
  int nb, dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
  if (cudnnStatus_t s = cudnnGetTensorNdDescriptor(yd, CUDNN_DIM_MAX, &dtype, &nb, dims, strides))
    return s;
  // Scaling parameters are doubles for double data, floats otherwise.
  static constexpr float kOneF = 1, kZeroF = 0;
  static constexpr double kOneD = 1, kZeroD = 0;
  const bool dbl = dtype == CUDNN_DATA_DOUBLE;
  const void* one = dbl ? static_cast<const void*>(&kOneD) : &kOneF;
  const void* zero = dbl ? static_cast<const void*>(&kZeroD) : &kZeroF;
  std::vector<remora::v1::DnnRequest> passes;
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  auto add = [&](Op id, const Call& c) {
    if (st != CUDNN_STATUS_SUCCESS) return;
    if (std::optional<remora::v1::DnnRequest> r = cs::Build(h, id, c, &st)) passes.push_back(*r);
  };
  if (z != y)
    add(Op::kTransformTensor, Call{.tensors = {zd, yd}, .ptrs = {z, y}, .scalars = {one, zero}});
  add(Op::kConvolutionForward, Call{.tensors = {xd, yd},
                                    .filter = wd,
                                    .conv = conv,
                                    .ints = {algo},
                                    .ptrs = {x, w, y},
                                    .scalars = {alpha1, alpha2},
                                    .workspace = ws,
                                    .workspace_size = ws_size});
  add(Op::kAddTensor, Call{.tensors = {bd, yd}, .ptrs = {bias, y}, .scalars = {one, one}});
  if (mode == CUDNN_ACTIVATION_RELU)
    add(Op::kActivationForward,
        Call{.tensors = {yd, yd}, .act = act, .ptrs = {y, y}, .scalars = {one, zero}});
  if (st != CUDNN_STATUS_SUCCESS) return st;
  for (const remora::v1::DnnRequest& r : passes)
    if (cudnnStatus_t s = cs::PostBuilt(r)) return s;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void* alpha,
                                           const cudnnFilterDescriptor_t wd, const void* w,
                                           const cudnnTensorDescriptor_t dyd, const void* dy,
                                           const cudnnConvolutionDescriptor_t conv,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* ws,
                                           size_t ws_size, const void* beta,
                                           const cudnnTensorDescriptor_t dxd, void* dx) {
  return cs::Post(h, Op::kConvolutionBackwardData,
                  Call{.tensors = {dyd, dxd},
                       .filter = wd,
                       .conv = conv,
                       .ints = {algo},
                       .ptrs = {w, dy, dx},
                       .scalars = {alpha, beta},
                       .workspace = ws,
                       .workspace_size = ws_size});
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void* alpha,
                                             const cudnnTensorDescriptor_t xd, const void* x,
                                             const cudnnTensorDescriptor_t dyd, const void* dy,
                                             const cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* ws,
                                             size_t ws_size, const void* beta,
                                             const cudnnFilterDescriptor_t dwd, void* dw) {
  return cs::Post(h, Op::kConvolutionBackwardFilter,
                  Call{.tensors = {xd, dyd},
                       .filter = dwd,
                       .conv = conv,
                       .ints = {algo},
                       .ptrs = {x, dy, dw},
                       .scalars = {alpha, beta},
                       .workspace = ws,
                       .workspace_size = ws_size});
}
cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t h, const void* alpha,
                                           const cudnnTensorDescriptor_t dyd, const void* dy,
                                           const void* beta, const cudnnTensorDescriptor_t dbd,
                                           void* db) {
  return cs::Post(h, Op::kConvolutionBackwardBias,
                  Call{.tensors = {dyd, dbd}, .ptrs = {dy, db}, .scalars = {alpha, beta}});
}

// ---- Tensor arithmetic ------------------------------------------------------------------

cudnnStatus_t cudnnAddTensor(cudnnHandle_t h, const void* alpha, const cudnnTensorDescriptor_t ad,
                             const void* a, const void* beta, const cudnnTensorDescriptor_t cd,
                             void* c) {
  return cs::Post(h, Op::kAddTensor,
                  Call{.tensors = {ad, cd}, .ptrs = {a, c}, .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnOpTensor(cudnnHandle_t h, const cudnnOpTensorDescriptor_t op, const void* alpha1,
                            const cudnnTensorDescriptor_t ad, const void* a, const void* alpha2,
                            const cudnnTensorDescriptor_t bd, const void* b, const void* beta,
                            const cudnnTensorDescriptor_t cd, void* c) {
  return cs::Post(
      h, Op::kOpTensor,
      Call{
          .tensors = {ad, bd, cd}, .op = op, .ptrs = {a, b, c}, .scalars = {alpha1, alpha2, beta}});
}
cudnnStatus_t cudnnScaleTensor(cudnnHandle_t h, const cudnnTensorDescriptor_t yd, void* y,
                               const void* alpha) {
  return cs::Post(h, Op::kScaleTensor, Call{.tensors = {yd}, .ptrs = {y}, .scalars = {alpha}});
}
cudnnStatus_t cudnnSetTensor(cudnnHandle_t h, const cudnnTensorDescriptor_t yd, void* y,
                             const void* value) {
  return cs::Post(h, Op::kSetTensor, Call{.tensors = {yd}, .ptrs = {y}, .scalars = {value}});
}
cudnnStatus_t cudnnTransformTensor(cudnnHandle_t h, const void* alpha,
                                   const cudnnTensorDescriptor_t xd, const void* x,
                                   const void* beta, const cudnnTensorDescriptor_t yd, void* y) {
  return cs::Post(h, Op::kTransformTensor,
                  Call{.tensors = {xd, yd}, .ptrs = {x, y}, .scalars = {alpha, beta}});
}

// ---- Activation, softmax, pooling, LRN ---------------------------------------------------

cudnnStatus_t cudnnActivationForward(cudnnHandle_t h, cudnnActivationDescriptor_t act,
                                     const void* alpha, const cudnnTensorDescriptor_t xd,
                                     const void* x, const void* beta,
                                     const cudnnTensorDescriptor_t yd, void* y) {
  return cs::Post(h, Op::kActivationForward,
                  Call{.tensors = {xd, yd}, .act = act, .ptrs = {x, y}, .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnActivationBackward(cudnnHandle_t h, cudnnActivationDescriptor_t act,
                                      const void* alpha, const cudnnTensorDescriptor_t yd,
                                      const void* y, const cudnnTensorDescriptor_t dyd,
                                      const void* dy, const cudnnTensorDescriptor_t xd,
                                      const void* x, const void* beta,
                                      const cudnnTensorDescriptor_t dxd, void* dx) {
  return cs::Post(h, Op::kActivationBackward,
                  Call{.tensors = {yd, dyd, xd, dxd},
                       .act = act,
                       .ptrs = {y, dy, x, dx},
                       .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t h, cudnnSoftmaxAlgorithm_t algo,
                                  cudnnSoftmaxMode_t mode, const void* alpha,
                                  const cudnnTensorDescriptor_t xd, const void* x, const void* beta,
                                  const cudnnTensorDescriptor_t yd, void* y) {
  return cs::Post(
      h, Op::kSoftmaxForward,
      Call{.tensors = {xd, yd}, .ints = {algo, mode}, .ptrs = {x, y}, .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t h, cudnnSoftmaxAlgorithm_t algo,
                                   cudnnSoftmaxMode_t mode, const void* alpha,
                                   const cudnnTensorDescriptor_t yd, const void* y,
                                   const cudnnTensorDescriptor_t dyd, const void* dy,
                                   const void* beta, const cudnnTensorDescriptor_t dxd, void* dx) {
  return cs::Post(h, Op::kSoftmaxBackward,
                  Call{.tensors = {yd, dyd, dxd},
                       .ints = {algo, mode},
                       .ptrs = {y, dy, dx},
                       .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnPoolingForward(cudnnHandle_t h, const cudnnPoolingDescriptor_t pool,
                                  const void* alpha, const cudnnTensorDescriptor_t xd,
                                  const void* x, const void* beta, const cudnnTensorDescriptor_t yd,
                                  void* y) {
  return cs::Post(
      h, Op::kPoolingForward,
      Call{.tensors = {xd, yd}, .pool = pool, .ptrs = {x, y}, .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t h, const cudnnPoolingDescriptor_t pool,
                                   const void* alpha, const cudnnTensorDescriptor_t yd,
                                   const void* y, const cudnnTensorDescriptor_t dyd, const void* dy,
                                   const cudnnTensorDescriptor_t xd, const void* x,
                                   const void* beta, const cudnnTensorDescriptor_t dxd, void* dx) {
  return cs::Post(h, Op::kPoolingBackward,
                  Call{.tensors = {yd, dyd, xd, dxd},
                       .pool = pool,
                       .ptrs = {y, dy, x, dx},
                       .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnLRNCrossChannelForward(cudnnHandle_t h, cudnnLRNDescriptor_t lrn,
                                          cudnnLRNMode_t mode, const void* alpha,
                                          const cudnnTensorDescriptor_t xd, const void* x,
                                          const void* beta, const cudnnTensorDescriptor_t yd,
                                          void* y) {
  return cs::Post(h, Op::kLRNCrossChannelForward,
                  Call{.tensors = {xd, yd},
                       .lrn = lrn,
                       .ints = {mode},
                       .ptrs = {x, y},
                       .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnLRNCrossChannelBackward(cudnnHandle_t h, cudnnLRNDescriptor_t lrn,
                                           cudnnLRNMode_t mode, const void* alpha,
                                           const cudnnTensorDescriptor_t yd, const void* y,
                                           const cudnnTensorDescriptor_t dyd, const void* dy,
                                           const cudnnTensorDescriptor_t xd, const void* x,
                                           const void* beta, const cudnnTensorDescriptor_t dxd,
                                           void* dx) {
  return cs::Post(h, Op::kLRNCrossChannelBackward,
                  Call{.tensors = {yd, dyd, xd, dxd},
                       .lrn = lrn,
                       .ints = {mode},
                       .ptrs = {y, dy, x, dx},
                       .scalars = {alpha, beta}});
}

// ---- Batch normalization ------------------------------------------------------------------

cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xd, const void* x, const cudnnTensorDescriptor_t yd, void* y,
    const cudnnTensorDescriptor_t bnd, const void* scale, const void* bias, const void* mean,
    const void* var, double eps) {
  return cs::Post(h, Op::kBatchNormalizationForwardInference,
                  Call{.tensors = {xd, yd, bnd},
                       .ints = {mode},
                       .reals = {eps},
                       .ptrs = {x, y, scale, bias, mean, var},
                       .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xd, const void* x, const cudnnTensorDescriptor_t yd, void* y,
    const cudnnTensorDescriptor_t bnd, const void* scale, const void* bias, double factor,
    void* run_mean, void* run_var, double eps, void* save_mean, void* save_inv_var) {
  return cs::Post(h, Op::kBatchNormalizationForwardTraining,
                  Call{.tensors = {xd, yd, bnd},
                       .ints = {mode},
                       .reals = {factor, eps},
                       .ptrs = {x, y, scale, bias, run_mean, run_var, save_mean, save_inv_var},
                       .scalars = {alpha, beta}});
}
cudnnStatus_t cudnnBatchNormalizationBackward(cudnnHandle_t h, cudnnBatchNormMode_t mode,
                                              const void* alpha_data, const void* beta_data,
                                              const void* alpha_param, const void* beta_param,
                                              const cudnnTensorDescriptor_t xd, const void* x,
                                              const cudnnTensorDescriptor_t dyd, const void* dy,
                                              const cudnnTensorDescriptor_t dxd, void* dx,
                                              const cudnnTensorDescriptor_t bnd, const void* scale,
                                              void* dscale, void* dbias, double eps,
                                              const void* saved_mean, const void* saved_inv_var) {
  return cs::Post(h, Op::kBatchNormalizationBackward,
                  Call{.tensors = {xd, dyd, dxd, bnd},
                       .ints = {mode},
                       .reals = {eps},
                       .ptrs = {x, dy, dx, scale, dscale, dbias, saved_mean, saved_inv_var},
                       .scalars = {alpha_data, beta_data, alpha_param, beta_param}});
}

}  // extern "C"
