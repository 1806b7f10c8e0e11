// server/device.h - the one GPU this server owns: its context, description and stream pool.
//
// Every thread that calls the driver first calls MakeCurrent(). Tenants' streams
// are virtual; the Device hands out real streams from a pool and takes them back.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <vector>

#include "proto/status.h"
#include "remora/v1/session.pb.h"
#include "server/driver_table.h"

namespace remora::server {

class Device {
 public:
  // Retains the primary context of device 0 and reads its description.
  // Errors: kInitializationError with the driver's reason.
  static Result<std::unique_ptr<Device>> Open(std::shared_ptr<DriverTable> drv);
  Device() = default;  // use Open
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DriverTable& drv() const { return *drv_; }
  CUcontext context() const { return ctx_; }
  // Makes the context current on the calling thread. Errors: driver failure.
  Status MakeCurrent() const;
  // What tenants see of the device (name, memory, every attribute).
  const remora::v1::DeviceInfo& info() const { return info_; }
  // Device memory tenants may share: total minus the context's own reserve.
  uint64_t usable_memory() const { return usable_; }

  // A non-blocking stream from the pool (created when the pool is empty).
  // REQUIRES: the context is current. Thread-safe.
  Result<CUstream> AcquireStream();
  // Returns a stream to the pool once its work is done (synchronizes it).
  void ReleaseStream(CUstream s);

  // Wraps a driver result: ok, or the tenant-visible cudaError_t with `what`
  // and the driver's own description.
  Status Check(CUresult r, const char* what) const;

 private:
  std::shared_ptr<DriverTable> drv_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  remora::v1::DeviceInfo info_;
  uint64_t usable_ = 0;
  std::mutex pool_mu_;
  std::vector<CUstream> pool_;
};

}  // namespace remora::server
