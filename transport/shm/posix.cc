// transport/shm/posix.cc - RAII owners for file descriptors and mappings.
#include "transport/shm/posix.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace remora::transport::shm {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    Reset();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    Reset();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void Mapping::Reset() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

std::string ErrnoMessage(const char* what, int err) {
  char buf[128];
  // GNU strerror_r returns the message pointer (which may not be buf).
  const char* msg = ::strerror_r(err, buf, sizeof buf);
  return std::string(what) + ": " + msg;
}

}  // namespace remora::transport::shm
