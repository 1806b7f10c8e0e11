// emu/dnn/dnn.h - shared plumbing of emu/dnn's cuDNN entry points.
//
// Every computing entry point checks its handle and descriptors on the calling
// thread, copies the descriptors it needs (remora::DnnCopy, or into Views: the
// caller may destroy them as soon as the call returns), reads its scaling parameters (host memory,
// as cuDNN) and submits one closure to the handle's stream through
// remoraEmuLaunchDeviceWork, so the work runs in stream order and counts as
// device time: the stream's worker hands it to the library's compute thread
// and waits for it.
//
//   Call call;
//   DNN_RETURN_IF_ERROR(call.Begin(handle));
//   View y;
//   DNN_RETURN_IF_ERROR(MakeView(yDesc, yData, &y));
//   const double a = ReadScale(y.type, alpha);
//   return call.Submit([=] { ... });
#pragma once

#include <cuda.h>
#include <cuda_fp16.h>
#include <cudnn.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "proto/dnn_descriptors.h"

// The emulated driver's extension (emu/driver_stream.cc): cuLaunchHostFunc whose
// run counts as device time; `discard` frees `user` when the work is dropped.
extern "C" CUresult remoraEmuLaunchDeviceWork(CUstream stream, CUhostFn fn, void* user,
                                              CUhostFn discard);

namespace remora::emu::dnn {

// Returns from the entry point unless `expr` (a cudnnStatus_t) is SUCCESS.
#define DNN_RETURN_IF_ERROR(expr)                    \
  do {                                               \
    cudnnStatus_t dnn_s_ = (expr);                   \
    if (dnn_s_ != CUDNN_STATUS_SUCCESS) [[unlikely]] \
      return dnn_s_;                                 \
  } while (0)

// Returns CUDNN_STATUS_BAD_PARAM from the entry point unless `cond` holds.
#define DNN_CHECK_ARG(cond)          \
  do {                               \
    if (!(cond)) [[unlikely]]        \
      return CUDNN_STATUS_BAD_PARAM; \
  } while (0)

// The descriptors and registries are proto/dnn_descriptors.h's, shared with the
// stub's library.
using remora::DnnCopy;
using remora::DnnCreate;
using remora::DnnLive;

// Copies the stream of handle `h` into *out. Errors: CUDNN_STATUS_BAD_PARAM for a
// null or destroyed handle. Thread-safe.
cudnnStatus_t GetStream(cudnnHandle_t h, CUstream* out);

// Whether emu/dnn computes on `t` (float, double, half).
inline bool Supported(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_DOUBLE || t == CUDNN_DATA_HALF;
}

// A scaling parameter (alpha, beta): a host double for double output data,
// else a host float (cuDNN's rule). REQUIRES: p != nullptr (callers check).
inline double ReadScale(cudnnDataType_t out_type, const void* p) {
  return out_type == CUDNN_DATA_DOUBLE ? *static_cast<const double*>(p)
                                       : *static_cast<const float*>(p);
}

// A tensor in the canonical 5-d order N, C, D, H, W (missing spatial dims are
// leading 1s with stride 0); strides count elements and may be negative (a
// flipped filter). `nd` is the descriptor's own rank.
struct View {
  char* base = nullptr;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int nd = 0;
  int64_t dim[5] = {1, 1, 1, 1, 1};
  int64_t str[5] = {};

  int64_t Count() const { return dim[0] * dim[1] * dim[2] * dim[3] * dim[4]; }
  int64_t Off(const int64_t i[5]) const {
    return i[0] * str[0] + i[1] * str[1] + i[2] * str[2] + i[3] * str[3] + i[4] * str[4];
  }
  // The offset of index `i` broadcast over this view's dims of size 1.
  int64_t BroadcastOff(const int64_t i[5]) const {
    int64_t o = 0;
    for (int k = 0; k < 5; ++k) o += dim[k] == 1 ? 0 : i[k] * str[k];
    return o;
  }
  double Get(int64_t off) const {
    switch (type) {
      case CUDNN_DATA_DOUBLE:
        return reinterpret_cast<const double*>(base)[off];
      case CUDNN_DATA_HALF:
        return __half2float(reinterpret_cast<const __half*>(base)[off]);
      default:
        return reinterpret_cast<const float*>(base)[off];
    }
  }
  void Put(int64_t off, double v) const {
    switch (type) {
      case CUDNN_DATA_DOUBLE:
        reinterpret_cast<double*>(base)[off] = v;
        break;
      case CUDNN_DATA_HALF:
        reinterpret_cast<__half*>(base)[off] = __float2half(static_cast<float>(v));
        break;
      default:
        reinterpret_cast<float*>(base)[off] = static_cast<float>(v);
        break;
    }
  }
  // Stores alpha * r + beta * old; beta == 0 never reads the old value.
  void Blend(int64_t off, double r, double alpha, double beta) const {
    Put(off, beta == 0 ? alpha * r : alpha * r + beta * Get(off));
  }
  bool SameDims(const View& o) const {
    for (int k = 0; k < 5; ++k) {
      if (dim[k] != o.dim[k]) return false;
    }
    return nd == o.nd;
  }
};

// The view of tensor descriptor `d` over `data`. Errors: CUDNN_STATUS_BAD_PARAM
// (bad descriptor, null data); CUDNN_STATUS_NOT_SUPPORTED (a type other than
// float/double/half, more than 5 dims).
cudnnStatus_t MakeView(cudnnTensorDescriptor_t d, const void* data, View* out);
// The view of filter `d` over `data` (dims K, C/groups, spatial) with its
// format's packed strides. Errors as MakeView.
cudnnStatus_t MakeFilterView(cudnnFilterDescriptor_t d, const void* data, View* out);

// Calls f(i) for every index i[5] below dim[5], W fastest.
template <class F>
void Each(const int64_t dim[5], F f) {
  int64_t i[5];
  for (i[0] = 0; i[0] < dim[0]; ++i[0])
    for (i[1] = 0; i[1] < dim[1]; ++i[1])
      for (i[2] = 0; i[2] < dim[2]; ++i[2])
        for (i[3] = 0; i[3] < dim[3]; ++i[3])
          for (i[4] = 0; i[4] < dim[4]; ++i[4]) f(i);
}

// Runs `fn` on a compute thread of the library; returns once it has run.
// oneDNN's OpenMP runtime keeps a team of helper threads per calling thread and
// lets it go, unjoined, when that thread exits. Stream workers come and go (they
// exit after a few idle milliseconds), so calling oneDNN on them rebuilt a team
// per burst of work and left helpers exiting at any time, the process's exit
// included. Compute threads live as long as the process and keep one team each:
// one per CPU priority (nice) of the callers, started by the first of them.
void RunOnComputeThread(const std::function<void()>& fn);

// Frees a submitted closure that never ran.
template <class F>
void Discard(void* p) {
  std::unique_ptr<F> f(static_cast<F*>(p));
}

// Runs a submitted closure, then frees it. An exception (allocation failure, a
// oneDNN error) is reported and the work abandoned.
template <class F>
void Trampoline(void* p) {
  std::unique_ptr<F> f(static_cast<F*>(p));
  RunOnComputeThread([&] {
    try {
      (*f)();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "remora-emu: cudnn work failed: %s\n", e.what());
    }
  });
}

// One computing call: its handle's stream, and submission to it.
class Call {
 public:
  // Resolves the handle. Errors: CUDNN_STATUS_BAD_PARAM.
  cudnnStatus_t Begin(cudnnHandle_t h) { return GetStream(h, &stream_); }

  // Queues `f` on the handle's stream; it owns its captures and runs once.
  // Errors: CUDNN_STATUS_EXECUTION_FAILED when the driver refuses the work.
  template <class F>
  cudnnStatus_t Submit(F f) const {
    using Fn = std::decay_t<F>;
    auto owned = std::make_unique<Fn>(std::move(f));
    if (remoraEmuLaunchDeviceWork(stream_, &Trampoline<Fn>, owned.get(), &Discard<Fn>) !=
        CUDA_SUCCESS) [[unlikely]] {
      return CUDNN_STATUS_EXECUTION_FAILED;
    }
    owned.release();  // reclaimed by Trampoline or Discard
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  CUstream stream_ = nullptr;
};

}  // namespace remora::emu::dnn
