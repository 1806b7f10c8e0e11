// client_stub/cudnn_refused.cc - the rest of libcudnn.so.9: exported, refused by name.
//
// NVIDIA's cuDNN entry points the stub does not forward (cudnn_refused.def)
// return CUDNN_STATUS_NOT_SUPPORTED and name themselves on stderr (refused.h).
#include "client_stub/refused.h"

#define REFUSED(name) REMORA_REFUSED("libcudnn.so.9", "CUDNN_STATUS_NOT_SUPPORTED", 3000, name)
#include "client_stub/cudnn_refused.def"
