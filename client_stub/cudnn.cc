// client_stub/cudnn.cc - libcudnn.so.9: cuDNN over the tenant's one session.
//
// Descriptors are plain data kept here (cuDNN's setters and getters never leave
// the process); a handle is a server-side cudnnHandle_t whose stream is kept
// here. Every operation of proto/dnn_ops.def travels as one DnnRequest with its
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
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "client_stub/connection.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"
#include "proto/dnn.h"

// The opaque types cudnn.h declares.
struct cudnnContext {
  uint64_t id = 0;  // the server's
  cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
  remora::DnnTensorShape shape;
};
struct cudnnFilterStruct {
  remora::DnnFilterShape shape;
};
struct cudnnConvolutionStruct {
  std::vector<int> pads{0, 0}, strides{1, 1}, dilations{1, 1};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
struct cudnnActivationStruct {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  double coef = 0;
  double swish_beta = 1;
};
struct cudnnPoolingStruct {
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  std::vector<int> window, pads, strides;
};
struct cudnnLRNStruct {
  unsigned n = 5;
  double alpha = 1e-4, beta = 0.75, k = 2;
};
struct cudnnOpTensorStruct {
  cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
};

namespace remora::client_stub {
namespace {

enum class Op : uint32_t {
#define DNN_OP(op, Name, Layout) k##Name = op,
#include "proto/dnn_ops.def"
};

// Live objects of one kind; a pointer not created here (or destroyed) is refused.
template <typename T>
class Registry {
 public:
  T* Add() {
    std::lock_guard lock(mu_);
    auto obj = std::make_unique<T>();
    T* p = obj.get();
    live_[p] = std::move(obj);
    return p;
  }
  bool Remove(const T* p) {
    std::lock_guard lock(mu_);
    return live_.erase(const_cast<T*>(p)) > 0;
  }
  // A copy of the object, or nullopt. Descriptors are read while the
  // application may set others; each is copied under the lock.
  std::optional<T> Find(const T* p) const {
    std::lock_guard lock(mu_);
    auto it = live_.find(const_cast<T*>(p));
    if (it == live_.end()) return std::nullopt;
    return *it->second;
  }
  template <typename F>
  cudnnStatus_t Update(T* p, F f) {
    std::lock_guard lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return CUDNN_STATUS_BAD_PARAM;
    return f(*it->second);
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<T*, std::unique_ptr<T>> live_;
};

template <typename T>
Registry<T>& Live() {
  static NoDestructor<Registry<T>> r;
  return *r;
}

template <typename T>
cudnnStatus_t Create(T** out) {
  if (!out) return CUDNN_STATUS_BAD_PARAM;
  *out = Live<T>().Add();
  return CUDNN_STATUS_SUCCESS;
}
template <typename T>
cudnnStatus_t Destroy(T* p) {
  // cuDNN accepts destroying a null descriptor.
  return !p || Live<T>().Remove(p) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t ToStatus(cudaError_t e) {
  return static_cast<cudnnStatus_t>(CudaToDnnStatus(e));
}

bool OnDevice(const void* ptr, uint64_t bytes) {
  const uint64_t p = reinterpret_cast<uint64_t>(ptr);
  std::optional<RangeTable::Range> r = St().device_ranges.Find(p);
  return r && p - r->base <= r->size && bytes <= r->size - (p - r->base);
}

// Packed strides for `dims` (the last dimension fastest, or NHWC's order).
std::vector<int> Packed(const std::vector<int>& dims, bool nhwc) {
  const size_t n = dims.size();
  std::vector<int> s(n);
  if (!nhwc || n < 3) {
    int acc = 1;
    for (size_t i = n; i-- > 0;) s[i] = acc, acc *= dims[i];
    return s;
  }
  // N, then spatial dims, then C fastest.
  int acc = 1;
  s[1] = acc;
  acc *= dims[1];
  for (size_t i = n; i-- > 2;) s[i] = acc, acc *= dims[i];
  s[0] = acc;
  return s;
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
  std::optional<cudnnContext> h = Live<cudnnContext>().Find(handle);
  if (!h) return std::nullopt;
  const DnnOp* op = FindDnnOp(static_cast<uint32_t>(id));
  const DnnLayoutInfo& info = *op->info;
  v1::DnnRequest req;
  req.set_op(op->op);
  req.set_handle(h->id);
  req.set_stream(StreamId(h->stream));
  std::vector<DnnTensorShape> shapes;
  for (cudnnTensorDescriptor_t t : c.tensors) {
    std::optional<cudnnTensorStruct> d = Live<cudnnTensorStruct>().Find(t);
    if (!d) return std::nullopt;
    shapes.push_back(d->shape);
    Put(d->shape, req.add_tensors());
  }
  std::optional<cudnnFilterStruct> f;
  if (info.filter) {
    f = Live<cudnnFilterStruct>().Find(c.filter);
    if (!f) return std::nullopt;
    req.mutable_filter()->set_dtype(f->shape.dtype);
    req.mutable_filter()->set_format(f->shape.format);
    req.mutable_filter()->mutable_dims()->Add(f->shape.dims.begin(), f->shape.dims.end());
  }
  Result<DnnPlan> plan = PlanDnn(*op, shapes, f ? &f->shape : nullptr);
  if (!plan.ok()) {
    *status = static_cast<cudnnStatus_t>(CudaToDnnStatus(plan.status().code()));
    return std::nullopt;
  }
  if (info.conv) {
    std::optional<cudnnConvolutionStruct> d = Live<cudnnConvolutionStruct>().Find(c.conv);
    if (!d) return std::nullopt;
    v1::DnnRequest::Convolution* m = req.mutable_conv();
    m->mutable_pads()->Add(d->pads.begin(), d->pads.end());
    m->mutable_strides()->Add(d->strides.begin(), d->strides.end());
    m->mutable_dilations()->Add(d->dilations.begin(), d->dilations.end());
    m->set_mode(d->mode);
    m->set_compute_type(d->compute);
    m->set_groups(d->groups);
    m->set_math_type(d->math);
  }
  if (info.activation) {
    std::optional<cudnnActivationStruct> d = Live<cudnnActivationStruct>().Find(c.act);
    if (!d) return std::nullopt;
    req.mutable_activation()->set_mode(d->mode);
    req.mutable_activation()->set_nan_opt(d->nan);
    req.mutable_activation()->set_coef(d->mode == CUDNN_ACTIVATION_SWISH ? d->swish_beta : d->coef);
  }
  if (info.pooling) {
    std::optional<cudnnPoolingStruct> d = Live<cudnnPoolingStruct>().Find(c.pool);
    if (!d || d->window.empty()) return std::nullopt;
    v1::DnnRequest::Pooling* m = req.mutable_pooling();
    m->set_mode(d->mode);
    m->set_nan_opt(d->nan);
    m->mutable_window()->Add(d->window.begin(), d->window.end());
    m->mutable_pads()->Add(d->pads.begin(), d->pads.end());
    m->mutable_strides()->Add(d->strides.begin(), d->strides.end());
  }
  if (info.lrn) {
    std::optional<cudnnLRNStruct> d = Live<cudnnLRNStruct>().Find(c.lrn);
    if (!d) return std::nullopt;
    req.mutable_lrn()->set_n(d->n);
    req.mutable_lrn()->set_alpha(d->alpha);
    req.mutable_lrn()->set_beta(d->beta);
    req.mutable_lrn()->set_k(d->k);
  }
  if (info.op_tensor) {
    std::optional<cudnnOpTensorStruct> d = Live<cudnnOpTensorStruct>().Find(c.op);
    if (!d) return std::nullopt;
    req.mutable_op_tensor()->set_op(d->op);
    req.mutable_op_tensor()->set_compute_type(d->compute);
    req.mutable_op_tensor()->set_nan_opt(d->nan);
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

// A stream-ordered operation.
cudnnStatus_t Post(cudnnHandle_t handle, Op id, const Call& c) {
  cudnnStatus_t st;
  std::optional<v1::DnnRequest> req = Build(handle, id, c, &st);
  if (!req) return st;
  return ToStatus(Connection::Get().Post(CallId::kDnn, *req));
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

cudnnStatus_t SetTensor(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, std::vector<int> dims,
                        std::vector<int> strides) {
  if (dims.size() < 3 || dims.size() > CUDNN_DIM_MAX || strides.size() != dims.size())
    return CUDNN_STATUS_BAD_PARAM;
  DnnTensorShape s{dtype, std::move(dims), std::move(strides)};
  Result<uint64_t> r = DnnTensorReach(s);
  if (!r.ok()) return static_cast<cudnnStatus_t>(CudaToDnnStatus(r.status().code()));
  return Live<cudnnTensorStruct>().Update(d, [&](cudnnTensorStruct& t) {
    t.shape = std::move(s);
    return CUDNN_STATUS_SUCCESS;
  });
}

cudnnStatus_t SetFilter(cudnnFilterDescriptor_t d, cudnnDataType_t dtype,
                        cudnnTensorFormat_t format, std::vector<int> dims) {
  DnnFilterShape s{dtype, format, std::move(dims)};
  Result<uint64_t> r = DnnFilterReach(s);
  if (!r.ok()) return static_cast<cudnnStatus_t>(CudaToDnnStatus(r.status().code()));
  return Live<cudnnFilterStruct>().Update(d, [&](cudnnFilterStruct& f) {
    f.shape = std::move(s);
    return CUDNN_STATUS_SUCCESS;
  });
}

// Copies up to `n` of `v` into `out` (which may be null when n is 0).
void CopyOut(const std::vector<int>& v, int n, int* out) {
  for (int i = 0; i < n && i < static_cast<int>(v.size()); ++i) out[i] = v[i];
}

}  // namespace
}  // namespace remora::client_stub

using remora::client_stub::Call;
using remora::client_stub::Live;
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
  cudnnContext* h = Live<cudnnContext>().Add();
  h->id = rep.handle();
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  using namespace remora;
  std::optional<cudnnContext> h = Live<cudnnContext>().Find(handle);
  if (!h || !Live<cudnnContext>().Remove(handle)) return CUDNN_STATUS_BAD_PARAM;
  v1::DnnHandleRequest req;
  req.set_handle(h->id);
  return cs::ToStatus(client_stub::Connection::Get().Call(CallId::kDnnDestroy, req));
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  return Live<cudnnContext>().Update(handle, [&](cudnnContext& h) {
    h.stream = stream;
    return CUDNN_STATUS_SUCCESS;
  });
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  if (!stream) return CUDNN_STATUS_BAD_PARAM;
  std::optional<cudnnContext> h = Live<cudnnContext>().Find(handle);
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
  if (!rstatus || !Live<cudnnContext>().Find(handle)) return CUDNN_STATUS_BAD_PARAM;
  *rstatus = CUDNN_STATUS_SUCCESS;  // errors of stream work come back through the runtime
  return CUDNN_STATUS_SUCCESS;
}

// ---- Tensor descriptors ---------------------------------------------------------------

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  return cs::Create(d);
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  return cs::Destroy(d);
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                         cudnnDataType_t dtype, int n, int c, int h, int w) {
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) return CUDNN_STATUS_BAD_PARAM;
  std::vector<int> dims{n, c, h, w};
  for (int v : dims)
    if (v <= 0) return CUDNN_STATUS_BAD_PARAM;
  return cs::SetTensor(d, dtype, dims, cs::Packed(dims, format == CUDNN_TENSOR_NHWC));
}
cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int n,
                                           int c, int h, int w, int ns, int cstr, int hs, int ws) {
  return cs::SetTensor(d, dtype, {n, c, h, w}, {ns, cstr, hs, ws});
}
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int nb,
                                         const int dims[], const int strides[]) {
  if (nb < 3 || nb > CUDNN_DIM_MAX || !dims || !strides) return CUDNN_STATUS_BAD_PARAM;
  return cs::SetTensor(d, dtype, {dims, dims + nb}, {strides, strides + nb});
}
cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                           cudnnDataType_t dtype, int nb, const int dims[]) {
  if (nb < 3 || nb > CUDNN_DIM_MAX || !dims) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) return CUDNN_STATUS_BAD_PARAM;
  std::vector<int> v(dims, dims + nb);
  for (int x : v)
    if (x <= 0) return CUDNN_STATUS_BAD_PARAM;
  return cs::SetTensor(d, dtype, v, cs::Packed(v, format == CUDNN_TENSOR_NHWC));
}
cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t d, cudnnDataType_t* dtype,
                                         int* n, int* c, int* h, int* w, int* ns, int* cstr,
                                         int* hs, int* ws) {
  std::optional<cudnnTensorStruct> t = Live<cudnnTensorStruct>().Find(d);
  if (!t || t->shape.dims.size() != 4 || !dtype || !n || !c || !h || !w || !ns || !cstr || !hs ||
      !ws)
    return CUDNN_STATUS_BAD_PARAM;
  *dtype = static_cast<cudnnDataType_t>(t->shape.dtype);
  const auto& D = t->shape.dims;
  const auto& S = t->shape.strides;
  *n = D[0], *c = D[1], *h = D[2], *w = D[3];
  *ns = S[0], *cstr = S[1], *hs = S[2], *ws = S[3];
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t d, int requested,
                                         cudnnDataType_t* dtype, int* nb, int dims[],
                                         int strides[]) {
  std::optional<cudnnTensorStruct> t = Live<cudnnTensorStruct>().Find(d);
  if (!t || !dtype || !nb || requested < 0 || (requested > 0 && (!dims || !strides)))
    return CUDNN_STATUS_BAD_PARAM;
  *dtype = static_cast<cudnnDataType_t>(t->shape.dtype);
  *nb = static_cast<int>(t->shape.dims.size());
  cs::CopyOut(t->shape.dims, requested, dims);
  cs::CopyOut(t->shape.strides, requested, strides);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t d, size_t* size) {
  std::optional<cudnnTensorStruct> t = Live<cudnnTensorStruct>().Find(d);
  if (!t || !size) return CUDNN_STATUS_BAD_PARAM;
  remora::Result<uint64_t> r = remora::DnnTensorReach(t->shape);
  if (!r.ok()) return CUDNN_STATUS_BAD_PARAM;
  *size = *r;
  return CUDNN_STATUS_SUCCESS;
}

// ---- Filter descriptors ---------------------------------------------------------------

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  return cs::Create(d);
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  return cs::Destroy(d);
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dtype,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  return cs::SetFilter(d, dtype, format, {k, c, h, w});
}
cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dtype,
                                         cudnnTensorFormat_t format, int nb, const int dims[]) {
  if (nb < 3 || nb > CUDNN_DIM_MAX || !dims) return CUDNN_STATUS_BAD_PARAM;
  return cs::SetFilter(d, dtype, format, {dims, dims + nb});
}
cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t d, cudnnDataType_t* dtype,
                                         cudnnTensorFormat_t* format, int* k, int* c, int* h,
                                         int* w) {
  std::optional<cudnnFilterStruct> f = Live<cudnnFilterStruct>().Find(d);
  if (!f || f->shape.dims.size() != 4 || !dtype || !format || !k || !c || !h || !w)
    return CUDNN_STATUS_BAD_PARAM;
  *dtype = static_cast<cudnnDataType_t>(f->shape.dtype);
  *format = static_cast<cudnnTensorFormat_t>(f->shape.format);
  *k = f->shape.dims[0], *c = f->shape.dims[1], *h = f->shape.dims[2], *w = f->shape.dims[3];
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t d, int requested,
                                         cudnnDataType_t* dtype, cudnnTensorFormat_t* format,
                                         int* nb, int dims[]) {
  std::optional<cudnnFilterStruct> f = Live<cudnnFilterStruct>().Find(d);
  if (!f || !dtype || !format || !nb || requested < 0 || (requested > 0 && !dims))
    return CUDNN_STATUS_BAD_PARAM;
  *dtype = static_cast<cudnnDataType_t>(f->shape.dtype);
  *format = static_cast<cudnnTensorFormat_t>(f->shape.format);
  *nb = static_cast<int>(f->shape.dims.size());
  cs::CopyOut(f->shape.dims, requested, dims);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t d, size_t* size) {
  std::optional<cudnnFilterStruct> f = Live<cudnnFilterStruct>().Find(d);
  if (!f || !size) return CUDNN_STATUS_BAD_PARAM;
  remora::Result<uint64_t> r = remora::DnnFilterReach(f->shape);
  if (!r.ok()) return CUDNN_STATUS_BAD_PARAM;
  *size = *r;
  return CUDNN_STATUS_SUCCESS;
}

// ---- Convolution descriptors ---------------------------------------------------------

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  return cs::Create(d);
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  return cs::Destroy(d);
}
cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int n,
                                              const int pads[], const int strides[],
                                              const int dilations[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  if (n < 1 || n > CUDNN_DIM_MAX - 2 || !pads || !strides || !dilations)
    return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < n; ++i)
    if (pads[i] < 0 || strides[i] <= 0 || dilations[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
  return Live<cudnnConvolutionStruct>().Update(d, [&](cudnnConvolutionStruct& c) {
    c.pads.assign(pads, pads + n);
    c.strides.assign(strides, strides + n);
    c.dilations.assign(dilations, dilations + n);
    c.mode = mode;
    c.compute = compute;
    return CUDNN_STATUS_SUCCESS;
  });
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int u,
                                              int v, int dh, int dw, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  const int pads[] = {ph, pw}, strides[] = {u, v}, dil[] = {dh, dw};
  return cudnnSetConvolutionNdDescriptor(d, 2, pads, strides, dil, mode, compute);
}
cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t d, int* ph,
                                              int* pw, int* u, int* v, int* dh, int* dw,
                                              cudnnConvolutionMode_t* mode,
                                              cudnnDataType_t* compute) {
  std::optional<cudnnConvolutionStruct> c = Live<cudnnConvolutionStruct>().Find(d);
  if (!c || c->pads.size() != 2 || !ph || !pw || !u || !v || !dh || !dw || !mode || !compute)
    return CUDNN_STATUS_BAD_PARAM;
  *ph = c->pads[0], *pw = c->pads[1], *u = c->strides[0], *v = c->strides[1];
  *dh = c->dilations[0], *dw = c->dilations[1], *mode = c->mode, *compute = c->compute;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t d, int requested,
                                              int* n, int pads[], int strides[], int dilations[],
                                              cudnnConvolutionMode_t* mode,
                                              cudnnDataType_t* compute) {
  std::optional<cudnnConvolutionStruct> c = Live<cudnnConvolutionStruct>().Find(d);
  if (!c || !n || !mode || !compute || requested < 0 ||
      (requested > 0 && (!pads || !strides || !dilations)))
    return CUDNN_STATUS_BAD_PARAM;
  *n = static_cast<int>(c->pads.size());
  cs::CopyOut(c->pads, requested, pads);
  cs::CopyOut(c->strides, requested, strides);
  cs::CopyOut(c->dilations, requested, dilations);
  *mode = c->mode, *compute = c->compute;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (groups < 1) return CUDNN_STATUS_BAD_PARAM;
  return Live<cudnnConvolutionStruct>().Update(d, [&](cudnnConvolutionStruct& c) {
    c.groups = groups;
    return CUDNN_STATUS_SUCCESS;
  });
}
cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int* groups) {
  std::optional<cudnnConvolutionStruct> c = Live<cudnnConvolutionStruct>().Find(d);
  if (!c || !groups) return CUDNN_STATUS_BAD_PARAM;
  *groups = c->groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  return Live<cudnnConvolutionStruct>().Update(d, [&](cudnnConvolutionStruct& c) {
    c.math = math;
    return CUDNN_STATUS_SUCCESS;
  });
}
cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t* math) {
  std::optional<cudnnConvolutionStruct> c = Live<cudnnConvolutionStruct>().Find(d);
  if (!c || !math) return CUDNN_STATUS_BAD_PARAM;
  *math = c->math;
  return CUDNN_STATUS_SUCCESS;
}
// out = 1 + (in + 2 pad - ((filter - 1) dilation + 1)) / stride, per spatial dimension.
cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t in,
                                                    const cudnnFilterDescriptor_t filter, int nb,
                                                    int out[]) {
  std::optional<cudnnConvolutionStruct> c = Live<cudnnConvolutionStruct>().Find(conv);
  std::optional<cudnnTensorStruct> x = Live<cudnnTensorStruct>().Find(in);
  std::optional<cudnnFilterStruct> w = Live<cudnnFilterStruct>().Find(filter);
  if (!c || !x || !w || !out) return CUDNN_STATUS_BAD_PARAM;
  const auto& xd = x->shape.dims;
  const auto& wd = w->shape.dims;
  const size_t spatial = c->pads.size();
  if (static_cast<size_t>(nb) != xd.size() || xd.size() != wd.size() || spatial + 2 != xd.size() ||
      xd[1] != wd[1] * c->groups || wd[0] % c->groups != 0)
    return CUDNN_STATUS_BAD_PARAM;
  out[0] = xd[0];
  out[1] = wd[0];
  for (size_t i = 0; i < spatial; ++i) {
    const int span = (wd[i + 2] - 1) * c->dilations[i] + 1;
    const int room = xd[i + 2] + 2 * c->pads[i] - span;
    if (room < 0) return CUDNN_STATUS_BAD_PARAM;
    out[i + 2] = 1 + room / c->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t in,
                                                    const cudnnFilterDescriptor_t filter, int* n,
                                                    int* c, int* h, int* w) {
  if (!n || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  int out[4];
  if (cudnnStatus_t s = cudnnGetConvolutionNdForwardOutputDim(conv, in, filter, 4, out)) return s;
  *n = out[0], *c = out[1], *h = out[2], *w = out[3];
  return CUDNN_STATUS_SUCCESS;
}

// ---- Activation, pooling, LRN, op-tensor descriptors ----------------------------------

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) {
  return cs::Create(d);
}
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  return cs::Destroy(d);
}
cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t mode, cudnnNanPropagation_t nan,
                                           double coef) {
  if (mode < CUDNN_ACTIVATION_SIGMOID || mode > CUDNN_ACTIVATION_SWISH)
    return CUDNN_STATUS_BAD_PARAM;
  return Live<cudnnActivationStruct>().Update(d, [&](cudnnActivationStruct& a) {
    a.mode = mode, a.nan = nan, a.coef = coef;
    return CUDNN_STATUS_SUCCESS;
  });
}
cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t* mode, cudnnNanPropagation_t* nan,
                                           double* coef) {
  std::optional<cudnnActivationStruct> a = Live<cudnnActivationStruct>().Find(d);
  if (!a || !mode || !nan || !coef) return CUDNN_STATUS_BAD_PARAM;
  *mode = a->mode, *nan = a->nan, *coef = a->coef;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double beta) {
  return Live<cudnnActivationStruct>().Update(d, [&](cudnnActivationStruct& a) {
    a.swish_beta = beta;
    return CUDNN_STATUS_SUCCESS;
  });
}
cudnnStatus_t cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double* beta) {
  std::optional<cudnnActivationStruct> a = Live<cudnnActivationStruct>().Find(d);
  if (!a || !beta) return CUDNN_STATUS_BAD_PARAM;
  *beta = a->swish_beta;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* d) {
  return cs::Create(d);
}
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) {
  return cs::Destroy(d);
}
cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t nan, int n, const int window[],
                                          const int pads[], const int strides[]) {
  if (n < 1 || n > CUDNN_DIM_MAX - 2 || !window || !pads || !strides) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < n; ++i)
    if (window[i] <= 0 || pads[i] < 0 || strides[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  return Live<cudnnPoolingStruct>().Update(d, [&](cudnnPoolingStruct& p) {
    p.mode = mode, p.nan = nan;
    p.window.assign(window, window + n);
    p.pads.assign(pads, pads + n);
    p.strides.assign(strides, strides + n);
    return CUDNN_STATUS_SUCCESS;
  });
}
cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t nan, int wh, int ww, int ph, int pw,
                                          int sh, int sw) {
  const int window[] = {wh, ww}, pads[] = {ph, pw}, strides[] = {sh, sw};
  return cudnnSetPoolingNdDescriptor(d, mode, nan, 2, window, pads, strides);
}
cudnnStatus_t cudnnGetPoolingNdDescriptor(const cudnnPoolingDescriptor_t d, int requested,
                                          cudnnPoolingMode_t* mode, cudnnNanPropagation_t* nan,
                                          int* n, int window[], int pads[], int strides[]) {
  std::optional<cudnnPoolingStruct> p = Live<cudnnPoolingStruct>().Find(d);
  if (!p || !mode || !nan || !n || requested < 0 ||
      (requested > 0 && (!window || !pads || !strides)))
    return CUDNN_STATUS_BAD_PARAM;
  *mode = p->mode, *nan = p->nan, *n = static_cast<int>(p->window.size());
  cs::CopyOut(p->window, requested, window);
  cs::CopyOut(p->pads, requested, pads);
  cs::CopyOut(p->strides, requested, strides);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t d,
                                          cudnnPoolingMode_t* mode, cudnnNanPropagation_t* nan,
                                          int* wh, int* ww, int* ph, int* pw, int* sh, int* sw) {
  int n = 0, window[2], pads[2], strides[2];
  if (cudnnStatus_t s = cudnnGetPoolingNdDescriptor(d, 2, mode, nan, &n, window, pads, strides))
    return s;
  if (n != 2 || !wh || !ww || !ph || !pw || !sh || !sw) return CUDNN_STATUS_BAD_PARAM;
  *wh = window[0], *ww = window[1], *ph = pads[0], *pw = pads[1], *sh = strides[0],
  *sw = strides[1];
  return CUDNN_STATUS_SUCCESS;
}
// out = 1 + (in + 2 pad - window) / stride, per spatial dimension.
cudnnStatus_t cudnnGetPoolingNdForwardOutputDim(const cudnnPoolingDescriptor_t d,
                                                const cudnnTensorDescriptor_t in, int nb,
                                                int out[]) {
  std::optional<cudnnPoolingStruct> p = Live<cudnnPoolingStruct>().Find(d);
  std::optional<cudnnTensorStruct> x = Live<cudnnTensorStruct>().Find(in);
  if (!p || !x || !out || static_cast<size_t>(nb) != x->shape.dims.size() ||
      p->window.size() + 2 != x->shape.dims.size())
    return CUDNN_STATUS_BAD_PARAM;
  out[0] = x->shape.dims[0];
  out[1] = x->shape.dims[1];
  for (size_t i = 0; i < p->window.size(); ++i) {
    const int room = x->shape.dims[i + 2] + 2 * p->pads[i] - p->window[i];
    if (room < 0) return CUDNN_STATUS_BAD_PARAM;
    out[i + 2] = 1 + room / p->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t d,
                                                const cudnnTensorDescriptor_t in, int* n, int* c,
                                                int* h, int* w) {
  if (!n || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  int out[4];
  if (cudnnStatus_t s = cudnnGetPoolingNdForwardOutputDim(d, in, 4, out)) return s;
  *n = out[0], *c = out[1], *h = out[2], *w = out[3];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateLRNDescriptor(cudnnLRNDescriptor_t* d) {
  return cs::Create(d);
}
cudnnStatus_t cudnnDestroyLRNDescriptor(cudnnLRNDescriptor_t d) {
  return cs::Destroy(d);
}
cudnnStatus_t cudnnSetLRNDescriptor(cudnnLRNDescriptor_t d, unsigned n, double alpha, double beta,
                                    double k) {
  if (n < CUDNN_LRN_MIN_N || n > CUDNN_LRN_MAX_N || k < CUDNN_LRN_MIN_K ||
      beta < CUDNN_LRN_MIN_BETA)
    return CUDNN_STATUS_BAD_PARAM;
  return Live<cudnnLRNStruct>().Update(d, [&](cudnnLRNStruct& l) {
    l.n = n, l.alpha = alpha, l.beta = beta, l.k = k;
    return CUDNN_STATUS_SUCCESS;
  });
}
cudnnStatus_t cudnnGetLRNDescriptor(cudnnLRNDescriptor_t d, unsigned* n, double* alpha,
                                    double* beta, double* k) {
  std::optional<cudnnLRNStruct> l = Live<cudnnLRNStruct>().Find(d);
  if (!l || !n || !alpha || !beta || !k) return CUDNN_STATUS_BAD_PARAM;
  *n = l->n, *alpha = l->alpha, *beta = l->beta, *k = l->k;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateOpTensorDescriptor(cudnnOpTensorDescriptor_t* d) {
  return cs::Create(d);
}
cudnnStatus_t cudnnDestroyOpTensorDescriptor(cudnnOpTensorDescriptor_t d) {
  return cs::Destroy(d);
}
cudnnStatus_t cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t d, cudnnOpTensorOp_t op,
                                         cudnnDataType_t compute, cudnnNanPropagation_t nan) {
  return Live<cudnnOpTensorStruct>().Update(d, [&](cudnnOpTensorStruct& o) {
    o.op = op, o.compute = compute, o.nan = nan;
    return CUDNN_STATUS_SUCCESS;
  });
}
cudnnStatus_t cudnnGetOpTensorDescriptor(const cudnnOpTensorDescriptor_t d, cudnnOpTensorOp_t* op,
                                         cudnnDataType_t* compute, cudnnNanPropagation_t* nan) {
  std::optional<cudnnOpTensorStruct> o = Live<cudnnOpTensorStruct>().Find(d);
  if (!o || !op || !compute || !nan) return CUDNN_STATUS_BAD_PARAM;
  *op = o->op, *compute = o->compute, *nan = o->nan;
  return CUDNN_STATUS_SUCCESS;
}

// Batch normalization's scale/bias/mean/variance shape: 1xCx1x1 (spatial) or
// 1xCxHxW (per activation), float for half data.
cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derived,
                                            const cudnnTensorDescriptor_t x,
                                            cudnnBatchNormMode_t mode) {
  std::optional<cudnnTensorStruct> t = Live<cudnnTensorStruct>().Find(x);
  if (!t) return CUDNN_STATUS_BAD_PARAM;
  std::vector<int> dims = t->shape.dims;
  dims[0] = 1;
  if (mode != CUDNN_BATCHNORM_PER_ACTIVATION)
    for (size_t i = 2; i < dims.size(); ++i) dims[i] = 1;
  const cudnnDataType_t type = t->shape.dtype == CUDNN_DATA_HALF
                                   ? CUDNN_DATA_FLOAT
                                   : static_cast<cudnnDataType_t>(t->shape.dtype);
  return cs::SetTensor(derived, type, dims, cs::Packed(dims, false));
}

// ---- Convolutions ---------------------------------------------------------------------

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t h, int* count) {
  if (!count || !Live<cudnnContext>().Find(h)) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t h, int* count) {
  if (!count || !Live<cudnnContext>().Find(h)) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t h, int* count) {
  if (!count || !Live<cudnnContext>().Find(h)) return CUDNN_STATUS_BAD_PARAM;
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
