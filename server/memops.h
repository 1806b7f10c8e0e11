// server/memops.h - a tenant's stream memory operations (cuStreamWriteValue32/64,
// cuStreamWaitValue32/64) as the device runs them.
//
// NVIDIA's driver refuses them on memory from a memory pool (CUDA_ERROR_INVALID_VALUE on an
// H200), and a tenant's device memory is the server's pool's (Executor::Allocate: a tenant's
// free waits for its own work only). Where the driver refuses, the operation runs as a
// one-thread kernel of the server's own on the same stream: a store after a system-wide
// fence, or a loop reading the value until it meets the condition, sleeping between reads.
// A tenant that leaves raises its WaitStop, and its wait kernels end: NVIDIA's driver cannot
// stop a kernel, and one nobody's value will ever meet would hold a multiprocessor until the
// server restarted.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "proto/status.h"
#include "server/device.h"

namespace remora::server {

enum class MemOp { kWrite32, kWrite64, kWait32, kWait64 };

// One tenant's stop word: host memory the device reads, registered on first use, that its
// wait kernels poll beside their value. Thread-safe.
class WaitStop {
 public:
  WaitStop();
  ~WaitStop();  // Release first where Address succeeded, or the page stays registered
  WaitStop(const WaitStop&) = delete;
  WaitStop& operator=(const WaitStop&) = delete;

  // The word's device address in `dev`'s current epoch; 0 when it cannot be registered (the
  // kernels then wait without it). REQUIRES: a Use.
  CUdeviceptr Address(Device& dev);
  // Every wait kernel given Address ends, met or not. Later ones end at once.
  void Raise();
  // Unregisters the word. REQUIRES: a Use; the kernels that read it ended.
  void Release(Device& dev);

 private:
  struct Page;
  std::mutex mu_;
  std::unique_ptr<Page> page_;
  CUdeviceptr addr_ = 0;
  uint64_t epoch_ = ~uint64_t{0};
};

// Issues `op` on `s` at `addr` (aligned to its width, in the tenant's memory: the caller
// checked) with the driver's flags; a wait issued as a kernel also ends once `stop` (the
// tenant's WaitStop) is raised. REQUIRES: the context is current. Errors: the driver's, when
// neither it nor the kernel could be issued.
Status IssueMemOp(Device& dev, CUstream s, MemOp op, CUdeviceptr addr, uint64_t value,
                  unsigned flags, WaitStop* stop = nullptr);

}  // namespace remora::server
