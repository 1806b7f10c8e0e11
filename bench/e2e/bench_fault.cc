// bench/e2e/bench_fault.cc - how soon a brand-new tenant is served after another tenant's
// device fault, against the 1 s target.
//
//   BM_ServedAfterFault  against a remora-server of its own (--device=emu; a fault rebuilds
//                        the context, so the shared server would lose this binary's state).
//                        Per iteration two children of this binary, both started (and their
//                        libraries loaded) beforehand, REMORA_SERVER naming that server:
//                        --e2e_child=fault connects and loads its module, then on "go"
//                        launches remora_e2e_fault<<<1,1>>>(nullptr) and synchronizes
//                        (cudaErrorIllegalAddress), prints when, and stays connected;
//                        --e2e_child=fresh, on "go" (sent as soon as the fault is reported),
//                        connects (Hello), then cudaMalloc + cudaStreamQuery(0).
//                        served = fresh tenant's calls succeeded - faulting tenant's
//                        synchronize returned (steady_clock, system-wide). A fresh tenant
//                        whose calls fail is replaced by another (attempts counts them).
// Counters: served_s (median), served_max_s, ratio = served_max_s / 1 s (target <= 1);
// first_call_s (median: the fresh tenant's connect + calls alone); fault_s (median: launch to
// the fault reported by the synchronize); fault_code (the cudaError_t it returned);
// attempts (fresh tenants started per iteration, worst).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench/e2e/children.h"
#include "bench/e2e/server.h"

extern "C" int RemoraE2eLaunchEmpty(int n);  // empty_kernel.cu
extern "C" int RemoraE2eLaunchFault();

namespace remora::bench::e2e {
namespace {

constexpr auto kChildTimeout = std::chrono::seconds(30);
constexpr auto kGiveUp = std::chrono::seconds(10);  // no fresh tenant served: stop trying

long long NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

bool WaitGo() {
  std::string line;
  return static_cast<bool>(std::getline(std::cin, line)) && line == "go";
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int RunFaultChild() {
  // Connect and register the module (it holds both kernels) before the timed part.
  if (int e = RemoraE2eLaunchEmpty(1); e != 0 || cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("error=1\n");
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  if (!WaitGo()) return 1;
  const long long launch = NowNs();
  int e = RemoraE2eLaunchFault();
  if (e == 0) e = static_cast<int>(cudaDeviceSynchronize());
  const long long fault = NowNs();
  std::printf("launch_ns=%lld fault_ns=%lld err=%d\n", launch, fault, e);
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
  }  // stays connected until the parent closes stdin
  return 0;
}

int RunFreshTenantChild() {
  std::printf("ready\n");
  std::fflush(stdout);
  if (!WaitGo()) return 1;
  const long long start = NowNs();
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, 256);
  if (e == cudaSuccess) e = cudaStreamQuery(nullptr);
  const long long served = NowNs();
  std::printf("start_ns=%lld served_ns=%lld err=%d\n", start, served, static_cast<int>(e));
  std::fflush(stdout);
  if (p != nullptr) (void)cudaFree(p);
  return 0;
}

namespace {

// Starts a child of this binary in `mode` against `server` and waits for "ready".
bool StartTenant(Child* c, const std::string& mode, const std::string& server,
                 const std::string& log, std::string* err) {
  std::string line;
  if (!c->Start({SelfExe(), "--e2e_child=" + mode}, {{"REMORA_SERVER", server}}, log, err,
                /*with_stdin=*/true))
    return false;
  if (!c->ReadLine(&line, kChildTimeout) || line != "ready") {
    *err = mode + " tenant did not start; see " + log;
    return false;
  }
  return true;
}

// Sends "go" and parses the one-line key=value answer.
bool Go(Child* c, std::map<std::string, double>* kv) {
  std::string line;
  if (!c->WriteLine("go") || !c->ReadLine(&line, kChildTimeout)) return false;
  *kv = ParseKeyValues(line);
  return kv->count("err") != 0;
}

void BM_ServedAfterFault(benchmark::State& state) {
  const std::string dir = Env().dir + "/fault";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string err;
  auto server = BenchServer::Start(dir, &err);
  if (!server) return state.SkipWithError(err.c_str());
  const std::string log = dir + "/children.log";

  std::vector<double> served, first_call, fault_s;
  double fault_code = 0, attempts_max = 0;
  for (auto _ : state) {
    Child faulting;
    auto fresh = std::make_unique<Child>();
    if (!StartTenant(&faulting, "fault", server->shm_address(), log, &err) ||
        !StartTenant(fresh.get(), "fresh", server->shm_address(), log, &err)) {
      state.SkipWithError(err.c_str());
      break;
    }
    std::map<std::string, double> f, t;
    if (!Go(&faulting, &f)) {
      state.SkipWithError(("faulting tenant did not report; see " + log).c_str());
      break;
    }
    fault_code = f["err"];
    if (fault_code == 0) {
      state.SkipWithError("the faulting kernel did not fault");
      break;
    }
    int attempts = 1;
    const auto give_up = Clock::now() + kGiveUp;
    bool ok = Go(fresh.get(), &t) && t["err"] == 0;
    while (!ok && Clock::now() < give_up) {
      fresh->Stop();
      fresh = std::make_unique<Child>();
      ++attempts;
      ok = StartTenant(fresh.get(), "fresh", server->shm_address(), log, &err) &&
           Go(fresh.get(), &t) && t["err"] == 0;
    }
    attempts_max = std::max(attempts_max, static_cast<double>(attempts));
    faulting.CloseStdin();
    faulting.WaitOrStop(kChildTimeout);
    fresh->CloseStdin();
    fresh->WaitOrStop(kChildTimeout);
    if (!ok) {
      state.SkipWithError(("no fresh tenant was served within 10 s of the fault; see " + log +
                           " and " + server->log_path())
                              .c_str());
      break;
    }
    const double s = (t["served_ns"] - f["fault_ns"]) * 1e-9;
    served.push_back(s);
    first_call.push_back((t["served_ns"] - t["start_ns"]) * 1e-9);
    fault_s.push_back((f["fault_ns"] - f["launch_ns"]) * 1e-9);
    state.SetIterationTime(std::max(s, 1e-9));
  }
  if (!server->Running() && !state.error_occurred()) state.SkipWithError("remora-server died");
  server.reset();
  if (state.error_occurred() || served.empty()) return;
  const double worst = *std::max_element(served.begin(), served.end());
  state.counters["served_s"] = Median(served);
  state.counters["served_max_s"] = worst;
  state.counters["ratio"] = worst / 1.0;
  state.counters["first_call_s"] = Median(first_call);
  state.counters["fault_s"] = Median(fault_s);
  state.counters["fault_code"] = fault_code;
  state.counters["attempts"] = attempts_max;
}
BENCHMARK(BM_ServedAfterFault)->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remora::bench::e2e
