// server/handlers/blaslt.cc - cuBLASLt: handles, and each matmul checked then queued.
//
// A tenant's cuBLASLt handle is a server-side cublasLtHandle_t; it holds no
// memory of the tenant's (a matmul's workspace is the tenant's own, passed with
// the call). A matmul arrives as one BlasLtMatmulRequest carrying its
// descriptors by value: PlanBlasLt (proto/blaslt.h) checks them as the stub
// did and says what A, B, C, D and the bias reach, and every pointer (those,
// device scalars, the workspace) is checked against the tenant's allocations
// before the call is queued on the tenant's stream. The library's descriptors
// are made from the request inside the issued work and destroyed after it, so
// nothing of a call outlives it on the server.
#include <cublasLt.h>

#include <cstring>
#include <memory>

#include "proto/blas.h"
#include "proto/blaslt.h"
#include "server/handlers/util.h"
#include "server/session.h"

namespace remora::server {

namespace {

// One checked matmul, as the issued work needs it.
struct LtCall {
  cublasLtHandle_t handle = nullptr;
  BlasLtMatmul m;
  BlasLtPlan plan;
  uint64_t stream = 0;
  std::array<uint64_t, 4> ptrs{};                  // A, B, C, D
  alignas(16) std::array<std::byte, 8> scalars{};  // host mode: alpha, beta
  std::array<uint64_t, 2> scalar_ptrs{};           // device mode
  uint64_t workspace = 0;
  uint64_t workspace_size = 0;
};

Status LtError(const BlasLtTable& t, cublasStatus_t s, const std::string& what) {
  return Error(BlasStatusToCuda(s), what + ": " + BlasLtStatusName(t, s));
}

// The library's descriptors of one call, destroyed with it.
struct DescDeleter {
  const BlasLtTable* t;
  void operator()(cublasLtMatmulDescOpaque_t* d) const { (void)t->cublasLtMatmulDescDestroy(d); }
};
struct LayoutDeleter {
  const BlasLtTable* t;
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const {
    (void)t->cublasLtMatrixLayoutDestroy(l);
  }
};
using Desc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;

template <typename T>
cublasStatus_t SetDesc(const BlasLtTable& t, cublasLtMatmulDesc_t d,
                       cublasLtMatmulDescAttributes_t a, T v) {
  return t.cublasLtMatmulDescSetAttribute(d, a, &v, sizeof v);
}
template <typename T>
cublasStatus_t SetLayout(const BlasLtTable& t, cublasLtMatrixLayout_t l,
                         cublasLtMatrixLayoutAttribute_t a, T v) {
  return t.cublasLtMatrixLayoutSetAttribute(l, a, &v, sizeof v);
}

// Makes the library's descriptors from `c` and runs the matmul on `s`.
cublasStatus_t RunMatmul(const BlasLtTable& t, const LtCall& c, CUstream s) {
  const BlasLtDesc& m = c.m.desc;
  cublasLtMatmulDesc_t raw_desc = nullptr;
  cublasStatus_t st =
      t.cublasLtMatmulDescCreate(&raw_desc, static_cast<cublasComputeType_t>(m.compute_type),
                                 static_cast<cudaDataType_t>(m.scale_type));
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  Desc desc(raw_desc, DescDeleter{&t});
  auto set = [&](auto attr, auto value) {
    if (st == CUBLAS_STATUS_SUCCESS) st = SetDesc(t, desc.get(), attr, value);
  };
  set(CUBLASLT_MATMUL_DESC_POINTER_MODE, static_cast<int32_t>(m.pointer_mode));
  set(CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(m.transa));
  set(CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(m.transb));
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, m.epilogue);
  if (BlasLtHasBias(m.epilogue)) {
    set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, reinterpret_cast<const void*>(m.bias));
    set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, c.plan.bias_type);
    if (m.bias_batch_stride) set(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, m.bias_batch_stride);
  }
  std::array<Layout, 4> layouts;
  for (size_t i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i) {
    const BlasLtLayout& l = c.m.layouts[i];
    cublasLtMatrixLayout_t raw = nullptr;
    st = t.cublasLtMatrixLayoutCreate(&raw, static_cast<cudaDataType_t>(l.type), l.rows, l.cols,
                                      l.ld);
    if (st != CUBLAS_STATUS_SUCCESS) break;
    layouts[i] = Layout(raw, LayoutDeleter{&t});
    if (l.batch != 1) st = SetLayout(t, raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, l.batch);
    if (st == CUBLAS_STATUS_SUCCESS && l.stride != 0)
      st = SetLayout(t, raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, l.stride);
  }
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  const bool device = m.pointer_mode != 0;
  const void* alpha = device ? reinterpret_cast<const void*>(c.scalar_ptrs[0]) : &c.scalars[0];
  const void* beta = device ? reinterpret_cast<const void*>(c.scalar_ptrs[1]) : &c.scalars[4];
  auto p = [&](int i) { return reinterpret_cast<void*>(c.ptrs[i]); };
  // algo null: the library chooses, within the workspace the tenant gave.
  return t.cublasLtMatmul(c.handle, desc.get(), alpha, p(kLtA), layouts[kLtA].get(), p(kLtB),
                          layouts[kLtB].get(), beta, p(kLtC), layouts[kLtC].get(), p(kLtD),
                          layouts[kLtD].get(), nullptr, reinterpret_cast<void*>(c.workspace),
                          c.workspace_size, s);
}

BlasLtLayout FromWire(const v1::BlasLtMatmulRequest::Layout& w) {
  return BlasLtLayout{.type = w.type(),
                      .rows = w.rows(),
                      .cols = w.cols(),
                      .ld = w.ld(),
                      .order = w.order(),
                      .batch = w.batch(),
                      .stride = w.stride()};
}

}  // namespace

// ---- Handles -------------------------------------------------------------------

Status Session::OnBlasLtCreate(const v1::Empty&, v1::HandleReply& rep) {
  ASSIGN_OR_RETURN(const BlasLtTable* t, env_.device->blaslt());
  cublasLtHandle_t h = nullptr;
  if (cublasStatus_t s = t->cublasLtCreate(&h); s != CUBLAS_STATUS_SUCCESS)
    return LtError(*t, s, "cublasLtCreate");
  const uint64_t id = next_handle_++;
  blaslt_.Put(id, h);
  rep.set_handle(id);
  return OkStatus();
}

Status Session::OnBlasLtDestroy(const v1::BlasHandleRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(cublasLtHandle_t h, blaslt_.Get(req.handle()));
  ASSIGN_OR_RETURN(const BlasLtTable* t, env_.device->blaslt());
  blaslt_.Erase(req.handle());
  Held held;
  held.epoch = epoch_;
  held.destroy_when_idle.push_back([t, h] { (void)t->cublasLtDestroy(h); });
  // The handle goes once the tenant's work that may use it is done.
  return GiveBackWhenDone(std::move(held), /*reply=*/true);
}

bool ReleaseBlasLt(Device& dev, cublasLtContext* handle, Held& held) {
  if (Result<const BlasLtTable*> t = dev.blaslt(); t.ok())
    held.destroy_when_idle.push_back([t = *t, handle] { (void)t->cublasLtDestroy(handle); });
  return false;
}

// ---- The matmul ----------------------------------------------------------------

Status Session::OnBlasLtMatmul(const v1::BlasLtMatmulRequest& req, v1::Empty&) {
  auto c = std::make_shared<LtCall>();
  Result<cublasLtHandle_t> handle = blaslt_.Get(req.handle());
  if (!handle.ok() && blas_.Get(req.handle()).ok()) handle = BlasHandleAsLt(req.handle());
  ASSIGN_OR_RETURN(c->handle, std::move(handle));
  RETURN_IF_ERROR(streams_.Check(req.stream()));
  ASSIGN_OR_RETURN(const BlasLtTable* t, env_.device->blaslt());
  if (req.layouts_size() != 4 || req.ptrs_size() != 4)
    return Error(err::kInvalidValue, "cublasLtMatmul takes four layouts and four matrices");
  BlasLtDesc& m = c->m.desc;
  m.compute_type = req.compute_type();
  m.scale_type = req.scale_type();
  m.pointer_mode = req.pointer_mode();
  m.transa = req.transa();
  m.transb = req.transb();
  m.epilogue = req.epilogue();
  m.bias_type = req.bias_type();
  m.bias_batch_stride = req.bias_batch_stride();
  m.bias = req.bias();
  for (int i = 0; i < 4; ++i) c->m.layouts[i] = FromWire(req.layouts(i));
  ASSIGN_OR_RETURN(c->plan, PlanBlasLt(c->m));
  c->stream = req.stream();

  // Matrices and the bias reach what their layouts say.
  static constexpr const char* kWhat[] = {"cublasLtMatmul A", "cublasLtMatmul B",
                                          "cublasLtMatmul C", "cublasLtMatmul D"};
  for (int i = 0; i < 4; ++i) {
    c->ptrs[i] = req.ptrs(i);
    RETURN_IF_ERROR(CheckDeviceRange(c->ptrs[i], c->plan.bytes[i], kWhat[i]));
  }
  if (BlasLtHasBias(m.epilogue)) {
    RETURN_IF_ERROR(CheckDeviceRange(m.bias, c->plan.bias_bytes, "cublasLtMatmul bias"));
  }
  // Scalars: their values, or device pointers to them.
  const uint32_t sb = c->plan.scalar_bytes;
  if (m.pointer_mode != 0) {
    if (req.scalar_ptrs_size() != 2)
      return Error(err::kInvalidValue, "cublasLtMatmul: device mode takes two scalar pointers");
    for (int i = 0; i < 2; ++i) {
      RETURN_IF_ERROR(CheckDeviceRange(req.scalar_ptrs(i), sb, "cublasLtMatmul scalar"));
      c->scalar_ptrs[i] = req.scalar_ptrs(i);
    }
  } else {
    if (req.scalars().size() != 2 * sb)
      return Error(err::kInvalidValue, "cublasLtMatmul: scalars of the wrong size");
    std::memcpy(c->scalars.data(), req.scalars().data(), 2 * sb);
  }
  // The workspace is the tenant's own memory.
  c->workspace_size = req.workspace_size();
  c->workspace = c->workspace_size ? req.workspace() : 0;
  RETURN_IF_ERROR(CheckDeviceRange(c->workspace, c->workspace_size, "cublasLtMatmul workspace"));

  return work_->Submit(c->stream, [t, c](CUstream s) -> Status {
    if (cublasStatus_t st = RunMatmul(*t, *c, s); st != CUBLAS_STATUS_SUCCESS)
      return LtError(*t, st, "cublasLtMatmul");
    return OkStatus();
  });
}

}  // namespace remora::server
