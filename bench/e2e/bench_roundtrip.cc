// bench/e2e/bench_roundtrip.cc - a synchronous CUDA call's round trip against its floor, same run.
//
//   BM_ShmRoundTrip/0  cudaStreamQuery on an idle created stream, through the stub, over
//                      shm to remora-server (--device=emu) and back; /1 cudaMemGetInfo.
//                      Floor: two threads bouncing one cache line (pinned to CPUs 0 and 1).
//                      Each iteration is a block of 1000 floor round trips, then 1000
//                      calls (the time column is the mean call), so machine load hits
//                      both alike. As in the floor, the calling thread is pinned to
//                      CPU 0 and every thread of remora-server to CPU 1 (restored after).
//                      ratio = p50 / floor p50; mean_ratio = mean / floor mean.
//   BM_GrpcRoundTrip   the same cudaStreamQuery from a remote tenant (a child process of
//                      this binary with REMORA_SERVER=grpc://127.0.0.1:N, loopback).
//                      Floor: remora_e2e_grpc_floor --serve-handoff, an echo Session service
//                      whose reactor hands each frame to a worker thread that writes the
//                      reply (one thread hand-off, as between remora-server's transport and
//                      its session), in one process, and a sync bidi client in another,
//                      16-byte Frames. Diagnostic: the bare echo (--serve, the reactor
//                      writes back itself). Each iteration runs bare floor, hand-off floor,
//                      then remote, 10000 samples each.
//                      ratio = p50 / hand-off floor p50 (target <= 1.2); mean_ratio = means;
//                      bare_ratio = p50 / bare floor p50.
// p50_ns/p99_ns are the measured call's; floor_p50_ns/floor_p99_ns the baseline's
// (bare_floor_p50_ns/bare_floor_p99_ns the bare echo's).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <x86intrin.h>

#include <string>
#include <vector>

#include "bench/e2e/server.h"
#include "bench/e2e/sync_call.h"

namespace remora::bench::e2e {
namespace {

constexpr size_t kBlock = 1000;  // samples per block; floor and call blocks alternate
constexpr int kGrpcIters = 10'000;

void ReportRatios(benchmark::State& state, const Stats& rt, const Stats& floor) {
  state.counters["p50_ns"] = rt.p50_ns;
  state.counters["p99_ns"] = rt.p99_ns;
  state.counters["mean_ns"] = rt.mean_ns;
  state.counters["floor_p50_ns"] = floor.p50_ns;
  state.counters["floor_p99_ns"] = floor.p99_ns;
  state.counters["floor_mean_ns"] = floor.mean_ns;
  state.counters["ratio"] = floor.p50_ns > 0 ? rt.p50_ns / floor.p50_ns : 0;
  state.counters["mean_ratio"] = floor.mean_ns > 0 ? rt.mean_ns / floor.mean_ns : 0;
}

void BM_ShmRoundTrip(benchmark::State& state) {
  const auto which = static_cast<SyncCall>(state.range(0));
  state.SetLabel(SyncCallName(which));
  if (AllowedCpus() < 2) return state.SkipWithError("the floor needs two CPUs");
  PingPonger floor_pp;
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreate(&stream))
    return state.SkipWithError((std::string("cudaStreamCreate: ") + cudaGetErrorName(e)).c_str());
  // Like the floor's two threads: the caller on CPU 0, every server thread on CPU 1
  // (left to the scheduler, a busy machine may stack the server's session thread on the
  // spinning caller's CPU, and every call then waits for a futex wake-up).
  PinTo(0);
  const pid_t server = Env().server != nullptr ? Env().server->pid() : -1;
  if (server <= 0 || PinProcess(server, 1) == 0) {
    (void)cudaStreamDestroy(stream);
    Unpin();
    return state.SkipWithError("cannot pin remora-server's threads to CPU 1");
  }
  for (int i = 0; i < 5000; ++i) (void)DoSyncCall(which, stream);  // warm rings and caches

  std::vector<uint64_t> floor_ticks, rt_ticks;
  floor_ticks.reserve(kBlock * 1024);
  rt_ticks.reserve(kBlock * 1024);
  TickClock clock;
  for (auto _ : state) {
    floor_pp.Block(kBlock, &floor_ticks);
    uint64_t block_ticks = 0;
    for (size_t i = 0; i < kBlock; ++i) {
      const uint64_t t0 = __rdtsc();
      const int e = DoSyncCall(which, stream);
      const uint64_t dt = __rdtsc() - t0;
      if (e != cudaSuccess) [[unlikely]] {
        state.SkipWithError(cudaGetErrorName(static_cast<cudaError_t>(e)));
        break;
      }
      rt_ticks.push_back(dt);
      block_ticks += dt;
    }
    if (state.error_occurred()) break;
    // The time column is per call: the block's mean.
    state.SetIterationTime(static_cast<double>(block_ticks) * clock.NsPerTick() * 1e-9 / kBlock);
  }
  const double ns_per_tick = clock.NsPerTick();
  (void)cudaStreamDestroy(stream);
  PinProcess(server, -1);
  Unpin();
  if (state.error_occurred() || rt_ticks.empty()) return;
  ReportRatios(state, Summarize(rt_ticks, ns_per_tick), Summarize(floor_ticks, ns_per_tick));
  state.SetItemsProcessed(state.iterations());  // per-call times: items/s = calls/s
}
BENCHMARK(BM_ShmRoundTrip)->Arg(0)->Arg(1)->UseManualTime()->Iterations(200);

// Runs `argv` to completion, parses its key=value stdout into *out. False with *err.
bool RunStats(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              const std::string& what, Stats* out, std::string* err) {
  int status = 0;
  const std::string text = RunToCompletion(argv, env, Env().dir + "/children.log", &status);
  auto kv = ParseKeyValues(text);
  if (status != 0 || kv.count("p50_ns") == 0) {
    *err =
        what + " failed (exit " + std::to_string(status) + "); see " + Env().dir + "/children.log";
    return false;
  }
  out->mean_ns = kv["mean_ns"];
  out->p50_ns = kv["p50_ns"];
  out->p99_ns = kv["p99_ns"];
  out->n = static_cast<uint64_t>(kv["n"]);
  return true;
}

// Starts remora_e2e_grpc_floor in `mode` and returns its target, or "" with *err.
std::string StartEcho(Child* echo, const std::string& mode, std::string* err) {
  std::string line;
  if (!echo->Start({Paths::GrpcFloor(), mode}, {}, Env().dir + "/grpc_floor.log", err)) return "";
  if (!echo->ReadLine(&line, std::chrono::seconds(10)) || line.rfind("port=", 0) != 0) {
    *err = "remora_e2e_grpc_floor " + mode + " did not report its port";
    return "";
  }
  return "127.0.0.1:" + line.substr(5);
}

void BM_GrpcRoundTrip(benchmark::State& state) {
  state.SetLabel("cudaStreamQuery");
  BenchServer* server = Env().server;
  if (server == nullptr || server->grpc_address().empty())
    return state.SkipWithError("remora-server has no gRPC listener");

  Child bare_echo, handoff_echo;
  std::string err;
  const std::string bare_target = StartEcho(&bare_echo, "--serve", &err);
  if (bare_target.empty()) return state.SkipWithError(err.c_str());
  const std::string handoff_target = StartEcho(&handoff_echo, "--serve-handoff", &err);
  if (handoff_target.empty()) return state.SkipWithError(err.c_str());
  const std::string iters = std::to_string(kGrpcIters);

  Stats rt_sum, floor_sum, bare_sum;
  int64_t n = 0;
  for (auto _ : state) {
    Stats bare, floor, rt;
    if (!RunStats({Paths::GrpcFloor(), "--client", bare_target, iters}, {},
                  "bare gRPC floor client", &bare, &err) ||
        !RunStats({Paths::GrpcFloor(), "--client", handoff_target, iters}, {},
                  "hand-off gRPC floor client", &floor, &err) ||
        !RunStats({SelfExe(), "--e2e_child=grpc_rt", iters},
                  {{"REMORA_SERVER", server->grpc_address()}}, "remote tenant child", &rt, &err)) {
      state.SkipWithError(err.c_str());
      break;
    }
    state.SetIterationTime(rt.mean_ns * 1e-9);
    for (auto [sum, s] :
         {std::pair{&rt_sum, &rt}, std::pair{&floor_sum, &floor}, std::pair{&bare_sum, &bare}}) {
      sum->mean_ns += s->mean_ns;
      sum->p50_ns += s->p50_ns;
      sum->p99_ns += s->p99_ns;
    }
    ++n;
  }
  bare_echo.Stop();
  handoff_echo.Stop();
  if (n == 0) return;
  for (Stats* s : {&rt_sum, &floor_sum, &bare_sum}) {
    s->mean_ns /= static_cast<double>(n);
    s->p50_ns /= static_cast<double>(n);
    s->p99_ns /= static_cast<double>(n);
  }
  ReportRatios(state, rt_sum, floor_sum);
  state.counters["bare_floor_p50_ns"] = bare_sum.p50_ns;
  state.counters["bare_floor_p99_ns"] = bare_sum.p99_ns;
  state.counters["bare_ratio"] = bare_sum.p50_ns > 0 ? rt_sum.p50_ns / bare_sum.p50_ns : 0;
}
BENCHMARK(BM_GrpcRoundTrip)->Iterations(6)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace remora::bench::e2e
