// server/handlers/util.h - what the session and its handler files share.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "proto/status.h"

namespace remora::server {

// How long a new session has to say Hello.
inline constexpr auto kHandshakeTimeout = std::chrono::seconds(10);

// A fault of the device's work that breaks the context (not a lost connection).
inline bool IsDeviceFault(int code) {
  return ErrorIsSticky(code) && code != err::kDevicesUnavailable;
}

// A spinning thread's pause: lets the sibling hyperthread (or the vCPU's
// host) run, without the system call a yield costs.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// "0x1f00", for handles and addresses in messages.
inline std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace remora::server
