// client_stub/cublas_refused.cc - the rest of libcublas.so.13: exported, refused by name.
//
// A program may link any of NVIDIA's cuBLAS entry points. Those the stub does not
// forward (cublas_refused.def) exist here so the program loads and the call gets
// CUBLAS_STATUS_NOT_SUPPORTED, with one line on stderr naming the routine, rather
// than a missing-symbol error at load or at the first call. No cuBLAS header is
// included: every row has the same body whatever its signature (the C ABI leaves
// arguments to the caller; the status is returned in the integer register).
#include <atomic>
#include <cstdio>

namespace {

int Refuse(const char* name, std::atomic<bool>& said) {
  if (!said.exchange(true, std::memory_order_relaxed))
    std::fprintf(stderr,
                 "remora: %s is not forwarded by Remora's libcublas.so.13; it returns "
                 "CUBLAS_STATUS_NOT_SUPPORTED\n",
                 name);
  return 15;  // CUBLAS_STATUS_NOT_SUPPORTED
}

}  // namespace

#define REFUSED(name)                                            \
  extern "C" __attribute__((visibility("default"))) int name() { \
    static std::atomic<bool> said{false};                        \
    return Refuse(#name, said);                                  \
  }
#include "client_stub/cublas_refused.def"
