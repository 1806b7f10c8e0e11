// server/device_lock.cc - the lock file behind "one server per GPU".
#include "server/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace remora::server {

DeviceLock& DeviceLock::operator=(DeviceLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
  }
  return *this;
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<DeviceLock> DeviceLock::Acquire(const std::string& dir, const std::string& key) {
  DeviceLock lock;
  lock.path_ = dir + "/remora-" + key + ".lock";
  lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0)
    return Error(err::kInitializationError,
                 "cannot open the device lock " + lock.path_ + ": " + std::strerror(errno));
  if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    if (e != EWOULDBLOCK)
      return Error(err::kInitializationError,
                   "cannot lock " + lock.path_ + ": " + std::strerror(e));
    char buf[32] = {};
    const ssize_t n = ::pread(lock.fd_, buf, sizeof buf - 1, 0);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return Error(err::kDevicesUnavailable, "another remora-server" +
                                               (holder.empty() ? "" : " (pid " + holder + ")") +
                                               " serves this GPU (it holds " + lock.path_ +
                                               "); stop it first, or give this server another GPU");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock.fd_, 0) != 0 ||
      ::pwrite(lock.fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    return Error(err::kInitializationError,
                 "cannot write " + lock.path_ + ": " + std::strerror(errno));
  return lock;
}

}  // namespace remora::server
