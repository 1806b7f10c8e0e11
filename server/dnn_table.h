// server/dnn_table.h - cuDNN as a table of entry points, beside the driver's.
//
// Loaded like the cuBLAS table: NVIDIA's libcudnn.so.9 over NVIDIA's driver,
// the emulator's (emu/dnn, beside its libcuda.so.1) over the emulated GPU.
// Rows come from dnn.def.
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>

#include "proto/status.h"
#include "server/driver_table.h"

namespace remora::server {

struct DnnTable {
#define DNN_FN(name) decltype(&::name) name = nullptr;
#include "server/dnn.def"

  std::string library;  // path or soname that was loaded

  // Loads the cuDNN that goes with `drv`. Rows the library lacks answer
  // CUDNN_STATUS_NOT_SUPPORTED. Errors: kNotSupported naming the library.
  static Result<std::shared_ptr<const DnnTable>> Load(const DriverTable& drv);
};

}  // namespace remora::server
