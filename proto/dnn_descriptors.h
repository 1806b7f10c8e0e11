// proto/dnn_descriptors.h - the objects behind cuDNN's descriptors, and their registries.
//
// For the two libcudnn.so.9 that compile proto/dnn_descriptors.cc (the stub's
// and the emulated GPU's): a cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
// ... made by them points at the struct below, kept in that library's
// registry. The .cc holds every descriptor entry point (create, set, get,
// destroy, and the queries that read descriptors only), so both libraries take
// and refuse the same values with the same cudnnStatus_t. Each library keeps
// its own handle (cudnnContext) in a registry of the same kind.
//
//   cudnnTensorStruct x;
//   if (cudnnStatus_t s = remora::DnnCopy(xDesc, &x)) return s;  // BAD_PARAM: not live or not set
//   use(x.shape.dims, x.shape.strides);
#pragma once

#include <cudnn.h>

#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "proto/dnn.h"

// Marks the definition of an entry point both libraries export (the descriptor
// rows of server/dnn.def, which the server calls).
#define REMORA_DNN_API extern "C" __attribute__((visibility("default")))

// Marks the definition of an entry point only applications call (4-d setters,
// getters, output dimensions): exported by the stub; the emulated GPU's library,
// loaded by remora-server only, defines REMORA_DNN_SERVER_EXPORTS_ONLY and
// keeps it hidden, so that it exports exactly server/dnn.def's rows.
#ifdef REMORA_DNN_SERVER_EXPORTS_ONLY
#define REMORA_DNN_APP_API extern "C" __attribute__((visibility("hidden")))
#else
#define REMORA_DNN_APP_API REMORA_DNN_API
#endif

// The objects cudnn.h declares. `set` is false until the descriptor's setter
// succeeds (an LRN descriptor starts with cudnnCreateLRNDescriptor's documented
// defaults); an unset descriptor is refused wherever it is read.
struct cudnnTensorStruct {
  bool set = false;
  remora::DnnTensorShape shape;  // 3 to CUDNN_DIM_MAX dims, element strides
};
struct cudnnFilterStruct {
  bool set = false;
  remora::DnnFilterShape shape;  // K, C/groups, spatial..., whatever the format
};
struct cudnnConvolutionStruct {
  bool set = false;
  std::vector<int> pads, strides, dilations;  // one per spatial dimension
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
struct cudnnActivationStruct {
  bool set = false;
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  double coef = 0;
  double swish_beta = 1;  // cudnnSetActivationDescriptorSwishBeta's default
};
struct cudnnPoolingStruct {
  bool set = false;
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  std::vector<int> window, pads, strides;  // one per spatial dimension
};
struct cudnnLRNStruct {
  bool set = true;
  unsigned n = 5;
  double alpha = 1e-4, beta = 0.75, k = 2.0;
};
struct cudnnOpTensorStruct {
  bool set = false;
  cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
};

namespace remora {

// The live objects of one kind, owned here: a pointer this library did not
// create, or has destroyed, is not found. Thread-safe.
template <class T>
class DnnRegistry {
 public:
  // A new default T, live until Remove.
  T* Add() {
    auto obj = std::make_unique<T>();
    T* p = obj.get();
    std::lock_guard lock(mu_);
    live_.emplace(p, std::move(obj));
    return p;
  }
  // Frees `p`; false if it is not live.
  bool Remove(const T* p) {
    std::unique_ptr<T> dead;  // freed after the lock is released
    std::lock_guard lock(mu_);
    auto it = live_.find(const_cast<T*>(p));
    if (it == live_.end()) return false;
    dead = std::move(it->second);
    live_.erase(it);
    return true;
  }
  // f(T&) on live `p` under the lock, returning what f returns;
  // CUDNN_STATUS_BAD_PARAM if `p` is not live.
  template <class F>
  cudnnStatus_t With(const T* p, F f) {
    std::lock_guard lock(mu_);
    auto it = live_.find(const_cast<T*>(p));
    if (it == live_.end()) [[unlikely]]
      return CUDNN_STATUS_BAD_PARAM;
    return f(*it->second);
  }

 private:
  std::mutex mu_;
  std::unordered_map<T*, std::unique_ptr<T>> live_;  // guarded by mu_
};

// This library's registry of T. Never destroyed: applications destroy
// descriptors from static destructors and atexit handlers too.
template <class T>
DnnRegistry<T>& DnnLive() {
  alignas(DnnRegistry<T>) static unsigned char storage[sizeof(DnnRegistry<T>)];
  static DnnRegistry<T>* const r = new (storage) DnnRegistry<T>;
  return *r;
}

// Creates a default T in *out. Errors: CUDNN_STATUS_BAD_PARAM for a null `out`.
template <class T>
cudnnStatus_t DnnCreate(T** out) {
  if (out == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *out = DnnLive<T>().Add();
  return CUDNN_STATUS_SUCCESS;
}

// Destroys `p`; a null `p` is accepted (as cuDNN). Errors:
// CUDNN_STATUS_BAD_PARAM for a pointer that is not live.
template <class T>
cudnnStatus_t DnnDestroy(const T* p) {
  return p == nullptr || DnnLive<T>().Remove(p) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

// Copies the live, set descriptor `d` into *out (callers keep the copy: the
// application may destroy `d` as soon as its call returns). Errors:
// CUDNN_STATUS_BAD_PARAM for a null, destroyed or never set descriptor.
template <class T>
cudnnStatus_t DnnCopy(const T* d, T* out) {
  return DnnLive<T>().With(d, [out](T& s) {
    if (!s.set) return CUDNN_STATUS_BAD_PARAM;
    *out = s;
    return CUDNN_STATUS_SUCCESS;
  });
}

}  // namespace remora
