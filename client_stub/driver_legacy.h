// client_stub/driver_legacy.h - the older ABIs of entry points that driver_legacy.cc defines
// and driver_per_thread.cc twins. cuda.h names the current ABI by these names; past this
// header they are the older ones.
#pragma once

#include <cuda.h>

#undef cuMemPrefetchAsync
#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
#undef cuStreamUpdateCaptureDependencies

extern "C" {
CUresult cuMemPrefetchAsync(CUdeviceptr ptr, size_t count, CUdevice dev, CUstream s);
CUresult cuStreamBeginCapture(CUstream s);
CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id);
CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** deps, size_t* n);
CUresult cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode* deps, size_t n,
                                           unsigned int flags);
}
