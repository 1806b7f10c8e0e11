// emu/dnn/handle.cc - handles, descriptors, versions, status names.
//
// Handles and descriptors are registry entries: every call looks them up under
// their registry's mutex and copies them out, so a destroyed (or never created)
// one is CUDNN_STATUS_BAD_PARAM rather than a use after free, and queued work
// never reads a descriptor the caller has since destroyed.
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "emu/dnn/dnn.h"

// The object behind a cudnnHandle_t (declared by cudnn_graph_v9.h).
struct cudnnContext {
  bool set = true;
  CUcontext ctx = nullptr;  // current when the handle was created
  CUstream stream = nullptr;
};

namespace remora::emu::dnn {
namespace {

// The live objects of one kind, owned by their registry.
template <class S>
struct Registry {
  std::mutex mu;
  std::unordered_map<S*, std::unique_ptr<S>> objs;  // guarded by mu
};

template <class S>
Registry<S>& Of() {
  static Registry<S> r;
  return r;
}

// Creates a default S and stores its address in *out.
template <class S>
cudnnStatus_t Create(S** out) {
  if (out == nullptr) return CUDNN_STATUS_BAD_PARAM;
  auto obj = std::make_unique<S>();
  S* raw = obj.get();
  Registry<S>& r = Of<S>();
  std::lock_guard lock(r.mu);
  r.objs.emplace(raw, std::move(obj));
  *out = raw;
  return CUDNN_STATUS_SUCCESS;
}

template <class S>
cudnnStatus_t Destroy(S* p) {
  Registry<S>& r = Of<S>();
  std::unique_ptr<S> dead;  // freed after the lock is released
  std::lock_guard lock(r.mu);
  auto it = r.objs.find(p);
  if (it == r.objs.end()) return CUDNN_STATUS_BAD_PARAM;
  dead = std::move(it->second);
  r.objs.erase(it);
  return CUDNN_STATUS_SUCCESS;
}

// Runs `f(S&)` on a live object under its registry's lock.
template <class S, class F>
cudnnStatus_t With(S* p, F f) {
  Registry<S>& r = Of<S>();
  std::lock_guard lock(r.mu);
  auto it = r.objs.find(p);
  if (it == r.objs.end()) [[unlikely]]
    return CUDNN_STATUS_BAD_PARAM;
  return f(*it->second);
}

template <class S>
cudnnStatus_t CopyOut(S* p, S* out) {
  return With(p, [out](S& s) {
    if (!s.set) return CUDNN_STATUS_BAD_PARAM;
    *out = s;
    return CUDNN_STATUS_SUCCESS;
  });
}

bool ValidType(cudnnDataType_t t) {
  return t >= CUDNN_DATA_FLOAT && t <= CUDNN_DATA_FP4_E2M1;
}

bool ValidNan(cudnnNanPropagation_t n) {
  return n == CUDNN_NOT_PROPAGATE_NAN || n == CUDNN_PROPAGATE_NAN;
}

}  // namespace

cudnnStatus_t Copy(cudnnTensorDescriptor_t d, cudnnTensorStruct* out) {
  return CopyOut(d, out);
}
cudnnStatus_t Copy(cudnnFilterDescriptor_t d, cudnnFilterStruct* out) {
  return CopyOut(d, out);
}
cudnnStatus_t Copy(cudnnConvolutionDescriptor_t d, cudnnConvolutionStruct* out) {
  return CopyOut(d, out);
}
cudnnStatus_t Copy(cudnnActivationDescriptor_t d, cudnnActivationStruct* out) {
  return CopyOut(d, out);
}
cudnnStatus_t Copy(cudnnPoolingDescriptor_t d, cudnnPoolingStruct* out) {
  return CopyOut(d, out);
}
cudnnStatus_t Copy(cudnnLRNDescriptor_t d, cudnnLRNStruct* out) {
  return CopyOut(d, out);
}
cudnnStatus_t Copy(cudnnOpTensorDescriptor_t d, cudnnOpTensorStruct* out) {
  return CopyOut(d, out);
}

cudnnStatus_t GetStream(cudnnHandle_t h, CUstream* out) {
  return With(h, [out](cudnnContext& c) {
    *out = c.stream;
    return CUDNN_STATUS_SUCCESS;
  });
}

// Canonical view: N, C, then the spatial dims right-aligned into D, H, W.
cudnnStatus_t MakeView(cudnnTensorDescriptor_t d, const void* data, View* out) {
  cudnnTensorStruct t;
  DNN_RETURN_IF_ERROR(Copy(d, &t));
  if (data == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (!Supported(t.type) || t.nd > 5) return CUDNN_STATUS_NOT_SUPPORTED;
  View v;
  v.base = static_cast<char*>(const_cast<void*>(data));
  v.type = t.type;
  v.nd = t.nd;
  for (int k = 0; k < 5; ++k) {
    v.dim[k] = 1;
    v.str[k] = 0;
  }
  const int first = 5 - t.nd;  // canonical slot of descriptor dim 2
  for (int k = 0; k < t.nd; ++k) {
    const int slot = k < 2 ? k : first + k;
    v.dim[slot] = t.dims[k];
    v.str[slot] = t.strides[k];
  }
  *out = v;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t MakeFilterView(cudnnFilterDescriptor_t d, const void* data, View* out) {
  cudnnFilterStruct f;
  DNN_RETURN_IF_ERROR(Copy(d, &f));
  if (data == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (!Supported(f.type) || f.nd > 5) return CUDNN_STATUS_NOT_SUPPORTED;
  // Packed strides: NCHW is K, C, spatial...; NHWC is K, spatial..., C.
  int64_t strides[CUDNN_DIM_MAX] = {};
  if (f.format == CUDNN_TENSOR_NCHW) {
    int64_t s = 1;
    for (int k = f.nd - 1; k >= 0; --k) {
      strides[k] = s;
      s *= f.dims[k];
    }
  } else {
    int64_t s = 1;
    strides[1] = s;
    s *= f.dims[1];
    for (int k = f.nd - 1; k >= 2; --k) {
      strides[k] = s;
      s *= f.dims[k];
    }
    strides[0] = s;
  }
  View v;
  v.base = static_cast<char*>(const_cast<void*>(data));
  v.type = f.type;
  v.nd = f.nd;
  for (int k = 0; k < 5; ++k) {
    v.dim[k] = 1;
    v.str[k] = 0;
  }
  const int first = 5 - f.nd;
  for (int k = 0; k < f.nd; ++k) {
    const int slot = k < 2 ? k : first + k;
    v.dim[slot] = f.dims[k];
    v.str[slot] = strides[k];
  }
  *out = v;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace remora::emu::dnn

using namespace remora::emu::dnn;  // NOLINT: entry points are global by ABI

// ---- Handles ----

REMORA_DNN_API cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (handle == nullptr) return CUDNN_STATUS_BAD_PARAM;
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  DNN_RETURN_IF_ERROR(Create(handle));
  return With(*handle, [ctx](cudnnContext& c) {
    c.ctx = ctx;
    return CUDNN_STATUS_SUCCESS;
  });
}

// Pending work keeps its own copies of everything it needs, so destroying a
// handle never waits for it.
REMORA_DNN_API cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  return Destroy(handle);
}

REMORA_DNN_API cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  return With(handle, [stream](cudnnContext& c) {
    c.stream = reinterpret_cast<CUstream>(stream);
    return CUDNN_STATUS_SUCCESS;
  });
}

REMORA_DNN_API cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  return With(handle, [stream](cudnnContext& c) {
    if (stream == nullptr) return CUDNN_STATUS_BAD_PARAM;
    *stream = reinterpret_cast<cudaStream_t>(c.stream);
    return CUDNN_STATUS_SUCCESS;
  });
}

// The version of the cuDNN headers this library was built against (9.x).
REMORA_DNN_API size_t cudnnGetVersion() {
  return CUDNN_VERSION;
}

// The CUDA runtime version NVIDIA's library for CUDA 13 reports.
REMORA_DNN_API size_t cudnnGetCudartVersion() {
  return 13000;
}

REMORA_DNN_API const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
#define DNN_STATUS(code) \
  case code:             \
    return #code;
#include "emu/dnn/status.def"
  }
  return "CUDNN_UNKNOWN_STATUS";
}

// ---- Tensor and filter descriptors ----

REMORA_DNN_API cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  return Create(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  return d == nullptr ? CUDNN_STATUS_SUCCESS : Destroy(d);
}

// nbDims outside [3, CUDNN_DIM_MAX] is NOT_SUPPORTED; a dim or stride < 1 or an
// invalid type BAD_PARAM (cuDNN's codes).
REMORA_DNN_API cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d,
                                                        cudnnDataType_t dataType, int nbDims,
                                                        const int dimA[], const int strideA[]) {
  return With(d, [&](cudnnTensorStruct& t) {
    if (!ValidType(dataType)) return CUDNN_STATUS_BAD_PARAM;
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
    if (dimA == nullptr || strideA == nullptr) return CUDNN_STATUS_BAD_PARAM;
    for (int k = 0; k < nbDims; ++k) {
      if (dimA[k] < 1 || strideA[k] < 1) return CUDNN_STATUS_BAD_PARAM;
    }
    t.type = dataType;
    t.nd = nbDims;
    for (int k = 0; k < nbDims; ++k) {
      t.dims[k] = dimA[k];
      t.strides[k] = strideA[k];
    }
    t.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}

REMORA_DNN_API cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  return Create(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  return d == nullptr ? CUDNN_STATUS_SUCCESS : Destroy(d);
}

REMORA_DNN_API cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d,
                                                        cudnnDataType_t dataType,
                                                        cudnnTensorFormat_t format, int nbDims,
                                                        const int filterDimA[]) {
  return With(d, [&](cudnnFilterStruct& f) {
    if (!ValidType(dataType)) return CUDNN_STATUS_BAD_PARAM;
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) {
      return format == CUDNN_TENSOR_NCHW_VECT_C ? CUDNN_STATUS_NOT_SUPPORTED
                                                : CUDNN_STATUS_BAD_PARAM;
    }
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
    if (filterDimA == nullptr) return CUDNN_STATUS_BAD_PARAM;
    for (int k = 0; k < nbDims; ++k) {
      if (filterDimA[k] < 1) return CUDNN_STATUS_BAD_PARAM;
    }
    f.type = dataType;
    f.format = format;
    f.nd = nbDims;
    for (int k = 0; k < nbDims; ++k) f.dims[k] = filterDimA[k];
    f.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}

// ---- Convolution descriptors ----

REMORA_DNN_API cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  return Create(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  return d == nullptr ? CUDNN_STATUS_SUCCESS : Destroy(d);
}

REMORA_DNN_API cudnnStatus_t cudnnSetConvolutionNdDescriptor(
    cudnnConvolutionDescriptor_t d, int arrayLength, const int padA[], const int filterStrideA[],
    const int dilationA[], cudnnConvolutionMode_t mode, cudnnDataType_t computeType) {
  return With(d, [&](cudnnConvolutionStruct& c) {
    if (arrayLength < 1 || arrayLength > 3) return CUDNN_STATUS_NOT_SUPPORTED;
    if (padA == nullptr || filterStrideA == nullptr || dilationA == nullptr) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
    if (!ValidType(computeType)) return CUDNN_STATUS_BAD_PARAM;
    for (int k = 0; k < arrayLength; ++k) {
      if (padA[k] < 0 || filterStrideA[k] < 1 || dilationA[k] < 1) return CUDNN_STATUS_BAD_PARAM;
    }
    c.nd = arrayLength;
    for (int k = 0; k < arrayLength; ++k) {
      c.pad[k] = padA[k];
      c.stride[k] = filterStrideA[k];
      c.dilation[k] = dilationA[k];
    }
    c.mode = mode;
    c.compute = computeType;
    c.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}

REMORA_DNN_API cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d,
                                                           int groupCount) {
  return With(d, [groupCount](cudnnConvolutionStruct& c) {
    if (groupCount < 1) return CUDNN_STATUS_BAD_PARAM;
    c.groups = groupCount;
    return CUDNN_STATUS_SUCCESS;
  });
}

// Every math type computes the same way on the CPU; it is recorded and
// reported back in the algorithm lists.
REMORA_DNN_API cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d,
                                                         cudnnMathType_t mathType) {
  return With(d, [mathType](cudnnConvolutionStruct& c) {
    if (mathType < CUDNN_DEFAULT_MATH || mathType > CUDNN_FMA_MATH) return CUDNN_STATUS_BAD_PARAM;
    c.math = mathType;
    return CUDNN_STATUS_SUCCESS;
  });
}

// ---- Activation, pooling, LRN, op-tensor descriptors ----

REMORA_DNN_API cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) {
  return Create(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  return d == nullptr ? CUDNN_STATUS_SUCCESS : Destroy(d);
}

REMORA_DNN_API cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
                                                          cudnnActivationMode_t mode,
                                                          cudnnNanPropagation_t reluNanOpt,
                                                          double coef) {
  return With(d, [=](cudnnActivationStruct& a) {
    if (mode < CUDNN_ACTIVATION_SIGMOID || mode > CUDNN_ACTIVATION_SWISH || !ValidNan(reluNanOpt)) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    a.mode = mode;
    a.nan = reluNanOpt;
    a.coef = coef;
    a.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}

REMORA_DNN_API cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* d) {
  return Create(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) {
  return d == nullptr ? CUDNN_STATUS_SUCCESS : Destroy(d);
}

REMORA_DNN_API cudnnStatus_t cudnnSetPoolingNdDescriptor(
    cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode, cudnnNanPropagation_t maxpoolingNanOpt,
    int nbDims, const int windowDimA[], const int paddingA[], const int strideA[]) {
  return With(d, [&](cudnnPoolingStruct& p) {
    if (mode < CUDNN_POOLING_MAX || mode > CUDNN_POOLING_MAX_DETERMINISTIC ||
        !ValidNan(maxpoolingNanOpt)) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    if (nbDims < 1 || nbDims > 3) return CUDNN_STATUS_NOT_SUPPORTED;
    if (windowDimA == nullptr || paddingA == nullptr || strideA == nullptr) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    for (int k = 0; k < nbDims; ++k) {
      if (windowDimA[k] < 1 || paddingA[k] < 0 || strideA[k] < 1) return CUDNN_STATUS_BAD_PARAM;
    }
    p.mode = mode;
    p.nan = maxpoolingNanOpt;
    p.nd = nbDims;
    for (int k = 0; k < nbDims; ++k) {
      p.window[k] = windowDimA[k];
      p.pad[k] = paddingA[k];
      p.stride[k] = strideA[k];
    }
    p.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}

REMORA_DNN_API cudnnStatus_t cudnnCreateLRNDescriptor(cudnnLRNDescriptor_t* d) {
  return Create(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyLRNDescriptor(cudnnLRNDescriptor_t d) {
  return d == nullptr ? CUDNN_STATUS_SUCCESS : Destroy(d);
}

REMORA_DNN_API cudnnStatus_t cudnnSetLRNDescriptor(cudnnLRNDescriptor_t d, unsigned lrnN,
                                                   double lrnAlpha, double lrnBeta, double lrnK) {
  return With(d, [=](cudnnLRNStruct& l) {
    if (lrnN < CUDNN_LRN_MIN_N || lrnN > CUDNN_LRN_MAX_N || lrnK < CUDNN_LRN_MIN_K ||
        lrnBeta < CUDNN_LRN_MIN_BETA) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    l.n = lrnN;
    l.alpha = lrnAlpha;
    l.beta = lrnBeta;
    l.k = lrnK;
    return CUDNN_STATUS_SUCCESS;
  });
}

REMORA_DNN_API cudnnStatus_t cudnnCreateOpTensorDescriptor(cudnnOpTensorDescriptor_t* d) {
  return Create(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyOpTensorDescriptor(cudnnOpTensorDescriptor_t d) {
  return d == nullptr ? CUDNN_STATUS_SUCCESS : Destroy(d);
}

REMORA_DNN_API cudnnStatus_t cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t d,
                                                        cudnnOpTensorOp_t op,
                                                        cudnnDataType_t compType,
                                                        cudnnNanPropagation_t nanOpt) {
  return With(d, [=](cudnnOpTensorStruct& o) {
    if (op < CUDNN_OP_TENSOR_ADD || op > CUDNN_OP_TENSOR_NOT || !ValidType(compType) ||
        !ValidNan(nanOpt)) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    o.op = op;
    o.compute = compType;
    o.nan = nanOpt;
    o.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}
