// emu/blas/lt.cc - the emulated GPU's libcublasLt.so.13: cublasLtMatmul on OpenBLAS.
//
// The entry points of server/blaslt.def (with the descriptors of
// proto/blaslt_descriptors.cc), in NVIDIA's ABI. A matmul is checked on the
// calling thread by PlanBlasLt, the check the stub and the server make, then
// runs in stream order as device work (SubmitWork, emu/blas/blas.h):
//   D = epilogue(alpha * op(A) * op(B) + beta * C [+ bias])
// per batch, with OpenBLAS's SGEMM; FP16 and BF16 operands are widened to
// float and the result rounded to D's type. Epilogues: RELU max(x, 0); GELU
// the tanh approximation, as cuBLASLt's. Host scalars are read at the call,
// device scalars when the work runs. `algo` and the workspace are not used.
#include <cmath>
#include <cstddef>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "emu/blas/blas.h"
#include "emu/blas/convert.h"
#include "emu/blas/openblas.h"
#include "proto/blas.h"
#include "proto/blaslt_descriptors.h"

// The opaque handle cublasLt.h declares.
struct cublasLtContext {
  int unused = 0;
};

namespace remora::emu::blas {
namespace {

class LtHandles {
 public:
  cublasLtContext* Add() {
    auto* h = new cublasLtContext;
    std::lock_guard lock(mu_);
    live_.insert(h);
    return h;
  }
  bool Remove(cublasLtHandle_t h) {
    {
      std::lock_guard lock(mu_);
      if (live_.erase(h) == 0) return false;
    }
    delete h;
    return true;
  }
  bool Live(cublasLtHandle_t h) const {
    std::lock_guard lock(mu_);
    return live_.count(h) != 0;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_set<cublasLtHandle_t> live_;
};

LtHandles& Handles() {
  static auto* h = new LtHandles;  // never destroyed: work may outlive static teardown
  return *h;
}

float Gelu(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

const std::byte* At(const void* base, int64_t batch, int64_t stride, int32_t type) {
  return static_cast<const std::byte*>(base) + batch * stride * BlasLtElemBytes(type);
}

// One batch entry of a matmul: D = epilogue(alpha op(A) op(B) + beta C [+ bias]).
void RunOne(const BlasLtMatmul& mm, const BlasLtPlan& p, const std::byte* A, const std::byte* B,
            const std::byte* C, std::byte* D, const std::byte* bias, float alpha, float beta) {
  const BlasLtLayout &la = mm.layouts[kLtA], &lb = mm.layouts[kLtB], &lc = mm.layouts[kLtC],
                     &ld = mm.layouts[kLtD];
  const auto m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
  // op(A) op(B) into a dense m x n float accumulator holding beta * C.
  std::vector<float> acc = beta != 0.0f ? Widen(static_cast<cudaDataType>(lc.type), C, m, n, lc.ld)
                                        : std::vector<float>(static_cast<size_t>(m) * n, 0.0f);
  std::vector<float> wa, wb;
  const float* a = reinterpret_cast<const float*>(A);
  const float* b = reinterpret_cast<const float*>(B);
  int lda = static_cast<int>(la.ld), ldb = static_cast<int>(lb.ld);
  if (k > 0 && la.type != CUDA_R_32F) {
    wa = Widen(static_cast<cudaDataType>(la.type), A, la.rows, la.cols, la.ld);
    wb = Widen(static_cast<cudaDataType>(lb.type), B, lb.rows, lb.cols, lb.ld);
    a = wa.data();
    b = wb.data();
    lda = std::max<int>(1, static_cast<int>(la.rows));
    ldb = std::max<int>(1, static_cast<int>(lb.rows));
  }
  if (k > 0) {
    cblas_sgemm(CblasColMajor, ToCblas(static_cast<cublasOperation_t>(mm.desc.transa)),
                ToCblas(static_cast<cublasOperation_t>(mm.desc.transb)), m, n, k, alpha, a, lda, b,
                ldb, beta, acc.data(), m);
  } else {
    for (float& v : acc) v *= beta;
  }
  const uint32_t e = mm.desc.epilogue;
  if (BlasLtHasBias(e)) {
    const std::vector<float> bv = Widen(static_cast<cudaDataType>(p.bias_type), bias, m, 1, m);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) acc[static_cast<size_t>(j) * m + i] += bv[i];
  }
  if (e & CUBLASLT_EPILOGUE_RELU)
    for (float& v : acc) v = v > 0.0f ? v : 0.0f;
  if (e & CUBLASLT_EPILOGUE_GELU)
    for (float& v : acc) v = Gelu(v);
  Narrow(static_cast<cudaDataType>(ld.type), acc.data(), m, n, D, ld.ld);
}

}  // namespace
}  // namespace remora::emu::blas

using namespace remora::emu::blas;  // NOLINT: entry points are global by ABI

REMORA_BLAS_API cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = Handles().Add();
  return CUBLAS_STATUS_SUCCESS;
}

REMORA_BLAS_API cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  return Handles().Remove(handle) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

REMORA_BLAS_API size_t cublasLtGetVersion(void) {
  return CUBLAS_VERSION;
}

REMORA_BLAS_API const char* cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
#define BLAS_STATUS(code, text) \
  case code:                    \
    return #code;
#include "emu/blas/status.def"
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

REMORA_BLAS_API cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
    cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
    const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
    const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t stream) {
  using namespace remora;
  if (!Handles().Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  BLAS_CHECK_ARG(desc && Adesc && Bdesc && Cdesc && Ddesc && alpha && beta);
  const BlasLtMatmul mm = MatmulOf(desc, Adesc, Bdesc, Cdesc, Ddesc);
  Result<BlasLtPlan> plan = PlanBlasLt(mm);
  if (!plan.ok()) return static_cast<cublasStatus_t>(CudaToBlasStatus(plan.status().code()));
  const BlasLtPlan p = *plan;
  BLAS_CHECK_ARG(D && (p.bytes[kLtC] == 0 || C));
  BLAS_CHECK_ARG(p.k == 0 || (A && B));
  BLAS_CHECK_ARG(!BlasLtHasBias(mm.desc.epilogue) || mm.desc.bias);
  if (p.m == 0 || p.n == 0) return CUBLAS_STATUS_SUCCESS;
  const bool device = mm.desc.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE;
  const Scalar<float> a(device ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST,
                        static_cast<const float*>(alpha));
  const Scalar<float> b(device ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST,
                        static_cast<const float*>(beta));
  const bool ok = SubmitWork(reinterpret_cast<CUstream>(stream), [=] {
    const float av = a.get(), bv = b.get();
    const auto* bias = reinterpret_cast<const std::byte*>(mm.desc.bias);
    for (int32_t i = 0; i < p.batch; ++i) {
      RunOne(mm, p, At(A, i, mm.layouts[kLtA].stride, mm.layouts[kLtA].type),
             At(B, i, mm.layouts[kLtB].stride, mm.layouts[kLtB].type),
             At(C, i, mm.layouts[kLtC].stride, mm.layouts[kLtC].type),
             const_cast<std::byte*>(At(D, i, mm.layouts[kLtD].stride, mm.layouts[kLtD].type)),
             bias ? At(bias, i, mm.desc.bias_batch_stride, p.bias_type) : nullptr, av, bv);
    }
  });
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
