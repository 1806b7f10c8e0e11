// client_stub/cublaslt.cc - libcublasLt.so.13: cuBLASLt matmuls over the tenant's one session.
//
// A handle is a server-side cublasLtHandle_t. Descriptors and layouts are
// plain data kept here (proto/blaslt_descriptors.cc, shared with the emulated
// GPU's library): making and setting them costs no round trip. Each
// cublasLtMatmul is one stream-ordered BlasLtMatmulRequest carrying its
// descriptor's attributes and the four layouts by value; it is checked here
// first with the server's code (PlanBlasLt: types, dimensions, epilogue, what
// each pointer reaches against the tenant's allocations) and answered at once
// with NVIDIA's status when wrong. The heuristic is answered here: one
// algorithm (the library's own choice on the server) needing no workspace.
#pragma GCC visibility push(default)
#include <cublasLt.h>
#pragma GCC visibility pop

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "client_stub/blas_common.h"
#include "client_stub/connection.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"
#include "proto/blas.h"
#include "proto/blaslt_descriptors.h"

// The opaque handle cublasLt.h declares.
struct cublasLtContext {
  uint64_t id = 0;  // the server's
};

namespace remora::client_stub {
namespace {

using LtHandles = HandleRegistry<cublasLtContext>;

LtHandles& Live() {
  static NoDestructor<LtHandles> h;
  return *h;
}

// A matmul preference: plain data, as descriptors are.
struct Preference {
  uint32_t search_mode = 0;
  uint64_t max_workspace = 0;
};
static_assert(sizeof(Preference) <= sizeof(cublasLtMatmulPreferenceOpaque_t));

Preference* PlainPreference(cublasLtMatmulPreference_t p) {
  return std::launder(reinterpret_cast<Preference*>(p->data));
}

// The algorithm the heuristic offers: a marker; the server's library chooses.
constexpr uint64_t kRemoraAlgo = 0x52454d4f52414c54;  // "REMORALT"

// The server's id of `h`: a cuBLASLt handle of this stub's, or a cuBLAS handle, which NVIDIA's
// cuBLASLt takes as well (PyTorch's matmuls pass theirs). 0 when it is neither.
uint64_t HandleId(cublasLtHandle_t h) {
  if (std::optional<cublasLtContext> c = Live().Find(h)) return c->id;
  return BlasHandleId(h);
}

cublasStatus_t FromPlan(const Status& s) {
  return static_cast<cublasStatus_t>(CudaToBlasStatus(s.code()));
}

void ToWire(const BlasLtLayout& l, v1::BlasLtMatmulRequest::Layout* w) {
  w->set_type(l.type);
  w->set_rows(l.rows);
  w->set_cols(l.cols);
  w->set_ld(l.ld);
  w->set_order(l.order);
  w->set_batch(l.batch);
  w->set_stride(l.stride);
}

}  // namespace
}  // namespace remora::client_stub

extern "C" {

// ---- Handles and the library -------------------------------------------------------

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  using namespace remora::client_stub;
  return CreateHandle(Live(), remora::CallId::kBlasLtCreate, handle);
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  using namespace remora::client_stub;
  return DestroyHandle(Live(), remora::CallId::kBlasLtDestroy, handle);
}

size_t cublasLtGetVersion(void) {
  return CUBLAS_VERSION;
}

size_t cublasLtGetCudartVersion(void) {
  return CUDART_VERSION;
}

cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

const char* cublasLtGetStatusName(cublasStatus_t status) {
  return remora::client_stub::BlasStatusName(status);
}

const char* cublasLtGetStatusString(cublasStatus_t status) {
  return remora::client_stub::BlasStatusString(status);
}

// ---- Preferences (plain data; only the workspace limit means anything here) ------------

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size) {
  if (!pref || size < sizeof(cublasLtMatmulPreferenceOpaque_t)) return CUBLAS_STATUS_INVALID_VALUE;
  new (pref->data) remora::client_stub::Preference;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  auto* o = new (std::nothrow) cublasLtMatmulPreferenceOpaque_t{};
  if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
  (void)cublasLtMatmulPreferenceInit_internal(o, sizeof *o);
  *pref = o;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size) {
  if (!pref || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  remora::client_stub::Preference& p = *remora::client_stub::PlainPreference(pref);
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
      if (size != sizeof p.search_mode) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&p.search_mode, buf, size);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      if (size != sizeof p.max_workspace) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&p.max_workspace, buf, size);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT:
    case CUBLASLT_MATMUL_PREF_IMPL_MASK:
      // Hints for choosing among kernels; the server's library chooses.
      return size == 4 || size == 8 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    void* buf, size_t size, size_t* written) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  const remora::client_stub::Preference& p = *remora::client_stub::PlainPreference(pref);
  auto get = [&](const auto& field) {
    if (size == 0 && written) {
      *written = sizeof field;
      return CUBLAS_STATUS_SUCCESS;
    }
    if (!buf || size != sizeof field) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(buf, &field, sizeof field);
    if (written) *written = sizeof field;
    return CUBLAS_STATUS_SUCCESS;
  };
  if (attr == CUBLASLT_MATMUL_PREF_SEARCH_MODE) return get(p.search_mode);
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) return get(p.max_workspace);
  return CUBLAS_STATUS_INVALID_VALUE;
}

// ---- Heuristic and matmul -----------------------------------------------------------

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t, int requested, cublasLtMatmulHeuristicResult_t results[],
    int* returned) {
  using namespace remora;
  using namespace remora::client_stub;
  if (HandleId(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || !results || !returned || !desc || !Adesc || !Bdesc || !Cdesc || !Ddesc)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  Result<BlasLtPlan> plan = PlanBlasLt(MatmulOf(desc, Adesc, Bdesc, Cdesc, Ddesc));
  // A matmul Remora does not forward has no algorithm: the caller may fall back to cuBLAS, as
  // PyTorch does when the heuristic finds none (cublasLtMatmul itself still says why).
  if (!plan.ok() && plan.status().code() == err::kNotSupported) {
    SayOnce("cublasLtMatmulAlgoGetHeuristic finds no algorithm, as Remora does not " +
            std::string("forward this matmul: ") + plan.status().message());
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!plan.ok()) return FromPlan(plan.status());
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].algo.data[0] = kRemoraAlgo;
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t*, void* workspace, size_t workspace_size,
                              cudaStream_t stream) {
  using namespace remora;
  using namespace remora::client_stub;
  const uint64_t id = HandleId(handle);
  if (id == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!desc || !Adesc || !Bdesc || !Cdesc || !Ddesc || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  const BlasLtMatmul m = MatmulOf(desc, Adesc, Bdesc, Cdesc, Ddesc);
  Result<BlasLtPlan> plan = PlanBlasLt(m);
  if (!plan.ok() && plan.status().code() == err::kNotSupported)
    SayOnce(plan.status().message() + "; Remora does not forward it: CUBLAS_STATUS_NOT_SUPPORTED");
  if (!plan.ok()) return FromPlan(plan.status());
  v1::BlasLtMatmulRequest req;
  req.set_handle(id);
  req.set_stream(StreamId(stream));
  const BlasLtDesc& d = m.desc;
  req.set_compute_type(d.compute_type);
  req.set_scale_type(d.scale_type);
  req.set_pointer_mode(d.pointer_mode);
  req.set_transa(d.transa);
  req.set_transb(d.transb);
  req.set_epilogue(d.epilogue);
  req.set_bias_type(d.bias_type);
  req.set_bias_batch_stride(d.bias_batch_stride);
  for (const BlasLtLayout& l : m.layouts) ToWire(l, req.add_layouts());
  // Every pointer reaches only the tenant's own memory.
  const void* ptrs[] = {A, B, C, D};
  for (int i = 0; i < 4; ++i) {
    const auto p = reinterpret_cast<uint64_t>(ptrs[i]);
    if (plan->bytes[i] && !OnDevice(p, plan->bytes[i])) return CUBLAS_STATUS_INVALID_VALUE;
    req.add_ptrs(p);
  }
  if (BlasLtHasBias(d.epilogue)) {
    if (plan->bias_bytes && !OnDevice(d.bias, plan->bias_bytes)) return CUBLAS_STATUS_INVALID_VALUE;
    req.set_bias(d.bias);
  }
  const void* scalars[] = {alpha, beta};
  for (const void* s : scalars) {
    if (d.pointer_mode != 0) {
      if (!OnDevice(reinterpret_cast<uint64_t>(s), plan->scalar_bytes))
        return CUBLAS_STATUS_INVALID_VALUE;
      req.add_scalar_ptrs(reinterpret_cast<uint64_t>(s));
    } else {
      req.mutable_scalars()->append(static_cast<const char*>(s), plan->scalar_bytes);
    }
  }
  if (workspace_size) {
    if (!OnDevice(reinterpret_cast<uint64_t>(workspace), workspace_size))
      return CUBLAS_STATUS_INVALID_VALUE;
    req.set_workspace(reinterpret_cast<uint64_t>(workspace));
    req.set_workspace_size(workspace_size);
  }
  return ToStatus(Connection::Get().Post(CallId::kBlasLtMatmul, req));
}

}  // extern "C"
