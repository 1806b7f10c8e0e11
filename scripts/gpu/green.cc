// scripts/gpu/green.cc - can Remora run a tenant's kernels in SM partitions (green contexts)? On
// one H200: E1 a module loaded in the primary context launched on a green context's stream; E2 a
// latency kernel's p50/p99 beside a saturating kernel: both in the primary context
//    (stream priorities only), and the saturating one confined to a green context;
// E3 the saturating kernel's rate on the whole device and on the partition;
// E4 two saturating kernels in partitions of 32 SMs and the rest.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "chain_cubin.h"  // chain.cu as a cubin (prepare.sh)

#define CK(x)                                                                    \
  do {                                                                           \
    CUresult r_ = (x);                                                           \
    if (r_ != CUDA_SUCCESS) {                                                    \
      const char* s_ = nullptr;                                                  \
      cuGetErrorName(r_, &s_);                                                   \
      std::printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?"); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)
static const char* Name(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : "?";
}
using Clock = std::chrono::steady_clock;
static double Us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}
static double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}
static unsigned ChainHost(unsigned x, int iters) {
  for (int i = 0; i < iters; ++i) x = x * 1664525u + 1013904223u;
  return x;
}

static CUcontext primary;
static CUfunction fn;
static CUfunction gfn;              // what runs on green streams
static bool green_current = false;  // make the green context current to launch there
static int sms;

struct Buf {
  CUdeviceptr seeds = 0, out = 0;
  int n = 0;
  explicit Buf(int n_) : n(n_) {
    CK(cuMemAlloc(&seeds, n * 4));
    CK(cuMemAlloc(&out, n * 4));
    std::vector<unsigned> s(n);
    unsigned r = 777;
    for (auto& v : s) v = (r = r * 22695477u + 1u);
    CK(cuMemcpyHtoD(seeds, s.data(), n * 4));
  }
  bool Check(int iters) const {
    std::vector<unsigned> s(n), o(n);
    CK(cuMemcpyDtoH(s.data(), seeds, n * 4));
    CK(cuMemcpyDtoH(o.data(), out, n * 4));
    for (int i = 0; i < n; i += 97)
      if (o[i] != ChainHost(s[i], iters)) return false;
    return true;
  }
};

static CUresult Launch(CUfunction f, CUstream s, const Buf& b, int blocks, int threads, int iters) {
  void* args[] = {(void*)&b.seeds, (void*)&b.out, &iters};
  return cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, s, args, nullptr);
}

// Saturating kernels on `s` until `stop`; counts kernels.
static void Busy(CUstream s, CUcontext ctx, std::atomic<bool>* stop, long* kernels, int iters) {
  CUfunction f = fn;
  if (ctx != primary) f = gfn;
  if (ctx != primary && !green_current) ctx = primary;
  CK(cuCtxSetCurrent(ctx));
  Buf b(sms * 8 * 256);
  long k = 0;
  while (!stop->load()) {
    for (int i = 0; i < 4; ++i) CK(Launch(f, s, b, sms * 8, 256, iters));
    CK(cuStreamSynchronize(s));
    k += 4;
  }
  if (!b.Check(iters)) std::printf("FAIL busy result\n");
  *kernels = k;
}

static void Latency(const char* what, CUstream s, int count, CUcontext ctx) {
  CUfunction fn_ = ctx == primary ? fn : gfn;
  CK(cuCtxSetCurrent(ctx != primary && green_current ? ctx : primary));
  Buf b(128);
  std::vector<unsigned> got(128);
  std::vector<double> us;
  for (int k = 0; k < count; ++k) {
    auto t0 = Clock::now();
    CK(Launch(fn_, s, b, 1, 128, 2000));
    CK(cuMemcpyDtoHAsync(got.data(), b.out, 512, s));
    CK(cuStreamSynchronize(s));
    us.push_back(Us(t0, Clock::now()));
  }
  std::printf("%s LATENCY_US p50 %.1f p99 %.1f ok %d\n", what, Pct(us, 0.5), Pct(us, 0.99),
              b.Check(2000));
  CK(cuCtxSetCurrent(primary));
}

static long Rate(CUstream s, CUcontext ctx, double seconds, int iters) {
  std::atomic<bool> stop{false};
  long k = 0;
  std::thread t(Busy, s, ctx, &stop, &k, iters);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  t.join();
  return static_cast<long>(k / seconds);
}

int main() {
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&primary, dev));
  CK(cuCtxSetCurrent(primary));
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CUmodule mod;
  CK(cuModuleLoadData(&mod, chain_cubin));
  CK(cuModuleGetFunction(&fn, mod, "Chain"));
  int lo = 0, hi = 0;
  CK(cuCtxGetStreamPriorityRange(&lo, &hi));

  CUdevResource all{};
  CK(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  std::printf("SMS %d resource smCount %u minPartition %u alignment %u\n", sms, all.sm.smCount,
              all.sm.minSmPartitionSize, all.sm.smCoscheduledAlignment);
  // Reserve 8 SMs; the rest is the saturating tenant's.
  auto make = [&](unsigned count, CUgreenCtx* g, CUdevResource* rest) {
    CUdevResource part{};
    unsigned nb = 1;
    CUdevResource in = *rest;
    auto t0 = Clock::now();
    CK(cuDevSmResourceSplitByCount(&part, &nb, &in, rest, 0, count));
    CUdevResourceDesc desc;
    CK(cuDevResourceGenerateDesc(&desc, &part, 1));
    CK(cuGreenCtxCreate(g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    std::printf("green ctx of %u SMs (asked %u) made in %.0f us; %u left\n", part.sm.smCount, count,
                Us(t0, Clock::now()), rest->sm.smCount);
  };
  CUdevResource rest = all;
  CUgreenCtx reserved;
  make(8, &reserved, &rest);
  CUdevResourceDesc rdesc;
  CK(cuDevResourceGenerateDesc(&rdesc, &rest, 1));
  CUgreenCtx bulk;
  CK(cuGreenCtxCreate(&bulk, rdesc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  CUcontext bulk_ctx, reserved_ctx;
  CK(cuCtxFromGreenCtx(&bulk_ctx, bulk));
  CK(cuCtxFromGreenCtx(&reserved_ctx, reserved));
  CK(cuCtxSetCurrent(primary));

  // E1: the primary context's module on a green stream, with each context current.
  CUstream gs;
  CK(cuGreenCtxStreamCreate(&gs, bulk, CU_STREAM_NON_BLOCKING, lo));
  {
    Buf b(sms * 8 * 256);
    CUresult r1 = Launch(fn, gs, b, sms * 8, 256, 100);
    CUresult r1s = cuStreamSynchronize(gs);
    std::printf("E1 primary current: launch %s sync %s result %s\n", Name(r1), Name(r1s),
                r1 == CUDA_SUCCESS && r1s == CUDA_SUCCESS && b.Check(100) ? "ok" : "WRONG");
    CK(cuCtxSetCurrent(bulk_ctx));
    CUresult r2 = Launch(fn, gs, b, sms * 8, 256, 101);
    CUresult r2s = cuStreamSynchronize(gs);
    CK(cuCtxSetCurrent(primary));
    std::printf("E1 green current: launch %s sync %s result %s\n", Name(r2), Name(r2s),
                r2 == CUDA_SUCCESS && r2s == CUDA_SUCCESS && b.Check(101) ? "ok" : "WRONG");
    // A library kernel (context-independent) on the green stream.
    CUlibrary lib;
    CUkernel kern;
    CK(cuLibraryLoadData(&lib, chain_cubin, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CK(cuLibraryGetKernel(&kern, lib, "Chain"));
    CUresult r3 = Launch(reinterpret_cast<CUfunction>(kern), gs, b, sms * 8, 256, 102);
    CUresult r3s = cuStreamSynchronize(gs);
    gfn = r1 == CUDA_SUCCESS && r1s == CUDA_SUCCESS   ? fn
          : r2 == CUDA_SUCCESS && r2s == CUDA_SUCCESS ? fn
                                                      : reinterpret_cast<CUfunction>(kern);
    green_current = !(r1 == CUDA_SUCCESS && r1s == CUDA_SUCCESS);
    if (r3 != CUDA_SUCCESS && gfn != fn) {
      std::printf("nothing runs on a green stream\n");
      return 1;
    }
    std::printf("E1 library kernel: launch %s sync %s result %s\n", Name(r3), Name(r3s),
                r3 == CUDA_SUCCESS && r3s == CUDA_SUCCESS && b.Check(102) ? "ok" : "WRONG");
    // An event recorded on a green stream waited on by a primary stream, and back.
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CUstream ps;
    CK(cuStreamCreateWithPriority(&ps, CU_STREAM_NON_BLOCKING, hi));
    if (green_current) CK(cuCtxSetCurrent(bulk_ctx));
    CK(Launch(gfn, gs, b, sms * 8, 256, 103));
    CK(cuCtxSetCurrent(primary));
    CK(cuEventRecord(ev, gs));
    CK(cuStreamWaitEvent(ps, ev, 0));
    CK(Launch(fn, ps, b, sms * 8, 256, 104));
    CK(cuStreamSynchronize(ps));
    std::printf("E1 cross-context event order: %s\n", b.Check(104) ? "ok" : "WRONG");
    CUevent t0, t1;
    CK(cuEventCreate(&t0, 0));
    CK(cuEventCreate(&t1, 0));
    CK(cuEventRecord(t0, gs));
    if (green_current) CK(cuCtxSetCurrent(bulk_ctx));
    CK(Launch(gfn, gs, b, sms * 8, 256, 20000));
    CK(cuCtxSetCurrent(primary));
    CK(cuEventRecord(t1, gs));
    CK(cuEventSynchronize(t1));
    float ms = 0;
    CK(cuEventElapsedTime(&ms, t0, t1));
    std::printf("E1 timing events on a green stream: one busy kernel %.3f ms\n", ms);
  }

  // E2/E3.
  CUstream p_hi, p_lo, r_hi;
  CK(cuStreamCreateWithPriority(&p_hi, CU_STREAM_NON_BLOCKING, hi));
  CK(cuStreamCreateWithPriority(&p_lo, CU_STREAM_NON_BLOCKING, lo));
  CK(cuGreenCtxStreamCreate(&r_hi, reserved, CU_STREAM_NON_BLOCKING, hi));
  Latency("E2 alone primary", p_hi, 2000, primary);
  Latency("E2 alone reserved8", r_hi, 2000, reserved_ctx);
  for (int pass = 0; pass < 2; ++pass) {
    CUstream bs = pass == 0 ? p_lo : gs;
    std::atomic<bool> stop{false};
    long k = 0;
    std::thread t(Busy, bs, pass == 0 ? primary : bulk_ctx, &stop, &k, 20000);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto t0 = Clock::now();
    Latency(pass == 0 ? "E2 beside busy (both primary, priorities)"
                      : "E2 beside busy on green rest, latency primary",
            p_hi, 2000, primary);
    if (pass == 1)
      Latency("E2 beside busy on green rest, latency reserved8", r_hi, 2000, reserved_ctx);
    double s = Us(t0, Clock::now()) * 1e-6;
    stop = true;
    t.join();
    std::printf("   busy kernels/s meanwhile %.0f\n", k / (s + 0.3));
  }
  std::printf("E3 busy alone: primary %ld/s, green %u SMs %ld/s\n", Rate(p_lo, primary, 2, 20000),
              rest.sm.smCount, Rate(gs, bulk_ctx, 2, 20000));

  // E4: a partition of 32 SMs beside one of the other 100, side by side.
  CUdevResource r4 = all;
  CUgreenCtx a, b;
  make(32, &a, &r4);
  CUdevResourceDesc bdesc;
  CK(cuDevResourceGenerateDesc(&bdesc, &r4, 1));
  CK(cuGreenCtxCreate(&b, bdesc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  CUstream sa, sb;
  CK(cuGreenCtxStreamCreate(&sa, a, CU_STREAM_NON_BLOCKING, 0));
  CK(cuGreenCtxStreamCreate(&sb, b, CU_STREAM_NON_BLOCKING, 0));
  CUcontext ca, cb;
  CK(cuCtxFromGreenCtx(&ca, a));
  CK(cuCtxFromGreenCtx(&cb, b));
  std::atomic<bool> stop{false};
  long ka = 0, kb = 0;
  std::thread ta(Busy, sa, ca, &stop, &ka, 20000), tb(Busy, sb, cb, &stop, &kb, 20000);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop = true;
  ta.join();
  tb.join();
  std::printf("E4 32 vs %u SMs: %ld vs %ld kernels in 2 s (1:%.2f)\n", r4.sm.smCount, ka, kb,
              ka ? double(kb) / ka : 0.0);
  std::printf("DONE\n");
  return 0;
}
