// server/device_lock.h - one server per GPU: an advisory lock file per device.
//
// Two servers on one GPU would each believe they own its memory and time. A server takes
// DeviceLock::Acquire(dir, "gpu-<uuid>") before it creates its context and holds it for its
// life; the kernel releases it when the process ends, however it ends, so a lock is never
// stale. The file holds the holder's pid, so a refused server can say which one holds it.
//
//   ASSIGN_OR_RETURN(DeviceLock lock, DeviceLock::Acquire("/run/remora", "gpu-1f2e..."));
#pragma once
#include <string>
#include <utility>

#include "proto/status.h"

namespace remora::server {

class DeviceLock {
 public:
  // Locks `dir`/remora-`key`.lock (created if missing) and writes this process's pid into it.
  // Errors: kDevicesUnavailable when another open file holds it (another live process, or
  // another DeviceLock of this one), naming its pid; kInitializationError when the file
  // cannot be opened or locked.
  static Result<DeviceLock> Acquire(const std::string& dir, const std::string& key);

  DeviceLock() = default;  // holds nothing
  DeviceLock(DeviceLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)) {}
  DeviceLock& operator=(DeviceLock&& o) noexcept;
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;
  ~DeviceLock();

  bool held() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace remora::server
