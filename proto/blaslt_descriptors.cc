// proto/blaslt_descriptors.cc - cuBLASLt's matmul descriptors and matrix layouts as plain data.
//
// Compiled into both libcublasLt.so.13 of Remora: the stub's (client_stub/) and
// the emulated GPU's (emu/blas/); not part of remora_status. A descriptor is
// the caller's opaque storage (cublasLt.h's *Opaque_t, from *Create or the
// caller's own for *Init) holding a BlasLtDesc or BlasLtLayout (proto/blaslt.h),
// whose attributes are set and read by the same code in both libraries. The
// stub sends them by value with each matmul; the emulator reads them there.
#pragma GCC visibility push(default)
#include <cublasLt.h>
#pragma GCC visibility pop

#include "proto/blaslt_descriptors.h"

static_assert(sizeof(remora::BlasLtDesc) <= sizeof(cublasLtMatmulDescOpaque_t));
static_assert(sizeof(remora::BlasLtLayout) <= sizeof(cublasLtMatrixLayoutOpaque_t));
static_assert(alignof(remora::BlasLtDesc) <= alignof(cublasLtMatmulDescOpaque_t));
static_assert(alignof(remora::BlasLtLayout) <= alignof(cublasLtMatrixLayoutOpaque_t));

using remora::PlainDesc;
using remora::PlainLayout;

extern "C" {

// ---- Matmul descriptors --------------------------------------------------------------

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t d, size_t size,
                                               cublasComputeType_t compute, cudaDataType_t scale) {
  if (!d || size < sizeof(cublasLtMatmulDescOpaque_t)) return CUBLAS_STATUS_INVALID_VALUE;
  remora::BlasLtDesc* p = new (d->data) remora::BlasLtDesc;
  p->compute_type = compute;
  p->scale_type = scale;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  auto* o = new (std::nothrow) cublasLtMatmulDescOpaque_t{};
  if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
  (void)cublasLtMatmulDescInit_internal(o, sizeof *o, compute, scale);
  *d = o;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size) {
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  return static_cast<cublasStatus_t>(
      remora::BlasLtSetDescAttribute(*PlainDesc(d), attr, buf, size));
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, void* buf,
                                              size_t size, size_t* written) {
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  return static_cast<cublasStatus_t>(
      remora::BlasLtGetDescAttribute(*PlainDesc(d), attr, buf, size, written));
}

// ---- Matrix layouts ------------------------------------------------------------------

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t l, size_t size,
                                                 cudaDataType type, uint64_t rows, uint64_t cols,
                                                 int64_t ld) {
  if (!l || size < sizeof(cublasLtMatrixLayoutOpaque_t)) return CUBLAS_STATUS_INVALID_VALUE;
  remora::BlasLtLayout* p = new (l->data) remora::BlasLtLayout;
  p->type = type;
  p->rows = rows;
  p->cols = cols;
  p->ld = ld;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  auto* o = new (std::nothrow) cublasLtMatrixLayoutOpaque_t{};
  if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
  (void)cublasLtMatrixLayoutInit_internal(o, sizeof *o, type, rows, cols, ld);
  *l = o;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  return static_cast<cublasStatus_t>(
      remora::BlasLtSetLayoutAttribute(*PlainLayout(l), attr, buf, size));
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                size_t size, size_t* written) {
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  return static_cast<cublasStatus_t>(
      remora::BlasLtGetLayoutAttribute(*PlainLayout(l), attr, buf, size, written));
}

}  // extern "C"
