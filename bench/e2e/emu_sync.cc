// bench/e2e/emu_sync.cc - the added-latency baseline: one synchronous driver call on the
// emulated device, in-process.
//
// Runs in a child process (this binary with --e2e_child=emu_sync WHICH) so the
// emulator never shares a process with the stub: dlopen the emulated libcuda.so.1,
// cuInit, retain and set the primary context, create a non-blocking stream (as the
// server's pool does) and a 256-byte allocation, warm up, print "ready". Then, per
// line read from stdin, pin this thread to CPU 0 and time kBlock calls of WHICH
// (0: cuStreamQuery on the idle stream; 1: a 4-byte cuMemcpyDtoH into a pageable host
// word; 2: the empty kernel launched on the stream, then cuStreamSynchronize), one rdtsc
// sample each, and print "ok". At EOF print mean_ns, p50_ns, p99_ns, n
// over every sample. The parent pins every thread of this process to CPU 0 after "ready"
// (see bench_latency.cc).
//
// WHICH 3 and 4 (--e2e_child=emu_sync WHICH WAIT_US, bench_wait.cc's baseline): a kernel
// spinning until a deadline WAIT_US ahead, then cuStreamSynchronize (3) or cuEventSynchronize
// of an event recorded after it (4); a sample is how long after the kernel ended the call
// returned (the host's CLOCK_REALTIME, the emulated GPU's %globaltimer). kWaitBlock samples
// per line, unpinned.
#include <cuda.h>
#include <dlfcn.h>
#include <x86intrin.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench/e2e/children.h"
#include "bench/e2e/server.h"

namespace remora::bench::e2e {
namespace {

struct SyncDriver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamQuery)(CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
};

template <typename F>
bool Sym(void* lib, const char* name, F** out) {
  *out = reinterpret_cast<F*>(dlsym(lib, name));
  if (*out == nullptr) std::fprintf(stderr, "emu_sync: %s missing\n", name);
  return *out != nullptr;
}

int Fail(const char* what, CUresult r) {
  std::printf("error=%d\n", static_cast<int>(r));
  std::fprintf(stderr, "emu_sync: %s failed: %d\n", what, static_cast<int>(r));
  return 1;
}

}  // namespace

int RunEmuSyncChild(int which, int wait_us) {
  if (which < 0 || which > 4 || (which >= 3 && wait_us <= 0)) return 2;
  // The versioned names (_v2) are what cuda.h maps cuMemAlloc/cuMemcpyDtoH to.
  void* lib = dlopen(Paths::EmuDriver(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "emu_sync: dlopen: %s\n", dlerror());
    return 1;
  }
  SyncDriver d{};
  if (!Sym(lib, "cuInit", &d.cuInit) || !Sym(lib, "cuDeviceGet", &d.cuDeviceGet) ||
      !Sym(lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain) ||
      !Sym(lib, "cuCtxSetCurrent", &d.cuCtxSetCurrent) ||
      !Sym(lib, "cuStreamCreate", &d.cuStreamCreate) ||
      !Sym(lib, "cuStreamQuery", &d.cuStreamQuery) || !Sym(lib, "cuMemAlloc_v2", &d.cuMemAlloc) ||
      !Sym(lib, "cuMemsetD8_v2", &d.cuMemsetD8) || !Sym(lib, "cuMemcpyDtoH_v2", &d.cuMemcpyDtoH) ||
      !Sym(lib, "cuModuleLoadData", &d.cuModuleLoadData) ||
      !Sym(lib, "cuModuleGetFunction", &d.cuModuleGetFunction) ||
      !Sym(lib, "cuLaunchKernel", &d.cuLaunchKernel) ||
      !Sym(lib, "cuStreamSynchronize", &d.cuStreamSynchronize) ||
      !Sym(lib, "cuEventCreate", &d.cuEventCreate) ||
      !Sym(lib, "cuEventRecord", &d.cuEventRecord) ||
      !Sym(lib, "cuEventSynchronize", &d.cuEventSynchronize))
    return 1;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr dptr = 0;
  if (CUresult r = d.cuInit(0)) return Fail("cuInit", r);
  if (CUresult r = d.cuDeviceGet(&dev, 0)) return Fail("cuDeviceGet", r);
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&ctx, dev))
    return Fail("cuDevicePrimaryCtxRetain", r);
  if (CUresult r = d.cuCtxSetCurrent(ctx)) return Fail("cuCtxSetCurrent", r);
  if (CUresult r = d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING))
    return Fail("cuStreamCreate", r);
  if (CUresult r = d.cuMemAlloc(&dptr, 256)) return Fail("cuMemAlloc", r);
  if (CUresult r = d.cuMemsetD8(dptr, 0x5a, 256)) return Fail("cuMemsetD8", r);
  CUfunction empty = nullptr;
  if (which >= 2) {
    const std::string ptx = ReadFile(Paths::KernelPtx());
    CUmodule mod = nullptr;
    if (ptx.empty()) return Fail("reading the kernel's PTX", CUDA_ERROR_FILE_NOT_FOUND);
    if (CUresult r = d.cuModuleLoadData(&mod, ptx.c_str())) return Fail("cuModuleLoadData", r);
    if (CUresult r = d.cuModuleGetFunction(&empty, mod,
                                           which == 2 ? "remora_e2e_empty" : "remora_e2e_until"))
      return Fail("cuModuleGetFunction", r);
  }
  if (which >= 3) {
    CUevent after = nullptr;
    if (CUresult r = d.cuEventCreate(&after, CU_EVENT_DISABLE_TIMING))
      return Fail("cuEventCreate", r);
    const WaitLateness wait = [&](uint64_t deadline_ns, uint64_t* late_ns) -> bool {
      void* args[] = {&deadline_ns, &dptr};
      if (d.cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr) != CUDA_SUCCESS)
        return false;
      const CUresult r = which == 3 ? d.cuStreamSynchronize(stream)
                                    : (d.cuEventRecord(after, stream) != CUDA_SUCCESS
                                           ? CUDA_ERROR_UNKNOWN
                                           : d.cuEventSynchronize(after));
      const uint64_t back = RealtimeNs();
      uint64_t ended = 0;
      if (r != CUDA_SUCCESS || d.cuMemcpyDtoH(&ended, dptr, sizeof ended) != CUDA_SUCCESS)
        return false;
      *late_ns = back > ended ? back - ended : 0;
      return true;
    };
    return ServeWaitBlocks(wait, wait_us);
  }

  volatile uint32_t word = 0;
  auto call = [&]() -> CUresult {
    if (which == 0) return d.cuStreamQuery(stream);
    if (which == 2) {
      if (CUresult r = d.cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr))
        return r;
      return d.cuStreamSynchronize(stream);
    }
    uint32_t w = 0;
    const CUresult r = d.cuMemcpyDtoH(&w, dptr, sizeof w);
    word = w;
    return r;
  };
  for (int i = 0; i < 2000; ++i) {
    if (CUresult r = call()) return Fail("warm-up call", r);
  }
  if (which == 1 && word != 0x5a5a5a5au) return Fail("cuMemcpyDtoH contents", CUDA_SUCCESS);
  std::printf("ready\n");
  std::fflush(stdout);

  std::vector<uint64_t> ticks;
  ticks.reserve(kSyncBlock * 1024);
  TickClock clock;
  char line[64];
  while (std::fgets(line, sizeof line, stdin) != nullptr) {
    PinTo(0);
    for (size_t i = 0; i < kSyncBlock; ++i) {
      const uint64_t t0 = __rdtsc();
      const CUresult r = call();
      ticks.push_back(__rdtsc() - t0);
      if (r != CUDA_SUCCESS) [[unlikely]]
        return Fail("call", r);
    }
    std::printf("ok\n");
    std::fflush(stdout);
  }
  const Stats s = Summarize(ticks, clock.NsPerTick());
  std::printf("mean_ns=%.1f p50_ns=%.1f p99_ns=%.1f n=%llu\n", s.mean_ns, s.p50_ns, s.p99_ns,
              static_cast<unsigned long long>(s.n));
  return 0;
}

}  // namespace remora::bench::e2e
