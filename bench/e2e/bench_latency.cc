// bench/e2e/bench_latency.cc - what Remora adds to a synchronous call over shm, in ping-pong
// floors, all three measured in the same run.
//
//   BM_AddedLatency/0  remote: cudaStreamQuery on an idle created stream through the stub, over
//                      shm to remora-server (--device=emu) and back (the server answers with
//                      cuStreamQuery on its mapped stream).
//                      in-process: cuStreamQuery on an idle non-blocking stream, the emulated
//                      libcuda.so.1 called directly by a child of this binary
//                      (--e2e_child=emu_sync 0: the stub and the emulator cannot share a
//                      process).
//   BM_AddedLatency/1  the same with a 4-byte device-to-host copy into a pageable host word:
//                      cudaMemcpy through the stub (the server enqueues cuMemcpyDtoHAsync and
//                      synchronizes the stream) against cuMemcpyDtoH in-process.
//   BM_AddedLatency/2  the empty kernel launched on a created stream and
//                      cudaStreamSynchronize through the stub (a completion found by the
//                      server: the emulated GPU's doorbell, or a waiter's spin on a GPU) against
//                      cuLaunchKernel + cuStreamSynchronize in-process (issue target on a GPU:
//                      p50 <= native + 10 us).
// Floor: two threads bouncing one cache line (PingPonger). Each iteration is one block of
// kSyncBlock floor round trips, then kSyncBlock remote calls (the time column is their mean),
// then kSyncBlock in-process calls timed in the child, so machine load hits all three alike.
// Placement: the calling thread on CPU 0 as in the floor; every thread of remora-server on
// CPU 1 (so its session thread and the emulator's stream workers share a CPU); every thread
// of the in-process child on CPU 0 (so its caller and the emulator's stream workers share
// a CPU likewise: a synchronous copy hands off to a stream worker, and waking an idle vCPU
// costs ~20 us on this VM against ~5 us for a switch on the same CPU).
// Counters: p50_ns/p99_ns/mean_ns (remote), inproc_p50_ns/inproc_p99_ns, floor_p50_ns,
// added_ns = p50 - inproc p50, ratio = added_ns / floor_p50_ns (target <= 2).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <x86intrin.h>

#include <map>
#include <string>
#include <vector>

#include "bench/e2e/children.h"
#include "bench/e2e/server.h"

namespace remora::bench::e2e {
namespace {

constexpr auto kChildTimeout = std::chrono::seconds(60);

extern "C" int RemoraE2eLaunchEmptyOn(cudaStream_t s);  // empty_kernel.cu

void BM_AddedLatency(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  static const char* const kLabels[] = {"cudaStreamQuery vs cuStreamQuery",
                                        "cudaMemcpy DtoH 4 B vs cuMemcpyDtoH",
                                        "empty launch + cudaStreamSynchronize vs in-process"};
  state.SetLabel(kLabels[which]);
  if (AllowedCpus() < 2) return state.SkipWithError("the floor needs two CPUs");
  const pid_t server = Env().server != nullptr ? Env().server->pid() : -1;
  if (server <= 0) return state.SkipWithError("no remora-server");

  const std::string log = Env().dir + "/children.log";
  Child inproc;
  std::string err, line;
  if (!inproc.Start({SelfExe(), "--e2e_child=emu_sync", std::to_string(which)}, {}, log, &err,
                    /*with_stdin=*/true))
    return state.SkipWithError(err.c_str());
  if (!inproc.ReadLine(&line, kChildTimeout) || line != "ready")
    return state.SkipWithError(("in-process child did not start; see " + log).c_str());
  PinProcess(inproc.pid(), 0);

  cudaStream_t stream = nullptr;
  void* dptr = nullptr;
  if (cudaError_t e = cudaStreamCreate(&stream))
    return state.SkipWithError((std::string("cudaStreamCreate: ") + cudaGetErrorName(e)).c_str());
  if (cudaError_t e = cudaMalloc(&dptr, 256)) {
    (void)cudaStreamDestroy(stream);
    return state.SkipWithError((std::string("cudaMalloc: ") + cudaGetErrorName(e)).c_str());
  }
  volatile uint32_t word = 0;
  auto call = [&]() -> cudaError_t {
    if (which == 0) return cudaStreamQuery(stream);
    if (which == 2) {
      if (const int e = RemoraE2eLaunchEmptyOn(stream)) return static_cast<cudaError_t>(e);
      return cudaStreamSynchronize(stream);
    }
    uint32_t w = 0;
    const cudaError_t e = cudaMemcpy(&w, dptr, sizeof w, cudaMemcpyDeviceToHost);
    word = w;
    return e;
  };
  auto cleanup = [&] {
    (void)cudaFree(dptr);
    (void)cudaStreamDestroy(stream);
    PinProcess(server, -1);
    Unpin();
  };
  if (cudaError_t e = cudaMemset(dptr, 0x5a, 256); e != cudaSuccess) {
    cleanup();
    return state.SkipWithError((std::string("cudaMemset: ") + cudaGetErrorName(e)).c_str());
  }

  PingPonger floor_pp;
  PinTo(0);
  if (PinProcess(server, 1) == 0) {
    cleanup();
    return state.SkipWithError("cannot pin remora-server's threads to CPU 1");
  }
  for (int i = 0; i < 5000; ++i) (void)call();  // warm rings and caches
  if (which == 1 && word != 0x5a5a5a5au) {
    cleanup();
    return state.SkipWithError("cudaMemcpy returned the wrong bytes");
  }

  std::vector<uint64_t> floor_ticks, rt_ticks;
  floor_ticks.reserve(kSyncBlock * 1024);
  rt_ticks.reserve(kSyncBlock * 1024);
  TickClock clock;
  for (auto _ : state) {
    floor_pp.Block(kSyncBlock, &floor_ticks);
    uint64_t block_ticks = 0;
    for (size_t i = 0; i < kSyncBlock; ++i) {
      const uint64_t t0 = __rdtsc();
      const cudaError_t e = call();
      const uint64_t dt = __rdtsc() - t0;
      if (e != cudaSuccess) [[unlikely]] {
        state.SkipWithError(cudaGetErrorName(e));
        break;
      }
      rt_ticks.push_back(dt);
      block_ticks += dt;
    }
    if (state.error_occurred()) break;
    state.SetIterationTime(static_cast<double>(block_ticks) * clock.NsPerTick() * 1e-9 /
                           kSyncBlock);
    if (!inproc.WriteLine("block") || !inproc.ReadLine(&line, kChildTimeout) || line != "ok") {
      state.SkipWithError(("in-process child failed; see " + log).c_str());
      break;
    }
  }
  const double ns_per_tick = clock.NsPerTick();
  cleanup();
  inproc.CloseStdin();
  std::map<std::string, double> kv;
  if (!state.error_occurred()) {
    if (inproc.ReadLine(&line, kChildTimeout)) kv = ParseKeyValues(line);
    if (inproc.WaitOrStop(kChildTimeout) != 0 || kv.count("p50_ns") == 0)
      state.SkipWithError(("in-process child failed at exit; see " + log).c_str());
  }
  if (state.error_occurred() || rt_ticks.empty()) return;

  const Stats rt = Summarize(rt_ticks, ns_per_tick);
  const Stats floor = Summarize(floor_ticks, ns_per_tick);
  const double added = rt.p50_ns - kv["p50_ns"];
  state.counters["p50_ns"] = rt.p50_ns;
  state.counters["p99_ns"] = rt.p99_ns;
  state.counters["mean_ns"] = rt.mean_ns;
  state.counters["inproc_p50_ns"] = kv["p50_ns"];
  state.counters["inproc_p99_ns"] = kv["p99_ns"];
  state.counters["floor_p50_ns"] = floor.p50_ns;
  state.counters["added_ns"] = added;
  state.counters["ratio"] = floor.p50_ns > 0 ? added / floor.p50_ns : 0;
  state.SetItemsProcessed(state.iterations());  // per-call times: items/s = calls/s
}
BENCHMARK(BM_AddedLatency)->Arg(0)->Arg(1)->Arg(2)->UseManualTime()->Iterations(200);

}  // namespace
}  // namespace remora::bench::e2e
