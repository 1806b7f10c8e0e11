// client_stub/cublas_refused.cc - the rest of libcublas.so.13: exported, refused by name.
//
// NVIDIA's cuBLAS entry points the stub does not forward (cublas_refused.def)
// return CUBLAS_STATUS_NOT_SUPPORTED and name themselves on stderr (refused.h).
#include "client_stub/refused.h"

#define REFUSED(name) REMORA_REFUSED("libcublas.so.13", "CUBLAS_STATUS_NOT_SUPPORTED", 15, name)
#include "client_stub/cublas_refused.def"
