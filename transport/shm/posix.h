// transport/shm/posix.h - RAII owners for file descriptors and mappings, errno messages.
//
// Internal to transport/shm. UniqueFd closes its descriptor and Mapping unmaps its
// range when destroyed; both are move-only.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace remora::transport::shm {

// Owns one file descriptor (-1 = none).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership: returns the descriptor, which the caller now closes.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor now (EINTR from close is ignored, as Linux frees the fd anyway).
  void Reset();

 private:
  int fd_ = -1;
};

// Owns one mmap'ed range; empty when data() is nullptr.
class Mapping {
 public:
  Mapping() = default;
  Mapping(void* data, size_t size) : data_(data), size_(size) {}
  Mapping(Mapping&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  Mapping& operator=(Mapping&& o) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { Reset(); }

  std::byte* data() const { return static_cast<std::byte*>(data_); }
  size_t size() const { return size_; }
  void Reset();

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// "what: strerror(err)" for error messages.
std::string ErrnoMessage(const char* what, int err);

}  // namespace remora::transport::shm
