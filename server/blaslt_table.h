// server/blaslt_table.h - cuBLASLt as a table of entry points, beside cuBLAS's.
//
// Loaded like BlasTable: NVIDIA's libcublasLt.so.13 over NVIDIA's driver, the
// emulator's (emu/blas, beside its libcuda.so.1) over the emulated GPU. Rows
// come from blaslt.def.
//
//   ASSIGN_OR_RETURN(const BlasLtTable* lt, device.blaslt());
//   cublasStatus_t s = lt->cublasLtMatmul(h, desc, ...);
#pragma once

#include <cublasLt.h>

#include <memory>
#include <string>

#include "proto/status.h"
#include "server/driver_table.h"

namespace remora::server {

struct BlasLtTable {
#define BLASLT_FN(name) decltype(&::name) name = nullptr;
#include "server/blaslt.def"

  std::string library;  // path or soname that was loaded

  // Loads the cuBLASLt that goes with `drv`. Rows the library lacks answer
  // CUBLAS_STATUS_NOT_SUPPORTED. Errors: kNotSupported naming the library and
  // dlerror.
  static Result<std::shared_ptr<const BlasLtTable>> Load(const DriverTable& drv);
};

// "CUBLAS_STATUS_INVALID_VALUE" (or the number, for a code the table lacks).
std::string BlasLtStatusName(const BlasLtTable& t, cublasStatus_t s);

}  // namespace remora::server
