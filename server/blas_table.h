// server/blas_table.h - cuBLAS as a table of entry points, beside the driver's.
//
// Loaded like the driver table: NVIDIA's libcublas.so.13 over NVIDIA's driver,
// the emulator's (emu/blas, beside its libcuda.so.1) over the emulated GPU.
// Rows come from blas.def; cublas_v2.h's macros name the exported symbols.
//
//   ASSIGN_OR_RETURN(const BlasTable* blas, device.blas());
//   cublasStatus_t s = blas->cublasSgemm_v2(h, ...);
#pragma once

#include <cublas_v2.h>

#include <memory>
#include <string>

#include "proto/status.h"
#include "server/driver_table.h"

namespace remora::server {

// The C entry points of the routines cublas_api.h also overloads for C++.
using cublasGemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                          int, int, const void*, const void*, cudaDataType, int,
                                          const void*, cudaDataType, int, const void*, void*,
                                          cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using cublasGemmBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                 cublasOperation_t, int, int, int, const void*,
                                                 const void* const[], cudaDataType, int,
                                                 const void* const[], cudaDataType, int,
                                                 const void*, void* const[], cudaDataType, int, int,
                                                 cublasComputeType_t, cublasGemmAlgo_t);
using cublasGemmStridedBatchedExFn = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType, int, long long, const void*, cudaDataType, int, long long, const void*, void*,
    cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);

// The settings' entry points (proto/blas_settings.def); cublasSetEmulationStrategy is
// overloaded for C++.
#define BLAS_SETTING(id, Name, Type, Valid)                               \
  using cublasSet##Name##Fn = cublasStatus_t (*)(cublasHandle_t, Type); \
  using cublasGet##Name##Fn = cublasStatus_t (*)(cublasHandle_t, Type*);
#include "proto/blas_settings.def"

struct BlasTable {
#define BLAS_FN(name) decltype(&::name) name = nullptr;
#define BLAS_FN_OVERLOADED(name) name##Fn name = nullptr;
#include "server/blas.def"

  std::string library;  // path or soname that was loaded

  // Loads the cuBLAS that goes with `drv`. Rows the library lacks answer
  // CUBLAS_STATUS_NOT_SUPPORTED. Errors: kNotSupported naming the library and
  // dlerror.
  static Result<std::shared_ptr<const BlasTable>> Load(const DriverTable& drv);
};

// "CUBLAS_STATUS_INVALID_VALUE" (or the number, for a code the table lacks).
std::string BlasStatusName(const BlasTable& t, cublasStatus_t s);

}  // namespace remora::server
