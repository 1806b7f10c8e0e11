// cli/run.cc - argument checking and environment for `remora run`.
#include "cli/run.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <utility>

#include "proto/quantity.h"
#include "scheduler/tenant.h"

namespace remora::cli {
namespace {

Status CheckFraction(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  double f = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(f > 0) || f > 1)
    return Error(err::kInvalidValue, flag + " takes a fraction in (0, 1], not '" + v + "'");
  return OkStatus();
}

}  // namespace

Result<RunOptions> ParseRun(const std::vector<std::string>& args) {
  RunOptions o;
  struct Opt {
    const char* name;
    std::string RunOptions::*field;
  };
  static const Opt kOpts[] = {{"--server", &RunOptions::server},
                              {"--gpu-fraction", &RunOptions::gpu_fraction},
                              {"--gpu-fraction-limit", &RunOptions::gpu_fraction_limit},
                              {"--gpu-memory", &RunOptions::gpu_memory},
                              {"--gpu-memory-limit", &RunOptions::gpu_memory_limit},
                              {"--gpu-compute", &RunOptions::gpu_compute},
                              {"--gpu-compute-limit", &RunOptions::gpu_compute_limit},
                              {"--priority", &RunOptions::priority},
                              {"--token", &RunOptions::token},
                              {"--remote-libs", &RunOptions::remote_libs}};
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.rfind("--", 0) != 0) break;  // the command starts
    if (a == "--trace") {
      o.trace = true;
      continue;
    }
    if (a == "--check") {
      o.check = true;
      continue;
    }
    bool matched = false;
    for (const Opt& opt : kOpts) {
      std::string name = opt.name;
      if (a == name) {
        if (i + 1 >= args.size()) return Error(err::kInvalidValue, name + " needs a value");
        o.*opt.field = args[++i];
        matched = true;
      } else if (a.rfind(name + "=", 0) == 0) {
        o.*opt.field = a.substr(name.size() + 1);
        matched = true;
      }
      if (matched) break;
    }
    if (!matched) return Error(err::kInvalidValue, "unknown option '" + a + "'");
  }
  o.command.assign(args.begin() + static_cast<long>(i), args.end());
  if (o.command.empty())
    return Error(err::kInvalidValue, "no command to run (remora run [options] -- CMD ARGS)");

  bool fractions = !o.gpu_fraction.empty() || !o.gpu_fraction_limit.empty();
  bool bytes = !o.gpu_memory.empty() || !o.gpu_memory_limit.empty();
  if (fractions && bytes)
    return Error(err::kInvalidValue,
                 "give the quota as --gpu-fraction* or as --gpu-memory*, not both");
  if (!o.gpu_fraction.empty()) RETURN_IF_ERROR(CheckFraction("--gpu-fraction", o.gpu_fraction));
  if (!o.gpu_fraction_limit.empty())
    RETURN_IF_ERROR(CheckFraction("--gpu-fraction-limit", o.gpu_fraction_limit));
  uint64_t req = 0, lim = 0;
  if (!o.gpu_memory.empty()) {
    ASSIGN_OR_RETURN(req, ParseQuantity(o.gpu_memory));
  }
  if (!o.gpu_memory_limit.empty()) {
    ASSIGN_OR_RETURN(lim, ParseQuantity(o.gpu_memory_limit));
  }
  if (lim && req > lim)
    return Error(err::kInvalidValue, "--gpu-memory-limit is below --gpu-memory");
  if (!o.gpu_fraction.empty() && !o.gpu_fraction_limit.empty() &&
      std::strtod(o.gpu_fraction_limit.c_str(), nullptr) <
          std::strtod(o.gpu_fraction.c_str(), nullptr))
    return Error(err::kInvalidValue, "--gpu-fraction-limit is below --gpu-fraction");
  if (!o.gpu_compute.empty()) RETURN_IF_ERROR(CheckFraction("--gpu-compute", o.gpu_compute));
  if (!o.gpu_compute_limit.empty())
    RETURN_IF_ERROR(CheckFraction("--gpu-compute-limit", o.gpu_compute_limit));
  if (!o.gpu_compute.empty() && !o.gpu_compute_limit.empty() &&
      std::strtod(o.gpu_compute_limit.c_str(), nullptr) <
          std::strtod(o.gpu_compute.c_str(), nullptr))
    return Error(err::kInvalidValue, "--gpu-compute-limit is below --gpu-compute");
  for (size_t at = 0;
       !o.remote_libs.empty() && o.remote_libs != "none" && at != std::string::npos;) {
    const size_t comma = o.remote_libs.find(',', at);
    const std::string lib =
        o.remote_libs.substr(at, comma == std::string::npos ? comma : comma - at);
    if (lib != "cublas" && lib != "cudnn")
      return Error(
          err::kInvalidValue,
          "--remote-libs takes cublas and cudnn (comma-separated) or none, not '" + lib + "'");
    at = comma == std::string::npos ? comma : comma + 1;
  }
  if (!o.priority.empty() && !sched::ParsePriority(o.priority))
    return Error(err::kInvalidValue,
                 "--priority takes high, normal or low, not '" + o.priority + "'");
  return o;
}

std::map<std::string, std::string> TenantEnvironment(const RunOptions& o,
                                                     const std::string& stub_dir,
                                                     const std::string& ld_library_path,
                                                     const std::string& ld_audit,
                                                     const std::string& ld_preload) {
  std::map<std::string, std::string> env;
  env["LD_LIBRARY_PATH"] = ld_library_path.empty() ? stub_dir : stub_dir + ":" + ld_library_path;
  const std::string confine = stub_dir + "/libremora_confine.so";
  env["LD_AUDIT"] = ld_audit.empty() ? confine : confine + ":" + ld_audit;
  env["REMORA_STUB_DIR"] = stub_dir;
  const std::string nvrtc = stub_dir + "/libremora_nvrtc.so";
  env["LD_PRELOAD"] = ld_preload.empty() ? nvrtc : nvrtc + ":" + ld_preload;
  if (!o.server.empty()) env["REMORA_SERVER"] = o.server;
  if (!o.token.empty()) env["REMORA_TOKEN"] = o.token;
  if (!o.gpu_fraction.empty()) env["REMORA_GPU_FRACTION"] = o.gpu_fraction;
  if (!o.gpu_fraction_limit.empty()) env["REMORA_GPU_FRACTION_LIMIT"] = o.gpu_fraction_limit;
  if (!o.gpu_memory.empty()) env["REMORA_GPU_MEMORY"] = o.gpu_memory;
  if (!o.gpu_memory_limit.empty()) env["REMORA_GPU_MEMORY_LIMIT"] = o.gpu_memory_limit;
  if (!o.gpu_compute.empty()) env["REMORA_GPU_COMPUTE"] = o.gpu_compute;
  if (!o.gpu_compute_limit.empty()) env["REMORA_GPU_COMPUTE_LIMIT"] = o.gpu_compute_limit;
  if (!o.priority.empty()) env["REMORA_PRIORITY"] = o.priority;
  const std::string remote = !o.remote_libs.empty() ? o.remote_libs
                             : o.emulated_gpu       ? "cublas,cudnn"
                                                    : "";
  if (!remote.empty()) env["REMORA_REMOTE_LIBS"] = remote;
  if (o.emulated_gpu) env["REMORA_EMULATED_GPU"] = "1";
  if (o.trace) env.insert_or_assign("REMORA_TRACE", std::string("1"));
  return env;
}

std::string CheckTable(const std::string& report) {
  std::vector<std::pair<std::string, std::string>> rows;
  std::set<std::string> seen;
  size_t width = 0;
  std::istringstream in(report);
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || !seen.insert(line.substr(0, tab)).second) continue;
    rows.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    width = std::max(width, tab);
  }
  std::string out =
      "CUDA LIBRARY" + std::string(width > 12 ? width - 12 : 0, ' ') + "  SERVED BY\n";
  for (const auto& [path, by] : rows)
    out += path + std::string(width - path.size(), ' ') + "  " + by + "\n";
  if (rows.empty()) out += "(none: the program loaded no CUDA library)\n";
  return out;
}

}  // namespace remora::cli
