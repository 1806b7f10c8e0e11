// bench/e2e/server.h - the remora-server the e2e benchmarks run against, and their paths.
//
// The benchmark process starts one remora-server (--device=emu, shm and gRPC
// listeners) before the first CUDA call and stops it at exit. Paths of the
// server, the stub, the emulated driver, the kernel's PTX and the gRPC floor
// helper come from compile definitions set in CMakeLists.txt. On a GPU
// machine the same binary compares with NVIDIA's driver: the environment names
// another in-process driver and moved files (REMORA_E2E_DRIVER=libcuda.so.1,
// REMORA_E2E_SERVER_PATH, REMORA_E2E_PTX_PATH), and REMORA_E2E_SERVER_ARGS
// "--device=cuda" points the server at the GPU.
//
//   std::string err;
//   auto srv = remora::bench::e2e::BenchServer::Start("/tmp/remora-e2e-XXXX", &err);
//   setenv("REMORA_SERVER", srv->shm_address().c_str(), 1);
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/e2e/common.h"

namespace remora::bench::e2e {

// Build-time paths (absolute), unless the environment names others.
struct Paths {
  static const char* Server() { return Or("REMORA_E2E_SERVER_PATH", REMORA_E2E_SERVER); }
  static const char* Stub() { return REMORA_E2E_STUB; }
  // The driver the in-process baselines call: the emulator's by default.
  static const char* EmuDriver() { return Or("REMORA_E2E_DRIVER", REMORA_E2E_EMU); }
  static const char* KernelPtx() { return Or("REMORA_E2E_PTX_PATH", REMORA_E2E_PTX); }
  static const char* GrpcFloor() { return REMORA_E2E_GRPC_FLOOR; }
  static const char* Tenants() { return REMORA_E2E_TENANTS; }

 private:
  static const char* Or(const char* env, const char* built) {
    const char* v = std::getenv(env);
    return v != nullptr && *v != '\0' ? v : built;
  }
};

// A running remora-server; destroying it sends SIGTERM and reaps it.
class BenchServer {
 public:
  // Starts the server with its log in `dir`/server.log, its socket `dir`/gpu.sock and
  // `extra` arguments appended, then those of REMORA_E2E_SERVER_ARGS (space-separated; every
  // benchmark's servers, e.g. "--time-slice 0" to compare), and waits (<= 30 s) for event=ready and
  // the gRPC port; `env` is added to its environment. Null with *err (and the log's tail) on
  // failure.
  static std::unique_ptr<BenchServer> Start(const std::string& dir, std::string* err,
                                            const std::vector<std::string>& extra = {},
                                            const std::map<std::string, std::string>& env = {});

  const std::string& shm_address() const { return shm_address_; }    // unix:PATH
  const std::string& grpc_address() const { return grpc_address_; }  // grpc://127.0.0.1:N
  const std::string& log_path() const { return log_path_; }
  // The process that serves (the worker its supervisor started), whose
  // threads and memory the benchmarks read.
  pid_t pid() const { return worker_pid_; }
  bool Running() { return child_.Running(); }

 private:
  Child child_;
  std::string shm_address_, grpc_address_, log_path_;
  pid_t worker_pid_ = 0;
};

// The process-wide server and scratch directory, set by main before benchmarks run.
struct BenchEnv {
  std::string dir;  // private scratch directory (logs, socket)
  BenchServer* server = nullptr;
};
BenchEnv& Env();

// Reads a whole file; empty if it cannot.
std::string ReadFile(const std::string& path);
// CPU time (user + system) process `pid` has used so far, its ended threads'
// included, in seconds (clock-tick resolution); 0 if it cannot be read.
double CpuSeconds(pid_t pid);

}  // namespace remora::bench::e2e
