// emu/dnn/handle.cc - handles, views of descriptors, versions, status names.
//
// Handles live in a registry (proto/dnn_descriptors.h, as the descriptors do):
// every call looks its handle up under the registry's mutex, so a destroyed (or
// never created) one is CUDNN_STATUS_BAD_PARAM rather than a use after free.
// The descriptor entry points are proto/dnn_descriptors.cc's.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "emu/dnn/dnn.h"

// The object behind a cudnnHandle_t (declared by cudnn_graph_v9.h).
struct cudnnContext {
  CUcontext ctx = nullptr;  // current when the handle was created
  CUstream stream = nullptr;
};

namespace remora::emu::dnn {

cudnnStatus_t GetStream(cudnnHandle_t h, CUstream* out) {
  return DnnLive<cudnnContext>().With(h, [out](cudnnContext& c) {
    *out = c.stream;
    return CUDNN_STATUS_SUCCESS;
  });
}

// Canonical view: N, C, then the spatial dims right-aligned into D, H, W.
cudnnStatus_t MakeView(cudnnTensorDescriptor_t d, const void* data, View* out) {
  cudnnTensorStruct t;
  DNN_RETURN_IF_ERROR(DnnCopy(d, &t));
  if (data == nullptr) return CUDNN_STATUS_BAD_PARAM;
  const auto type = static_cast<cudnnDataType_t>(t.shape.dtype);
  const int nd = static_cast<int>(t.shape.dims.size());
  if (!Supported(type) || nd > 5) return CUDNN_STATUS_NOT_SUPPORTED;
  View v;
  v.base = static_cast<char*>(const_cast<void*>(data));
  v.type = type;
  v.nd = nd;
  for (int k = 0; k < 5; ++k) {
    v.dim[k] = 1;
    v.str[k] = 0;
  }
  const int first = 5 - nd;  // canonical slot of descriptor dim 2
  for (int k = 0; k < nd; ++k) {
    const int slot = k < 2 ? k : first + k;
    v.dim[slot] = t.shape.dims[k];
    v.str[slot] = t.shape.strides[k];
  }
  *out = v;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t MakeFilterView(cudnnFilterDescriptor_t d, const void* data, View* out) {
  cudnnFilterStruct f;
  DNN_RETURN_IF_ERROR(DnnCopy(d, &f));
  if (data == nullptr) return CUDNN_STATUS_BAD_PARAM;
  const auto type = static_cast<cudnnDataType_t>(f.shape.dtype);
  const std::vector<int>& dims = f.shape.dims;
  const int nd = static_cast<int>(dims.size());
  if (!Supported(type) || nd > 5) return CUDNN_STATUS_NOT_SUPPORTED;
  // Packed strides: NCHW is K, C, spatial...; NHWC is K, spatial..., C.
  int64_t strides[CUDNN_DIM_MAX] = {};
  if (f.shape.format == CUDNN_TENSOR_NCHW) {
    int64_t s = 1;
    for (int k = nd - 1; k >= 0; --k) {
      strides[k] = s;
      s *= dims[k];
    }
  } else {
    int64_t s = 1;
    strides[1] = s;
    s *= dims[1];
    for (int k = nd - 1; k >= 2; --k) {
      strides[k] = s;
      s *= dims[k];
    }
    strides[0] = s;
  }
  View v;
  v.base = static_cast<char*>(const_cast<void*>(data));
  v.type = type;
  v.nd = nd;
  for (int k = 0; k < 5; ++k) {
    v.dim[k] = 1;
    v.str[k] = 0;
  }
  const int first = 5 - nd;
  for (int k = 0; k < nd; ++k) {
    const int slot = k < 2 ? k : first + k;
    v.dim[slot] = dims[k];
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
  DNN_RETURN_IF_ERROR(DnnCreate(handle));
  return DnnLive<cudnnContext>().With(*handle, [ctx](cudnnContext& c) {
    c.ctx = ctx;
    return CUDNN_STATUS_SUCCESS;
  });
}

// Pending work keeps its own copies of everything it needs, so destroying a
// handle never waits for it.
REMORA_DNN_API cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  return DnnLive<cudnnContext>().Remove(handle) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

REMORA_DNN_API cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  return DnnLive<cudnnContext>().With(handle, [stream](cudnnContext& c) {
    c.stream = reinterpret_cast<CUstream>(stream);
    return CUDNN_STATUS_SUCCESS;
  });
}

REMORA_DNN_API cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  return DnnLive<cudnnContext>().With(handle, [stream](cudnnContext& c) {
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
