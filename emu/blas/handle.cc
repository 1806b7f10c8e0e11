// emu/blas/handle.cc - handles and their settings, version, status names.
//
// A handle is a registry entry: every call looks it up under one mutex, so a
// destroyed (or never created) handle is CUBLAS_STATUS_NOT_INITIALIZED rather
// than a use after free.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "emu/blas/blas.h"

// The object behind a cublasHandle_t (declared by cublas_api.h).
struct cublasContext {
  CUcontext ctx = nullptr;  // current when the handle was created
  CUstream stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  void* workspace = nullptr;  // recorded only: the CPU needs none
  size_t workspace_bytes = 0;
  // proto/blas_settings.def's values (row id - 1), recorded only: the CPU computes in the
  // operands' own precision, and on all its cores. The special values supported by
  // emulation start as DEFAULT (0xFFFF), the others at 0.
  int64_t settings[8] = {0, 0xFFFF};
};

namespace remora::emu::blas {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<cublasContext*, std::unique_ptr<cublasContext>> handles;  // guarded by mu
};

Registry& Handles() {
  static Registry r;
  return r;
}

// Runs `f(cublasContext&)` on a live handle under the registry lock.
template <class F>
cublasStatus_t WithHandle(cublasHandle_t h, F f) {
  Registry& r = Handles();
  std::lock_guard lock(r.mu);
  auto it = r.handles.find(h);
  if (it == r.handles.end()) [[unlikely]]
    return CUBLAS_STATUS_NOT_INITIALIZED;
  return f(*it->second);
}

}  // namespace

cublasStatus_t GetSettings(cublasHandle_t h, Settings* out) {
  return WithHandle(h, [out](cublasContext& c) {
    out->stream = c.stream;
    out->pointer_mode = c.pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

}  // namespace remora::emu::blas

using namespace remora::emu::blas;  // NOLINT: entry points are global by ABI

REMORA_BLAS_API cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto c = std::make_unique<cublasContext>();
  c->ctx = ctx;
  cublasContext* raw = c.get();
  Registry& r = Handles();
  std::lock_guard lock(r.mu);
  r.handles.emplace(raw, std::move(c));
  *handle = raw;
  return CUBLAS_STATUS_SUCCESS;
}

// Pending work keeps its own copies of everything it needs, so destroying a
// handle never waits for it (NVIDIA's cublasDestroy synchronises; a host
// result call already waited).
REMORA_BLAS_API cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  Registry& r = Handles();
  std::unique_ptr<cublasContext> dead;
  std::lock_guard lock(r.mu);
  auto it = r.handles.find(handle);
  if (it == r.handles.end()) return CUBLAS_STATUS_NOT_INITIALIZED;
  dead = std::move(it->second);
  r.handles.erase(it);
  return CUBLAS_STATUS_SUCCESS;
}

REMORA_BLAS_API cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  return WithHandle(handle, [stream](cublasContext& c) {
    c.stream = reinterpret_cast<CUstream>(stream);
    // As NVIDIA's: a new stream resets the workspace to the default one.
    c.workspace = nullptr;
    c.workspace_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
  });
}

REMORA_BLAS_API cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  return WithHandle(handle, [stream](cublasContext& c) {
    if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *stream = reinterpret_cast<cudaStream_t>(c.stream);
    return CUBLAS_STATUS_SUCCESS;
  });
}

REMORA_BLAS_API cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle,
                                                       cublasPointerMode_t mode) {
  return WithHandle(handle, [mode](cublasContext& c) {
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    c.pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

REMORA_BLAS_API cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle,
                                                       cublasPointerMode_t* mode) {
  return WithHandle(handle, [mode](cublasContext& c) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = c.pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

// A mode is one of the base modes, optionally or-ed with
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION. The CPU computes the same
// way under all of them.
REMORA_BLAS_API cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  return WithHandle(handle, [mode](cublasContext& c) {
    const unsigned base =
        static_cast<unsigned>(mode) & ~unsigned{CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION};
    switch (base) {
      case CUBLAS_DEFAULT_MATH:
      case CUBLAS_TENSOR_OP_MATH:
      case CUBLAS_PEDANTIC_MATH:
      case CUBLAS_TF32_TENSOR_OP_MATH:
      case CUBLAS_FP32_EMULATED_BF16X9_MATH:
      case CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH:
        c.math_mode = mode;
        return CUBLAS_STATUS_SUCCESS;
      default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
  });
}

// The settings of proto/blas_settings.def: a value cuBLAS takes is kept and read back.
#define BLAS_SETTING(id, Name, Type, Valid)                                            \
  static_assert(id <= 8);                                                              \
  REMORA_BLAS_API cublasStatus_t cublasSet##Name(cublasHandle_t handle, Type value) {  \
    return WithHandle(handle, [value](cublasContext& c) {                              \
      const int64_t v = value;                                                         \
      if (!(Valid)) return CUBLAS_STATUS_INVALID_VALUE;                                \
      c.settings[id - 1] = v;                                                          \
      return CUBLAS_STATUS_SUCCESS;                                                    \
    });                                                                                \
  }                                                                                    \
  REMORA_BLAS_API cublasStatus_t cublasGet##Name(cublasHandle_t handle, Type* value) { \
    return WithHandle(handle, [value](cublasContext& c) {                              \
      if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;                        \
      *value = static_cast<Type>(c.settings[id - 1]);                                  \
      return CUBLAS_STATUS_SUCCESS;                                                    \
    });                                                                                \
  }
#include "proto/blas_settings.def"

REMORA_BLAS_API cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  return WithHandle(handle, [mode](cublasContext& c) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = c.math_mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

REMORA_BLAS_API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                                     size_t workspaceSizeInBytes) {
  return WithHandle(handle, [=](cublasContext& c) {
    if (workspace == nullptr && workspaceSizeInBytes != 0) return CUBLAS_STATUS_INVALID_VALUE;
    c.workspace = workspace;
    c.workspace_bytes = workspaceSizeInBytes;
    return CUBLAS_STATUS_SUCCESS;
  });
}

// The version of the cuBLAS headers this library was built against (13.x).
REMORA_BLAS_API cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int* version) {
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

REMORA_BLAS_API const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
#define BLAS_STATUS(code, text) \
  case code:                    \
    return #code;
#include "emu/blas/status.def"
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

REMORA_BLAS_API const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
#define BLAS_STATUS(code, text) \
  case code:                    \
    return text;
#include "emu/blas/status.def"
  }
  return "unknown error";
}
