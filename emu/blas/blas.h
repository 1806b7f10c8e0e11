// emu/blas/blas.h - shared plumbing of emu/blas's cuBLAS entry points.
//
// Every computing entry point checks its handle and arguments on the calling
// thread, captures its scalars (host pointer mode: the values now; device
// mode: the addresses, read when the work runs) and submits one closure to the
// handle's stream through remoraEmuLaunchDeviceWork, so the work runs in stream
// order on the stream's worker and counts as device time. A routine returning a
// value to host memory (dot, nrm2, ...) waits for its stream.
//
//   Call call;
//   if (cublasStatus_t st = call.Begin(handle); st != CUBLAS_STATUS_SUCCESS) return st;
//   const Scalar<float> a = call.Read(alpha);
//   return call.Submit([=] { cblas_sscal(n, a.get(), x, incx); });
#pragma once

#include <cublas_v2.h>
#include <cuda.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <memory>
#include <utility>

// Marks a definition as one of libcublas.so.13's exports.
#define REMORA_BLAS_API extern "C" __attribute__((visibility("default")))

// The emulated driver's extension (emu/driver_stream.cc): cuLaunchHostFunc whose
// run counts as device time; `discard` frees `user` when the work is dropped.
extern "C" CUresult remoraEmuLaunchDeviceWork(CUstream stream, CUhostFn fn, void* user,
                                              CUhostFn discard);

namespace remora::emu::blas {

// Returns from the entry point unless `expr` (a cublasStatus_t) is SUCCESS.
#define BLAS_RETURN_IF_ERROR(expr)                     \
  do {                                                 \
    cublasStatus_t blas_s_ = (expr);                   \
    if (blas_s_ != CUBLAS_STATUS_SUCCESS) [[unlikely]] \
      return blas_s_;                                  \
  } while (0)

// Returns CUBLAS_STATUS_INVALID_VALUE from the entry point unless `cond` holds.
#define BLAS_CHECK_ARG(cond)              \
  do {                                    \
    if (!(cond)) [[unlikely]]             \
      return CUBLAS_STATUS_INVALID_VALUE; \
  } while (0)

// What a call needs of its handle, copied out under the registry lock.
struct Settings {
  CUstream stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

// Copies `h`'s settings into *out. Errors: CUBLAS_STATUS_NOT_INITIALIZED for a
// null or destroyed handle. Thread-safe.
cublasStatus_t GetSettings(cublasHandle_t h, Settings* out);

// A scalar argument: its value (host pointer mode, read at the call) or its
// device address (device mode, read by get() when the work runs).
template <class T>
class Scalar {
 public:
  Scalar() = default;
  Scalar(cublasPointerMode_t mode, const T* p) {
    if (mode == CUBLAS_POINTER_MODE_DEVICE) {
      ptr_ = p;
    } else {
      value_ = *p;
    }
  }
  T get() const { return ptr_ != nullptr ? *ptr_ : value_; }

 private:
  T value_{};
  const T* ptr_ = nullptr;
};

// Frees a submitted closure that never ran.
template <class F>
void Discard(void* p) {
  std::unique_ptr<F> f(static_cast<F*>(p));
}

// Runs a submitted closure, then frees it. An exception (allocation failure in
// a conversion buffer) is reported and the work abandoned.
template <class F>
void Trampoline(void* p) {
  std::unique_ptr<F> f(static_cast<F*>(p));
  try {
    (*f)();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remora-emu: cublas work failed: %s\n", e.what());
  }
}

// Queues `f` on `stream` as device work (remoraEmuLaunchDeviceWork); it owns
// its captures and runs once. Shared with emu/blas's libcublasLt.so.13.
// Returns false when the driver refuses the work (`f` is then dropped).
template <class F>
bool SubmitWork(CUstream stream, F f) {
  using Fn = std::decay_t<F>;
  auto owned = std::make_unique<Fn>(std::move(f));
  if (remoraEmuLaunchDeviceWork(stream, &Trampoline<Fn>, owned.get(), &Discard<Fn>) != CUDA_SUCCESS)
      [[unlikely]] {
    return false;
  }
  owned.release();  // reclaimed by Trampoline or Discard
  return true;
}

// One computing call: its handle's settings, and submission to its stream.
class Call {
 public:
  // Resolves the handle. Errors: CUBLAS_STATUS_NOT_INITIALIZED.
  cublasStatus_t Begin(cublasHandle_t h) { return GetSettings(h, &settings_); }
  const Settings& settings() const { return settings_; }
  bool device_mode() const { return settings_.pointer_mode == CUBLAS_POINTER_MODE_DEVICE; }

  // Captures scalar `*p` per the pointer mode. REQUIRES: p != nullptr.
  template <class T>
  Scalar<T> Read(const T* p) const {
    return Scalar<T>(settings_.pointer_mode, p);
  }

  // Queues `f` on the handle's stream; it owns its captures and runs once.
  // Errors: CUBLAS_STATUS_EXECUTION_FAILED when the driver refuses the work.
  template <class F>
  cublasStatus_t Submit(F f) const {
    return SubmitWork(settings_.stream, std::move(f)) ? CUBLAS_STATUS_SUCCESS
                                                      : CUBLAS_STATUS_EXECUTION_FAILED;
  }

  // Blocks until the stream's work so far has run.
  // Errors: CUBLAS_STATUS_EXECUTION_FAILED when the driver reports a failure.
  cublasStatus_t Wait() const {
    return cuStreamSynchronize(settings_.stream) == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
                                                                 : CUBLAS_STATUS_EXECUTION_FAILED;
  }

  // Runs `compute` (returning R) on the stream and stores its value at
  // `result`: in device memory when the work runs (device pointer mode), or in
  // host memory before returning (host mode, which waits for the stream).
  template <class R, class F>
  cublasStatus_t Reduce(R* result, F compute) const {
    BLAS_CHECK_ARG(result != nullptr);
    if (device_mode()) return Submit([result, compute] { *result = compute(); });
    auto cell = std::make_shared<R>();
    BLAS_RETURN_IF_ERROR(Submit([cell, compute] { *cell = compute(); }));
    BLAS_RETURN_IF_ERROR(Wait());
    *result = *cell;
    return CUBLAS_STATUS_SUCCESS;
  }

 private:
  Settings settings_;
};

// Argument helpers, as cuBLAS validates them.
inline bool ValidOp(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}
inline bool ValidFill(cublasFillMode_t f) {
  return f == CUBLAS_FILL_MODE_LOWER || f == CUBLAS_FILL_MODE_UPPER;
}
inline bool ValidDiag(cublasDiagType_t d) {
  return d == CUBLAS_DIAG_NON_UNIT || d == CUBLAS_DIAG_UNIT;
}
inline bool ValidSide(cublasSideMode_t s) {
  return s == CUBLAS_SIDE_LEFT || s == CUBLAS_SIDE_RIGHT;
}
// Offset of element i of an n-vector with increment inc (a negative one walks from the far end,
// as in BLAS).
inline ptrdiff_t VecOffset(int i, int n, int inc) {
  return inc >= 0 ? static_cast<ptrdiff_t>(i) * inc : static_cast<ptrdiff_t>(n - 1 - i) * -inc;
}
// A leading dimension of a matrix with `rows` rows.
inline bool ValidLd(int ld, int rows) {
  return ld >= std::max(1, rows);
}

}  // namespace remora::emu::blas
