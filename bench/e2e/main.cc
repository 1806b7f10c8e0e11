// bench/e2e/main.cc - remora_e2e_bench: starts remora-server, runs the e2e benchmarks, stops it.
//
// Order matters: the server starts and REMORA_SERVER is set before the first
// CUDA call (the stub connects once per process, lazily); the server is stopped
// from an atexit handler registered before that first call, so it runs after the
// stub's own (which says Goodbye). Child modes (children.h) are dispatched first.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/e2e/children.h"
#include "bench/e2e/server.h"
#include "bench/e2e/sync_call.h"

namespace remora::bench::e2e {
namespace {

std::unique_ptr<BenchServer>& TheServer() {
  static std::unique_ptr<BenchServer> s;
  return s;
}

void StopServer() {
  TheServer().reset();  // SIGTERM, reap
  const char* keep = std::getenv("REMORA_E2E_KEEP");
  if (keep != nullptr && *keep != '\0' && *keep != '0') {
    std::fprintf(stderr, "remora_e2e_bench: kept %s\n", Env().dir.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(Env().dir, ec);
}

}  // namespace

int RunRoundTripChild(int iters) {
  if (iters <= 0) return 2;
  Stats s;
  std::string err;
  if (!MeasureSyncCall(SyncCall::kStreamQuery, static_cast<size_t>(iters), &s, &err)) {
    std::printf("error=1\n");
    std::fprintf(stderr, "grpc_rt child: %s\n", err.c_str());
    return 1;
  }
  std::printf("mean_ns=%.1f p50_ns=%.1f p99_ns=%.1f n=%llu\n", s.mean_ns, s.p50_ns, s.p99_ns,
              static_cast<unsigned long long>(s.n));
  return 0;
}

bool MaybeRunChild(int argc, char** argv, int* rc) {
  if (argc < 2 || std::strncmp(argv[1], "--e2e_child=", 12) != 0) return false;
  const std::string mode = argv[1] + 12;
  if (mode == "grpc_rt" && argc == 3) {
    *rc = RunRoundTripChild(std::atoi(argv[2]));
  } else if (mode == "emu_launch" && argc == 4) {
    *rc = RunEmuLaunchChild(std::atoi(argv[2]), std::atoi(argv[3]));
  } else if (mode == "emu_sync" && (argc == 3 || argc == 4)) {
    *rc = RunEmuSyncChild(std::atoi(argv[2]), argc == 4 ? std::atoi(argv[3]) : 0);
  } else if (mode == "wait" && argc == 4) {
    *rc = RunWaitChild(std::atoi(argv[2]), std::atoi(argv[3]));
  } else if (mode == "emu_sgemm" && argc == 3) {
    *rc = RunEmuSgemmChild(std::atoi(argv[2]));
  } else if (mode == "emu_conv" && argc == 2) {
    *rc = RunEmuConvChild();
  } else if (mode == "fault" && argc == 2) {
    *rc = RunFaultChild();
  } else if (mode == "stub_launch" && argc == 3) {
    *rc = RunStubLaunchChild(std::atoi(argv[2]));
  } else if (mode == "fresh" && argc == 2) {
    *rc = RunFreshTenantChild();
  } else {
    std::fprintf(stderr, "unknown child mode: %s\n", argv[1]);
    *rc = 2;
  }
  return true;
}

}  // namespace remora::bench::e2e

int main(int argc, char** argv) {
  using namespace remora::bench::e2e;
  int rc = 0;
  if (MaybeRunChild(argc, argv, &rc)) return rc;

  ::signal(SIGPIPE, SIG_IGN);  // a dead child shows as a failed write, not our death
  char dir[] = "/tmp/remora-e2e-XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  Env().dir = dir;
  std::string err;
  TheServer() = BenchServer::Start(dir, &err);
  std::atexit(StopServer);
  if (!TheServer()) {
    std::fprintf(stderr, "remora_e2e_bench: %s\n", err.c_str());
    return 1;
  }
  Env().server = TheServer().get();
  ::setenv("REMORA_SERVER", TheServer()->shm_address().c_str(), 1);

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
