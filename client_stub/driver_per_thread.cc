// client_stub/driver_per_thread.cc - the per-thread default stream twins (_ptsz, _ptds) of the
// entry points libcuda.so.1 serves (driver_per_thread.def): each is its twin with the null
// stream standing for the calling thread's per-thread default stream (PerThreadTwin). NVIDIA's
// runtime, in a program built with --default-stream per-thread, asks cuGetProcAddress for them
// (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) and passes them a null stream.
//
// Each export is an indirect function whose resolver hands out the template's instance for its
// twin, so the table names a pair and nothing spells the twin's arguments again.
#include "client_stub/driver_internal.h"
#include "client_stub/driver_legacy.h"  // the older ABIs some twins stand for

namespace remora::client_stub::driver {
namespace {

using Entry = void (*)();

template <auto F>
Entry TwinOf() {
  return reinterpret_cast<Entry>(&PerThreadTwin<F>::Call);
}

}  // namespace
}  // namespace remora::client_stub::driver

#define PER_THREAD(alias, twin)                                     \
  extern "C" remora::client_stub::driver::Entry alias##_resolve() { \
    return remora::client_stub::driver::TwinOf<&twin>();            \
  }                                                                 \
  extern "C" __attribute__((visibility("default"), ifunc(#alias "_resolve"))) void alias();
#include "client_stub/driver_per_thread.def"
#undef PER_THREAD
