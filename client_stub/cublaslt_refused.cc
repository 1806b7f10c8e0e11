// client_stub/cublaslt_refused.cc - the rest of libcublasLt.so.13: exported, refused by name.
//
// NVIDIA's cuBLASLt entry points the stub does not forward (cublaslt_refused.def)
// return CUBLAS_STATUS_NOT_SUPPORTED and name themselves on stderr (refused.h).
#include "client_stub/refused.h"

#define REFUSED(name) REMORA_REFUSED("libcublasLt.so.13", "CUBLAS_STATUS_NOT_SUPPORTED", 15, name)
#include "client_stub/cublaslt_refused.def"
