// server/memops.h - a tenant's stream memory operations (cuStreamWriteValue32/64,
// cuStreamWaitValue32/64) as the device runs them.
//
// NVIDIA's driver refuses them on memory from a memory pool (CUDA_ERROR_INVALID_VALUE on an
// H200), and a tenant's device memory is the server's pool's (Executor::Allocate: a tenant's
// free waits for its own work only). Where the driver refuses, the operation runs as a
// one-thread kernel of the server's own on the same stream: a store after a system-wide
// fence, or a loop reading the value until it meets the condition, sleeping between reads.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "proto/status.h"
#include "server/device.h"

namespace remora::server {

enum class MemOp { kWrite32, kWrite64, kWait32, kWait64 };

// Issues `op` on `s` at `addr` (aligned to its width, in the tenant's memory: the caller
// checked) with the driver's flags. REQUIRES: the context is current. Errors: the driver's,
// when neither it nor the kernel could be issued.
Status IssueMemOp(Device& dev, CUstream s, MemOp op, CUdeviceptr addr, uint64_t value,
                  unsigned flags);

}  // namespace remora::server
