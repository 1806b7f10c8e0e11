// client_stub/launch_mode.h - how a kernel launch runs beyond its grid and block: with every
// block co-resident, in thread-block clusters; and what each launch attribute asks of that.
#pragma once

#include <cuda_runtime_api.h>

namespace remora::client_stub {

struct LaunchMode {
  bool cooperative = false;  // every block co-resident (cudaLaunchCooperativeKernel)
  dim3 cluster{1, 1, 1};     // thread-block cluster shape (sm_90 and later); 1x1x1: none

  bool clustered() const { return cluster.x > 1 || cluster.y > 1 || cluster.z > 1; }
};

// Folds one launch attribute into `mode` (cudaLaunchAttributeID and CUlaunchAttributeID number
// alike and their values share a layout). Hints, and orderings a launch already gives (it runs
// fully stream-ordered), are accepted and change nothing. Errors: cudaErrorInvalidValue for an
// id CUDA does not define or a cluster dimension of 0; cudaErrorNotSupported for an attribute
// that would change what runs and is not served (launch events, device-updatable nodes).
cudaError_t ApplyLaunchAttribute(int id, const cudaLaunchAttributeValue& value, LaunchMode* mode);

// The same for `n` attributes (null only when `n` is 0); on an error, `*refused` is its id.
cudaError_t ApplyLaunchAttributes(const cudaLaunchAttribute* attrs, unsigned n, LaunchMode* mode,
                                  int* refused = nullptr);

// The cluster dimension attribute among `n` attributes (the last, if several), else 0x0x0.
dim3 ClusterDimensionOf(const cudaLaunchAttribute* attrs, unsigned n);

}  // namespace remora::client_stub
