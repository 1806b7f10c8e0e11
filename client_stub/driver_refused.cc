// client_stub/driver_refused.cc - the rest of libcuda.so.1: exported, refused by name.
//
// NVIDIA's driver entry points the stub does not serve (driver_refused.def) return
// CUDA_ERROR_NOT_SUPPORTED (801) and name themselves on stderr (refused.h).
#include "client_stub/refused.h"

#define REFUSED(name) REMORA_REFUSED("libcuda.so.1", "CUDA_ERROR_NOT_SUPPORTED", 801, name)
#include "client_stub/driver_refused.def"
