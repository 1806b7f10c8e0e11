// proto/blaslt_descriptors.h - the plain data inside Remora's cuBLASLt descriptors.
//
// For the two libcublasLt.so.13 that compile proto/blaslt_descriptors.cc (the
// stub's and the emulated GPU's): a cublasLtMatmulDesc_t or
// cublasLtMatrixLayout_t made by them holds a BlasLtDesc or BlasLtLayout.
#pragma once

#include <cublasLt.h>

#include <new>

#include "proto/blaslt.h"

namespace remora {

// The plain data in a descriptor's storage (nullptr for a null descriptor).
// REQUIRES: made by this library's *Create or *Init.
inline BlasLtDesc* PlainDesc(cublasLtMatmulDesc_t d) {
  return d ? std::launder(reinterpret_cast<BlasLtDesc*>(d->data)) : nullptr;
}
inline BlasLtLayout* PlainLayout(cublasLtMatrixLayout_t l) {
  return l ? std::launder(reinterpret_cast<BlasLtLayout*>(l->data)) : nullptr;
}

// A matmul as descriptors `d` and `a`..`dd` describe it. REQUIRES: none null.
inline BlasLtMatmul MatmulOf(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                             cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                             cublasLtMatrixLayout_t dd) {
  return BlasLtMatmul{*PlainDesc(d),
                      {*PlainLayout(a), *PlainLayout(b), *PlainLayout(c), *PlainLayout(dd)}};
}

}  // namespace remora
