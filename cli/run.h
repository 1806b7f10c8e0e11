// cli/run.h - `remora run`: start a program as a tenant of a Remora server.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/status.h"

namespace remora::cli {

struct RunOptions {
  std::string server;  // REMORA_SERVER; empty keeps the environment's
  std::string gpu_fraction, gpu_fraction_limit, gpu_memory, gpu_memory_limit;
  std::string gpu_compute, gpu_compute_limit, priority;  // GPU time share, cap; class
  std::string token;
  // REMORA_REMOTE_LIBS: NVIDIA libraries served by the server's copies through Remora's stubs
  // ("cublas", "cudnn", comma-separated), not loaded into CMD; "none": NVIDIA's own, always.
  // Empty: "cublas,cudnn" on the emulated GPU, which cannot run NVIDIA's, else none.
  std::string remote_libs;
  // Learned from the server before CMD starts (FetchDevice), not a flag: its device is Remora's
  // emulated GPU. The tenant gets REMORA_EMULATED_GPU=1, and the audit module answers NVIDIA's
  // cuFFT and cuRAND with Remora's, which serve them there.
  bool emulated_gpu = false;
  bool trace = false;                // REMORA_TRACE=1: the stub prints every forwarded call
  bool check = false;                // list the CUDA libraries CMD loads and what serves each
  std::vector<std::string> command;  // program and its arguments
};

// Parses `remora run` arguments (after "run"). Errors: kInvalidValue with the
// reason (unknown flag, mixed quota kinds, bad number, no command).
Result<RunOptions> ParseRun(const std::vector<std::string>& args);

// The environment variables `remora run` sets for the tenant, given the stub
// library directory and the current LD_LIBRARY_PATH, LD_AUDIT and LD_PRELOAD: the stubs first
// on the library path, the audit module (client_stub/confine.cc) that keeps every CUDA driver
// library the program loads Remora's, and NVRTC's interposer
// (client_stub/nvrtc_interpose.cc) first among the preloads.
std::map<std::string, std::string> TenantEnvironment(const RunOptions& opts,
                                                     const std::string& stub_dir,
                                                     const std::string& ld_library_path,
                                                     const std::string& ld_audit = "",
                                                     const std::string& ld_preload = "");

// `remora run --check`'s table, from the audit module's report (one "path<TAB>served by" line
// per library opened): each library once, in the order first opened.
std::string CheckTable(const std::string& report);

}  // namespace remora::cli
