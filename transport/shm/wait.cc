// transport/shm/wait.cc - futex system calls behind WaitStrategy.
#include "transport/shm/wait.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace remora::transport::shm {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the futex word must be a plain 32-bit word");

uint32_t* Raw(std::atomic<uint32_t>& word) {
  return reinterpret_cast<uint32_t*>(&word);
}

}  // namespace

bool FutexWait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) return false;
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(secs.count());
  ts.tv_nsec = static_cast<long>((timeout - secs).count());
  const long rc = ::syscall(SYS_futex, Raw(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
  // EAGAIN (word changed) and EINTR count as woken: the caller re-checks its condition.
  return rc == 0 || errno != ETIMEDOUT;
}

void FutexWakeAll(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, Raw(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace remora::transport::shm
