// client_stub/refused.h - entry points a stub exports but does not forward.
//
// A program may link any of NVIDIA's entry points of a library. Those a stub
// does not forward (its *_refused.def) exist so the program loads and the call
// gets the library's "not supported" status, with one line on stderr naming
// the routine, rather than a missing-symbol error at load or at the first
// call. No library header is included: every row has the same body whatever
// its signature (the C ABI leaves arguments to the caller; the status is
// returned in the integer register).
//
//   #define REFUSED(name) REMORA_REFUSED("libcublas.so.13", "CUBLAS_STATUS_NOT_SUPPORTED", 15,
//   name) #include "client_stub/cublas_refused.def"
#pragma once

#include <atomic>
#include <cstdio>

namespace remora::client_stub {

// Says once, on stderr, that `library` does not forward `name`; returns `status`.
inline int Refuse(const char* library, const char* name, const char* status_name, int status,
                  std::atomic<bool>& said) {
  if (!said.exchange(true, std::memory_order_relaxed))
    std::fprintf(stderr, "remora: %s is not forwarded by Remora's %s; it returns %s\n", name,
                 library, status_name);
  return status;
}

}  // namespace remora::client_stub

#define REMORA_REFUSED(library, status_name, status, name)                           \
  extern "C" __attribute__((visibility("default"))) int name() {                     \
    static std::atomic<bool> said{false};                                            \
    return ::remora::client_stub::Refuse(library, #name, status_name, status, said); \
  }
