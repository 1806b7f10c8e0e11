// server/handlers/dnn.cc - cuDNN: handles, and every operation of dnn_ops.def, checked then queued.
//
// A tenant's cuDNN handle is a server-side cudnnHandle_t. Descriptors come by
// value with each operation; the server checks them (proto/dnn.h), checks
// every pointer's reach and the workspace against the tenant's allocations,
// and builds the library's descriptors for the call when it is issued on the
// tenant's stream. Queries (workspace sizes, algorithm choices) run at once
// and reply with the library's answer.
#include <cudnn.h>

#include <cstring>

#include "proto/dnn.h"
#include "server/handlers/util.h"
#include "server/log.h"
#include "server/session.h"

namespace remora::server {

struct Session::DnnCall {
  const DnnOp* op = nullptr;
  cudnnHandle_t handle = nullptr;
  v1::DnnRequest req;
  alignas(16) std::array<std::byte, 32> scalars{};
};

namespace {

using DnnCall = Session::DnnCall;

std::string StatusText(const DnnTable& t, cudnnStatus_t s) {
  const char* text = t.cudnnGetErrorString(s);
  return text ? text : "cudnnStatus_t " + std::to_string(static_cast<int>(s));
}

Status DnnError(const DnnTable& t, cudnnStatus_t s, const std::string& what) {
  return Error(DnnStatusToCuda(s), what + ": " + StatusText(t, s));
}

// The library's descriptors for one call, built from the request; destroyed with it.
class Descriptors {
 public:
  explicit Descriptors(const DnnTable& t) : t_(t) {}
  ~Descriptors() {
    for (cudnnTensorDescriptor_t d : tensors) (void)t_.cudnnDestroyTensorDescriptor(d);
    if (filter) (void)t_.cudnnDestroyFilterDescriptor(filter);
    if (conv) (void)t_.cudnnDestroyConvolutionDescriptor(conv);
    if (act) (void)t_.cudnnDestroyActivationDescriptor(act);
    if (pool) (void)t_.cudnnDestroyPoolingDescriptor(pool);
    if (lrn) (void)t_.cudnnDestroyLRNDescriptor(lrn);
    if (op) (void)t_.cudnnDestroyOpTensorDescriptor(op);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  cudnnStatus_t Build(const v1::DnnRequest& r, const DnnLayoutInfo& info) {
    for (const v1::DnnRequest::Tensor& m : r.tensors()) {
      cudnnTensorDescriptor_t d = nullptr;
      if (cudnnStatus_t s = t_.cudnnCreateTensorDescriptor(&d)) return s;
      tensors.push_back(d);
      if (cudnnStatus_t s =
              t_.cudnnSetTensorNdDescriptor(d, static_cast<cudnnDataType_t>(m.dtype()),
                                            m.dims_size(), m.dims().data(), m.strides().data()))
        return s;
    }
    if (info.filter) {
      const v1::DnnRequest::Filter& f = r.filter();
      if (cudnnStatus_t s = t_.cudnnCreateFilterDescriptor(&filter)) return s;
      if (cudnnStatus_t s = t_.cudnnSetFilterNdDescriptor(
              filter, static_cast<cudnnDataType_t>(f.dtype()),
              static_cast<cudnnTensorFormat_t>(f.format()), f.dims_size(), f.dims().data()))
        return s;
    }
    if (info.conv) {
      const v1::DnnRequest::Convolution& c = r.conv();
      if (c.strides_size() != c.pads_size() || c.dilations_size() != c.pads_size())
        return CUDNN_STATUS_BAD_PARAM;
      if (cudnnStatus_t s = t_.cudnnCreateConvolutionDescriptor(&conv)) return s;
      if (cudnnStatus_t s = t_.cudnnSetConvolutionNdDescriptor(
              conv, c.pads_size(), c.pads().data(), c.strides().data(), c.dilations().data(),
              static_cast<cudnnConvolutionMode_t>(c.mode()),
              static_cast<cudnnDataType_t>(c.compute_type())))
        return s;
      if (cudnnStatus_t s = t_.cudnnSetConvolutionGroupCount(conv, c.groups() ? c.groups() : 1))
        return s;
      if (cudnnStatus_t s =
              t_.cudnnSetConvolutionMathType(conv, static_cast<cudnnMathType_t>(c.math_type())))
        return s;
    }
    if (info.activation) {
      const v1::DnnRequest::Activation& a = r.activation();
      if (cudnnStatus_t s = t_.cudnnCreateActivationDescriptor(&act)) return s;
      if (cudnnStatus_t s = t_.cudnnSetActivationDescriptor(
              act, static_cast<cudnnActivationMode_t>(a.mode()),
              static_cast<cudnnNanPropagation_t>(a.nan_opt()), a.coef()))
        return s;
    }
    if (info.pooling) {
      const v1::DnnRequest::Pooling& p = r.pooling();
      if (p.pads_size() != p.window_size() || p.strides_size() != p.window_size())
        return CUDNN_STATUS_BAD_PARAM;
      if (cudnnStatus_t s = t_.cudnnCreatePoolingDescriptor(&pool)) return s;
      if (cudnnStatus_t s = t_.cudnnSetPoolingNdDescriptor(
              pool, static_cast<cudnnPoolingMode_t>(p.mode()),
              static_cast<cudnnNanPropagation_t>(p.nan_opt()), p.window_size(), p.window().data(),
              p.pads().data(), p.strides().data()))
        return s;
    }
    if (info.lrn) {
      const v1::DnnRequest::Lrn& l = r.lrn();
      if (cudnnStatus_t s = t_.cudnnCreateLRNDescriptor(&lrn)) return s;
      if (cudnnStatus_t s = t_.cudnnSetLRNDescriptor(lrn, l.n(), l.alpha(), l.beta(), l.k()))
        return s;
    }
    if (info.op_tensor) {
      const v1::DnnRequest::OpTensor& o = r.op_tensor();
      if (cudnnStatus_t s = t_.cudnnCreateOpTensorDescriptor(&op)) return s;
      if (cudnnStatus_t s =
              t_.cudnnSetOpTensorDescriptor(op, static_cast<cudnnOpTensorOp_t>(o.op()),
                                            static_cast<cudnnDataType_t>(o.compute_type()),
                                            static_cast<cudnnNanPropagation_t>(o.nan_opt())))
        return s;
    }
    return CUDNN_STATUS_SUCCESS;
  }

  std::vector<cudnnTensorDescriptor_t> tensors;
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnLRNDescriptor_t lrn = nullptr;
  cudnnOpTensorDescriptor_t op = nullptr;

 private:
  const DnnTable& t_;
};

// An operation's arguments, by kind, in signature order.
struct Args {
  const DnnCall& c;
  const Descriptors& d;
  cudnnTensorDescriptor_t T(int i) const { return d.tensors[i]; }
  void* P(int i) const { return reinterpret_cast<void*>(static_cast<uintptr_t>(c.req.ptrs(i))); }
  const void* S(int i) const { return c.scalars.data() + static_cast<size_t>(i) * ScalarBytes(); }
  int I(int i) const { return static_cast<int>(c.req.ints(i)); }
  double D(int i) const { return c.req.reals(i); }
  void* W() const { return reinterpret_cast<void*>(static_cast<uintptr_t>(c.req.workspace())); }
  size_t WS() const { return c.req.workspace_size(); }
  size_t ScalarBytes() const { return c.req.tensors(0).dtype() == CUDNN_DATA_DOUBLE ? 8 : 4; }
};

// Runs a stream-ordered operation; the handle's stream is already set.
cudnnStatus_t RunOp(const DnnTable& t, cudnnHandle_t h, const Args& a) {
  const auto& d = a.d;
  switch (a.c.op->layout) {
    case DnnLayout::kConvForward:
      return t.cudnnConvolutionForward(h, a.S(0), a.T(0), a.P(0), d.filter, a.P(1), d.conv,
                                       static_cast<cudnnConvolutionFwdAlgo_t>(a.I(0)), a.W(),
                                       a.WS(), a.S(1), a.T(1), a.P(2));
    case DnnLayout::kConvBackwardData:
      return t.cudnnConvolutionBackwardData(h, a.S(0), d.filter, a.P(0), a.T(0), a.P(1), d.conv,
                                            static_cast<cudnnConvolutionBwdDataAlgo_t>(a.I(0)),
                                            a.W(), a.WS(), a.S(1), a.T(1), a.P(2));
    case DnnLayout::kConvBackwardFilter:
      return t.cudnnConvolutionBackwardFilter(h, a.S(0), a.T(0), a.P(0), a.T(1), a.P(1), d.conv,
                                              static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.I(0)),
                                              a.W(), a.WS(), a.S(1), d.filter, a.P(2));
    case DnnLayout::kBackwardBias:
      return t.cudnnConvolutionBackwardBias(h, a.S(0), a.T(0), a.P(0), a.S(1), a.T(1), a.P(1));
    case DnnLayout::kTwoTensors:
      if (a.c.op->name == "AddTensor")
        return t.cudnnAddTensor(h, a.S(0), a.T(0), a.P(0), a.S(1), a.T(1), a.P(1));
      return t.cudnnTransformTensor(h, a.S(0), a.T(0), a.P(0), a.S(1), a.T(1), a.P(1));
    case DnnLayout::kOpTensor:
      return t.cudnnOpTensor(h, d.op, a.S(0), a.T(0), a.P(0), a.S(1), a.T(1), a.P(1), a.S(2),
                             a.T(2), a.P(2));
    case DnnLayout::kOneTensor:
      if (a.c.op->name == "ScaleTensor") return t.cudnnScaleTensor(h, a.T(0), a.P(0), a.S(0));
      return t.cudnnSetTensor(h, a.T(0), a.P(0), a.c.scalars.data());
    case DnnLayout::kActivationForward:
      return t.cudnnActivationForward(h, d.act, a.S(0), a.T(0), a.P(0), a.S(1), a.T(1), a.P(1));
    case DnnLayout::kActivationBackward:
      return t.cudnnActivationBackward(h, d.act, a.S(0), a.T(0), a.P(0), a.T(1), a.P(1), a.T(2),
                                       a.P(2), a.S(1), a.T(3), a.P(3));
    case DnnLayout::kSoftmaxForward:
      return t.cudnnSoftmaxForward(h, static_cast<cudnnSoftmaxAlgorithm_t>(a.I(0)),
                                   static_cast<cudnnSoftmaxMode_t>(a.I(1)), a.S(0), a.T(0), a.P(0),
                                   a.S(1), a.T(1), a.P(1));
    case DnnLayout::kSoftmaxBackward:
      return t.cudnnSoftmaxBackward(h, static_cast<cudnnSoftmaxAlgorithm_t>(a.I(0)),
                                    static_cast<cudnnSoftmaxMode_t>(a.I(1)), a.S(0), a.T(0), a.P(0),
                                    a.T(1), a.P(1), a.S(1), a.T(2), a.P(2));
    case DnnLayout::kPoolingForward:
      return t.cudnnPoolingForward(h, d.pool, a.S(0), a.T(0), a.P(0), a.S(1), a.T(1), a.P(1));
    case DnnLayout::kPoolingBackward:
      return t.cudnnPoolingBackward(h, d.pool, a.S(0), a.T(0), a.P(0), a.T(1), a.P(1), a.T(2),
                                    a.P(2), a.S(1), a.T(3), a.P(3));
    case DnnLayout::kLrnForward:
      return t.cudnnLRNCrossChannelForward(h, d.lrn, static_cast<cudnnLRNMode_t>(a.I(0)), a.S(0),
                                           a.T(0), a.P(0), a.S(1), a.T(1), a.P(1));
    case DnnLayout::kLrnBackward:
      return t.cudnnLRNCrossChannelBackward(h, d.lrn, static_cast<cudnnLRNMode_t>(a.I(0)), a.S(0),
                                            a.T(0), a.P(0), a.T(1), a.P(1), a.T(2), a.P(2), a.S(1),
                                            a.T(3), a.P(3));
    case DnnLayout::kBnInference:
      return t.cudnnBatchNormalizationForwardInference(
          h, static_cast<cudnnBatchNormMode_t>(a.I(0)), a.S(0), a.S(1), a.T(0), a.P(0), a.T(1),
          a.P(1), a.T(2), a.P(2), a.P(3), a.P(4), a.P(5), a.D(0));
    case DnnLayout::kBnTraining:
      return t.cudnnBatchNormalizationForwardTraining(
          h, static_cast<cudnnBatchNormMode_t>(a.I(0)), a.S(0), a.S(1), a.T(0), a.P(0), a.T(1),
          a.P(1), a.T(2), a.P(2), a.P(3), a.D(0), a.P(4), a.P(5), a.D(1), a.P(6), a.P(7));
    case DnnLayout::kBnBackward:
      return t.cudnnBatchNormalizationBackward(h, static_cast<cudnnBatchNormMode_t>(a.I(0)), a.S(0),
                                               a.S(1), a.S(2), a.S(3), a.T(0), a.P(0), a.T(1),
                                               a.P(1), a.T(2), a.P(2), a.T(3), a.P(3), a.P(4),
                                               a.P(5), a.D(0), a.P(6), a.P(7));
    default:
      return CUDNN_STATUS_BAD_PARAM;  // a query: not stream work
  }
}

// Answers a query (workspace size, algorithm choices) into `rep`.
cudnnStatus_t Query(const DnnTable& t, cudnnHandle_t h, const Args& a, v1::DnnReply& rep) {
  const auto& d = a.d;
  size_t size = 0;
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  switch (a.c.op->layout) {
    case DnnLayout::kForwardWorkspace:
      s = t.cudnnGetConvolutionForwardWorkspaceSize(h, a.T(0), d.filter, d.conv, a.T(1),
                                                    static_cast<cudnnConvolutionFwdAlgo_t>(a.I(0)),
                                                    &size);
      break;
    case DnnLayout::kBackwardDataWorkspace:
      s = t.cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, d.filter, a.T(0), d.conv, a.T(1), static_cast<cudnnConvolutionBwdDataAlgo_t>(a.I(0)),
          &size);
      break;
    case DnnLayout::kBackwardFilterWorkspace:
      s = t.cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, a.T(0), a.T(1), d.conv, d.filter, static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.I(0)),
          &size);
      break;
    case DnnLayout::kForwardAlgorithms:
    case DnnLayout::kBackwardDataAlgorithms:
    case DnnLayout::kBackwardFilterAlgorithms: {
      // The three perf structs share one layout; the stub copies them out as they are.
      static_assert(
          sizeof(cudnnConvolutionFwdAlgoPerf_t) == sizeof(cudnnConvolutionBwdDataAlgoPerf_t) &&
          sizeof(cudnnConvolutionFwdAlgoPerf_t) == sizeof(cudnnConvolutionBwdFilterAlgoPerf_t));
      const int requested = a.I(0);
      if (requested < 1 || requested > 64) return CUDNN_STATUS_BAD_PARAM;
      std::string& out = *rep.mutable_result();
      out.resize(sizeof(cudnnConvolutionFwdAlgoPerf_t) * requested);
      int returned = 0;
      if (a.c.op->layout == DnnLayout::kForwardAlgorithms)
        s = t.cudnnGetConvolutionForwardAlgorithm_v7(
            h, a.T(0), d.filter, d.conv, a.T(1), requested, &returned,
            reinterpret_cast<cudnnConvolutionFwdAlgoPerf_t*>(out.data()));
      else if (a.c.op->layout == DnnLayout::kBackwardDataAlgorithms)
        s = t.cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, d.filter, a.T(0), d.conv, a.T(1), requested, &returned,
            reinterpret_cast<cudnnConvolutionBwdDataAlgoPerf_t*>(out.data()));
      else
        s = t.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, a.T(0), a.T(1), d.conv, d.filter, requested, &returned,
            reinterpret_cast<cudnnConvolutionBwdFilterAlgoPerf_t*>(out.data()));
      if (returned < 0 || returned > requested) return CUDNN_STATUS_INTERNAL_ERROR;
      out.resize(sizeof(cudnnConvolutionFwdAlgoPerf_t) * returned);
      rep.set_count(returned);
      return s;
    }
    default:
      return CUDNN_STATUS_BAD_PARAM;
  }
  const uint64_t bytes = size;
  rep.mutable_result()->assign(reinterpret_cast<const char*>(&bytes), sizeof bytes);
  return s;
}

}  // namespace

// ---- Handles -------------------------------------------------------------------

Status Session::OnDnnCreate(const v1::Empty&, v1::HandleReply& rep) {
  ASSIGN_OR_RETURN(const DnnTable* t, env_.device->dnn());
  cudnnHandle_t h = nullptr;
  if (cudnnStatus_t s = t->cudnnCreate(&h); s != CUDNN_STATUS_SUCCESS)
    return DnnError(*t, s, "cudnnCreate");
  const uint64_t id = next_handle_++;
  dnn_.Put(id, h);
  rep.set_handle(id);
  return OkStatus();
}

Status Session::OnDnnDestroy(const v1::DnnHandleRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(cudnnHandle_t h, dnn_.Get(req.handle()));
  ASSIGN_OR_RETURN(const DnnTable* t, env_.device->dnn());
  dnn_.Erase(req.handle());
  Held held;
  held.epoch = epoch_;
  held.destroy_when_idle.push_back([t, h] { (void)t->cudnnDestroy(h); });
  // The handle goes once the tenant's work that may use it is done.
  return GiveBackWhenDone(std::move(held), /*reply=*/true);
}

bool ReleaseDnn(Device& dev, cudnnContext* handle, Held& held) {
  if (Result<const DnnTable*> t = dev.dnn(); t.ok())
    held.destroy_when_idle.push_back([t = *t, handle] { (void)t->cudnnDestroy(handle); });
  return false;
}

// ---- Operations ----------------------------------------------------------------

Result<std::shared_ptr<Session::DnnCall>> Session::PrepareDnn(const v1::DnnRequest& req) {
  const DnnOp* op = FindDnnOp(req.op());
  if (!op)
    return Error(err::kNotSupported, "cuDNN operation " + std::to_string(req.op()) +
                                         " is not forwarded by this server");
  auto c = std::make_shared<DnnCall>();
  c->op = op;
  ASSIGN_OR_RETURN(c->handle, dnn_.Get(req.handle()));
  RETURN_IF_ERROR(streams_.Check(req.stream()));
  const DnnLayoutInfo& info = *op->info;
  const std::string what = "cudnn" + std::string(op->name);
  std::vector<DnnTensorShape> tensors;
  for (const v1::DnnRequest::Tensor& m : req.tensors())
    tensors.push_back(
        {m.dtype(), {m.dims().begin(), m.dims().end()}, {m.strides().begin(), m.strides().end()}});
  DnnFilterShape filter{req.filter().dtype(),
                        req.filter().format(),
                        {req.filter().dims().begin(), req.filter().dims().end()}};
  ASSIGN_OR_RETURN(DnnPlan plan, PlanDnn(*op, tensors, info.filter ? &filter : nullptr));
  if (req.ints_size() != info.ints || req.reals_size() != info.reals ||
      req.ptrs_size() != info.ptrs)
    return Error(err::kInvalidValue, what + ": wrong number of arguments");
  if (req.scalars().size() != static_cast<size_t>(info.scalars) * plan.scalar_bytes ||
      req.scalars().size() > c->scalars.size())
    return Error(err::kInvalidValue, what + ": scaling parameters of the wrong size");
  std::memcpy(c->scalars.data(), req.scalars().data(), req.scalars().size());
  for (int i = 0; i < req.ptrs_size(); ++i) {
    const uint64_t p = req.ptrs(i);
    if (p == 0 && info.nullable[i]) continue;
    const std::string arg = what + " pointer argument " + std::to_string(i + 1);
    RETURN_IF_ERROR(CheckDeviceRange(p, plan.bytes[i], arg.c_str()));
  }
  if (info.workspace && req.workspace_size() != 0)
    RETURN_IF_ERROR(CheckDeviceRange(req.workspace(), req.workspace_size(), "cuDNN workspace"));
  c->req = req;
  if (!info.workspace) {
    c->req.set_workspace(0);
    c->req.set_workspace_size(0);
  }
  return c;
}

Status Session::OnDnn(const v1::DnnRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(std::shared_ptr<DnnCall> c, PrepareDnn(req));
  if (c->op->info->result != DnnLayoutInfo::kNone)
    return Error(err::kInvalidValue, "cudnn" + std::string(c->op->name) + " is a query: DnnSync");
  ASSIGN_OR_RETURN(const DnnTable* t, env_.device->dnn());
  return work_->Submit(req.stream(), [t, c](CUstream s) -> Status {
    const std::string what = "cudnn" + std::string(c->op->name);
    cudnnStatus_t st = t->cudnnSetStream(c->handle, s);
    Descriptors d(*t);
    if (st == CUDNN_STATUS_SUCCESS) st = d.Build(c->req, *c->op->info);
    if (st == CUDNN_STATUS_SUCCESS) st = RunOp(*t, c->handle, Args{*c, d});
    return st == CUDNN_STATUS_SUCCESS ? OkStatus() : DnnError(*t, st, what);
  });
}

Status Session::OnDnnSync(const v1::DnnRequest& req, v1::DnnReply& rep) {
  ASSIGN_OR_RETURN(std::shared_ptr<DnnCall> c, PrepareDnn(req));
  if (c->op->info->result == DnnLayoutInfo::kNone)
    return Error(err::kInvalidValue,
                 "cudnn" + std::string(c->op->name) + " is stream-ordered: Dnn");
  ASSIGN_OR_RETURN(const DnnTable* t, env_.device->dnn());
  Descriptors d(*t);
  cudnnStatus_t st = d.Build(c->req, *c->op->info);
  if (st == CUDNN_STATUS_SUCCESS) st = Query(*t, c->handle, Args{*c, d}, rep);
  if (st != CUDNN_STATUS_SUCCESS) return DnnError(*t, st, "cudnn" + std::string(c->op->name));
  return OkStatus();
}

}  // namespace remora::server
