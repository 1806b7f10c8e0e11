// client_stub/cublas_legacy.cc - the legacy cuBLAS API (cublas.h) over the v2 routines.
//
// Programs written for CUDA's first cuBLAS (SHOC's and Altis's GEMM among them) call
// cublasInit, then routines without a handle that take their scalars by value and their
// options as characters, and read failures from cublasGetError. Here cublasInit creates one
// implicit handle for the process (host pointer mode, the stream cublasSetKernelStream names);
// each routine is its v2 routine on that handle (cublas_legacy.def), forwarded as any other;
// the latest failing status waits for cublasGetError, which clears it. Before cublasInit or
// after cublasShutdown a routine does nothing and leaves CUBLAS_STATUS_NOT_INITIALIZED.
#pragma GCC visibility push(default)
#include <cublas.h>
#pragma GCC visibility pop

#include <cuda_runtime_api.h>

#include <atomic>
#include <mutex>

#include "client_stub/no_destructor.h"

namespace {

struct Implicit {
  std::mutex mu;
  cublasHandle_t handle = nullptr;  // guarded by mu
  std::atomic<int> last{CUBLAS_STATUS_SUCCESS};
};

Implicit& State() {
  static remora::client_stub::NoDestructor<Implicit> state;
  return *state;
}

void Record(cublasStatus_t s) {
  if (s != CUBLAS_STATUS_SUCCESS) State().last.store(s, std::memory_order_relaxed);
}

// The implicit handle, or null (recording CUBLAS_STATUS_NOT_INITIALIZED) before cublasInit.
cublasHandle_t Handle() {
  Implicit& st = State();
  std::lock_guard lock(st.mu);
  if (st.handle == nullptr) Record(CUBLAS_STATUS_NOT_INITIALIZED);
  return st.handle;
}

// The legacy API's option characters, either case; another is an enum value no routine takes,
// so the routine answers CUBLAS_STATUS_INVALID_VALUE as cuBLAS does.
cublasOperation_t Trans(char c) {
  switch (c) {
    case 'N':
    case 'n':
      return CUBLAS_OP_N;
    case 'T':
    case 't':
      return CUBLAS_OP_T;
    case 'C':
    case 'c':
      return CUBLAS_OP_C;
    default:
      return static_cast<cublasOperation_t>(-1);
  }
}
cublasFillMode_t Uplo(char c) {
  if (c == 'U' || c == 'u') return CUBLAS_FILL_MODE_UPPER;
  if (c == 'L' || c == 'l') return CUBLAS_FILL_MODE_LOWER;
  return static_cast<cublasFillMode_t>(-1);
}
cublasSideMode_t Side(char c) {
  if (c == 'L' || c == 'l') return CUBLAS_SIDE_LEFT;
  if (c == 'R' || c == 'r') return CUBLAS_SIDE_RIGHT;
  return static_cast<cublasSideMode_t>(-1);
}
cublasDiagType_t Diag(char c) {
  if (c == 'N' || c == 'n') return CUBLAS_DIAG_NON_UNIT;
  if (c == 'U' || c == 'u') return CUBLAS_DIAG_UNIT;
  return static_cast<cublasDiagType_t>(-1);
}

}  // namespace

cublasStatus CUBLASWINAPI cublasInit(void) {
  Implicit& st = State();
  std::lock_guard lock(st.mu);
  if (st.handle != nullptr) return CUBLAS_STATUS_SUCCESS;
  return cublasCreate_v2(&st.handle);
}

cublasStatus CUBLASWINAPI cublasShutdown(void) {
  Implicit& st = State();
  std::lock_guard lock(st.mu);
  if (st.handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t s = cublasDestroy_v2(st.handle);
  st.handle = nullptr;
  return s;
}

cublasStatus CUBLASWINAPI cublasGetError(void) {
  return static_cast<cublasStatus>(
      State().last.exchange(CUBLAS_STATUS_SUCCESS, std::memory_order_relaxed));
}

cublasStatus CUBLASWINAPI cublasGetVersion(int* version) {
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus CUBLASWINAPI cublasAlloc(int n, int elemSize, void** devicePtr) {
  if (devicePtr == nullptr || n <= 0 || elemSize <= 0) return CUBLAS_STATUS_INVALID_VALUE;
  return cudaMalloc(devicePtr, static_cast<size_t>(n) * static_cast<size_t>(elemSize)) ==
                 cudaSuccess
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus CUBLASWINAPI cublasFree(void* devicePtr) {
  return cudaFree(devicePtr) == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INTERNAL_ERROR;
}

cublasStatus CUBLASWINAPI cublasSetKernelStream(cudaStream_t stream) {
  cublasHandle_t h = Handle();
  return h == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : cublasSetStream_v2(h, stream);
}

#define LEGACY_VOID(Name, Params, Args) \
  void CUBLASWINAPI Name Params {       \
    if (cublasHandle_t h = Handle()) {  \
      Record(Name##_v2 Args);           \
    }                                   \
  }
#define LEGACY_VALUE(Ret, Name, Params, Args) \
  Ret CUBLASWINAPI Name Params {              \
    Ret r{};                                  \
    if (cublasHandle_t h = Handle()) {        \
      Record(Name##_v2 Args);                 \
    }                                         \
    return r;                                 \
  }
#include "client_stub/cublas_legacy.def"
