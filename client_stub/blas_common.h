// client_stub/blas_common.h - what libcublas.so.13 and libcublasLt.so.13 share.
//
// Both stubs answer an obvious mistake with NVIDIA's status before anything is
// sent: a pointer outside the tenant's allocations, a failed call's cudaError_t
// as the cublasStatus_t the caller gets, and the statuses' names and texts.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "client_stub/connection.h"
#include "client_stub/once.h"
#include "client_stub/state.h"
#include "proto/blas.h"

namespace remora::client_stub {

// Says `line` on stderr, prefixed "remora: ", once per process: why a call the stub refuses
// (a type combination or attribute it does not forward) got its status, which alone does not say.
inline void SayOnce(const std::string& line) {
  if (Once("blas", line)) std::fprintf(stderr, "remora: %s\n", line.c_str());
}

// The cublasStatus_t for a call that failed with `e`.
inline cublasStatus_t ToStatus(cudaError_t e) {
  return static_cast<cublasStatus_t>(CudaToBlasStatus(e));
}

// A stub's live handles: the library's opaque handle points at a `Context`
// the stub keeps. A destroyed or foreign one is not found. Thread-safe.
template <class Context>
class HandleRegistry {
 public:
  Context* Add(std::unique_ptr<Context> h) {
    std::lock_guard lock(mu_);
    Context* p = h.get();
    live_[p] = std::move(h);
    return p;
  }
  std::unique_ptr<Context> Remove(const Context* h) {
    std::lock_guard lock(mu_);
    auto it = live_.find(h);
    if (it == live_.end()) return nullptr;
    std::unique_ptr<Context> out = std::move(it->second);
    live_.erase(it);
    return out;
  }
  // A copy of the handle's settings, or nullopt.
  std::optional<Context> Find(const Context* h) const {
    std::lock_guard lock(mu_);
    auto it = live_.find(h);
    if (it == live_.end()) return std::nullopt;
    return *it->second;
  }
  template <typename F>
  bool Update(const Context* h, F f) {
    std::lock_guard lock(mu_);
    auto it = live_.find(h);
    if (it == live_.end()) return false;
    f(*it->second);
    return true;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<const Context*, std::unique_ptr<Context>> live_;
};

// cublasCreate / cublasLtCreate: a server handle (call `create`) behind a new
// Context in `live`. ALLOC_FAILED past the tenant's memory; NOT_INITIALIZED
// without a server.
template <class Context>
cublasStatus_t CreateHandle(HandleRegistry<Context>& live, CallId create, Context** out) {
  if (!out) return CUBLAS_STATUS_INVALID_VALUE;
  *out = nullptr;
  v1::HandleReply rep;
  const cudaError_t e = Connection::Get().Call(create, v1::Empty(), &rep);
  if (e == cudaErrorMemoryAllocation) return CUBLAS_STATUS_ALLOC_FAILED;
  if (e != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto h = std::make_unique<Context>();
  h->id = rep.handle();
  *out = live.Add(std::move(h));
  return CUBLAS_STATUS_SUCCESS;
}

// cublasDestroy / cublasLtDestroy: forgets `h` and destroys its server handle
// (call `destroy`). NOT_INITIALIZED for a handle not live.
template <class Context>
cublasStatus_t DestroyHandle(HandleRegistry<Context>& live, CallId destroy, const Context* h) {
  std::unique_ptr<Context> gone = live.Remove(h);
  if (!gone) return CUBLAS_STATUS_NOT_INITIALIZED;
  v1::BlasHandleRequest req;
  req.set_handle(gone->id);
  return ToStatus(Connection::Get().Call(destroy, req));
}

// cublasGetStatusName / cublasLtGetStatusName.
inline const char* BlasStatusName(cublasStatus_t status) {
  switch (status) {
#define NAME(s) \
  case s:       \
    return #s;
    NAME(CUBLAS_STATUS_SUCCESS)
    NAME(CUBLAS_STATUS_NOT_INITIALIZED)
    NAME(CUBLAS_STATUS_ALLOC_FAILED)
    NAME(CUBLAS_STATUS_INVALID_VALUE)
    NAME(CUBLAS_STATUS_ARCH_MISMATCH)
    NAME(CUBLAS_STATUS_MAPPING_ERROR)
    NAME(CUBLAS_STATUS_EXECUTION_FAILED)
    NAME(CUBLAS_STATUS_INTERNAL_ERROR)
    NAME(CUBLAS_STATUS_NOT_SUPPORTED)
    NAME(CUBLAS_STATUS_LICENSE_ERROR)
#undef NAME
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

// cublasGetStatusString / cublasLtGetStatusString.
inline const char* BlasStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized (no server, or a bad or destroyed handle)";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed (the tenant's limit)";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument (or a pointer outside the "
             "tenant's allocations)";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "an error was detected when checking the license";
  }
  return "unknown cuBLAS status";
}

}  // namespace remora::client_stub
