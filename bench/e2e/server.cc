// bench/e2e/server.cc - starting and stopping the benchmarks' remora-server.
#include "bench/e2e/server.h"

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace remora::bench::e2e {

BenchEnv& Env() {
  static BenchEnv env;
  return env;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

double CpuSeconds(pid_t pid) {
  // /proc/PID/stat: utime and stime are fields 14 and 15, after "(comm)".
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(stat.substr(paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::unique_ptr<BenchServer> BenchServer::Start(const std::string& dir, std::string* err,
                                                const std::vector<std::string>& extra,
                                                const std::map<std::string, std::string>& env) {
  auto s = std::make_unique<BenchServer>();
  const std::string sock = dir + "/gpu.sock";
  s->log_path_ = dir + "/server.log";
  s->shm_address_ = "unix:" + sock;
  std::vector<std::string> argv = {Paths::Server(), "--device=emu", "--listen",
                                   s->shm_address_, "--grpc",       "127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (const char* a = std::getenv("REMORA_E2E_SERVER_ARGS")) {
    std::istringstream in(a);
    for (std::string w; in >> w;) argv.push_back(w);
  }
  if (!s->child_.Start(argv, env, s->log_path_, err)) return nullptr;
  const std::regex port_re(R"(transport=grpc .*port=(\d+))");
  const std::regex ready_re(R"(event=ready pid=(\d+))");
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    const std::string log = ReadFile(s->log_path_);
    std::smatch m;
    if (s->grpc_address_.empty() && std::regex_search(log, m, port_re))
      s->grpc_address_ = "grpc://127.0.0.1:" + m[1].str();
    if (std::regex_search(log, m, ready_re) && !s->grpc_address_.empty()) {
      s->worker_pid_ = static_cast<pid_t>(std::stol(m[1].str()));
      return s;
    }
    if (!s->child_.Running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  *err = "remora-server did not become ready; log:\n" + ReadFile(s->log_path_);
  return nullptr;
}

}  // namespace remora::bench::e2e
